//! Request/response between members: the RPCs openraft needs plus forwarding to the leader.
//!
//! One wire format for both links: TCP carries each [`Envelope`] as a length-prefixed JSON frame
//! (one request in flight per connection); the simulated network ([`crate::sim`]) hands the
//! values over directly, after its fault injection. Frames from the network are bounded and
//! checked; a bad one closes its connection and is counted, never a panic.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::alias::{SnapshotMetaOf, SnapshotOf, VoteOf};
use openraft::async_runtime::WatchReceiver;
use openraft::error::{
    ClientWriteError, NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, ChangeMembers};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{merge_known, Applied, Cfg, Member, Raft};
use crate::entry::{Batch, MemberId};
use crate::frame::Frame;
use crate::group::MemberAddr;
use crate::sim::SimNet;

/// Largest frame accepted from the network: a 64 MiB sample plus its JSON overhead would not fit,
/// so the bound is generous; anything larger is refused before allocating.
pub(crate) const MAX_FRAME: usize = 256 << 20;

/// A request to one member of one group.
#[derive(Serialize, Deserialize)]
pub(crate) struct Envelope {
    pub group: String,
    pub target: MemberId,
    pub req: Request,
}

#[derive(Serialize, Deserialize)]
pub(crate) enum Request {
    Append(AppendEntriesRequest<Cfg>),
    Vote(VoteRequest<Cfg>),
    PreVote(VoteRequest<Cfg>),
    Snapshot {
        vote: VoteOf<Cfg>,
        meta: SnapshotMetaOf<Cfg>,
        #[serde(with = "crate::frame::vec")]
        data: Vec<u8>,
    },
    /// A leader hands leadership over: the target campaigns at once if its log holds the
    /// leader's last entry; every other voter stops honouring the leader's lease.
    TransferLeader(TransferLeaderRequest<Cfg>),
    /// A follower forwards a proposal; the target appends it only if it leads.
    Propose {
        batch: Batch,
        /// The member the proposal came from (see [`Origins`]).
        from: MemberId,
    },
    AddVoter {
        id: MemberId,
        addr: String,
    },
    Remove(MemberId),
    /// Gossip: the members the sender knows; the answer is what the target knows.
    Gossip(Vec<(MemberId, String)>),
}

#[derive(Serialize, Deserialize)]
pub(crate) enum Response {
    Append(AppendEntriesResponse<Cfg>),
    Vote(VoteResponse<Cfg>),
    Snapshot(SnapshotResponse<Cfg>),
    TransferLeader(TransferLeaderResponse<Cfg>),
    Proposed(ProposeOutcome),
    Membership(Result<(), MembershipOutcome>),
    /// What the target knows, and whether it is in a formed group (has voters).
    Gossip(Vec<(MemberId, String)>, bool),
    /// The target is not a member of that group here, or it failed.
    Error(String),
}

/// The least time an append is given to be answered (see `append_entries`).
const APPEND_TTL_FLOOR: Duration = Duration::from_secs(1);

/// How long [`Origins`] counts before it judges.
const ORIGIN_WINDOW: Duration = Duration::from_millis(250);
/// Fewer samples than this in a window move nothing.
const ORIGIN_MIN_SAMPLES: u64 = 50;

/// Where the samples a leader applies come from. A forwarded proposal costs its writer a round
/// trip to the leader and the leader a frame to decode, so when one other member proposes at
/// least 90 % of a busy quarter second's samples (a single writer's process), leadership moves
/// there. Samples, not proposals, are counted: a forwarded stream of large samples goes as a
/// few group commits (a 64 KiB one at 2k samples/s may make fewer than 50 a window). Writers
/// spread over members (a ping-pong, the fault harness's writer per member) move nothing.
pub(crate) struct Origins {
    me: MemberId,
    window: std::sync::Mutex<Option<(std::time::Instant, HashMap<MemberId, u64>)>>,
}

impl Origins {
    pub(crate) fn new(me: MemberId) -> Self {
        Origins {
            me,
            window: Default::default(),
        }
    }

