//! First transmissions to a multicast locator shared by several matched readers.
//!
//! Readers that share a multicast locator (and are at least
//! [`MulticastPolicy::Shared::min_readers`]) form a *group*. The group has its own cursor,
//! `unsent`: each new sample goes out once, to the group's locator, with reader id
//! `ENTITYID_UNKNOWN` and no INFO_DST, followed by one HEARTBEAT for the whole group.
//! Everything else stays per reader and unicast: the handshake, repairs (ACKNACK, NACK_FRAG),
//! and the HEARTBEATs that end a repair.
//!
//! # Riders and catch-up
//! A member *rides* the group when it is synced (past its handshake) and its own cursor is at
//! or past the group's (`r.unsent >= g.unsent`): whenever the group sends number `s`, every
//! rider whose cursor is `s` moves to `s + 1`, exactly as if the sample had been sent to it
//! alone. A member behind the group (a reader that just finished its handshake, or a
//! transient-local late joiner) gets the numbers below the group's cursor by unicast from its
//! own proxy, then rides. So each number at or past a reliable reader's start is sent to it
//! exactly once as a first transmission — by unicast or by multicast — and repaired by
//! unicast when lost.
//!
//! # The handshake
//! A member still in its handshake is on the group's address, so it may see multicast data
//! before it has heard of the writer (then it drops it as unknown) or before its first
//! HEARTBEAT (then it buffers it, as any out-of-order data). Its proxy sends it nothing until
//! its first ACKNACK; its catch-up then starts from where that ACKNACK says, so buffered
//! multicast copies are not needed again, and any that are resent are dropped as duplicates by
//! the reader. While some reliable member is in its handshake, the group's HEARTBEATs go to
//! each member by unicast instead: a multicast HEARTBEAT would tell that member a stream start
//! that is not its own.

use crate::types::{EntityId, Locator, Locators, SequenceNumber};
use crate::wire::Heartbeat;

use super::emit::Cursor;
use super::transmit::{Destination, OutSubmessage, Transmit};
use super::{ReaderProxy, Shared};

/// When a writer sends first transmissions to a multicast locator instead of to each reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MulticastPolicy {
    /// Always one unicast copy per reader.
    Off,
    /// Use a reader's multicast locator once at least `min_readers` matched readers share it
    /// (like Cyclone DDS, which multicasts to an address set shared by several readers).
    Shared {
        /// Readers that must share a locator (values below 1 count as 1).
        min_readers: usize,
    },
}

impl Default for MulticastPolicy {
    /// On, from two readers sharing a locator.
    fn default() -> Self {
        MulticastPolicy::Shared { min_readers: 2 }
    }
}

/// Readers sharing one multicast locator, and the cursor of its first transmissions.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) locator: Locator,
    /// Indices into the writer's readers.
    pub(super) members: Vec<usize>,
    /// Next sample to multicast.
    pub(super) unsent: SequenceNumber,
    /// Fragments of `unsent` already multicast.
    pub(super) unsent_frag: u32,
    /// Last sequence number for which the group was asked to acknowledge.
    pub(super) ack_req_seq: SequenceNumber,
    /// A group HEARTBEAT to send (the value is its final flag).
    pub(super) hb_due: Option<bool>,
}

fn rides(r: &ReaderProxy, g: &Group) -> bool {
    r.synced && r.unsent >= g.unsent
}

impl Group {
    /// Whether HEARTBEATs may go to the whole group: no reliable member is in its handshake
    /// or about to be told its stream start.
    pub(super) fn hb_multicast(&self, readers: &[ReaderProxy]) -> bool {
        self.members.iter().all(|&i| {
            let r = &readers[i];
            !r.reliable || (r.synced && !r.lead_hb)
        })
    }

    /// Whether the group has something to send now.
    pub(super) fn has_work(&self, readers: &[ReaderProxy], last: SequenceNumber) -> bool {
        let data = self.unsent <= last && self.members.iter().any(|&i| rides(&readers[i], self));
        data || self.hb_due.is_some()
            || (self.hb_multicast(readers)
                && self.members.iter().any(|&i| readers[i].hb_due.is_some()))
    }
}

