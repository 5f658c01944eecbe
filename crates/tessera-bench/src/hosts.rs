//! The network namespaces ("hosts") every benchmark process runs in, and their teardown.
//!
//! A [`Topology`] is a set of hosts made for one point of a run:
//! - [`Topology::single`]: one private namespace with only `lo` (multicast routed to it);
//! - [`Topology::lan`]: `n` namespaces joined by a bridge through veth pairs, each with `eth0`
//!   on a private /24, optionally with [`LinkShaping`] (random UDP loss with nftables, a rate
//!   limit with a `tbf` qdisc).
//!
//! [`Topology::command`] builds a [`Command`] whose child enters a host's namespace just before
//! `exec` (`setns` in `pre_exec`), so the child stays a direct child of this process: its pid and
//! its `wait4` resource usage are ours ([`super::procmon`]).
//!
//! # Names
//! Namespaces are `tb-<run>-h<i>`, the bridge `tb<run>br`, the host ends of the veth pairs
//! `tb<run>v<i>` (inside each namespace the other end is `eth0`). Interface names must fit
//! `IFNAMSIZ` (15 bytes), so run ids are short: [`new_run_id`] gives 6 hex digits; ids of 1 to 8
//! characters `[a-z0-9]` are accepted. Two live topologies must not share a run id.
//!
//! # Teardown and interrupts
//! Every namespace and link is created and recorded in a process-global registry under one
//! lock, and every child spawned by [`super::procmon::Proc`] is recorded with its pid. Dropping a
//! topology (also while unwinding) deletes what it made. [`install_interrupt_handler`] makes
//! SIGINT/SIGTERM/SIGHUP kill the registered children, delete the registered namespaces and
//! links, and exit with status 130; creation and spawning hold the registry lock, so nothing is
//! made behind the handler's back. [`cleanup_stale`] removes what a crashed run left behind.
//!
//! # Caveats
//! The children keep the parent's mount namespace, so `/sys/class/net` inside them still shows
//! the machine's interfaces (netlink, `getifaddrs` and sockets see the namespace's own). When
//! the `br_netfilter` module is loaded, bridged frames also pass the machine's iptables
//! `FORWARD` chain; a `DROP` policy there would cut the LAN.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

mod owner;
pub use owner::{is_stale, owner_of, Owner, OWNERS_DIR};

/// Prefix of every namespace a bench topology creates (and [`cleanup_stale`] removes).
pub const NETNS_PREFIX: &str = "tb-";
/// Prefix of every link (bridge, veth) a bench topology creates (and [`cleanup_stale`] removes).
pub const LINK_PREFIX: &str = "tb";

/// The name prefixes of one tool's namespaces and links: the bench's cleanup only looks at
/// its own ([`BENCH`]), so other tools on this host code ([`JEPSEN`]) are never its stale hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// Namespaces: `<netns><run_id>-h<i>`.
    pub netns: &'static str,
    /// Links: `<link><run_id>br`, `<link><run_id>v<i>` (two bytes, so names fit 15).
    pub link: &'static str,
}

/// `tessera bench`'s hosts.
pub const BENCH: Prefix = Prefix {
    netns: NETNS_PREFIX,
    link: LINK_PREFIX,
};

/// The `tessera-jepsen` fault harness's hosts.
pub const JEPSEN: Prefix = Prefix {
    netns: "tj-",
    link: "tj",
};
/// Longest accepted run id: `tb` + id + `v` + three digits must fit 15 bytes.
pub const MAX_RUN_ID_LEN: usize = 8;
/// Most hosts on one LAN (one /24).
pub const MAX_LAN_HOSTS: usize = 254;

/// Faults and limits applied to every host's link of a [`Topology::lan`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkShaping {
    /// Percentage (0–100, fractions to 0.01 %) of UDP frames (IP fragments, before reassembly) each host drops on input
    /// (nftables `numgen random mod 10000`); loopback traffic is exempt. 0 = no loss.
    pub loss_pct: f64,
    /// Egress rate limit of each host's `eth0` in Mbit/s (a `tbf` qdisc); `None` = no limit.
    pub rate_mbit: Option<f64>,
}

impl LinkShaping {
    /// True when nothing is shaped.
    pub fn is_none(&self) -> bool {
        self.loss_pct == 0.0 && self.rate_mbit.is_none()
    }
}

