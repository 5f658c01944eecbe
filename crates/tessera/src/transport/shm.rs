//! The shared-memory transport: Tessera participants on one host exchange datagrams through
//! memory instead of UDP loopback. No daemon and no configuration step.
//!
//! Each participant creates its own receive segment, `/dev/shm/tessera-<domain>-<id>` (mode
//! 0600), holding a bounded ring of datagram slots ([`super::shm_ring`]); writers of other
//! participants map it and copy datagrams in; one receive thread per participant takes them
//! out and hands them to the [`DatagramHandler`], as a UDP receive thread does.
//!
//! # How it is chosen
//! The participant announces a locator of kind [`locator_kind::TESSERA_SHM`] (vendor range)
//! in SPDP and SEDP next to its UDP locators. Its address carries the host identity
//! ([`host_identity`]: boot and machine id, uid, network namespace) and the domain; its port is
//! the segment id. [`Transports::select`](super::Transports::select) prefers this transport
//! (it comes first) for a peer whose shm locator it [`reaches`](Transport::reaches): same host
//! identity, and the segment opens and validates; UDP otherwise. Other vendors ignore the kind.
//! Discovery itself (SPDP) stays on UDP, so shm is only ever enabled beside a UDP transport.
//!
//! # Waiting
//! The receive thread polls the ring for [`ShmConfig::spin`] (`TESSERA_SHM_SPIN_US`) after the
//! last datagram before it sleeps on the segment's futex. A spin costs up to its budget in CPU
//! after every burst of traffic (nothing while idle), and on a machine with no idle core it
//! also holds the core the woken peer needs: measured on the 2-core VM shared with other work,
//! a 16-byte `tessera perf` ping-pong's median (half round trip) was 3.1 µs without a spin and
//! 4.1 / 5.7 / 9.2 / 24 µs with 1 / 2 / 5 / 20 µs of spin. So the default,
//! [`DEFAULT_SPIN`], is no spin: the thread sleeps at once, and a wake-up costs what one from
//! `recvmsg` costs (about 20 µs on an idle core of this VM kind, a few µs when the other core
//! is busy). Adaptive spinning and busy polling are a later step (issue 8, wait strategies).
//!
//! # Crashes and cleanup
//! A writer killed mid-write leaves one claimed slot; the reader skips it after
//! [`ShmConfig::stall_timeout`]. The header records the owner's pid, start time and pid
//! namespace: a participant starting up or closing removes the segments of dead owners
//! ([`reclaim_dead_segments`]); a participant unlinks its own when it is dropped, or at process
//! exit if it never was.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::types::{locator_kind, Locator};

use super::recv::{self, Channel, DatagramHandler, Receivers};
use super::shm_exit;
use super::shm_ring::{self, Consumer, Geometry, Owner, Polled, Pushed, Region, Ring, RingStats};
use super::udp::{TransportError, TransportLocators, TransportStats};
use super::wait::{Spinner, WaitStrategy};
use super::Transport;

/// Default size of a segment's slots: 8 MiB, 128 slots of 64 KiB (plus a 512-byte header).
/// Pages are only used once written, so a ring of small datagrams touches one page per slot.
pub const DEFAULT_SEGMENT_BYTES: usize = 8 << 20;
/// Default largest datagram asked for: a 64 KiB slot less its header (the transport carries
/// up to [`Geometry::capacity`], 65,520 bytes; more than UDP's 65,507).
pub const DEFAULT_MAX_DATAGRAM: usize = 65472;
/// Default spin before sleeping: none (see the module docs for the measurement).
pub const DEFAULT_SPIN: Duration = Duration::ZERO;
/// Default time after which a claimed, uncommitted slot is skipped.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_millis(250);
/// Where segments live.
pub const SHM_DIR: &str = "/dev/shm";
/// Environment variable: the spin budget in microseconds (`0`: sleep at once).
pub const ENV_SHM_SPIN_US: &str = "TESSERA_SHM_SPIN_US";
/// Environment variable: the segment size in bytes.
pub const ENV_SHM_SEGMENT_BYTES: &str = "TESSERA_SHM_SEGMENT_BYTES";
/// Environment variable: `1` lets participants in different network namespaces of one host
/// (sharing `/dev/shm`) use shared memory ([`ShmConfig::across_network_namespaces`]).
pub const ENV_SHM_ACROSS_NETNS: &str = "TESSERA_SHM_ACROSS_NETNS";

