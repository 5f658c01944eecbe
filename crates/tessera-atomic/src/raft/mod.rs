//! [`ConsensusGroup`] on openraft: the only module that names openraft.
//!
//! One [`ConsensusThread`] per participant runs a current-thread tokio runtime for all its groups
//! (and a TCP listener shared by them). Callers never see tokio: [`OpenRaftGroup`]'s methods spawn
//! a task on that runtime and wait for its answer on a channel.

pub(crate) mod net;
mod store;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::mailbox::{self, Receiver};
use openraft::async_runtime::WatchReceiver;
use openraft::{BasicNode, Config, SnapshotPolicy};
use serde::{Deserialize, Serialize};

use self::net::{
    Envelope, Link, MembershipOutcome, NetworkFactory, ProposeOutcome, Request, Response, Router,
};
use self::store::{MemLog, StateMachine};
use crate::entry::{Batch, Delivery, Entry, MemberId};
use crate::group::{Change, ConsensusGroup, MemberAddr, MembershipError, ProposeError, MIN_VOTERS};
use crate::sim::SimNet;

/// What applying one entry produced, returned to the proposer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Applied {
    /// Delivered at this index.
    Index(u64),
    /// `(writer, sn)` was not new: the index where that very sn was applied, if it is the last
    /// one of its writer.
    Duplicate(Option<u64>),
    /// A blank or membership entry.
    Nothing,
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

openraft::declare_raft_types!(
    /// Tessera's openraft type configuration.
    pub(crate) Cfg:
        D = Batch,
        R = Applied,
        NodeId = MemberId,
        Node = BasicNode,
);

pub(crate) type Raft = openraft::Raft<Cfg, StateMachine>;

/// The members a member knows of (itself included) with their encoded addresses: from the
/// caller's discovery ([`ConsensusGroup::introduce`]) and from gossip with the others.
pub(crate) type Known = Arc<std::sync::Mutex<BTreeMap<MemberId, String>>>;

/// At most this many members are kept from gossip: a peer cannot make a member hold more.
pub(crate) const MAX_KNOWN: usize = 256;

/// One member as its transport's server side reaches it.
#[derive(Clone)]
pub(crate) struct Member {
    pub raft: Raft,
    pub known: Known,
    /// Where the proposals this member applies as leader come from.
    pub origins: Arc<net::Origins>,
}

impl Member {
    /// Whether this member is in a formed group (bootstrapped, or added by a leader).
    pub(crate) fn formed(&self) -> bool {
        self.raft
            .metrics()
            .borrow_watched()
            .membership_config
            .nodes()
            .next()
            .is_some()
    }
}

/// Merges `members` into `known`, up to [`MAX_KNOWN`]; unparsable addresses are skipped.
pub(crate) fn merge_known(known: &Known, members: &[(MemberId, String)]) {
    let mut k = known.lock().unwrap_or_else(|e| e.into_inner());
    for (id, addr) in members {
        if k.len() >= MAX_KNOWN && !k.contains_key(id) {
            break;
        }
        if MemberAddr::decode(addr).is_some() {
            k.entry(*id).or_insert_with(|| addr.clone());
        }
    }
}

fn known_list(known: &Known) -> Vec<(MemberId, String)> {
    known
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(k, v)| (*k, v.clone()))
        .collect()
}

/// Raft timing. The defaults follow openraft's (heartbeat 50 ms, elections 150–300 ms).
#[derive(Clone, Debug)]
pub struct Timing {
    /// Leader heartbeat period.
    pub heartbeat: Duration,
    /// Election timeout range.
    pub election: (Duration, Duration),
    /// Keep this many entries in the log after a snapshot (a member further behind gets the
    /// snapshot and a [`Delivery::Skipped`]), within [`Timing::log_bytes`].
    pub keep_log: u64,
    /// Payload bytes a member's in-memory log keeps before it asks for a snapshot and purges
    /// down to half of it, whatever `keep_log` says: with group-committed batches the entry
    /// count alone let a log hold hundreds of megabytes. A member further behind than what is
    /// kept catches up from a snapshot (and counts what it skipped).
    pub log_bytes: usize,
    /// A voter that has not acknowledged the leader for this long counts as dead for
    /// [`ConsensusGroup::reconcile`]; a member counts as live if it answered a gossip round
    /// within this long.
    pub dead_after: Duration,
    /// How long [`ConsensusThread::open`] waits for the member to be set up.
    pub open: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            heartbeat: Duration::from_millis(50),
            election: (Duration::from_millis(150), Duration::from_millis(300)),
            keep_log: 10_000,
            log_bytes: 32 << 20,
            dead_after: Duration::from_secs(2),
            open: Duration::from_secs(10),
        }
    }
}

