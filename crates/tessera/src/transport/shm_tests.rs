//! The shared-memory transport without sockets: segments in a private directory under
//! `/dev/shm` (or `/dev/shm` itself where that is the point), two transports of one process or a
//! child process standing in for another participant.

use super::*;
use crossbeam_channel::{unbounded, Receiver};
use std::os::unix::fs::PermissionsExt;

/// A fresh directory on the shm tmpfs, removed when dropped.
pub(crate) struct TestDir(pub(crate) PathBuf);

impl TestDir {
    pub(crate) fn new(tag: &str) -> TestDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let d = PathBuf::from(SHM_DIR).join(format!(
            "tsrtest-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        TestDir(d)
    }

    fn config(&self) -> ShmConfig {
        ShmConfig {
            dir: self.0.clone(),
            segment_bytes: 1 << 20,
            stall_timeout: Duration::from_millis(100),
            // The spin path (the default sleeps at once, which the participant tests cover).
            spin: Duration::from_micros(50),
            ..ShmConfig::default()
        }
    }

    pub(crate) fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn collector() -> (Arc<dyn DatagramHandler>, Receiver<Vec<u8>>) {
    let (tx, rx) = unbounded();
    let h = move |d: &[u8], from: Locator, ch: Channel| {
        assert_eq!(from.kind, locator_kind::TESSERA_SHM);
        assert_eq!(ch, Channel::UserUnicast);
        assert!(recv::on_receive_thread());
        let _ = tx.send(d.to_vec());
    };
    (Arc::new(h), rx)
}

fn next(rx: &Receiver<Vec<u8>>) -> Vec<u8> {
    rx.recv_timeout(Duration::from_secs(5))
        .expect("no datagram within 5 s")
}

#[test]
fn two_participants_exchange_datagrams_of_every_size() {
    let dir = TestDir::new("pair");
    let a = ShmTransport::new(3, dir.config()).unwrap();
    let b = ShmTransport::new(3, dir.config()).unwrap();
    let (ha, rxa) = collector();
    let (hb, rxb) = collector();
    let _ra = a.start(ha).unwrap();
    let _rb = b.start(hb.clone()).unwrap();
    assert!(matches!(b.start(hb), Err(TransportError::AlreadyStarted)));
    let (la, lb) = (a.locators().default_unicast, b.locators().default_unicast);
    assert_eq!(la.kind, locator_kind::TESSERA_SHM);
    assert_eq!(a.locators().metatraffic_unicast, la);
    assert!(a.reaches(&lb) && b.reaches(&la) && a.reaches(&la));
    assert!(a.spdp_destinations().is_empty());
    let max = a.max_datagram_size();
    assert!(max >= 65507, "carries what UDP carries: {max}");
    for len in [0, 1, 16, 4096, max] {
        let d: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        a.send_to(&d, &lb).unwrap();
        assert_eq!(next(&rxb), d);
        b.try_send_to(&d, &la).unwrap();
        assert_eq!(next(&rxa), d);
    }
    let too_big = vec![0u8; max + 1];
    assert_eq!(
        a.try_send_to(&too_big, &lb).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    // In parts: each copied into the slot, the datagram whole; too large in total refused.
    let big: Vec<u8> = (0..max - 8).map(|i| (i % 253) as u8).collect();
    let parts: [&[u8]; 3] = [b"head", &big, b"tail"];
    a.try_send_parts_marked(&parts, &lb, 0).unwrap();
    assert_eq!(next(&rxb), parts.concat());
    assert_eq!(
        a.try_send_parts_marked(&[&big, b"tail", b"tail!"], &lb, 0)
            .unwrap_err()
            .kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(a.stats().send.datagrams.load(Ordering::Relaxed), 6);
    assert_eq!(b.stats().recv.datagrams.load(Ordering::Relaxed), 6);
}

#[test]
fn locators_of_other_hosts_namespaces_and_domains_are_not_reached() {
    let dir = TestDir::new("reach");
    let a = ShmTransport::new(4, dir.config()).unwrap();
    let b = ShmTransport::new(4, dir.config()).unwrap();
    let lb = b.locators().default_unicast;
    let mut other_host = lb;
    other_host.address[0] ^= 1;
    let mut other_domain = lb;
    other_domain.address[11] ^= 1;
    let mut gone = lb;
    gone.port ^= 0x8000_0000;
    let mut v4 = lb;
    v4.kind = locator_kind::UDPV4;
    for l in [other_host, other_domain, gone, v4] {
        assert!(!a.reaches(&l), "{l:?}");
        // Unreachable destinations are skipped, not errors.
        a.try_send_to(b"x", &l).unwrap();
    }
    assert_eq!(a.stats().send.ignored.load(Ordering::Relaxed), 4);
    // A transport of another domain does not reach b even with b's own locator.
    let c = ShmTransport::new(5, dir.config()).unwrap();
    assert!(!c.reaches(&lb));
    // Nor does one whose identity leaves the network namespace out, while the other's has it.
    let across = ShmConfig {
        across_network_namespaces: true,
        ..dir.config()
    };
    let d = ShmTransport::new(4, across.clone()).unwrap();
    let e = ShmTransport::new(4, across).unwrap();
    assert!(!d.reaches(&lb) && !a.reaches(&d.locators().default_unicast));
    assert!(d.reaches(&e.locators().default_unicast));
}

#[test]
fn the_segment_is_private_and_removed_on_drop() {
    // In /dev/shm itself: that is where nothing may be left behind.
    let t = ShmTransport::new(7, ShmConfig::default()).unwrap();
    let path = t.segment_path().to_path_buf();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("tessera-7-"), "{name}");
    assert_eq!(path.parent().unwrap(), Path::new(SHM_DIR));
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        meta.len() as usize,
        DEFAULT_SEGMENT_BYTES + super::super::shm_ring::HEADER_SIZE
    );
    let port = t.locators().default_unicast.port;
    assert_eq!(name, segment_name(7, port));
    drop(t);
    assert!(!path.exists(), "{} left behind", path.display());
}

/// A peer's segment that another user could read, or whose header is scribbled, is refused
/// and counted.
#[test]
fn segments_with_open_modes_or_bad_headers_are_refused() {
    let dir = TestDir::new("refuse");
    let a = ShmTransport::new(6, dir.config()).unwrap();
    let b = ShmTransport::new(6, dir.config()).unwrap();
    let lb = b.locators().default_unicast;
    std::fs::set_permissions(b.segment_path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(!a.reaches(&lb));
    let c = ShmTransport::new(6, dir.config()).unwrap();
    let lc = c.locators().default_unicast;
    // Scribble c's magic through the file.
    std::fs::OpenOptions::new()
        .write(true)
        .open(c.segment_path())
        .and_then(|f| std::os::unix::fs::FileExt::write_at(&f, b"garbage!", 0))
        .unwrap();
    assert!(!a.reaches(&lc));
    assert_eq!(a.shm_stats().bad_peer_segments.load(Ordering::Relaxed), 2);
}

/// A writer killed between its claim and its commit (simulated: a claim never committed) holds
/// the receiver up for the stall timeout, no longer; what follows is delivered.
#[test]
fn a_writer_dead_mid_write_does_not_block_the_receiver() {
    let dir = TestDir::new("midwrite");
    let a = ShmTransport::new(8, dir.config()).unwrap();
    let b = ShmTransport::new(8, dir.config()).unwrap();
    let (hb, rxb) = collector();
    let _rb = b.start(hb).unwrap();
    let lb = b.locators().default_unicast;
    a.send_to(b"before", &lb).unwrap();
    assert_eq!(next(&rxb), b"before");
    a.peer(&lb).unwrap().claim_and_abandon();
    let t0 = Instant::now();
    a.send_to(b"after", &lb).unwrap();
    assert_eq!(next(&rxb), b"after");
    let held = t0.elapsed();
    assert!(
        held >= Duration::from_millis(90),
        "the stall was not waited for: {held:?}"
    );
    assert!(held < Duration::from_secs(2), "held up for {held:?}");
    assert_eq!(b.shm_stats().ring.skipped.load(Ordering::Relaxed), 1);
    for i in 0..300u32 {
        a.send_to(&i.to_le_bytes(), &lb).unwrap();
        assert_eq!(next(&rxb), i.to_le_bytes());
    }
}

/// A panicking handler is counted; reception goes on.
#[test]
fn a_panicking_handler_does_not_end_reception() {
    let dir = TestDir::new("panic");
    let a = ShmTransport::new(9, dir.config()).unwrap();
    let b = ShmTransport::new(9, dir.config()).unwrap();
    let (tx, rx) = unbounded();
    let h = move |d: &[u8], _: Locator, _: Channel| {
        assert_ne!(d, b"boom", "handler bug");
        let _ = tx.send(d.to_vec());
    };
    let _rb = b.start(Arc::new(h)).unwrap();
    let lb = b.locators().default_unicast;
    a.send_to(b"boom", &lb).unwrap();
    a.send_to(b"fine", &lb).unwrap();
    assert_eq!(next(&rx), b"fine");
    assert_eq!(b.stats().recv.handler_panics.load(Ordering::Relaxed), 1);
}

/// A full ring says WouldBlock to non-blocking sends; a blocking send waits for the reader.
#[test]
fn a_full_ring_blocks_only_blocking_sends() {
    let dir = TestDir::new("full");
    let a = ShmTransport::new(10, dir.config()).unwrap();
    let b = ShmTransport::new(10, dir.config()).unwrap();
    let lb = b.locators().default_unicast;
    let slots = b.own.ring.geometry().slot_count();
    for _ in 0..slots {
        a.try_send_to(b"fill", &lb).unwrap();
    }
    assert_eq!(
        a.try_send_to(b"more", &lb).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    assert_eq!(a.stats().send.would_block.load(Ordering::Relaxed), 1);
    // The reader starts late; the blocking send gets through once it drains.
    let (hb, rxb) = collector();
    let r = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        let rb = b.start(hb).unwrap();
        (b, rb)
    });
    a.send_to(b"last", &lb).unwrap();
    let got: Vec<Vec<u8>> = (0..=slots).map(|_| next(&rxb)).collect();
    assert_eq!(got.last().unwrap(), b"last");
    drop(r.join().unwrap());
}

const CHILD_DIR: &str = "TESSERA_SHM_TEST_CHILD_DIR";

/// Not a test of its own: the child process of the kill -9 test (it creates a segment and
/// waits to be killed). Without the parent's variable it returns at once.
#[test]
#[ignore = "child process of a_participant_killed_with_sigkill_is_reclaimed"]
fn child_holds_a_segment() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let config = ShmConfig {
        dir: dir.into(),
        segment_bytes: 1 << 20,
        ..ShmConfig::default()
    };
    let t = ShmTransport::new(11, config).unwrap();
    println!("segment {}", t.segment_path().display());
    if std::env::var_os(CHILD_EXITS).is_some() {
        // What a command-line tool does on a fatal condition: exit without unwinding, the
        // transport still alive (and never dropped).
        std::thread::sleep(Duration::from_millis(100));
        std::process::exit(3);
    }
    std::thread::sleep(Duration::from_secs(60));
}

/// Set: the child calls `std::process::exit` instead of waiting to be killed.
const CHILD_EXITS: &str = "TESSERA_SHM_TEST_CHILD_EXITS";

fn spawn_child(dir: &TestDir, exits: bool) -> std::process::Child {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "transport::shm::tests::child_holds_a_segment",
        "--exact",
        "--ignored",
        "--nocapture",
    ])
    .env(CHILD_DIR, &dir.0)
    .stdout(std::process::Stdio::null());
    if exits {
        cmd.env(CHILD_EXITS, "1");
    }
    cmd.spawn().unwrap()
}