/// Longest a blocking send waits for room in a full ring before it gives up (the destination's
/// reader is gone or hopelessly behind; reliability repairs what is lost).
const SEND_PATIENCE: Duration = Duration::from_millis(200);
/// How often a writer facing a full ring checks that the ring's owner still lives.
const LIVENESS_CHECK: Duration = Duration::from_millis(100);
/// Idle futex sleeps end after this even without a wake-up (a bound on any lost wake-up).
const IDLE_WAIT: Duration = Duration::from_millis(200);
/// How long a receive round that has not emptied the ring goes on before it wakes the wait sets
/// its datagrams concern (see [`crate::condition`]), and the datagrams it takes at most before
/// it does. By time, not only by count: a node's gathering round takes one datagram per
/// application (16 at 1 kHz), and waking its route after the 16th of 18 made the route send
/// twice a window (the last two held for the scheduler's thread).
const WAKE_AFTER: Duration = Duration::from_micros(50);
const WAKE_EVERY: u32 = 256;
/// Pauses a spinning receive thread makes between two clock reads, each followed by a look at
/// the ring's next slot: a clock read costs more than a pause on this VM kind (22 ns), and a
/// datagram that arrives meanwhile waits for the read to end.
const SPINS_PER_CLOCK_READ: u32 = 32;
/// Peer segments remembered at most (mappings cost address space, not memory).
const MAX_PEERS: usize = 1024;

/// Settings of the shared-memory transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmConfig {
    /// Bytes of slots in the participant's receive segment (the memory bound per segment;
    /// the slot count is rounded down to a power of two).
    pub segment_bytes: usize,
    /// Largest datagram; each slot holds one.
    pub max_datagram: usize,
    /// How long the receive thread polls before it sleeps on the futex (a fixed
    /// [`WaitStrategy::Spin`]; `wait` overrides it).
    pub spin: Duration,
    /// How the receive thread waits (`TESSERA_WAIT`; `None`: by `spin`). See [`super::wait`].
    pub wait: Option<WaitStrategy>,
    /// How long the reader waits for a claimed slot to be committed before it skips it.
    pub stall_timeout: Duration,
    /// Gathering window (zero: off, the default). While datagrams arrive more often than
    /// this, the receive thread sleeps this long between rounds and writers of unmarked
    /// datagrams (no TRANSPORT_PRIORITY) skip their wake-up: one wake-up per window instead of
    /// one per datagram, for up to this much latency. The node service sets it to its batch
    /// window, which holds busy flows that long anyway. At most [`shm_ring::MAX_GATHER`]
    /// (10 ms; longer is taken as that).
    pub gather: Duration,
    /// Directory of the segments (a tmpfs; [`SHM_DIR`] by default).
    pub dir: PathBuf,
    /// Leave the network namespace out of the host identity, so that participants in
    /// different namespaces of one host use shared memory with each other (both sides must set
    /// it). Off by default: a namespace is usually meant as a boundary.
    pub across_network_namespaces: bool,
}

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            max_datagram: DEFAULT_MAX_DATAGRAM,
            spin: DEFAULT_SPIN,
            wait: None,
            stall_timeout: DEFAULT_STALL_TIMEOUT,
            gather: Duration::ZERO,
            dir: PathBuf::from(SHM_DIR),
            across_network_namespaces: false,
        }
    }
}

