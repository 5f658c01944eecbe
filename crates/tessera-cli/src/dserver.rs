//! `tessera discovery-server`: the centralized architecture's server, speaking Fast DDS 2.9's
//! discovery-server protocol, with `fastdds discovery`'s options:
//!
//! ```text
//! tessera discovery-server -i ID [-l ADDR] [-p PORT] [-b [--backup-file PATH]] [--link LIST]
//! ```
//!
//! `--link` takes a list in `ROS_DISCOVERY_SERVER`'s form (position = server id): this server
//! links with those servers and each tells the other what it knows, so that clients of
//! different servers discover each other (own id skipped).
//!
//! With `-b` (BACKUP, as `fastdds discovery -b`) the server saves what it knows (every client's
//! DATA(p), DATA(w) and DATA(r)) to `tessera-ds-ID.backup` in the working directory (or
//! `--backup-file`) within 100 ms of each change, written to a temporary file, synced and
//! renamed over the old one, and restores it when it starts: a server that crashed and came
//! back serves new clients at once, though the old ones do not re-announce to it.
//!
//! A thin driver: one UDP socket, the sans-IO
//! [`DiscoveryServerEngine`], a loop that waits
//! for a datagram or the engine's next deadline. Clients point `ROS_DISCOVERY_SERVER` at it
//! (entry `ID` of the list, e.g. `127.0.0.1:11811` for id 0). SIGINT/SIGTERM make it send its
//! DATA(Up) to every client and exit 0.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use tessera::rtps::discovery::ds_common::DEFAULT_SERVER_PORT;
use tessera::rtps::discovery::{
    DiscoveryServerEngine, DsServerConfig, DsServerEvent, LocatorSelector,
};
use tessera::rtps::types::{locator_kind, GuidPrefix, Locator, Locators};
use tessera::rtps::wire::{MessageBuilder, MessageReceiver, Submessage};
use tessera::rtps::writer::Transmit;

/// Exit status for bad arguments.
pub const EXIT_BAD_ARGS: i32 = 3;

/// Parsed options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerArgs {
    /// `-i`: the server id (its prefix's third byte).
    pub id: u8,
    /// `-l`: the address to listen on.
    pub address: IpAddr,
    /// `-p`: the UDP port.
    pub port: u16,
    /// `-b`: the backup file (BACKUP server), `None` without `-b`.
    pub backup: Option<std::path::PathBuf>,
    /// `--link`: the servers to link with (id, address).
    pub links: Vec<(u8, SocketAddr)>,
}

/// The usage text.
pub fn usage(prog: &str) -> String {
    format!(
        "usage: {prog} -i ID [-l ADDR] [-p PORT] [-b [--backup-file PATH]]\n\
         \n\
         A discovery server (Fast DDS 2.9's protocol; clients set ROS_DISCOVERY_SERVER).\n\
         \x20 -i, --server-id ID    server id 0..255: position in ROS_DISCOVERY_SERVER\n\
         \x20 -l, --ip-address ADDR address to listen on (default 0.0.0.0)\n\
         \x20 -p, --port PORT       UDP port (default {DEFAULT_SERVER_PORT})\n\
         \x20 -b, --backup          BACKUP server: keep what it knows in a file, restore it on start\n\
         \x20 --backup-file PATH    the backup file (default tessera-ds-ID.backup; implies -b)\n\
         \x20 --link LIST           link with the servers of LIST (ROS_DISCOVERY_SERVER's form)\n"
    )
}