    /// Counts one applied proposal of `samples` samples from `from`; at the end of a window,
    /// the member leadership should move to, if any.
    pub(crate) fn note(&self, from: MemberId, samples: usize) -> Option<MemberId> {
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let (start, counts) = w.get_or_insert_with(|| (std::time::Instant::now(), HashMap::new()));
        *counts.entry(from).or_default() += samples.max(1) as u64;
        if start.elapsed() < ORIGIN_WINDOW {
            return None;
        }
        let total: u64 = counts.values().sum();
        let top = counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(id, n)| (*id, *n));
        *w = None;
        let (top, n) = top?;
        (top != self.me && total >= ORIGIN_MIN_SAMPLES && n * 10 >= total * 9).then_some(top)
    }
}

/// A proposal's outcome at the member that tried to append it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum ProposeOutcome {
    Applied(Applied),
    /// Not the leader; here is who is, when known.
    NotLeader(Option<(MemberId, String)>),
    /// Appended, then discarded or cut off: may or may not commit.
    Unknown,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum MembershipOutcome {
    NotLeader(Option<(MemberId, String)>),
    Refused(String),
}

fn leader_of(e: &ClientWriteError<Cfg>) -> Option<Option<(MemberId, String)>> {
    match e {
        ClientWriteError::ForwardToLeader(f) => Some(
            f.leader_id
                .zip(f.leader_node.as_ref().map(|n| n.addr.clone())),
        ),
        _ => None,
    }
}

/// Appends `batch` at this member if it leads; counts that it came `from` there in `origins`,
/// which may move leadership there.
pub(crate) async fn propose_local(
    raft: &Raft,
    batch: Batch,
    origins: &Origins,
    from: MemberId,
) -> ProposeOutcome {
    let samples = batch.0.len();
    match raft.client_write(batch).await {
        Ok(resp) => {
            if let Some(to) = origins.note(from, samples) {
                let voter = raft
                    .metrics()
                    .borrow_watched()
                    .membership_config
                    .membership()
                    .voter_ids()
                    .any(|v| v == to);
                if voter && caught_up(raft, to).await {
                    tracing::debug!(%to, "leadership moves to the member that proposes nearly everything");
                    let _ = raft.trigger().transfer_leader(to).await;
                }
            }
            ProposeOutcome::Applied(resp.data)
        }
        Err(openraft::error::RaftError::APIError(e)) => match leader_of(&e) {
            Some(l) => ProposeOutcome::NotLeader(l),
            None => ProposeOutcome::Unknown,
        },
        Err(openraft::error::RaftError::Fatal(_)) => ProposeOutcome::Unknown,
    }
}

/// How long a leader holds a proposal's answer for the member leadership should move to to
/// catch up with its log; past it, the move waits for the next window.
const TRANSFER_CATCH_UP: Duration = Duration::from_millis(100);

/// Whether voter `to` holds this leader's whole log, waiting up to [`TRANSFER_CATCH_UP`] for
/// it. Once asked for a transfer, openraft's leader stops heartbeats and refuses proposals, and
/// its target ignores the request unless its log already reaches the leader's last entry; then
/// nothing moves until an election timeout elects whichever member's timer fires first. Under
/// a saturating stream the target may be an append behind, so the leader asks only once it has
/// caught up. The caller holds the answer to the proposal that decided the move, so a single
/// writer, the usual reason for one, appends nothing meanwhile.
async fn caught_up(raft: &Raft, to: MemberId) -> bool {
    let last = raft.metrics().borrow_watched().last_log_index;
    raft.wait(Some(TRANSFER_CATCH_UP))
        .metrics(
            |m| {
                let matched = m.replication.as_ref().and_then(|r| r.get(&to)).cloned();
                matched.flatten().map(|l| l.index()) >= last
            },
            "the member leadership moves to holds the leader's log",
        )
        .await
        .is_ok()
}