impl ShmConfig {
    /// The defaults with `TESSERA_SHM_SPIN_US`, `TESSERA_WAIT`, `TESSERA_SHM_SEGMENT_BYTES`
    /// and `TESSERA_SHM_ACROSS_NETNS` applied.
    pub fn from_env() -> Result<ShmConfig, TransportError> {
        let mut c = ShmConfig::default();
        let num = |name: &str| -> Result<Option<u64>, TransportError> {
            match std::env::var(name) {
                Ok(v) => v.trim().parse().map(Some).map_err(|_| {
                    TransportError::InvalidConfig(format!("{name}={v:?}: expected a number"))
                }),
                Err(_) => Ok(None),
            }
        };
        if let Some(us) = num(ENV_SHM_SPIN_US)? {
            c.spin = Duration::from_micros(us);
        }
        c.wait = WaitStrategy::from_env()?;
        if let Some(b) = num(ENV_SHM_SEGMENT_BYTES)? {
            c.segment_bytes = usize::try_from(b).unwrap_or(usize::MAX);
        }
        if let Some(a) = num(ENV_SHM_ACROSS_NETNS)? {
            c.across_network_namespaces = a != 0;
        }
        Ok(c)
    }
}

/// A 64-bit identity of "this host, this user, this network namespace" (without the namespace
/// when `across_network_namespaces`): participants with equal identities may talk through
/// `/dev/shm`. By default participants in different network namespaces do not pick shm (they
/// might not see each other's `/dev/shm`, and a namespace is usually meant as a boundary).
/// FNV-1a, so that every build computes the same value.
pub fn host_identity(across_network_namespaces: bool) -> u64 {
    let mut h = Fnv::new();
    for f in ["/proc/sys/kernel/random/boot_id", "/etc/machine-id"] {
        h.bytes(std::fs::read(f).unwrap_or_default().trim_ascii());
        h.bytes(b"/");
    }
    // SAFETY: getuid cannot fail and has no preconditions.
    h.bytes(&unsafe { libc::getuid() }.to_le_bytes());
    if !across_network_namespaces {
        h.bytes(&ns_inode("net").to_le_bytes());
    }
    h.0
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 = (self.0 ^ x as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The inode of this process's namespace of `kind` (`net`, `pid`), 0 when unknown.
pub(crate) fn ns_inode(kind: &str) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/ns/{kind}"))
        .map(|m| m.ino())
        .unwrap_or(0)
}

/// A process's start time (field 22 of `/proc/<pid>/stat`), `None` if it does not exist.
pub(crate) fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// Whether the owner recorded in a segment header is alive, as far as this process can tell
/// (`true` when it cannot: another pid namespace).
pub(crate) fn owner_alive(o: &Owner, our_pid_ns: u64) -> bool {
    if o.pid_ns != our_pid_ns || o.pid == 0 {
        return true;
    }
    process_start_time(o.pid) == Some(o.start_time)
}

/// The segment file name of `domain` and segment id `id`.
pub fn segment_name(domain: u32, id: u32) -> String {
    format!("tessera-{domain}-{id:08x}")
}

/// The shm locator of a segment.
fn shm_locator(host: u64, domain: u32, id: u32) -> Locator {
    let mut address = [0u8; 16];
    address[..8].copy_from_slice(&host.to_be_bytes());
    address[8..12].copy_from_slice(&domain.to_be_bytes());
    Locator {
        kind: locator_kind::TESSERA_SHM,
        port: id,
        address,
    }
}

fn cstring(p: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn open_fd(path: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let c = cstring(path)?;
    // SAFETY: `c` is a valid NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOFOLLOW, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value for this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid out-pointer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Maps a peer's (or a stale) segment file and validates its header. Only files of our own
/// uid, with no access for others, are opened.
fn map_existing(path: &Path) -> io::Result<Ring> {
    let region = map_file(path, super::shm_ring::MAX_SEGMENT)?;
    Ring::attach(region).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Maps an existing segment file of at most `max_len` bytes, shared and writable: only a
/// regular file of our own uid with no access for others.
pub(crate) fn map_file(path: &Path, max_len: u64) -> io::Result<Region> {
    // O_NONBLOCK: a FIFO planted under a segment's name must not block the open.
    let fd = open_fd(path, libc::O_RDWR | libc::O_NONBLOCK, 0)?;
    let st = fstat(&fd)?;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    if st.st_uid != uid || st.st_mode & 0o077 != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(io::Error::from(io::ErrorKind::PermissionDenied));
    }
    let len = usize::try_from(st.st_size).unwrap_or(0);
    if len == 0 || len as u64 > max_len {
        return Err(io::Error::from(io::ErrorKind::InvalidData));
    }
    Region::map(fd.as_raw_fd(), len)
}

/// What [`reclaim_dead_segments`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reclaimed {
    /// Segments of dead owners removed.
    pub removed: u32,
    /// Segments left (live owners, other users or pid namespaces, not ours to judge).
    pub kept: u32,
}

/// Removes from `dir` the Tessera segments (receive rings and loan pools) whose owner (pid and start time, in our pid
/// namespace) is gone, and files with no valid header older than a minute (a creator killed
/// before it finished). Only our own uid's files are touched.
pub fn reclaim_dead_segments(dir: &Path) -> Reclaimed {
    let mut out = Reclaimed::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let pid_ns = ns_inode("pid");
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("tessera-") {
            continue;
        }
        let path = e.path();
        let owner = if name
            .to_string_lossy()
            .starts_with(super::shm_pool::POOL_PREFIX)
        {
            super::shm_pool::map_pool(&path).map(|p| p.owner())
        } else {
            map_existing(&path).map(|r| r.owner())
        };
        let dead = match owner {
            Ok(o) => !owner_alive(&o, pid_ns),
            Err(err) if err.kind() == io::ErrorKind::InvalidData => e
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > Duration::from_secs(60)),
            Err(_) => false,
        };
        if dead && std::fs::remove_file(&path).is_ok() {
            tracing::info!(segment = %path.display(), "removed the shared-memory segment of a dead participant");
            out.removed += 1;
        } else {
            out.kept += 1;
        }
    }
    out
}