/// Parses the arguments after the subcommand name.
pub fn parse_args(args: &[String]) -> Result<ServerArgs, String> {
    let mut id = None;
    let mut address = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    let mut port = DEFAULT_SERVER_PORT;
    let mut backup = false;
    let mut backup_file = None;
    let mut links = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "-i" | "--server-id" => {
                id = Some(val()?.parse::<u8>().map_err(|e| format!("{a}: {e}"))?);
            }
            "-l" | "--ip-address" => {
                address = val()?.parse().map_err(|e| format!("{a}: {e}"))?;
            }
            "-p" | "--port" => {
                port = val()?.parse().map_err(|e| format!("{a}: {e}"))?;
                if port == 0 {
                    return Err(format!("{a}: port 0"));
                }
            }
            "-b" | "--backup" => backup = true,
            "--backup-file" => backup_file = Some(std::path::PathBuf::from(val()?)),
            "--link" => links = parse_links(val()?)?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    let id = id.ok_or("-i ID is required")?;
    let backup = match backup_file {
        Some(f) => Some(f),
        None if backup => Some(std::path::PathBuf::from(format!("tessera-ds-{id}.backup"))),
        None => None,
    };
    links.retain(|(i, _)| *i != id);
    Ok(ServerArgs {
        id,
        address,
        port,
        backup,
        links,
    })
}

/// A `--link` list: `ROS_DISCOVERY_SERVER`'s syntax, names resolved now.
fn parse_links(list: &str) -> Result<Vec<(u8, SocketAddr)>, String> {
    use std::net::ToSocketAddrs;
    use tessera::rtps::discovery::ds_common::{parse_server_list, ServerHost};
    let mut out = Vec::new();
    for e in parse_server_list(list).map_err(|e| format!("--link: {e}"))? {
        let addr = match &e.host {
            ServerHost::Ip(ip) => SocketAddr::new(*ip, e.port),
            ServerHost::Name(n) => (n.as_str(), e.port)
                .to_socket_addrs()
                .map_err(|err| format!("--link: {n}: {err}"))?
                .next()
                .ok_or_else(|| format!("--link: {n}: no address"))?,
        };
        out.push((e.id, addr));
    }
    Ok(out)
}

/// Reaches clients over UDP only (Fast DDS clients also announce shared-memory locators).
struct UdpOnly;

impl LocatorSelector for UdpOnly {
    fn select(&self, announced: &[Locator]) -> Locators {
        announced
            .iter()
            .filter(|l| l.kind == locator_kind::UDPV4 || l.kind == locator_kind::UDPV6)
            .copied()
            .collect()
    }
}

fn wall_clock_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// `tessera discovery-server ARGS`: runs until SIGINT/SIGTERM; returns the exit status.
pub fn main(prog: &str, args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{}", usage(prog));
        return 0;
    }
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{prog}: {e}");
            eprint!("{}", usage(prog));
            return EXIT_BAD_ARGS;
        }
    };
    match run(&a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{prog}: {e}");
            1
        }
    }
}

fn locator_of(addr: SocketAddr) -> Locator {
    match addr {
        SocketAddr::V4(a) => Locator::udpv4(*a.ip(), a.port()),
        SocketAddr::V6(a) => Locator::udpv6(*a.ip(), a.port()),
    }
}