/// Runs a membership change at this member if it leads.
pub(crate) async fn membership_local(raft: &Raft, req: &Request) -> Result<(), MembershipOutcome> {
    let r = match req {
        Request::AddVoter { id, addr } => {
            let node = BasicNode { addr: addr.clone() };
            match raft.add_learner(*id, node, true).await {
                Ok(_) => {
                    raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([*id])), false)
                        .await
                }
                Err(e) => Err(e),
            }
        }
        Request::Remove(id) => {
            let (me, is_voter) = {
                let metrics = raft.metrics();
                let m = metrics.borrow_watched();
                // A learner is not a voter: openraft refuses RemoveVoters for it.
                let is_voter = m.membership_config.voter_ids().any(|v| v == *id);
                (m.id, is_voter)
            };
            // A request planned at an earlier leader can reach the member it removes once that
            // member leads. A leader that drops itself stays leader of a configuration without
            // it until it notices, and openraft asserts against any later change it makes.
            if *id == me {
                return Err(MembershipOutcome::Refused(
                    "a leader does not remove itself".into(),
                ));
            }
            let ids = BTreeSet::from([*id]);
            let change = if is_voter {
                ChangeMembers::RemoveVoters(ids)
            } else {
                ChangeMembers::RemoveNodes(ids)
            };
            raft.change_membership(change, false).await
        }
        _ => {
            return Err(MembershipOutcome::Refused(
                "not a membership request".into(),
            ))
        }
    };
    match r {
        Ok(_) => Ok(()),
        Err(openraft::error::RaftError::APIError(e)) => match leader_of(&e) {
            Some(l) => Err(MembershipOutcome::NotLeader(l)),
            None => Err(MembershipOutcome::Refused(e.to_string())),
        },
        Err(e) => Err(MembershipOutcome::Refused(e.to_string())),
    }
}

/// Serves one request at its target member.
pub(crate) async fn handle(member: &Member, req: Request) -> Response {
    let raft = &member.raft;
    match req {
        Request::Gossip(members) => {
            merge_known(&member.known, &members);
            let formed = member.formed();
            let k = member.known.lock().unwrap_or_else(|e| e.into_inner());
            Response::Gossip(k.iter().map(|(id, a)| (*id, a.clone())).collect(), formed)
        }
        Request::Append(r) => match raft.append_entries(r).await {
            Ok(x) => Response::Append(x),
            Err(e) => Response::Error(e.to_string()),
        },
        Request::Vote(r) => match raft.vote(r).await {
            Ok(x) => Response::Vote(x),
            Err(e) => Response::Error(e.to_string()),
        },
        Request::PreVote(r) => match raft.pre_vote(r).await {
            Ok(x) => Response::Vote(x),
            Err(e) => Response::Error(e.to_string()),
        },
        Request::Snapshot { vote, meta, data } => {
            match raft
                .install_full_snapshot(
                    vote,
                    SnapshotOf::<Cfg, Vec<u8>> {
                        meta,
                        snapshot: data,
                    },
                )
                .await
            {
                Ok(x) => Response::Snapshot(x),
                Err(e) => Response::Error(e.to_string()),
            }
        }
        Request::TransferLeader(r) => match raft.handle_transfer_leader(r).await {
            Ok(x) => Response::TransferLeader(x),
            Err(e) => Response::Error(e.to_string()),
        },
        Request::Propose { batch, from } => {
            Response::Proposed(propose_local(raft, batch, &member.origins, from).await)
        }
        r @ (Request::AddVoter { .. } | Request::Remove(_)) => {
            Response::Membership(membership_local(raft, &r).await)
        }
    }
}

/// The members this consensus thread hosts, by (group, id): where the TCP server routes.
#[derive(Clone, Default)]
pub(crate) struct Router(Arc<Mutex<HashMap<(String, MemberId), Member>>>);

impl Router {
    pub(crate) fn insert(&self, group: &str, id: MemberId, raft: Member) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((group.to_owned(), id), raft);
    }
    pub(crate) fn remove(&self, group: &str, id: MemberId) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(group.to_owned(), id));
    }
    pub(crate) fn get(&self, group: &str, id: MemberId) -> Option<Member> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(group.to_owned(), id))
            .cloned()
    }
}

/// Frames refused by the TCP server (too large, undecodable): counted, the connection closed.
pub(crate) static BAD_FRAMES: AtomicU64 = AtomicU64::new(0);