/// Counters of the shared-memory transport beyond [`TransportStats`].
#[derive(Debug, Default)]
pub struct ShmStats {
    /// The receive ring's drops (bad lengths, skipped stalled slots).
    pub ring: RingStats,
    /// Datagrams whose commit failed because the reader had skipped the slot.
    pub lost_writes: AtomicU64,
    /// Futex wake-ups made by our writers.
    pub wakes: AtomicU64,
    /// Datagrams our writers left to a gathering reader's own wake-up (no syscall).
    pub deferred_wakes: AtomicU64,
    /// Gathering sleeps of our receive thread ([`ShmConfig::gather`]).
    pub gathers: AtomicU64,
    /// Peer segments that would not open or validate.
    pub bad_peer_segments: AtomicU64,
    /// Segments of dead participants removed at start-up.
    pub reclaimed: AtomicU64,
}

/// Our own receive segment: unlinked and closed when dropped.
#[derive(Debug)]
struct OwnSegment {
    ring: Ring,
    path: PathBuf,
}

impl Drop for OwnSegment {
    fn drop(&mut self) {
        self.ring.close();
        let _ = std::fs::remove_file(&self.path);
        shm_exit::forget(&self.path);
        // Sweep on the way out too: a peer killed after we started would otherwise stay in
        // the directory until some participant starts again.
        if let Some(dir) = self.path.parent() {
            reclaim_dead_segments(dir);
        }
    }
}

#[derive(Debug)]
struct Peer {
    ring: Option<Arc<Ring>>,
    /// When the segment was found missing or last checked for a live owner.
    checked: Instant,
}

/// The shared-memory transport. See the module docs.
#[derive(Debug)]
pub struct ShmTransport {
    domain: u32,
    host: u64,
    pid_ns: u64,
    config: ShmConfig,
    own: Arc<OwnSegment>,
    id: u32,
    locators: TransportLocators,
    peers: RwLock<FastHashMap<u32, Peer>>,
    started: AtomicBool,
    stats: TransportStats,
    shm_stats: Arc<ShmStats>,
}