/// One host: a network namespace and the interface its processes use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Network namespace name (`/run/netns/<name>`).
    pub name: String,
    /// Interface the middleware should use: `lo` or `eth0`.
    pub iface: String,
    /// The host's address on that interface.
    pub addr: Ipv4Addr,
}

/// Why a topology could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A tool is not installed.
    #[error("`{tool}` not found: install the Debian package `{package}`")]
    ToolMissing {
        /// The program.
        tool: &'static str,
        /// The Debian package providing it.
        package: &'static str,
    },
    /// Network namespaces need root.
    #[error(
        "network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN); the effective uid is {0}"
    )]
    NotRoot(u32),
    /// A command ran and failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A command could not be started (other than not installed).
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The run id does not fit the interface-name limit.
    #[error("invalid run id {0:?}: 1 to 8 characters a-z, 0-9")]
    InvalidRunId(String),
    /// Bad arguments (host count, loss, rate).
    #[error("invalid topology: {0}")]
    Invalid(String),
    /// An interrupt is cleaning up; nothing more is created.
    #[error("interrupted")]
    Interrupted,
    /// The signal handler could not be installed.
    #[error("cannot install the interrupt handler: {0}")]
    Handler(#[from] ctrlc::Error),
}

// ---------------------------------------------------------------------------------------------
// Registry of live resources (for the interrupt handler).

#[derive(Default)]
struct Resources {
    links: Vec<String>,
    netns: Vec<String>,
}

struct Registry {
    interrupted: bool,
    topologies: BTreeMap<u64, Resources>,
    pids: BTreeSet<u32>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    interrupted: false,
    topologies: BTreeMap::new(),
    pids: BTreeSet::new(),
});

static NEXT_TOPOLOGY: AtomicU64 = AtomicU64::new(1);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawns `cmd` under the registry lock and records the child's pid, so an interrupt either
/// happens before the spawn (and the spawn is refused) or sees the pid.
pub(crate) fn spawn_registered(cmd: &mut Command) -> io::Result<Child> {
    let mut reg = registry();
    if reg.interrupted {
        return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
    }
    let child = cmd.spawn()?;
    reg.pids.insert(child.id());
    Ok(child)
}

/// Forgets a child's pid; call once it has exited and before reaping it (a zombie's pid is
/// never reused, so the interrupt handler never signals a stranger).
pub(crate) fn unregister_pid(pid: u32) {
    registry().pids.remove(&pid);
}

/// Number of children currently registered (for diagnostics and tests).
pub fn registered_children() -> usize {
    registry().pids.len()
}

/// Installs a handler for SIGINT, SIGTERM and SIGHUP that SIGKILLs every registered child (and
/// its process group), deletes every registered namespace and link, prints
/// `interrupted: cleaned up N namespaces, M processes` on stderr and exits with status 130.
/// Calling it again is a no-op.
pub fn install_interrupt_handler() -> Result<(), HostError> {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let r = ctrlc::set_handler(|| {
        // The guard is never dropped: creation and spawning stay blocked until the exit.
        let mut reg = registry();
        reg.interrupted = true;
        let (namespaces, processes) = cleanup_registered(&mut reg);
        eprintln!("interrupted: cleaned up {namespaces} namespaces, {processes} processes");
        std::process::exit(130);
    });
    if let Err(e) = r {
        INSTALLED.store(false, Ordering::SeqCst);
        return Err(e.into());
    }
    Ok(())
}

/// Kills every registered child and deletes every registered topology; returns
/// (namespaces deleted, processes killed).
fn cleanup_registered(reg: &mut Registry) -> (usize, usize) {
    let mut killed = 0;
    for &pid in &reg.pids {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            continue;
        };
        // SAFETY: kill has no memory-safety preconditions. The children lead their own
        // process groups (procmon), so -pid reaches their descendants too.
        let group = unsafe { libc::kill(-pid, libc::SIGKILL) } == 0;
        // SAFETY: as above.
        let single = unsafe { libc::kill(pid, libc::SIGKILL) } == 0;
        if group || single {
            killed += 1;
        }
    }
    // Reap them, so that no zombie outlives the run (pid 1 of a container may never reap).
    let mut left: Vec<libc::pid_t> = reg
        .pids
        .iter()
        .filter_map(|&p| libc::pid_t::try_from(p).ok())
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        left.retain(|&pid| {
            let mut status = 0;
            // SAFETY: waitpid writes only to `status`, a valid local.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            r == 0
        });
        if !left.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    reg.pids.clear();
    let mut namespaces = 0;
    for (_, res) in std::mem::take(&mut reg.topologies) {
        namespaces += delete_resources(&res.links, &res.netns);
    }
    (namespaces, killed)
}