/// How to open one member of one group.
pub struct GroupSpec {
    /// The group's name: the same at every member (Tessera: domain, partition, topic).
    pub group: String,
    /// This member.
    pub me: MemberId,
    /// `Some`: the members to bootstrap with (this one among them); every initial member passes
    /// the same list. `None`: join later, added by the leader ([`ConsensusGroup::add_voter`]).
    pub initial: Option<Vec<(MemberId, MemberAddr)>>,
    /// Use this simulated network instead of TCP.
    pub sim: Option<SimNet>,
    /// Raft timing.
    pub timing: Timing,
}

/// Why a group could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The consensus library refused the configuration or failed to start.
    #[error("consensus: {0}")]
    Consensus(String),
    /// The consensus thread is running but did not set the member up in time (it is starved,
    /// or initializing with the initial members hung).
    #[error("the consensus group {group:?} was not formed within {} s ({members} member(s) seen)", .waited.as_secs_f64())]
    NotFormed {
        /// The group.
        group: String,
        /// How long the open waited ([`Timing::open`]).
        waited: Duration,
        /// The members it knew of, itself included.
        members: usize,
    },
    /// The consensus thread is gone.
    #[error("the consensus thread stopped")]
    Closed,
}

/// The participant's consensus thread: a current-thread tokio runtime for all its groups, and
/// its TCP listener.
pub struct ConsensusThread {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    join: Option<JoinHandle<()>>,
    router: Router,
    tcp: Option<SocketAddr>,
}

/// Runs `fut` on the consensus runtime and waits up to `timeout` for its output.
fn run_on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    timeout: Duration,
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> Option<T> {
    let (tx, rx) = mailbox::channel();
    handle.spawn(async move {
        tx.send(fut.await);
    });
    rx.recv_timeout(timeout).ok()
}