impl ShmTransport {
    /// Creates this participant's receive segment in `config.dir` (after removing dead
    /// participants' segments there).
    pub fn new(domain: u32, config: ShmConfig) -> Result<ShmTransport, TransportError> {
        let geo =
            Geometry::for_size(config.segment_bytes, config.max_datagram).ok_or_else(|| {
                TransportError::InvalidConfig(format!(
                    "shm: {} bytes of segment cannot hold slots of {} bytes",
                    config.segment_bytes, config.max_datagram
                ))
            })?;
        let shm_stats = Arc::new(ShmStats::default());
        let reclaimed = reclaim_dead_segments(&config.dir);
        shm_stats
            .reclaimed
            .store(reclaimed.removed as u64, Ordering::Relaxed);
        let host = host_identity(config.across_network_namespaces);
        let pid_ns = ns_inode("pid");
        let pid = std::process::id();
        let owner = Owner {
            pid,
            start_time: process_start_time(pid).unwrap_or(0),
            pid_ns,
            host,
            domain,
        };
        let err = |what: &str| {
            let what = format!("shm: {what}");
            move |source| TransportError::Socket { what, source }
        };
        let (id, path, fd) = create_file(&config.dir, |id| segment_name(domain, id))
            .map_err(err("create segment"))?;
        // From here on a failure must remove the file again.
        let setup = || -> io::Result<Ring> {
            let len = geo.total_len();
            // Allocate every page now: on a full tmpfs a sparse file would make a writer's
            // copy fault (SIGBUS) later; this way creation fails cleanly instead.
            // SAFETY: `fd` is open for writing; the call only extends and allocates the file.
            let rc = unsafe { libc::posix_fallocate(fd.as_raw_fd(), 0, len as libc::off_t) };
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            let region = Region::map(fd.as_raw_fd(), len)?;
            Ring::init(region, geo, owner).map_err(io::Error::other)
        };
        let ring = match setup() {
            Ok(r) => r,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(err("map segment")(e));
            }
        };
        shm_exit::remember(&path);
        let own = Arc::new(OwnSegment { ring, path });
        let l = shm_locator(host, domain, id);
        tracing::info!(segment = %own.path.display(), slots = geo.slot_count(), max_datagram = geo.capacity(), "shared-memory transport open");
        Ok(ShmTransport {
            domain,
            host,
            pid_ns,
            config,
            own,
            id,
            locators: TransportLocators {
                metatraffic_unicast: l,
                default_unicast: l,
                metatraffic_multicast: None,
                default_multicast: None,
            },
            peers: RwLock::new(FastHashMap::default()),
            started: AtomicBool::new(false),
            stats: TransportStats::default(),
            shm_stats,
        })
    }

    /// The segment file of this participant.
    pub fn segment_path(&self) -> &Path {
        &self.own.path
    }

    /// Shared-memory specific counters.
    pub fn shm_stats(&self) -> &ShmStats {
        &self.shm_stats
    }

    /// Whether `l` names a segment of this host identity and domain.
    fn ours_to_try(&self, l: &Locator) -> bool {
        l.kind == locator_kind::TESSERA_SHM
            && l.address[..8] == self.host.to_be_bytes()
            && l.address[8..12] == self.domain.to_be_bytes()
            && l.address[12..] == [0; 4]
    }

    /// The ring of the segment `l` names, opened and cached; `None` if it does not open.
    fn peer(&self, l: &Locator) -> Option<Arc<Ring>> {
        if !self.ours_to_try(l) {
            return None;
        }
        if let Some(Peer { ring: Some(r), .. }) = self.peers.read().get(&l.port) {
            if !r.is_closed() {
                return Some(r.clone());
            }
        }
        let now = Instant::now();
        let mut peers = self.peers.write();
        if let Some(p) = peers.get(&l.port) {
            match &p.ring {
                Some(r) if !r.is_closed() => return Some(r.clone()),
                Some(_) => {}
                // A recent miss: do not hit the file system for every send.
                None if now.duration_since(p.checked) < Duration::from_secs(1) => return None,
                None => {}
            }
        }
        let ring = {
            let path = self.config.dir.join(segment_name(self.domain, l.port));
            match map_existing(&path) {
                Ok(r) => {
                    let o = r.owner();
                    // A dead owner's segment (not yet reclaimed) would only fill up.
                    let usable = o.host == self.host
                        && o.domain == self.domain
                        && !r.is_closed()
                        && owner_alive(&o, self.pid_ns);
                    usable.then(|| Arc::new(r))
                }
                Err(e) => {
                    if e.kind() != io::ErrorKind::NotFound {
                        self.shm_stats
                            .bad_peer_segments
                            .fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(error = %e, segment = %path.display(), "shared-memory segment refused");
                    }
                    None
                }
            }
        };
        if peers.len() >= MAX_PEERS {
            peers.retain(|_, p| p.ring.as_ref().is_some_and(|r| !r.is_closed()));
            if peers.len() >= MAX_PEERS {
                peers.clear();
            }
        }
        peers.insert(
            l.port,
            Peer {
                ring: ring.clone(),
                checked: now,
            },
        );
        ring
    }

    /// A full ring: forget it if its owner is dead (checked at most every [`LIVENESS_CHECK`]).
    /// Returns whether the owner is gone.
    fn owner_gone(&self, port: u32, ring: &Ring) -> bool {
        let now = Instant::now();
        let mut peers = self.peers.write();
        let Some(p) = peers.get_mut(&port) else {
            return false;
        };
        if now.duration_since(p.checked) < LIVENESS_CHECK {
            return false;
        }
        p.checked = now;
        if ring.is_closed() || !owner_alive(&ring.owner(), self.pid_ns) {
            peers.remove(&port);
            return true;
        }
        false
    }

    /// `may_defer`: an unmarked datagram, which a gathering reader may take on its own time.
    fn push(
        &self,
        parts: &[&[u8]],
        dest: &Locator,
        may_defer: bool,
    ) -> io::Result<Option<Arc<Ring>>> {
        // A known, open ring is pushed into under the map's read lock: no reference count
        // taken and dropped per datagram (a tenth of this function's time on a 16 B ping-pong).
        // A full ring (nothing written) takes the path below, which may find its owner gone.
        let fast = self.ours_to_try(dest).then(|| {
            let peers = self.peers.read();
            match peers.get(&dest.port) {
                Some(Peer { ring: Some(r), .. }) if !r.is_closed() => {
                    Some(r.push_parts(parts, may_defer)).filter(|p| *p != Pushed::Full)
                }
                _ => None,
            }
        });
        let (pushed, ring) = match fast.flatten() {
            Some(p) => (p, None),
            None => {
                let Some(ring) = self.peer(dest) else {
                    self.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
                    return Ok(None);
                };
                (ring.push_parts(parts, may_defer), Some(ring))
            }
        };
        match pushed {
            Pushed::Sent { woke, deferred } => {
                if woke {
                    self.shm_stats.wakes.fetch_add(1, Ordering::Relaxed);
                }
                if deferred {
                    self.shm_stats
                        .deferred_wakes
                        .fetch_add(1, Ordering::Relaxed);
                }
                self.stats
                    .send
                    .record_sent(parts.iter().map(|p| p.len()).sum());
                Ok(None)
            }
            // Only the slow path reports a full ring (the fast one leaves it to it), with it.
            Pushed::Full => match ring {
                Some(ring) if !self.owner_gone(dest.port, &ring) => Ok(Some(ring)),
                _ => {
                    self.stats.send.dropped.fetch_add(1, Ordering::Relaxed);
                    Ok(None)
                }
            },
            Pushed::TooLarge => {
                self.stats.send.errors.fetch_add(1, Ordering::Relaxed);
                Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "datagram larger than a shared-memory slot",
                ))
            }
            Pushed::Lost => {
                self.shm_stats.lost_writes.fetch_add(1, Ordering::Relaxed);
                self.stats.send.dropped.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
        }
    }

    /// Pushes `buf`, waiting up to [`SEND_PATIENCE`] for room in a full ring.
    fn send_blocking(&self, buf: &[u8], dest: &Locator, may_defer: bool) -> io::Result<()> {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            let Some(ring) = self.push(&[buf], dest, may_defer)? else {
                return Ok(());
            };
            if start.elapsed() > SEND_PATIENCE {
                self.stats.send.dropped.fetch_add(1, Ordering::Relaxed);
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "shared-memory ring stayed full",
                ));
            }
            drop(ring);
            // Room comes as fast as the reader copies out: yield first, then nap briefly.
            spins += 1;
            if spins < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    fn try_send(&self, parts: &[&[u8]], dest: &Locator, may_defer: bool) -> io::Result<()> {
        match self.push(parts, dest, may_defer)? {
            None => Ok(()),
            Some(_) => {
                self.stats.send.would_block.fetch_add(1, Ordering::Relaxed);
                Err(io::Error::from(io::ErrorKind::WouldBlock))
            }
        }
    }
}