async fn read_frame(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let len = s.read_u32().await? as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "frame too large",
        ));
    }
    // Read into spare capacity: zeroing a large frame first cost a memset per byte.
    let mut buf = Vec::with_capacity(len);
    let read = (&mut *s).take(len as u64).read_to_end(&mut buf).await?;
    if read < len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(buf)
}

/// Writes `frame` behind its length, in vectored writes: its byte strings are never copied
/// into one buffer.
async fn write_frame(s: &mut TcpStream, frame: Frame) -> io::Result<()> {
    let len = u32::try_from(frame.len())
        .ok()
        .filter(|&l| l as usize <= MAX_FRAME)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    let prefix = len.to_be_bytes();
    let mut parts: Vec<&[u8]> = Vec::with_capacity(2 + frame.strings.len());
    parts.push(&prefix);
    parts.push(&frame.head);
    parts.extend(frame.strings.iter().map(|b| &b[..]));
    let mut slices: Vec<io::IoSlice<'_>> = parts.iter().map(|p| io::IoSlice::new(p)).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = s.write_vectored(rest).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        io::IoSlice::advance_slices(&mut rest, n);
    }
    s.flush().await
}

/// Accepts connections and serves each one's requests in turn.
pub(crate) async fn serve(listener: TcpListener, router: Router) {
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = sock.set_nodelay(true);
        let router = router.clone();
        tokio::spawn(async move {
            loop {
                let frame = match read_frame(&mut sock).await {
                    Ok(f) => f,
                    Err(e) => {
                        if e.kind() == io::ErrorKind::InvalidData {
                            BAD_FRAMES.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!("consensus: oversized frame, closing the connection");
                        }
                        return;
                    }
                };
                let Ok(env) = crate::frame::decode::<Envelope>(frame.into()) else {
                    BAD_FRAMES.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!("consensus: undecodable frame, closing the connection");
                    return;
                };
                let resp = match router.get(&env.group, env.target) {
                    Some(raft) => handle(&raft, env.req).await,
                    None => {
                        Response::Error(format!("no member {} of group {}", env.target, env.group))
                    }
                };
                let Ok(bytes) = crate::frame::encode(&resp) else {
                    return;
                };
                if write_frame(&mut sock, bytes).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// A client's way to one member.
pub(crate) enum Link {
    Tcp {
        addr: SocketAddr,
        conn: Option<TcpStream>,
    },
    Sim {
        net: SimNet,
        from: MemberId,
    },
    Unknown(String),
}

impl Link {
    pub(crate) fn new(addr: &str, sim: Option<&SimNet>, from: MemberId) -> Link {
        match (MemberAddr::decode(addr), sim) {
            (Some(MemberAddr::Tcp(a)), _) => Link::Tcp {
                addr: a,
                conn: None,
            },
            (Some(MemberAddr::Sim(_)), Some(net)) => Link::Sim {
                net: net.clone(),
                from,
            },
            _ => Link::Unknown(addr.to_owned()),
        }
    }

    /// Sends `env` and waits for the answer, up to `ttl`.
    pub(crate) async fn call(&mut self, env: Envelope, ttl: Duration) -> io::Result<Response> {
        match self {
            Link::Tcp { addr, conn } => {
                let r = tokio::time::timeout(ttl, async {
                    if conn.is_none() {
                        let s = TcpStream::connect(*addr).await?;
                        s.set_nodelay(true)?;
                        *conn = Some(s);
                    }
                    let s = conn.as_mut().expect("connected above");
                    write_frame(s, crate::frame::encode(&env)?).await?;
                    let frame = read_frame(s).await?;
                    crate::frame::decode::<Response>(frame.into())
                })
                .await
                .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "rpc timed out")));
                if r.is_err() {
                    // The answer may still arrive: never reuse a connection out of step.
                    *conn = None;
                }
                r
            }
            Link::Sim { net, from } => {
                let (net, from) = (net.clone(), *from);
                tokio::time::timeout(ttl, net.call(from, env))
                    .await
                    .unwrap_or_else(|_| {
                        Err(io::Error::new(io::ErrorKind::TimedOut, "rpc timed out"))
                    })
            }
            Link::Unknown(a) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("unknown address {a}"),
            )),
        }
    }
}