#[test]
fn a_process_that_exits_without_dropping_its_participant_leaves_no_segment() {
    let dir = TestDir::new("exit");
    let mut child = spawn_child(&dir, true);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "the child did not run to its exit");
    assert!(dir.files().is_empty(), "left behind: {:?}", dir.files());
}

#[test]
fn a_closing_participant_removes_the_segment_of_a_peer_killed_after_it_started() {
    let dir = TestDir::new("sweep");
    let alive = ShmTransport::new(11, dir.config()).unwrap();
    let mut child = spawn_child(&dir, false);
    let deadline = Instant::now() + Duration::from_secs(20);
    while dir.files().len() < 2 {
        assert!(Instant::now() < deadline, "the child made no segment");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill has no memory preconditions; the pid is our own child's, not yet reaped.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) },
        0
    );
    child.wait().unwrap();
    assert_eq!(
        dir.files().len(),
        2,
        "the killed child's segment is there until a sweep"
    );
    drop(alive);
    assert!(dir.files().is_empty(), "left behind: {:?}", dir.files());
}

#[test]
fn a_participant_killed_with_sigkill_is_reclaimed() {
    let dir = TestDir::new("kill9");
    let mut child = spawn_child(&dir, false);
    let deadline = Instant::now() + Duration::from_secs(20);
    while dir.files().is_empty() {
        assert!(Instant::now() < deadline, "the child made no segment");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Let the child finish initialising its header (magic last), then check a live owner's
    // segment is kept.
    std::thread::sleep(Duration::from_millis(200));
    let file = dir.files().remove(0);
    let id = u32::from_str_radix(file.rsplit('-').next().unwrap(), 16).unwrap();
    let alive = ShmTransport::new(11, dir.config()).unwrap();
    assert_eq!(alive.shm_stats().reclaimed.load(Ordering::Relaxed), 0);
    let child_loc = shm_locator(host_identity(false), 11, id);
    assert!(alive.reaches(&child_loc));

    // SAFETY: kill has no memory preconditions; the pid is our own child's, not yet reaped.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) },
        0
    );
    child.wait().unwrap();

    // A writer facing the dead participant's full ring gives up on it instead of waiting.
    let slots = Geometry::for_size(1 << 20, DEFAULT_MAX_DATAGRAM)
        .unwrap()
        .slot_count();
    for _ in 0..slots {
        alive.try_send_to(b"to the dead", &child_loc).unwrap();
    }
    let t0 = Instant::now();
    alive.send_to(b"one more", &child_loc).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert!(alive.stats().send.dropped.load(Ordering::Relaxed) >= 1);

    // Once forgotten, the dead participant's segment is not taken up again.
    assert!(!alive.reaches(&child_loc));

    // The next participant to start removes the dead one's segment, and only that one.
    let next = ShmTransport::new(11, dir.config()).unwrap();
    assert_eq!(next.shm_stats().reclaimed.load(Ordering::Relaxed), 1);
    assert!(!dir.files().contains(&file));
    assert_eq!(dir.files().len(), 2, "{:?}", dir.files());
    drop((alive, next));
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

#[test]
fn invalid_files_are_reclaimed_only_when_old() {
    let dir = TestDir::new("junk");
    let young = dir.0.join("tessera-12-00000001");
    std::fs::write(&young, b"half a header").unwrap();
    std::fs::set_permissions(&young, std::fs::Permissions::from_mode(0o600)).unwrap();
    let foreign = dir.0.join("other-file");
    std::fs::write(&foreign, b"not ours").unwrap();
    assert_eq!(
        reclaim_dead_segments(&dir.0),
        Reclaimed {
            removed: 0,
            kept: 1
        }
    );
    // Sixty seconds later (backdated), the creator is surely gone.
    let old = std::time::SystemTime::now() - Duration::from_secs(120);
    std::fs::File::options()
        .write(true)
        .open(&young)
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(reclaim_dead_segments(&dir.0).removed, 1);
    assert_eq!(dir.files(), vec!["other-file".to_string()]);
}

#[test]
fn host_identity_is_stable_and_impossible_geometry_is_refused() {
    assert_eq!(host_identity(false), host_identity(false));
    assert_ne!(host_identity(false), 0);
    // The network namespace is part of the identity unless configured otherwise.
    assert_ne!(host_identity(false), host_identity(true));
    let c = ShmConfig::default();
    assert_eq!(c.spin, DEFAULT_SPIN);
    assert!(Geometry::for_size(c.segment_bytes, c.max_datagram).is_some());
    assert!(ShmTransport::new(
        0,
        ShmConfig {
            max_datagram: 64 << 20,
            ..c
        }
    )
    .is_err());
}

/// A gathering receiver (the node's) under a stream of unmarked datagrams: it sleeps a window
/// at a time, the writers skip most wake-ups, and nothing is lost or reordered; a marked
/// datagram still wakes it.
#[test]
fn a_gathering_receiver_takes_a_busy_stream_in_rounds_without_losing_any() {
    let dir = TestDir::new("gather");
    let gather = Duration::from_millis(2);
    let a = ShmTransport::new(
        3,
        ShmConfig {
            gather,
            spin: Duration::ZERO,
            ..dir.config()
        },
    )
    .unwrap();
    let b = ShmTransport::new(3, dir.config()).unwrap();
    let (ha, rxa) = collector();
    let _ra = a.start(ha).unwrap();
    let la = a.locators().default_unicast;
    // 2,000 datagrams, one every 100 µs or so: denser than the window.
    let n = 2000u32;
    for i in 0..n {
        b.send_to(&i.to_le_bytes(), &la).unwrap();
        std::thread::sleep(Duration::from_micros(100));
    }
    for i in 0..n {
        assert_eq!(next(&rxa), i.to_le_bytes());
    }
    let deferred = b.shm_stats.deferred_wakes.load(Ordering::Relaxed);
    let woke = b.shm_stats.wakes.load(Ordering::Relaxed);
    assert!(
        a.shm_stats.gathers.load(Ordering::Relaxed) > 0,
        "never gathered"
    );
    assert!(
        deferred > woke,
        "writers still woke the reader for most datagrams: {woke} wakes, {deferred} deferred"
    );
    // A marked datagram wakes a gathering reader: well within a window (bounded generously
    // for a loaded machine).
    let t0 = Instant::now();
    b.send_to_marked(b"urgent", &la, 0xb8).unwrap();
    assert_eq!(next(&rxa), b"urgent");
    assert!(t0.elapsed() < Duration::from_secs(1));
}