/// Creates a new segment file (0600) named `name(id)` with a fresh nonzero id (O_EXCL,
/// retried on a collision).
pub(crate) fn create_file(
    dir: &Path,
    name: impl Fn(u32) -> String,
) -> io::Result<(u32, PathBuf, OwnedFd)> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut h = Fnv::new();
    h.bytes(&std::process::id().to_le_bytes());
    h.bytes(&salt.to_le_bytes());
    for _ in 0..64 {
        h.bytes(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        let id = (h.0 ^ (h.0 >> 32)) as u32;
        if id == 0 {
            continue;
        }
        let path = dir.join(name(id));
        match open_fd(&path, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600) {
            Ok(fd) => return Ok((id, path, fd)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

impl Transport for ShmTransport {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn kinds(&self) -> &[i32] {
        &[locator_kind::TESSERA_SHM]
    }

    fn reaches(&self, l: &Locator) -> bool {
        self.peer(l).is_some()
    }

    fn locators(&self) -> TransportLocators {
        self.locators
    }

    fn spdp_destinations(&self) -> &[Locator] {
        &[]
    }

    fn send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.send_blocking(buf, dest, true)
    }

    fn try_send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.try_send(&[buf], dest, true)
    }

    /// Marked traffic never waits for a gathering reader: it wakes it.
    fn send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        self.send_blocking(buf, dest, tos == 0)
    }

    fn try_send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        self.try_send(&[buf], dest, tos == 0)
    }

    /// Each part goes straight into the slot.
    fn try_send_parts_marked(&self, parts: &[&[u8]], dest: &Locator, tos: u8) -> io::Result<()> {
        self.try_send(parts, dest, tos == 0)
    }

    fn start(&self, handler: Arc<dyn DatagramHandler>) -> Result<Receivers, TransportError> {
        if self.started.swap(true, Ordering::SeqCst) {
            return Err(TransportError::AlreadyStarted);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut r = Receivers::new(stop.clone());
        let rx = RecvLoop {
            own: self.own.clone(),
            handler,
            stop,
            wait: self.config.wait.unwrap_or(if self.config.spin.is_zero() {
                WaitStrategy::Block
            } else {
                WaitStrategy::Spin {
                    max: self.config.spin,
                    adaptive: false,
                }
            }),
            stall_timeout: self.config.stall_timeout,
            gather: self.config.gather.min(shm_ring::MAX_GATHER),
            stats: self.shm_stats.clone(),
            recv: self.stats.recv.clone(),
            from: shm_locator(self.host, self.domain, 0),
        };
        let h = std::thread::Builder::new()
            .name(format!("tessera-shm-{:08x}", self.id))
            .spawn(move || rx.run())
            .map_err(|source| TransportError::Socket {
                what: "start shared-memory receive thread".into(),
                source,
            })?;
        let own = self.own.clone();
        r.add(h, Box::new(move || own.ring.wake()));
        Ok(r)
    }

    fn max_datagram_size(&self) -> usize {
        self.own.ring.geometry().capacity()
    }

    fn stats(&self) -> &TransportStats {
        &self.stats
    }
}

struct RecvLoop {
    own: Arc<OwnSegment>,
    handler: Arc<dyn DatagramHandler>,
    stop: Arc<AtomicBool>,
    wait: WaitStrategy,
    stall_timeout: Duration,
    gather: Duration,
    stats: Arc<ShmStats>,
    recv: Arc<recv::ReceiveStats>,
    /// The source given to the handler: the ring does not say who wrote a datagram.
    from: Locator,
}

impl RecvLoop {
    fn run(self) {
        recv::mark_receive_thread();
        crate::condition::defer_wakes();
        let ring = &self.own.ring;
        let mut consumer = Consumer::new(self.stall_timeout);
        let mut buf = vec![0u8; ring.geometry().capacity()];
        let mut idle_since: Option<Instant> = None;
        let mut spinner = Spinner::new(self.wait);
        // Datagrams delivered since the last `on_batch_end` (called once the ring is empty).
        let mut in_batch = false;
        let mut warned = Instant::now() - Duration::from_secs(2);
        // Gathering (`gather` > 0): the last sleep, whether it gathered, and the datagrams
        // taken since it with how soon the first came.
        let mut slept: Option<(Instant, bool)> = None;
        let mut round = 0u32;
        let mut first_after = Duration::MAX;
        // When the datagrams delivered since the last wake-up must wake their readers.
        let mut wake_by: Option<Instant> = None;
        // The clock read just before a spin found the next slot changed: at most
        // SPINS_PER_CLOCK_READ pauses old, and reading it again would delay the datagram.
        let mut spun_until: Option<Instant> = None;
        while !self.stop.load(Ordering::Relaxed) {
            let now = spun_until.take().unwrap_or_else(Instant::now);
            match consumer.poll(ring, &mut buf, &self.stats.ring, now) {
                Polled::Datagram(n) => {
                    if let Some(t) = idle_since.take() {
                        spinner.record_wait(now.duration_since(t));
                    }
                    if round == 0 {
                        first_after = slept.map_or(Duration::MAX, |(t, _)| now.duration_since(t));
                    }
                    round += 1;
                    in_batch = true;
                    recv::with_arrival(now, || self.deliver(&buf[..n]));
                    // A ring that never empties still wakes its waiting readers.
                    let due = *wake_by.get_or_insert(now + WAKE_AFTER);
                    if now >= due || round % WAKE_EVERY == 0 {
                        crate::condition::flush_deferred_wakes();
                        wake_by = None;
                    }
                }
                Polled::Dropped => {
                    self.recv.errors.fetch_add(1, Ordering::Relaxed);
                    if now.duration_since(warned) >= Duration::from_secs(1) {
                        warned = now;
                        tracing::warn!(
                            bad_length = self.stats.ring.bad_length.load(Ordering::Relaxed),
                            skipped = self.stats.ring.skipped.load(Ordering::Relaxed),
                            "dropped a shared-memory slot (scribbled, or its writer died mid-write)"
                        );
                    }
                }
                Polled::Empty | Polled::Stalled => {
                    if std::mem::take(&mut in_batch) {
                        self.batch_end();
                        wake_by = None;
                    }
                    let since = *idle_since.get_or_insert(now);
                    if spinner
                        .budget()
                        .is_none_or(|b| now.duration_since(since) < b)
                    {
                        for _ in 0..SPINS_PER_CLOCK_READ {
                            std::hint::spin_loop();
                            if consumer.next_changed(ring) {
                                spun_until = Some(now);
                                break;
                            }
                        }
                        continue;
                    }
                    // Busy: the last gathering sleep found datagrams, or the last plain one
                    // ended within a window. Then sleep a window, unwoken by unmarked writes.
                    let gathering = !self.gather.is_zero()
                        && round > 0
                        && slept.is_some_and(|(_, g)| g || first_after < self.gather);
                    round = 0;
                    slept = Some((now, gathering));
                    if gathering {
                        self.stats.gathers.fetch_add(1, Ordering::Relaxed);
                        consumer.gather(ring, self.gather, now, &self.stop);
                    } else {
                        consumer.wait(ring, IDLE_WAIT, now, &self.stop);
                    }
                }
            }
        }
    }

    fn deliver(&self, data: &[u8]) {
        self.recv.datagrams.fetch_add(1, Ordering::Relaxed);
        self.recv
            .bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        self.guarded(|| {
            self.handler
                .on_datagram(data, self.from, Channel::UserUnicast)
        });
    }

    fn batch_end(&self) {
        self.recv.batches.fetch_add(1, Ordering::Relaxed);
        self.guarded(|| self.handler.on_batch_end(Channel::UserUnicast));
        crate::condition::flush_deferred_wakes();
    }

    /// A panicking handler is a bug, but it must not end reception: count, log, go on.
    fn guarded(&self, f: impl FnOnce()) {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
            self.recv.handler_panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!("datagram handler panicked (shared memory)");
        }
    }
}

#[cfg(test)]
#[path = "shm_tests.rs"]
pub(crate) mod tests;