/// Idle connections of forwarded requests, by address: a follower's proposals go to the leader
/// one after another, and a TCP connect (with its accept and server task) per proposal cost more
/// than the proposal itself.
#[derive(Clone, Default)]
pub(crate) struct LinkPool(Arc<Mutex<HashMap<String, Vec<Link>>>>);

/// Idle links kept per address (more only while that many requests run at once).
const IDLE_LINKS: usize = 4;

impl LinkPool {
    /// An idle link to `addr`, or a new one.
    pub(crate) fn take(&self, addr: &str, sim: Option<&SimNet>, from: MemberId) -> Link {
        let idle = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(addr)
            .and_then(Vec::pop);
        idle.unwrap_or_else(|| Link::new(addr, sim, from))
    }

    /// Gives a link back after its call. One whose call failed has dropped its connection
    /// (it never reuses one out of step) and would only reconnect: not kept.
    pub(crate) fn put(&self, addr: &str, link: Link) {
        if matches!(link, Link::Tcp { conn: None, .. } | Link::Unknown(_)) {
            return;
        }
        let mut pool = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let idle = pool.entry(addr.to_owned()).or_default();
        if idle.len() < IDLE_LINKS {
            idle.push(link);
        }
    }
}

/// openraft's client side towards one target member.
pub(crate) struct Network {
    group: String,
    target: MemberId,
    link: Link,
}

fn unreachable(e: &io::Error) -> RPCError<Cfg> {
    RPCError::Unreachable(Unreachable::new(e))
}

fn unexpected(what: &str) -> RPCError<Cfg> {
    RPCError::Network(NetworkError::new(&io::Error::other(what.to_owned())))
}

impl Network {
    async fn rpc(&mut self, req: Request, ttl: Duration) -> Result<Response, RPCError<Cfg>> {
        let env = Envelope {
            group: self.group.clone(),
            target: self.target,
            req,
        };
        match self.link.call(env, ttl).await {
            Ok(Response::Error(e)) => Err(unreachable(&io::Error::other(e))),
            Ok(r) => Ok(r),
            Err(e) => Err(unreachable(&e)),
        }
    }
}