impl ConsensusThread {
    /// Starts the thread. With `listen`, it serves TCP there (port 0: an ephemeral port, see
    /// [`ConsensusThread::tcp_addr`]).
    pub fn start(name: &str, listen: Option<SocketAddr>) -> std::io::Result<ConsensusThread> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = match listen {
            Some(a) => {
                let std_listener = std::net::TcpListener::bind(a)?;
                std_listener.set_nonblocking(true)?;
                Some(std_listener)
            }
            None => None,
        };
        let tcp = listener.as_ref().map(|l| l.local_addr()).transpose()?;
        let handle = rt.handle().clone();
        let router = Router::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let r = router.clone();
        let join = std::thread::Builder::new()
            .name(format!("consensus-{name}"))
            .spawn(move || {
                rt.block_on(async move {
                    if let Some(l) = listener {
                        match tokio::net::TcpListener::from_std(l) {
                            Ok(l) => {
                                tokio::spawn(net::serve(l, r));
                            }
                            Err(e) => tracing::warn!("consensus listener: {e}"),
                        }
                    }
                    let _ = stopped.await;
                });
                // Dropping the runtime cancels every group's tasks.
            })?;
        Ok(ConsensusThread {
            handle,
            stop: Some(stop),
            join: Some(join),
            router,
            tcp,
        })
    }

    /// The TCP address members of other participants reach this one at.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp
    }

    /// Opens one member of a group on this thread.
    pub fn open(&self, spec: GroupSpec) -> Result<OpenRaftGroup, OpenError> {
        let config = Config {
            cluster_name: spec.group.clone(),
            heartbeat_interval: spec.timing.heartbeat.as_millis() as u64,
            election_timeout_min: spec.timing.election.0.as_millis() as u64,
            election_timeout_max: spec.timing.election.1.as_millis() as u64,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(spec.timing.keep_log.max(1)),
            max_in_snapshot_log_to_keep: spec.timing.keep_log,
            // An entry may be a group commit of up to 1 MiB: 64 of them make an append of at
            // most 64 MiB (openraft's 300 would reach past the 256 MiB frame bound).
            max_payload_entries: 64,
            ..Default::default()
        };
        let config = Arc::new(
            config
                .validate()
                .map_err(|e| OpenError::Consensus(e.to_string()))?,
        );
        let (tx, rx) = mailbox::channel();
        let factory = NetworkFactory {
            group: spec.group.clone(),
            me: spec.me,
            sim: spec.sim.clone(),
        };
        let (me, initial) = (spec.me, spec.initial.clone());
        let seen = spec.initial.as_ref().map_or(1, Vec::len);
        // Handed over under `abandoned`'s lock: a member set up after open() gave up is shut
        // down, never left running (it would campaign under this id, unreachable and unstoppable).
        let (out, got) = crossbeam_channel::bounded(1);
        let abandoned = Arc::new(std::sync::Mutex::new(false));
        let ab = abandoned.clone();
        let log = MemLog::new(spec.timing.log_bytes);
        let (trimmed, kept) = (log.clone(), log.clone());
        self.handle.spawn(async move {
            let made = async {
                let raft = Raft::new(me, config, factory, log, StateMachine::new(tx))
                    .await
                    .map_err(|e| OpenError::Consensus(e.to_string()))?;
                if let Some(members) = initial {
                    raft.initialize(net::initial_members(&members))
                        .await
                        .map_err(|e| OpenError::Consensus(e.to_string()))?;
                }
                Ok::<_, OpenError>(raft)
            }
            .await;
            if let Ok(raft) = &made {
                tokio::spawn(trim_log(raft.clone(), trimmed));
            }
            let leftover = {
                let gave_up = ab.lock().unwrap_or_else(|e| e.into_inner());
                if *gave_up {
                    Some(made)
                } else {
                    let _ = out.send(made);
                    None
                }
            };
            if let Some(Ok(raft)) = leftover {
                let _ = raft.shutdown().await;
            }
        });
        let raft = got.recv_timeout(spec.timing.open).ok().or_else(|| {
            *abandoned.lock().unwrap_or_else(|e| e.into_inner()) = true;
            got.try_recv().ok()
        });
        let raft = match raft {
            Some(r) => r?,
            // Only a runtime that is gone is "stopped"; a live one that did not answer in time
            // is a group that was not formed.
            None if self.join.as_ref().is_none_or(|j| j.is_finished()) => {
                return Err(OpenError::Closed)
            }
            None => {
                return Err(OpenError::NotFormed {
                    group: spec.group,
                    waited: spec.timing.open,
                    members: seen,
                })
            }
        };
        let addr = match (&spec.sim, self.tcp) {
            (None, Some(a)) => MemberAddr::Tcp(a),
            _ => MemberAddr::Sim(spec.me),
        };
        let known: Known = Default::default();
        let mut first = vec![(spec.me, addr.encode())];
        first.extend(
            spec.initial
                .iter()
                .flatten()
                .map(|(id, a)| (*id, a.encode())),
        );
        merge_known(&known, &first);
        let origins = Arc::new(net::Origins::new(spec.me));
        let member = Member {
            raft: raft.clone(),
            known: known.clone(),
            origins: origins.clone(),
        };
        match &spec.sim {
            Some(s) => s.register(&spec.group, spec.me, member),
            None => self.router.insert(&spec.group, spec.me, member),
        }
        Ok(OpenRaftGroup {
            group: spec.group,
            me: spec.me,
            addr,
            raft,
            known,
            others_formed: Default::default(),
            heard: Default::default(),
            peak: std::sync::Mutex::new((0, 0)),
            dead_after: spec.timing.dead_after,
            fresh: spec.timing.heartbeat * 4,
            handle: self.handle.clone(),
            deliveries: rx,
            sim: spec.sim,
            router: self.router.clone(),
            links: Default::default(),
            log: kept,
            origins,
        })
    }
}

