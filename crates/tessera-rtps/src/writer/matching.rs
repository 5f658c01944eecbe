//! Matching and unmatching readers: creating, updating and removing the writer's reader
//! proxies, and regrouping them by multicast locator. Kept apart from the hot path (write,
//! acknowledgments, transmit), which it only sets up.

use std::collections::VecDeque;
use std::time::Instant;

use super::timer::unsynced_period;
use super::{multicast, MulticastPolicy, ReaderProxy, Rtt, WriterCore};
use crate::types::{Guid, Locators};

impl WriterCore {
    /// Number of matched readers.
    pub fn matched_readers(&self) -> usize {
        self.readers.len()
    }

    /// Whether `guid` is a matched reader.
    pub fn has_reader(&self, guid: Guid) -> bool {
        self.readers.iter().any(|r| r.guid == guid)
    }

    /// Matches a reader. `reliable` is the reader's reliability (a best-effort writer treats
    /// every reader as best effort); `durable` says whether it wants the retained history
    /// (reader durability ≥ TRANSIENT_LOCAL; only meaningful for a transient-local writer).
    /// Matching an already matched reader updates its (unicast) locators.
    pub fn add_reader(
        &mut self,
        guid: Guid,
        locators: Locators,
        reliable: bool,
        durable: bool,
        now: Instant,
    ) {
        if let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) {
            r.locators = locators;
            return;
        }
        self.push_reader(guid, locators, Locators::new(), reliable, durable, now);
    }

    /// Like [`WriterCore::add_reader`], with the reader's multicast locators too: readers
    /// sharing one get their first transmissions there, once for all of them, as
    /// [`WriterConfig::multicast`](super::WriterConfig::multicast) allows (the handshake and
    /// repairs stay unicast). Matching an already matched reader updates both locator sets.
    pub fn add_reader_with_locators(
        &mut self,
        guid: Guid,
        unicast: Locators,
        multicast: Locators,
        reliable: bool,
        durable: bool,
        now: Instant,
    ) {
        if let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) {
            r.locators = unicast;
            self.set_reader_multicast(guid, multicast);
            return;
        }
        self.push_reader(guid, unicast, multicast, reliable, durable, now);
        if !multicast.is_empty() {
            self.regroup();
        }
    }

    /// Sets the multicast locators of a matched reader; false when it is not matched.
    pub fn set_reader_multicast(&mut self, guid: Guid, multicast: Locators) -> bool {
        let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) else {
            return false;
        };
        if r.multicast != multicast {
            r.multicast = multicast;
            self.regroup();
        }
        true
    }

    /// Changes [`WriterConfig::multicast`](super::WriterConfig::multicast).
    pub fn set_multicast_policy(&mut self, policy: MulticastPolicy) {
        if self.sh.cfg.multicast != policy {
            self.sh.cfg.multicast = policy;
            self.regroup();
        }
    }

    /// Number of multicast groups in use (readers sharing a locator).
    pub fn multicast_groups(&self) -> usize {
        self.groups.len()
    }

    fn regroup(&mut self) {
        let policy = if self.sh.cfg.push_mode {
            self.sh.cfg.multicast
        } else {
            MulticastPolicy::Off
        };
        let old = std::mem::take(&mut self.groups);
        self.groups = multicast::regroup(policy, &mut self.readers, old, self.sh.last_seq);
        self.grr = 0;
    }

    fn push_reader(
        &mut self,
        guid: Guid,
        locators: Locators,
        multicast: Locators,
        reliable: bool,
        durable: bool,
        now: Instant,
    ) {
        let reliable = reliable && self.sh.cfg.reliable;
        let first_hb = now + unsynced_period(0, self.sh.cfg.heartbeat_period);
        let last = self.sh.last_seq;
        let start = if self.sh.cfg.transient_local && durable {
            self.sh.history.first_seq().unwrap_or(last + 1)
        } else {
            last + 1
        };
        self.readers.push(ReaderProxy {
            guid,
            locators,
            multicast,
            group: None,
            reliable,
            start,
            acked: start,
            unsent: start,
            unsent_frag: 0,
            repair: VecDeque::new(),
            repair_frag: 0,
            frag_repairs: Vec::new(),
            repair_at: None,
            hb_due: reliable.then_some(false),
            ack_req_seq: start - 1,
            last_acknack_count: None,
            last_nackfrag_count: None,
            synced: !reliable,
            lead_hb: false,
            resent: VecDeque::new(),
            frag_resent: Vec::new(),
            rtt: Rtt::default(),
            probe: None,
            recheck_at: None,
            recheck_backoff: 0,
            unsynced_next: first_hb,
            unsynced_hbs: 0,
        });
        if reliable {
            self.next_hb = Some(self.next_hb.map_or(first_hb, |t| t.min(first_hb)));
        }
    }

    /// Unmatches a reader; returns whether it was matched. Samples only it still needed may
    /// be released.
    pub fn remove_reader(&mut self, guid: Guid) -> bool {
        let Some(i) = self.readers.iter().position(|r| r.guid == guid) else {
            return false;
        };
        let r = self.readers.swap_remove(i);
        if r.group.is_some() || !self.groups.is_empty() {
            self.regroup();
        }
        self.gc();
        true
    }
}