/// Groups readers by shared multicast locator under `policy`; `old` groups keep their cursor
/// when their locator still forms a group.
pub(super) fn regroup(
    policy: MulticastPolicy,
    readers: &mut [ReaderProxy],
    old: Vec<Group>,
    last: SequenceNumber,
) -> Vec<Group> {
    for r in readers.iter_mut() {
        r.group = None;
    }
    let MulticastPolicy::Shared { min_readers } = policy else {
        return Vec::new();
    };
    let min = min_readers.max(1);
    // How many readers list each locator.
    let mut counts: Vec<(Locator, usize)> = Vec::new();
    for r in readers.iter() {
        for l in r.multicast.as_slice() {
            match counts.iter_mut().find(|c| c.0 == *l) {
                Some(c) => c.1 += 1,
                None => counts.push((*l, 1)),
            }
        }
    }
    let count = |l: &Locator| counts.iter().find(|c| c.0 == *l).map_or(0, |c| c.1);
    // Each reader takes its most shared locator (the first listed on a tie)...
    let choice: Vec<Option<Locator>> = readers
        .iter()
        .map(|r| {
            let mut best: Option<(Locator, usize)> = None;
            for l in r.multicast.as_slice() {
                let n = count(l);
                if n >= min && best.is_none_or(|b| n > b.1) {
                    best = Some((*l, n));
                }
            }
            best.map(|b| b.0)
        })
        .collect();
    // ...and a locator that too few readers chose forms no group.
    let mut groups: Vec<Group> = Vec::new();
    for (i, c) in choice.iter().enumerate() {
        let Some(l) = c else { continue };
        if choice.iter().filter(|x| x.as_ref() == Some(l)).count() < min {
            continue;
        }
        let gi = match groups.iter().position(|g| g.locator == *l) {
            Some(gi) => gi,
            None => {
                groups.push(Group {
                    locator: *l,
                    members: Vec::new(),
                    unsent: last + 1,
                    unsent_frag: 0,
                    ack_req_seq: last,
                    hb_due: None,
                });
                groups.len() - 1
            }
        };
        groups[gi].members.push(i);
        readers[i].group = Some(gi);
    }
    for g in &mut groups {
        match old.iter().find(|o| o.locator == g.locator) {
            Some(o) => {
                g.unsent = o.unsent;
                g.unsent_frag = o.unsent_frag;
                g.ack_req_seq = o.ack_req_seq;
                g.hb_due = o.hb_due;
            }
            None => {
                // A new group starts where its most advanced synced member is; members behind
                // catch up by unicast.
                if let Some(u) = g
                    .members
                    .iter()
                    .map(|&i| &readers[i])
                    .filter(|r| r.synced)
                    .map(|r| r.unsent)
                    .max()
                {
                    g.unsent = u.min(last + 1);
                }
            }
        }
    }
    groups
}

impl Shared {
    /// Fills `out` with the group's next multicast datagram: new samples, then a HEARTBEAT.
    pub(super) fn fill_group(
        &mut self,
        g: &mut Group,
        readers: &mut [ReaderProxy],
        now: &crate::Now,
        full_history: bool,
        out: &mut Transmit,
    ) -> bool {
        out.dest = Destination::Locators(std::iter::once(g.locator).collect::<Locators>());
        let subs = &mut out.submessages;
        subs.clear();
        let mut c = Cursor::new(self.budget);
        let rid = EntityId::UNKNOWN;
        let any_rider = g.members.iter().any(|&i| rides(&readers[i], g));
        let reliable_rider = g
            .members
            .iter()
            .any(|&i| readers[i].reliable && rides(&readers[i], g));
        let mut sent_new = false;
        if any_rider && g.unsent <= self.last_seq {
            while g.unsent <= self.last_seq {
                let seq = g.unsent;
                let last = self.last_seq;
                let frag = &mut g.unsent_frag;
                let Some((end, data)) = self.emit_new(rid, None, seq, frag, last, &mut c, subs)
                else {
                    break;
                };
                sent_new |= data;
                // Riders at these numbers got them.
                for &i in &g.members {
                    let r = &mut readers[i];
                    if r.synced && r.unsent >= seq && r.unsent < end {
                        r.unsent = end;
                        r.unsent_frag = 0;
                    }
                }
                g.unsent = end;
            }
            for &i in &g.members {
                let r = &mut readers[i];
                if !r.reliable {
                    r.acked = r.unsent;
                    self.gc_needed = true;
                }
            }
            if reliable_rider && g.unsent > self.last_seq {
                let want_ack = self.last_seq - g.ack_req_seq >= self.ack_every || full_history;
                g.hb_due = Some(g.hb_due.unwrap_or(true) && !want_ack);
            }
        }
        if g.hb_multicast(readers) {
            // One HEARTBEAT for every member that wants one.
            let mut due = g.hb_due.take();
            for &i in &g.members {
                let r = &mut readers[i];
                if let Some(f) = r.hb_due.take() {
                    due = Some(due.unwrap_or(true) && f);
                }
            }
            if let Some(final_flag) = due {
                let hb = self.group_heartbeat(g, readers, final_flag);
                if !final_flag {
                    g.ack_req_seq = self.last_seq;
                    for &i in &g.members {
                        let r = &mut readers[i];
                        r.ack_req_seq = self.last_seq;
                        if sent_new && r.probe.is_none() && r.unsent > self.last_seq {
                            r.probe = Some((self.last_seq, now.get()));
                        }
                    }
                }
                subs.push(OutSubmessage::Heartbeat(hb));
            }
        } else if let Some(f) = g.hb_due.take() {
            // A member is in its handshake: each synced reliable member gets its own.
            for &i in &g.members {
                let r = &mut readers[i];
                if r.reliable && r.synced {
                    r.want_hb(f);
                }
            }
        }
        !subs.is_empty()
    }

    /// A HEARTBEAT for every member: it starts at the lowest start a reliable member has, so
    /// that it tells none of them to skip what it is meant to get.
    fn group_heartbeat(
        &mut self,
        g: &Group,
        readers: &[ReaderProxy],
        final_flag: bool,
    ) -> Heartbeat {
        let start = g
            .members
            .iter()
            .map(|&i| &readers[i])
            .filter(|r| r.reliable)
            .map(|r| r.start)
            .min()
            .unwrap_or(self.last_seq + 1);
        self.heartbeat_from(EntityId::UNKNOWN, start, final_flag)
    }
}