impl Drop for ConsensusThread {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

/// Keeps a member's in-memory log within [`Timing::log_bytes`]: once over it, asks for a
/// snapshot and purges what it covers down to half the budget, sparing at a leader what a
/// follower has not acknowledged ([`MemLog::purge_point`]). Ends when the member stops.
async fn trim_log(raft: Raft, log: MemLog) {
    loop {
        let woken = tokio::time::timeout(Duration::from_secs(1), log.over_budget.notified()).await;
        let (stopped, acked) = {
            let m = raft.metrics();
            let m = m.borrow_watched();
            let acked = m.replication.as_ref().map(|r| {
                r.values()
                    .map(|l| l.as_ref().map_or(0, |l| l.index()))
                    .min()
                    .unwrap_or(0)
            });
            (m.running_state.is_err(), acked)
        };
        if stopped {
            return;
        }
        let Some(upto) = woken.ok().and_then(|()| log.purge_point(acked)) else {
            continue;
        };
        if raft.trigger().snapshot().await.is_err() {
            return;
        }
        // Only what a snapshot holds is purged: give the snapshot a moment (a dedup table).
        tokio::time::sleep(Duration::from_millis(10)).await;
        if raft.trigger().purge_log(upto).await.is_err() {
            return;
        }
        // At most one round per 50 ms; appends meanwhile only wake the next one.
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
}

/// One member of one group, on openraft.
pub struct OpenRaftGroup {
    group: String,
    me: MemberId,
    addr: MemberAddr,
    raft: Raft,
    known: Known,
    /// A gossip answer said its member is in a formed group: join it, never bootstrap another.
    others_formed: Arc<std::sync::atomic::AtomicBool>,
    /// When each member last answered a gossip round of this one: who is live.
    heard: Arc<std::sync::Mutex<BTreeMap<MemberId, Instant>>>,
    /// (term, the most voters that acknowledged at once while this member led in it).
    peak: std::sync::Mutex<(u64, usize)>,
    /// [`Timing::dead_after`].
    dead_after: Duration,
    /// A voter that acknowledged within this long (four heartbeats) is answering now.
    fresh: Duration,
    handle: tokio::runtime::Handle,
    deliveries: Receiver<Delivery>,
    sim: Option<SimNet>,
    router: Router,
    /// See [`Ctx::links`].
    links: net::LinkPool,
    /// The member's log (its size, for tests).
    #[cfg_attr(not(test), allow(dead_code))]
    log: MemLog,
    /// See [`Member::origins`].
    origins: Arc<net::Origins>,
}

impl OpenRaftGroup {
    /// Where other members reach this one.
    pub fn addr(&self) -> &MemberAddr {
        &self.addr
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            group: self.group.clone(),
            me: self.me,
            raft: self.raft.clone(),
            sim: self.sim.clone(),
            links: self.links.clone(),
            origins: self.origins.clone(),
        }
    }
}

/// What a task on the consensus runtime needs to act for a member.
struct Ctx {
    group: String,
    me: MemberId,
    raft: Raft,
    sim: Option<SimNet>,
    /// Connections to the leader, kept between forwarded requests.
    links: net::LinkPool,
    origins: Arc<net::Origins>,
}

impl Ctx {
    /// Runs `req` at the leader: here if this member leads, else forwarded. `None` on no answer.
    async fn at_leader(
        &self,
        target: &Option<(MemberId, String)>,
        req: Request,
        ttl: Duration,
    ) -> Option<Response> {
        match target {
            None => {
                let fut = async {
                    match req {
                        Request::Propose { batch, from } => Response::Proposed(
                            net::propose_local(&self.raft, batch, &self.origins, from).await,
                        ),
                        r => Response::Membership(net::membership_local(&self.raft, &r).await),
                    }
                };
                tokio::time::timeout(ttl, fut).await.ok()
            }
            Some((id, addr)) => {
                let mut link = self.links.take(addr, self.sim.as_ref(), self.me);
                let env = Envelope {
                    group: self.group.clone(),
                    target: *id,
                    req,
                };
                let r = link.call(env, ttl).await.ok();
                self.links.put(addr, link);
                r
            }
        }
    }

