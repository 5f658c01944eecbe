//! An in-process network between members, with faults the test controls: partitions (one-way or
//! both), seeded message loss, extra delay (everywhere or on one link), and crashes (a member removed answers nothing).
//!
//! The members' Raft instances run on their consensus threads as usual; only the links are
//! simulated. Loss is drawn from a seeded generator, so a schedule is reproducible as far as
//! the threads' timing allows.

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::entry::MemberId;
use crate::raft::net::{handle, Envelope, Response};
use crate::raft::Member;

fn reencode<T: serde::Serialize + serde::de::DeserializeOwned>(v: &T) -> io::Result<T> {
    crate::frame::decode(crate::frame::encode(v)?.into_bytes())
}

#[derive(Default)]
struct State {
    members: HashMap<(String, MemberId), Member>,
    /// Directed cuts: no message from .0 reaches .1.
    cut: HashSet<(MemberId, MemberId)>,
    loss_per_mille: u32,
    delay: Duration,
    /// Extra delay of the messages on one directed link (a slow path to one member).
    link_delay: HashMap<(MemberId, MemberId), Duration>,
    rng: u64,
    delivered: u64,
    dropped: u64,
}

/// A simulated network; clones share it.
#[derive(Clone, Default)]
pub struct SimNet(Arc<Mutex<State>>);

impl SimNet {
    /// A network whose losses are drawn from `seed`.
    pub fn new(seed: u64) -> SimNet {
        let net = SimNet::default();
        net.lock().rng = seed | 1;
        net
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn register(&self, group: &str, id: MemberId, raft: Member) {
        self.lock().members.insert((group.to_owned(), id), raft);
    }

    pub(crate) fn unregister(&self, group: &str, id: MemberId) {
        self.lock().members.remove(&(group.to_owned(), id));
    }

    /// Cuts every link between the two sides, both ways.
    pub fn partition(&self, a: &[MemberId], b: &[MemberId]) {
        let mut s = self.lock();
        for x in a {
            for y in b {
                s.cut.insert((*x, *y));
                s.cut.insert((*y, *x));
            }
        }
    }

    /// Cuts the link from `from` to `to` only.
    pub fn cut_one_way(&self, from: MemberId, to: MemberId) {
        self.lock().cut.insert((from, to));
    }

    /// Restores every link.
    pub fn heal(&self) {
        self.lock().cut.clear();
    }

    /// Drops this share of messages (per thousand, each direction drawn separately).
    pub fn set_loss(&self, per_mille: u32) {
        self.lock().loss_per_mille = per_mille.min(1000);
    }

    /// Delays every message by this much.
    pub fn set_delay(&self, d: Duration) {
        self.lock().delay = d;
    }

    /// Delays every message from `from` to `to` by `d` more (answers come back at once).
    pub fn set_link_delay(&self, from: MemberId, to: MemberId, d: Duration) {
        self.lock().link_delay.insert((from, to), d);
    }

    /// (delivered, dropped) messages so far.
    pub fn counts(&self) -> (u64, u64) {
        let s = self.lock();
        (s.delivered, s.dropped)
    }

    /// Whether a message from `from` to `to` gets through now; draws from the seeded generator.
    fn passes(&self, from: MemberId, to: MemberId) -> bool {
        let mut s = self.lock();
        if s.cut.contains(&(from, to)) {
            s.dropped += 1;
            return false;
        }
        // xorshift64: small, seeded, good enough to pick losses.
        s.rng ^= s.rng << 13;
        s.rng ^= s.rng >> 7;
        s.rng ^= s.rng << 17;
        if (s.rng % 1000) < u64::from(s.loss_per_mille) {
            s.dropped += 1;
            return false;
        }
        s.delivered += 1;
        true
    }

    pub(crate) async fn call(&self, from: MemberId, env: Envelope) -> io::Result<Response> {
        let to = env.target;
        let delay = {
            let s = self.lock();
            s.delay + s.link_delay.get(&(from, to)).copied().unwrap_or_default()
        };
        let lost = || io::Error::new(io::ErrorKind::TimedOut, "simulated loss");
        if !self.passes(from, to) {
            // A lost request looks like a silent peer: wait a little instead of failing at once.
            tokio::time::sleep(Duration::from_millis(20).max(delay)).await;
            return Err(lost());
        }
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let raft = self.lock().members.get(&(env.group.clone(), to)).cloned();
        let Some(raft) = raft else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "member down",
            ));
        };
        // Through the wire format, as over TCP, so the simulation also proves what TCP sends.
        let env: Envelope = reencode(&env)?;
        let resp: Response = reencode(&handle(&raft, env.req).await)?;
        if !self.passes(to, from) {
            return Err(lost());
        }
        Ok(resp)
    }
}