/// Deletes every namespace named `tb-*` (killing the processes still inside) and every link
/// named `tb*` that a crashed or killed run left behind, except those of live topologies of
/// this process and those whose recorded creator ([`owner_of`]) still runs: another bench
/// run's. Names without a record (made before records existed) count as stale. Returns
/// (namespaces deleted, links deleted).
pub fn cleanup_stale() -> (usize, usize) {
    let dir = std::path::Path::new(OWNERS_DIR);
    let reg = registry();
    let live: BTreeSet<&str> = reg
        .topologies
        .values()
        .flat_map(|r| r.links.iter().chain(r.netns.iter()))
        .map(String::as_str)
        .collect();
    let links: Vec<String> = list_links()
        .into_iter()
        .filter(|l| l.starts_with(LINK_PREFIX) && !live.contains(l.as_str()) && is_stale(dir, l))
        .collect();
    let netns: Vec<String> = list_netns()
        .into_iter()
        .filter(|n| n.starts_with(NETNS_PREFIX) && !live.contains(n.as_str()) && is_stale(dir, n))
        .collect();
    let mut links_deleted = 0;
    for l in &links {
        if delete_link(l) {
            links_deleted += 1;
        }
    }
    let mut netns_deleted = 0;
    for n in &netns {
        kill_netns_pids(n);
        if delete_netns(n) {
            netns_deleted += 1;
        }
    }
    drop(reg);
    (netns_deleted, links_deleted)
}

/// Names of the namespaces in `/run/netns` (`ip netns list`).
pub fn list_netns() -> Vec<String> {
    match run("ip", &["netns", "list"], None) {
        Ok(out) => parse_netns_list(&out),
        Err(_) => Vec::new(),
    }
}

/// Names of the links of this process's namespace (`ip -o link show`).
pub fn list_links() -> Vec<String> {
    match run("ip", &["-o", "link", "show"], None) {
        Ok(out) => parse_link_list(&out),
        Err(_) => Vec::new(),
    }
}