fn run(a: &ServerArgs) -> std::io::Result<()> {
    let socket = UdpSocket::bind(SocketAddr::new(a.address, a.port))?;
    // Announce where clients reach us; "any" is announced as loopback (as a client's
    // `0.0.0.0` entry means 127.0.0.1).
    let announced = if a.address.is_unspecified() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), a.port)
    } else {
        SocketAddr::new(a.address, a.port)
    };
    crate::stop::install();
    let now = Instant::now();
    let mut engine = DiscoveryServerEngine::new(
        DsServerConfig {
            id: a.id,
            locators: vec![locator_of(announced)],
            selector: Box::new(UdpOnly),
            lease: tessera::rtps::discovery::ds_common::DS_LEASE,
            wall_clock_nanos: wall_clock_nanos(),
            backup: a.backup.is_some(),
            links: a
                .links
                .iter()
                .map(|(id, addr)| {
                    let mut l = Locators::new();
                    l.push(locator_of(*addr));
                    tessera::rtps::discovery::RemoteServer {
                        id: *id,
                        locators: l,
                    }
                })
                .collect(),
        },
        now,
    );
    let me = engine.prefix();
    if let Some(path) = &a.backup {
        match std::fs::read(path) {
            Ok(bytes) => match engine.restore(&bytes, Instant::now()) {
                Ok(n) => println!("restored {n} client(s) from {}", path.display()),
                Err(e) => {
                    // Kept aside for inspection; the server starts empty.
                    let bad = path.with_extension("bad");
                    let _ = std::fs::rename(path, &bad);
                    eprintln!("{}: {e}; moved to {}", path.display(), bad.display());
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    let mut saved = (engine.generation(), Instant::now());
    println!(
        "Discovery server {} listening on {}",
        fmt_prefix(me),
        announced
    );
    println!("Server is running");
    let mut buf = vec![0u8; 65536];
    let mut out = Vec::with_capacity(2048);
    let mut t = Transmit::new();
    let mut malformed = 0u64;
    let mut rejected = 0u64;
    // What peers got wrong is logged once a second at most.
    let mut last_warning: Option<Instant> = None;
    loop {
        if crate::stop::requested() {
            engine.shutdown(Instant::now());
            flush(&mut engine, &socket, me, &mut t, &mut out);
            println!("Discovery server stopped");
            return Ok(());
        }
        let now = Instant::now();
        let wait = engine
            .poll_timeout()
            .map_or(Duration::from_millis(200), |d| {
                d.saturating_duration_since(now)
            })
            .clamp(Duration::from_millis(1), Duration::from_millis(200));
        socket.set_read_timeout(Some(wait))?;
        match socket.recv_from(&mut buf) {
            Ok((n, _from)) => {
                let now = Instant::now();
                handle_datagram(&mut engine, &buf[..n], me, &mut malformed, now);
                // What else already waits is handled before anything is sent, so that the
                // samples a burst of datagrams brings go out together: one datagram per client
                // with several DATA and one HEARTBEAT, rather than one per sample.
                socket.set_nonblocking(true)?;
                for _ in 1..MAX_BATCH {
                    match socket.recv_from(&mut buf) {
                        Ok((n, _from)) => {
                            handle_datagram(&mut engine, &buf[..n], me, &mut malformed, now)
                        }
                        Err(_) => break,
                    }
                }
                socket.set_nonblocking(false)?;
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut
                    || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        if engine.poll_timeout().is_some_and(|d| d <= now) {
            engine.handle_timeout(now);
        }
        flush(&mut engine, &socket, me, &mut t, &mut out);
        while let Some(ev) = engine.poll_event() {
            match ev {
                DsServerEvent::ClientJoined(p) => println!("client {} joined", fmt_prefix(p)),
                DsServerEvent::ClientLeft { prefix, expired } => println!(
                    "client {} {}",
                    fmt_prefix(prefix),
                    if expired { "expired" } else { "left" }
                ),
            }
        }
        if let Some(path) = &a.backup {
            if engine.generation() != saved.0 && saved.1.elapsed() >= BACKUP_INTERVAL {
                if let Err(e) = save_backup(path, &engine.backup()) {
                    eprintln!("backup to {} failed: {e}", path.display());
                }
                saved = (engine.generation(), Instant::now());
            }
        }
        let quiet = last_warning.is_some_and(|t| t.elapsed() < Duration::from_secs(1));
        if !quiet && (engine.rejected() > rejected || malformed > 0) {
            last_warning = Some(Instant::now());
            rejected = engine.rejected();
            if malformed > 0 {
                eprintln!("dropped {malformed} malformed datagram(s)");
                malformed = 0;
            }
            eprintln!("rejected announcements so far: {:?}", engine.counters());
        }
    }
}

/// Received datagrams handled before the server sends (a burst's relays go out batched; the
/// bound keeps the server answering while clients keep it busy).
const MAX_BATCH: usize = 64;

/// Hands every submessage of one received datagram addressed to the server to the engine.
fn handle_datagram(
    engine: &mut DiscoveryServerEngine,
    bytes: &[u8],
    me: GuidPrefix,
    malformed: &mut u64,
    now: Instant,
) {
    let Ok(rx) = MessageReceiver::new(bytes) else {
        *malformed += 1;
        return;
    };
    for rs in rx {
        let Ok(rs) = rs else {
            *malformed += 1;
            break;
        };
        if rs.dest_prefix != GuidPrefix::UNKNOWN && rs.dest_prefix != me {
            continue;
        }
        if matches!(rs.submessage, Submessage::Unknown { .. }) {
            continue;
        }
        engine.handle_submessage(&rs, now);
    }
}

/// Changes are saved at most this often.
const BACKUP_INTERVAL: Duration = Duration::from_millis(100);

/// Replaces `path` atomically: a crash leaves the old backup or the new one, never a torn one
/// (and a torn one would fail its checksum anyway).
fn save_backup(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn flush(
    engine: &mut DiscoveryServerEngine,
    socket: &UdpSocket,
    me: GuidPrefix,
    t: &mut Transmit,
    out: &mut Vec<u8>,
) {
    let mut scratch = Vec::new();
    let now = Instant::now();
    while engine.poll_transmit(now, t) {
        let mut m = MessageBuilder::new(out, me);
        if let Some(dst) = t.dest.info_dst() {
            m.submessage(&Submessage::InfoDst(dst));
        }
        for sm in &t.submessages {
            m.submessage(&sm.as_submessage(&mut scratch));
        }
        for l in t.dest.locators().as_slice() {
            if let Some(addr) = l.to_socket_addr() {
                // Non-blocking enough for a discovery server: a lost datagram is repaired by
                // the reliable writers.
                let _ = socket.send_to(out, addr);
            }
        }
    }
}

fn fmt_prefix(p: GuidPrefix) -> String {
    p.0.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments_like_fastdds_discovery() {
        let a = parse_args(&s(&["-i", "0", "-l", "127.0.0.1", "-p", "11812"])).unwrap();
        assert_eq!(a.id, 0);
        assert_eq!(a.address, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(a.port, 11812);
        let a = parse_args(&s(&["--server-id", "3"])).unwrap();
        assert_eq!((a.id, a.port), (3, DEFAULT_SERVER_PORT));
        assert!(a.address.is_unspecified());
        assert!(parse_args(&s(&[])).is_err(), "-i is required");
        assert!(parse_args(&s(&["-i", "256"])).is_err());
        assert!(parse_args(&s(&["-i", "0", "-p", "0"])).is_err());
        assert!(parse_args(&s(&["-i", "0", "-x"])).is_err());
        let a = parse_args(&s(&[
            "-i",
            "1",
            "--link",
            "127.0.0.1:11811;127.0.0.1:11812",
        ]))
        .unwrap();
        assert_eq!(
            a.links,
            vec![(0, SocketAddr::from(([127, 0, 0, 1], 11811)))],
            "own id 1 skipped"
        );
        assert_eq!(parse_args(&s(&["-i", "2"])).unwrap().backup, None);
        assert_eq!(
            parse_args(&s(&["-i", "2", "-b"])).unwrap().backup,
            Some("tessera-ds-2.backup".into())
        );
        assert_eq!(
            parse_args(&s(&["-i", "2", "--backup-file", "/tmp/x"]))
                .unwrap()
                .backup,
            Some("/tmp/x".into())
        );
    }

    #[test]
    fn only_udp_locators_reach_clients() {
        let shm = Locator {
            kind: locator_kind::FASTDDS_SHM,
            port: 7411,
            address: [0; 16],
        };
        let udp = Locator::udpv4(Ipv4Addr::LOCALHOST, 7410);
        assert_eq!(UdpOnly.select(&[shm, udp]).as_slice(), &[udp]);
    }
}