impl RaftNetworkV2<Cfg> for Network {
    type SnapshotData = Vec<u8>;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Cfg>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<Cfg>, RPCError<Cfg>> {
        // openraft asks for an answer within a heartbeat (50 ms). A group commit of a few
        // hundred KiB behind a saturated 100 Mbit/s link's queue takes longer than that, and
        // an append given up is sent again whole, so it never got through: the ATOMIC critical
        // flow of the reliability test stalled after its first commit.
        let ttl = option.hard_ttl().max(APPEND_TTL_FLOOR);
        match self.rpc(Request::Append(rpc), ttl).await? {
            Response::Append(r) => Ok(r),
            _ => Err(unexpected("append: unexpected response")),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<Cfg>,
        option: RPCOption,
    ) -> Result<VoteResponse<Cfg>, RPCError<Cfg>> {
        match self.rpc(Request::Vote(rpc), option.hard_ttl()).await? {
            Response::Vote(r) => Ok(r),
            _ => Err(unexpected("vote: unexpected response")),
        }
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<Cfg>,
        option: RPCOption,
    ) -> Result<VoteResponse<Cfg>, RPCError<Cfg>> {
        match self.rpc(Request::PreVote(rpc), option.hard_ttl()).await? {
            Response::Vote(r) => Ok(r),
            _ => Err(unexpected("pre-vote: unexpected response")),
        }
    }

    // Without this, openraft's default answers "not implemented": the leader that asked
    // stopped its heartbeats and refused proposals, and leadership went to whichever member's
    // election timer fired first, the one asked for or not.
    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<Cfg>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<Cfg>, RPCError<Cfg>> {
        match self
            .rpc(Request::TransferLeader(req), option.hard_ttl())
            .await?
        {
            Response::TransferLeader(r) => Ok(r),
            _ => Err(unexpected("transfer leader: unexpected response")),
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: VoteOf<Cfg>,
        snapshot: SnapshotOf<Cfg, Vec<u8>>,
        cancel: impl Future<Output = ReplicationClosed> + openraft::OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<Cfg>, StreamingError<Cfg>> {
        let req = Request::Snapshot {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        };
        let ttl = option.hard_ttl().max(Duration::from_secs(5));
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            r = self.rpc(req, ttl) => match r {
                Ok(Response::Snapshot(s)) => Ok(s),
                Ok(_) => Err(StreamingError::Network(NetworkError::new(&io::Error::other("snapshot: unexpected response")))),
                Err(RPCError::Unreachable(u)) => Err(StreamingError::Unreachable(u)),
                Err(e) => Err(StreamingError::Network(NetworkError::new(&e))),
            },
        }
    }
}

/// Builds a [`Network`] per target from the address in the membership.
pub(crate) struct NetworkFactory {
    pub group: String,
    pub me: MemberId,
    pub sim: Option<SimNet>,
}

impl RaftNetworkFactory<Cfg> for NetworkFactory {
    type Network = Network;

    async fn new_client(&mut self, target: MemberId, node: &BasicNode) -> Network {
        Network {
            group: self.group.clone(),
            target,
            link: Link::new(&node.addr, self.sim.as_ref(), self.me),
        }
    }
}

/// The initial voters as openraft's `initialize` takes them.
pub(crate) fn initial_members(members: &[(MemberId, MemberAddr)]) -> BTreeMap<MemberId, BasicNode> {
    members
        .iter()
        .map(|(id, a)| (*id, BasicNode { addr: a.encode() }))
        .collect()
}

#[cfg(test)]
mod origin_tests {
    use super::*;

    fn id(b: u8) -> MemberId {
        MemberId([b; 12])
    }

    /// Judged once per window: a member proposing at least 90 % of a busy window is named,
    /// an even split, a quiet window or the leader's own proposals name nobody.
    #[test]
    fn leadership_follows_a_member_that_proposes_nearly_everything() {
        let judge = |counts: &[(u8, u64)]| {
            let o = Origins::new(id(0));
            for &(from, n) in counts {
                for _ in 0..n {
                    assert_eq!(o.note(id(from), 1), None, "judged before the window ended");
                }
            }
            // The window ends; the next proposal (from the leader itself) is counted too.
            o.window.lock().unwrap().as_mut().unwrap().0 -= ORIGIN_WINDOW;
            o.note(id(0), 1)
        };
        assert_eq!(judge(&[(1, 300)]), Some(id(1)));
        assert_eq!(judge(&[(1, 280), (2, 20)]), Some(id(1)));
        assert_eq!(judge(&[(1, 250), (2, 50)]), None, "83 % is not enough");
        assert_eq!(judge(&[(1, 150), (2, 150)]), None, "a ping-pong stays");
        assert_eq!(judge(&[(1, 40)]), None, "a quiet window stays");
        assert_eq!(judge(&[(0, 300)]), None, "the leader's own writes stay");
    }

    /// A stream of large samples goes as a few group commits of many samples each: what counts
    /// is how many samples came from where, not how many proposals.
    #[test]
    fn a_few_large_group_commits_from_one_member_move_leadership_there() {
        let o = Origins::new(id(0));
        for _ in 0..10 {
            assert_eq!(o.note(id(1), 40), None);
        }
        assert_eq!(o.note(id(2), 3), None);
        o.window.lock().unwrap().as_mut().unwrap().0 -= ORIGIN_WINDOW;
        assert_eq!(
            o.note(id(1), 40),
            Some(id(1)),
            "440 of 443 samples from member 1"
        );

        let o = Origins::new(id(0));
        for _ in 0..10 {
            assert_eq!(o.note(id(1), 1), None);
        }
        o.window.lock().unwrap().as_mut().unwrap().0 -= ORIGIN_WINDOW;
        assert_eq!(
            o.note(id(1), 1),
            None,
            "11 single samples are a quiet window"
        );
    }
}