fn parse_netns_list(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn parse_link_list(out: &str) -> Vec<String> {
    // "12: tbabcdefv0@if2: <BROADCAST,...> ..."
    out.lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Running tools.

fn package_of(tool: &str) -> &'static str {
    match tool {
        "nft" => "nftables",
        _ => "iproute2",
    }
}

/// Runs a tool to completion; `Ok(stdout)` on success.
fn run(tool: &'static str, args: &[&str], stdin: Option<&str>) -> Result<String, HostError> {
    run_cmd(Command::new(tool), tool, args, stdin)
}

fn run_cmd(
    mut cmd: Command,
    tool: &'static str,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, HostError> {
    let line = format!("{tool} {}", args.join(" "));
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            HostError::ToolMissing {
                tool,
                package: package_of(tool),
            }
        } else {
            HostError::Spawn {
                command: line.clone(),
                source: e,
            }
        }
    })?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A write error shows up as the tool's failure below.
        let _ = pipe.write_all(text.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| HostError::Spawn {
        command: line.clone(),
        source: e,
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(HostError::Command {
            command: line,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// A command that enters namespace `netns` before exec (see [`Topology::command`]).
fn netns_command(netns: &str, program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new(program);
    let ns = File::open(format!("/run/netns/{netns}"))
        .map_err(|e| e.raw_os_error().unwrap_or(libc::ENOENT));
    let enter = move || match &ns {
        Ok(file) => {
            // SAFETY: plain system call on a valid, open descriptor owned by this closure.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        }
        Err(code) => Err(io::Error::from_raw_os_error(*code)),
    };
    // SAFETY: `enter` runs between fork and exec; it only calls setns(2), which is
    // async-signal-safe, and allocates nothing. The descriptor stays open as long as the
    // Command (which owns the closure) lives; it is close-on-exec.
    unsafe {
        cmd.pre_exec(enter);
    }
    cmd
}

fn ignorable(e: &HostError) -> bool {
    match e {
        HostError::Command { stderr, .. } => {
            stderr.contains("Cannot find device")
                || stderr.contains("No such file")
                || stderr.contains("does not exist")
        }
        _ => false,
    }
}

/// Deletes a link; true when it was deleted. Missing links are silently skipped.
fn delete_link(name: &str) -> bool {
    match run("ip", &["link", "del", name], None) {
        Ok(_) => {
            owner::forget(std::path::Path::new(OWNERS_DIR), name);
            true
        }
        Err(e) => {
            if !ignorable(&e) {
                eprintln!("bench hosts: teardown: {e}");
            }
            false
        }
    }
}

/// Deletes a namespace; true when it was deleted. Missing namespaces are silently skipped.
fn delete_netns(name: &str) -> bool {
    match run("ip", &["netns", "del", name], None) {
        Ok(_) => {
            owner::forget(std::path::Path::new(OWNERS_DIR), name);
            true
        }
        Err(e) => {
            if !ignorable(&e) {
                eprintln!("bench hosts: teardown: {e}");
            }
            false
        }
    }
}

/// SIGKILLs the processes still in a namespace, so it does not live on detached.
fn kill_netns_pids(name: &str) {
    if let Ok(out) = run("ip", &["netns", "pids", name], None) {
        for pid in out
            .split_whitespace()
            .filter_map(|p| p.parse::<libc::pid_t>().ok())
        {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Deletes links first (deleting a veth end removes its peer inside the namespace), then
/// namespaces. Returns the number of namespaces deleted.
fn delete_resources(links: &[String], netns: &[String]) -> usize {
    for l in links.iter().rev() {
        delete_link(l);
    }
    let mut n = 0;
    for ns in netns {
        kill_netns_pids(ns);
        if delete_netns(ns) {
            n += 1;
        }
    }
    n
}

// ---------------------------------------------------------------------------------------------
// Topologies.

/// A new run id: 6 lowercase hex digits mixed from the clock, the pid and a counter.
pub fn new_run_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut x = nanos ^ (u64::from(std::process::id()) << 40) ^ n.wrapping_mul(0x9E37_79B9);
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    format!("{:06x}", x & 0xff_ffff)
}

fn check_run_id(run_id: &str) -> Result<(), HostError> {
    let ok = !run_id.is_empty()
        && run_id.len() <= MAX_RUN_ID_LEN
        && run_id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(HostError::InvalidRunId(run_id.to_string()))
    }
}

fn check_root() -> Result<(), HostError> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        Ok(())
    } else {
        Err(HostError::NotRoot(uid))
    }
}

/// The /24 of a LAN: `10.X.Y.0`, derived from the run id (FNV-1a) so concurrent runs differ.
pub fn lan_subnet(run_id: &str) -> [u8; 3] {
    let mut h: u32 = 0x811c_9dc5;
    for b in run_id.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    // 10.1.0.0 – 10.250.255.0: clear of 10.0/16 and 10.255/16, which are popular elsewhere.
    [10, 1 + ((h >> 8) % 250) as u8, (h & 0xff) as u8]
}

/// Namespaces ("hosts") for one point of a run; deleted on [`Topology::teardown`] or drop.
#[derive(Debug)]
pub struct Topology {
    id: u64,
    run_id: String,
    prefix: Prefix,
    hosts: Vec<Host>,
    bridge: Option<String>,
    veths: Vec<String>,
    links: Vec<String>,
    netns: Vec<String>,
}

impl Topology {
    fn empty(run_id: &str, prefix: Prefix) -> Topology {
        Topology {
            id: NEXT_TOPOLOGY.fetch_add(1, Ordering::Relaxed),
            run_id: run_id.to_string(),
            prefix,
            hosts: Vec::new(),
            bridge: None,
            veths: Vec::new(),
            links: Vec::new(),
            netns: Vec::new(),
        }
    }

    /// Creates a namespace and records it, both under the registry lock (so an interrupt sees
    /// it or it is never made).
    fn add_netns(&mut self, name: &str) -> Result<(), HostError> {
        let mut reg = registry();
        if reg.interrupted {
            return Err(HostError::Interrupted);
        }
        // Recorded only once made: a name that already exists belongs to someone else.
        run("ip", &["netns", "add", name], None)?;
        owner::record(std::path::Path::new(OWNERS_DIR), name);
        self.netns.push(name.to_string());
        reg.topologies
            .entry(self.id)
            .or_default()
            .netns
            .push(name.to_string());
        Ok(())
    }

    /// Creates a link with `ip <args>` and records it, both under the registry lock.
    fn add_link(&mut self, name: &str, args: &[&str]) -> Result<(), HostError> {
        let mut reg = registry();
        if reg.interrupted {
            return Err(HostError::Interrupted);
        }
        run("ip", args, None)?;
        owner::record(std::path::Path::new(OWNERS_DIR), name);
        self.links.push(name.to_string());
        reg.topologies
            .entry(self.id)
            .or_default()
            .links
            .push(name.to_string());
        Ok(())
    }

    /// One private host `tb-<run_id>-h0`: only `lo`, up, multicast on, `224.0.0.0/4` routed to
    /// it; the host's address is 127.0.0.1 on `lo`.
    pub fn single(run_id: &str) -> Result<Topology, HostError> {
        check_run_id(run_id)?;
        check_root()?;
        let mut t = Topology::empty(run_id, BENCH);
        let ns = format!("{NETNS_PREFIX}{run_id}-h0");
        t.add_netns(&ns)?;
        run(
            "ip",
            &["-n", &ns, "link", "set", "lo", "up", "multicast", "on"],
            None,
        )?;
        run(
            "ip",
            &["-n", &ns, "route", "add", "224.0.0.0/4", "dev", "lo"],
            None,
        )?;
        t.hosts.push(Host {
            name: ns,
            iface: "lo".to_string(),
            addr: Ipv4Addr::LOCALHOST,
        });
        Ok(t)
    }

    /// `n` hosts `tb-<run_id>-h<i>` on one bridge `tb<run_id>br`, each through a veth pair
    /// (`tb<run_id>v<i>` outside, `eth0` inside) with address `10.X.Y.<i+1>/24`
    /// ([`lan_subnet`]), `lo` up and `224.0.0.0/4` routed via `eth0`. The bridge does no
    /// multicast snooping (it floods multicast). `shaping` applies to every host.
    pub fn lan(run_id: &str, n: usize, shaping: &LinkShaping) -> Result<Topology, HostError> {
        Topology::lan_with(BENCH, run_id, n, shaping)
    }

    /// [`Topology::lan`] with another tool's name prefixes.
    pub fn lan_with(
        prefix: Prefix,
        run_id: &str,
        n: usize,
        shaping: &LinkShaping,
    ) -> Result<Topology, HostError> {
        check_run_id(run_id)?;
        if n == 0 || n > MAX_LAN_HOSTS {
            return Err(HostError::Invalid(format!(
                "{n} hosts (1 to {MAX_LAN_HOSTS})"
            )));
        }
        if !(shaping.loss_pct.is_finite() && (0.0..=100.0).contains(&shaping.loss_pct)) {
            return Err(HostError::Invalid(format!(
                "loss {} % (0 to 100)",
                shaping.loss_pct
            )));
        }
        if let Some(r) = shaping.rate_mbit {
            if !(r.is_finite() && r > 0.0) {
                return Err(HostError::Invalid(format!("rate {r} Mbit/s (must be > 0)")));
            }
        }
        check_root()?;
        let mut t = Topology::empty(run_id, prefix);
        let bridge = format!("{}{run_id}br", prefix.link);
        t.add_link(
            &bridge,
            &[
                "link",
                "add",
                &bridge,
                "type",
                "bridge",
                "mcast_snooping",
                "0",
            ],
        )?;
        run("ip", &["link", "set", &bridge, "up"], None)?;
        t.bridge = Some(bridge.clone());
        let [a, b, c] = lan_subnet(run_id);
        for i in 0..n {
            let ns = format!("{}{run_id}-h{i}", prefix.netns);
            let veth = format!("{}{run_id}v{i}", prefix.link);
            let addr = Ipv4Addr::new(a, b, c, (i + 1) as u8);
            t.add_netns(&ns)?;
            t.add_link(
                &veth,
                &[
                    "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
                ],
            )?;
            t.veths.push(veth.clone());
            run("ip", &["link", "set", &veth, "master", &bridge, "up"], None)?;
            let cidr = format!("{addr}/24");
            run(
                "ip",
                &["-n", &ns, "addr", "add", &cidr, "dev", "eth0"],
                None,
            )?;
            run(
                "ip",
                &["-n", &ns, "link", "set", "eth0", "up", "multicast", "on"],
                None,
            )?;
            run("ip", &["-n", &ns, "link", "set", "lo", "up"], None)?;
            run(
                "ip",
                &["-n", &ns, "route", "add", "224.0.0.0/4", "dev", "eth0"],
                None,
            )?;
            apply_shaping(&ns, shaping)?;
            t.hosts.push(Host {
                name: ns,
                iface: "eth0".to_string(),
                addr,
            });
        }
        Ok(t)
    }

    /// The name prefixes of its namespaces and links.
    pub fn prefix(&self) -> Prefix {
        self.prefix
    }

    /// The run id the names derive from.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The hosts, in index order.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The bridge of a LAN (`None` for [`Topology::single`]).
    pub fn bridge(&self) -> Option<&str> {
        self.bridge.as_deref()
    }

    /// A command running `program` inside host `host`'s namespace. The namespace file is
    /// opened now; the child calls `setns(CLONE_NEWNET)` after fork, before exec, so it is a
    /// direct child of this process. Its environment has `TESSERA_IN_NETNS=1`,
    /// `TESSERA_INTERFACE=<iface>`, a `CYCLONEDDS_URI` selecting that interface with
    /// multicast, and `TESSERA_TRANSPORTS=udp4` unless the bench's own environment sets it;
    /// callers may override them. If the namespace is gone, spawning fails.
    ///
    /// # Panics
    /// When `host` is not an index of [`Topology::hosts`].
    pub fn command(&self, host: usize, program: impl AsRef<OsStr>) -> Command {
        let h = &self.hosts[host];
        let mut cmd = netns_command(&h.name, program);
        cmd.env("TESSERA_IN_NETNS", "1")
            .env("TESSERA_INTERFACE", &h.iface)
            .env("CYCLONEDDS_URI", cyclone_uri(&h.iface));
        // The figures compare UDP stacks until the benchmark has a transport axis: Tessera's
        // default shared memory between processes of one host is off unless asked for.
        if std::env::var_os("TESSERA_TRANSPORTS").is_none() {
            cmd.env("TESSERA_TRANSPORTS", "udp4");
        }
        cmd
    }

    /// Cuts host `host` off the LAN (`true`) or reconnects it (`false`) by setting the host end
    /// of its veth down or up — a network partition. Fails for [`Topology::single`].
    pub fn set_partitioned(&self, host: usize, partitioned: bool) -> Result<(), HostError> {
        let veth = self
            .veths
            .get(host)
            .ok_or_else(|| HostError::Invalid(format!("host {host} has no link to partition")))?;
        let state = if partitioned { "down" } else { "up" };
        run("ip", &["link", "set", veth, state], None).map(drop)
    }

    /// Kills the processes still inside the hosts, deletes the veth pairs, the bridge and the
    /// namespaces. Idempotent; best effort: failures are logged on stderr.
    pub fn teardown(&mut self) {
        // Under the lock, so an interrupt does not race the deletion.
        let mut reg = registry();
        reg.topologies.remove(&self.id);
        let links = std::mem::take(&mut self.links);
        let netns = std::mem::take(&mut self.netns);
        delete_resources(&links, &netns);
        drop(reg);
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// The `CYCLONEDDS_URI` that makes Cyclone DDS use `iface` with multicast.
pub fn cyclone_uri(iface: &str) -> String {
    format!(
        "<General><Interfaces><NetworkInterface name=\"{iface}\" multicast=\"true\"/></Interfaces></General>"
    )
}

/// The nftables script dropping `loss_pct` % of the UDP frames arriving on non-loopback
/// interfaces; `None` when there is no loss.
///
/// The rule sits in prerouting ahead of IP reassembly (priority -500, defragmentation is at
/// -400) and matches on the IP header, so every fragment of a large datagram is dropped on its
/// own, as on a real network: a datagram of k fragments is lost with probability 1-(1-p)^k.
/// A rule in the input hook would see reassembled datagrams and understate the loss of large
/// datagrams k-fold.
pub fn loss_ruleset(loss_pct: f64) -> Option<String> {
    let n = (loss_pct * 100.0).round().clamp(0.0, 10_000.0) as u32;
    if n == 0 {
        return None;
    }
    Some(format!(
        "table inet tb_shaping {{\n\
         \tchain prerouting {{\n\
         \t\ttype filter hook prerouting priority -500; policy accept;\n\
         \t\tiifname != \"lo\" ip protocol udp numgen random mod 10000 < {n} drop\n\
         \t}}\n\
         }}\n"
    ))
}

/// The `tbf` token-bucket size for a rate: a 4 ms worth of bytes (enough for a 250 Hz timer),
/// at least ten full-size frames.
pub fn tbf_burst_bytes(rate_mbit: f64) -> u64 {
    let per_s = rate_mbit * 1e6 / 8.0;
    ((per_s / 250.0).ceil() as u64).max(10 * 1514)
}

fn apply_shaping(ns: &str, shaping: &LinkShaping) -> Result<(), HostError> {
    if let Some(script) = loss_ruleset(shaping.loss_pct) {
        run_cmd(netns_command(ns, "nft"), "nft", &["-f", "-"], Some(&script))?;
    }
    if let Some(rate) = shaping.rate_mbit {
        let kbit = ((rate * 1000.0).round() as u64).max(1);
        let rate = format!("{kbit}kbit");
        let burst = tbf_burst_bytes(kbit as f64 / 1000.0).to_string();
        run(
            "tc",
            &[
                "-n", ns, "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", &rate, "burst",
                &burst, "latency", "50ms",
            ],
            None,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_short_hex_and_differ() {
        let a = new_run_id();
        let b = new_run_id();
        assert_eq!(a.len(), 6);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
        assert!(check_run_id(&a).is_ok());
        assert!(check_run_id("ABC").is_err());
        assert!(check_run_id("").is_err());
        assert!(check_run_id("123456789").is_err());
    }

    #[test]
    fn names_fit_ifnamsiz() {
        let id = "abcdefgh";
        assert!(format!("{LINK_PREFIX}{id}v{}", MAX_LAN_HOSTS - 1).len() <= 15);
        assert!(format!("{LINK_PREFIX}{id}br").len() <= 15);
    }

    #[test]
    fn subnets_are_private_and_spread() {
        let a = lan_subnet("000001");
        let b = lan_subnet("000002");
        assert_eq!(a[0], 10);
        assert!((1..=250).contains(&a[1]));
        assert_ne!(a, b);
    }

    #[test]
    fn loss_rules_use_ten_thousandths() {
        assert_eq!(loss_ruleset(0.0), None);
        assert!(loss_ruleset(50.0)
            .unwrap()
            .contains("mod 10000 < 5000 drop"));
        assert!(loss_ruleset(0.25).unwrap().contains("< 25 drop"));
        assert!(loss_ruleset(100.0).unwrap().contains("< 10000 drop"));
    }

    #[test]
    fn tbf_burst_is_sensible() {
        assert_eq!(tbf_burst_bytes(1.0), 15140);
        assert_eq!(tbf_burst_bytes(100.0), 50_000);
    }

    #[test]
    fn parses_ip_listings() {
        assert_eq!(
            parse_netns_list("tb-abc-h1 (id: 2)\ntb-abc-h0\nother\n"),
            vec!["tb-abc-h1", "tb-abc-h0", "other"]
        );
        let links = "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue\n\
                     7: tbabcbr: <BROADCAST,MULTICAST,UP> mtu 1500\n\
                     8: tbabcv0@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master tbabcbr\n";
        assert_eq!(parse_link_list(links), vec!["lo", "tbabcbr", "tbabcv0"]);
    }

    #[test]
    fn cyclone_uri_names_the_interface() {
        assert_eq!(
            cyclone_uri("eth0"),
            "<General><Interfaces><NetworkInterface name=\"eth0\" multicast=\"true\"/></Interfaces></General>"
        );
    }
}