    fn next_target(&self, leader: Option<(MemberId, String)>) -> Option<(MemberId, String)> {
        leader.filter(|(id, _)| *id != self.me)
    }

    async fn propose(self, batch: Batch, deadline: Instant) -> Result<u64, ProposeError> {
        // Whether some attempt may have appended the entry: then a timeout is indeterminate.
        let mut maybe_appended = false;
        let mut target = None;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(if maybe_appended {
                    ProposeError::Indeterminate
                } else {
                    ProposeError::NoLeader
                });
            }
            let resp = self
                .at_leader(
                    &target,
                    Request::Propose {
                        batch: batch.clone(),
                        from: self.me,
                    },
                    deadline - now,
                )
                .await;
            let pause = match resp {
                Some(Response::Proposed(ProposeOutcome::Applied(a))) => match a {
                    Applied::Index(i) | Applied::Duplicate(Some(i)) => return Ok(i),
                    Applied::Duplicate(None) => return Err(ProposeError::Duplicate(None)),
                    Applied::Nothing => return Err(ProposeError::Indeterminate),
                },
                Some(Response::Proposed(ProposeOutcome::NotLeader(l))) => {
                    let known = l.is_some();
                    target = self.next_target(l);
                    // Pause unless there is a leader elsewhere to try at once.
                    !known || target.is_none()
                }
                Some(Response::Proposed(ProposeOutcome::Unknown)) | None | Some(_) => {
                    maybe_appended = true;
                    target = None;
                    true
                }
            };
            if pause {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    async fn membership(self, req: Request, deadline: Instant) -> Result<(), MembershipError> {
        let mut target = None;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(MembershipError::Timeout);
            }
            let req = match &req {
                Request::AddVoter { id, addr } => Request::AddVoter {
                    id: *id,
                    addr: addr.clone(),
                },
                Request::Remove(id) => Request::Remove(*id),
                _ => return Err(MembershipError::Refused("not a membership request".into())),
            };
            match self.at_leader(&target, req, deadline - now).await {
                Some(Response::Membership(Ok(()))) => return Ok(()),
                Some(Response::Membership(Err(MembershipOutcome::Refused(e)))) => {
                    return Err(MembershipError::Refused(e));
                }
                Some(Response::Membership(Err(MembershipOutcome::NotLeader(l)))) => {
                    let known = l.is_some();
                    target = self.next_target(l);
                    if !known {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                _ => {
                    target = None;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
}

impl ConsensusGroup for OpenRaftGroup {
    fn id(&self) -> MemberId {
        self.me
    }

    fn propose_batch(&self, entries: Vec<Entry>, timeout: Duration) -> Result<u64, ProposeError> {
        let deadline = Instant::now() + timeout;
        let fut = self.ctx().propose(Batch(entries), deadline);
        // The task ends by its deadline; the margin covers the hand-over.
        run_on(&self.handle, timeout + Duration::from_millis(500), fut)
            .unwrap_or(Err(ProposeError::Closed))
    }

    fn deliveries(&self) -> &Receiver<Delivery> {
        &self.deliveries
    }

    fn known(&self) -> Vec<(MemberId, MemberAddr)> {
        known_list(&self.known)
            .into_iter()
            .filter_map(|(id, a)| Some((id, MemberAddr::decode(&a)?)))
            .collect()
    }

    fn group_formed_elsewhere(&self) -> bool {
        self.others_formed
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn introduce(&self, members: &[(MemberId, MemberAddr)]) {
        let list: Vec<_> = members.iter().map(|(id, a)| (*id, a.encode())).collect();
        merge_known(&self.known, &list);
    }

    fn gossip(&self, timeout: Duration) {
        let (known, me, group, sim) = (
            self.known.clone(),
            self.me,
            self.group.clone(),
            self.sim.clone(),
        );
        let others_formed = self.others_formed.clone();
        let heard = self.heard.clone();
        let fut = async move {
            let list = known_list(&known);
            let calls = list.iter().filter(|(id, _)| *id != me).map(|(id, addr)| {
                let mut link = Link::new(addr, sim.as_ref(), me);
                let env = Envelope {
                    group: group.clone(),
                    target: *id,
                    req: Request::Gossip(list.clone()),
                };
                let id = *id;
                async move { (id, link.call(env, timeout).await) }
            });
            for (id, r) in futures_util::future::join_all(calls).await {
                if let Ok(Response::Gossip(theirs, formed)) = r {
                    heard
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id, Instant::now());
                    merge_known(&known, &theirs);
                    if formed {
                        others_formed.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        };
        let _ = run_on(&self.handle, timeout + Duration::from_millis(500), fut);
    }

    fn bootstrap(
        &self,
        members: Vec<(MemberId, MemberAddr)>,
        timeout: Duration,
    ) -> Result<(), MembershipError> {
        let raft = self.raft.clone();
        run_on(&self.handle, timeout, async move {
            raft.initialize(net::initial_members(&members))
                .await
                .map_err(|e| MembershipError::Refused(e.to_string()))
        })
        .unwrap_or(Err(MembershipError::Timeout))
    }

    fn add_voter(
        &self,
        id: MemberId,
        addr: MemberAddr,
        timeout: Duration,
    ) -> Result<(), MembershipError> {
        let deadline = Instant::now() + timeout;
        let fut = self.ctx().membership(
            Request::AddVoter {
                id,
                addr: addr.encode(),
            },
            deadline,
        );
        run_on(&self.handle, timeout + Duration::from_millis(500), fut)
            .unwrap_or(Err(MembershipError::Closed))
    }

    fn remove_member(&self, id: MemberId, timeout: Duration) -> Result<(), MembershipError> {
        let deadline = Instant::now() + timeout;
        let fut = self.ctx().membership(Request::Remove(id), deadline);
        run_on(&self.handle, timeout + Duration::from_millis(500), fut)
            .unwrap_or(Err(MembershipError::Closed))
    }

    fn reconcile(
        &self,
        gone: &std::collections::BTreeSet<MemberId>,
        timeout: Duration,
    ) -> Result<Option<Change>, MembershipError> {
        let plan = {
            let m = self.raft.metrics();
            let m = m.borrow_watched();
            if m.current_leader != Some(self.me) {
                return Ok(None);
            }
            let cfg = m.membership_config.membership();
            let voters: Vec<MemberId> = cfg.voter_ids().collect();
            let learners: Vec<MemberId> = cfg.learner_ids().collect();
            // No entry, or none yet, is silence: the leader never heard it since it leads.
            let silent = |id: &MemberId| {
                m.heartbeat
                    .as_ref()
                    .and_then(|h| h.get(id).copied().flatten())
                    .is_none_or(|t| openraft::Instant::elapsed(&*t) >= self.dead_after)
            };
            let heard = self.heard.lock().unwrap_or_else(|e| e.into_inner());
            let live = |id: &MemberId| {
                *id == self.me || heard.get(id).is_some_and(|t| t.elapsed() < self.dead_after)
            };
            // The most voters that answered at once under this leadership: a silent voter
            // beyond that many was replaced (its process came back under a new id); one within
            // it is only cut off or paused, and stays. "Answered" is within a few heartbeats,
            // so a killed voter no longer counts by the time its successor can join.
            let fresh = |id: &MemberId| {
                *id == self.me
                    || m.heartbeat
                        .as_ref()
                        .and_then(|h| h.get(id).copied().flatten())
                        .is_some_and(|t| openraft::Instant::elapsed(&*t) < self.fresh)
            };
            let responsive = voters.iter().filter(|v| fresh(v)).count();
            let floor = {
                let mut p = self.peak.lock().unwrap_or_else(|e| e.into_inner());
                if p.0 != m.current_term {
                    *p = (m.current_term, 0);
                }
                p.1 = p.1.max(responsive);
                p.1.max(MIN_VOTERS)
            };
            plan_change(
                self.me,
                &voters,
                &learners,
                &self.known().into_iter().collect::<Vec<_>>(),
                gone,
                floor,
                silent,
                live,
            )
        };
        let Some(change) = plan else { return Ok(None) };
        // Made here, by the leader that planned it, or not at all: forwarded to a later leader
        // the plan could act on what this one saw (a member it found silent may lead now).
        let req = match &change {
            Plan::Add(id, addr) => Request::AddVoter {
                id: *id,
                addr: addr.encode(),
            },
            Plan::Remove(id) => Request::Remove(*id),
        };
        let raft = self.raft.clone();
        let fut =
            async move { tokio::time::timeout(timeout, net::membership_local(&raft, &req)).await };
        match run_on(&self.handle, timeout + Duration::from_millis(500), fut) {
            None => Err(MembershipError::Closed),
            Some(Err(_elapsed)) => Err(MembershipError::Timeout),
            Some(Ok(Ok(()))) => Ok(Some(change.done())),
            Some(Ok(Err(MembershipOutcome::NotLeader(_)))) => Ok(None),
            Some(Ok(Err(MembershipOutcome::Refused(e)))) => Err(MembershipError::Refused(e)),
        }
    }

    fn leader(&self) -> Option<MemberId> {
        self.raft.metrics().borrow_watched().current_leader
    }

    fn heard_after(&self, id: MemberId, t: Instant) -> bool {
        self.heard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .is_some_and(|h| *h > t)
    }

    fn voters(&self) -> Vec<MemberId> {
        self.raft
            .metrics()
            .borrow_watched()
            .membership_config
            .voter_ids()
            .collect()
    }
}

/// The one membership change [`ConsensusGroup::reconcile`] makes next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    Add(MemberId, MemberAddr),
    Remove(MemberId),
}

impl Plan {
    fn done(&self) -> Change {
        match self {
            Plan::Add(id, _) => Change::Added(*id),
            Plan::Remove(id) => Change::Removed(*id),
        }
    }
}

/// Decides [`ConsensusGroup::reconcile`]'s next change (see there) at leader `me`: `silent`
/// says a node has not acknowledged the leader lately, `live` that it answered gossip lately.
/// A silent voter goes only while more than `floor` voters stay (at least [`MIN_VOTERS`]: the
/// most that answered at once, so only a replaced one goes), one in `gone` while more than
/// [`MIN_VOTERS`] stay.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_change(
    me: MemberId,
    voters: &[MemberId],
    learners: &[MemberId],
    known: &[(MemberId, MemberAddr)],
    gone: &std::collections::BTreeSet<MemberId>,
    floor: usize,
    silent: impl Fn(&MemberId) -> bool,
    live: impl Fn(&MemberId) -> bool,
) -> Option<Plan> {
    let dead = |id: &MemberId| *id != me && (gone.contains(id) || (silent(id) && !live(id)));
    if let Some((id, addr)) = known
        .iter()
        .find(|(id, _)| !voters.contains(id) && !gone.contains(id) && live(id))
    {
        return Some(Plan::Add(*id, addr.clone()));
    }
    if let Some(id) = learners.iter().find(|id| dead(id)) {
        return Some(Plan::Remove(*id));
    }
    let removable = |id: &&MemberId| {
        *id != &me
            && if gone.contains(id) {
                voters.len() > MIN_VOTERS
            } else {
                voters.len() > floor.max(MIN_VOTERS) && dead(id)
            }
    };
    voters.iter().find(removable).map(|id| Plan::Remove(*id))
}

impl Drop for OpenRaftGroup {
    fn drop(&mut self) {
        // Unreachable at once (a crash, as far as the others can tell), then stopped.
        match &self.sim {
            Some(s) => s.unregister(&self.group, self.me),
            None => self.router.remove(&self.group, self.me),
        }
        let raft = self.raft.clone();
        self.handle.spawn(async move {
            let _ = raft.shutdown().await;
        });
    }
}

#[cfg(test)]
mod tests;
