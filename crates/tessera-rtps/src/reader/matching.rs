//! Creating a [`ReaderCore`], its accessors and statistics, and matching and unmatching
//! writers.

use std::collections::VecDeque;
use std::time::Instant;

use super::proxy::{Slot, WriterProxy};
use super::{ReaderConfig, ReaderCore, ReaderCounters, Shared};
use crate::budget::Budget;
use crate::frag::Reassembler;
use crate::types::{Guid, Locators, SequenceNumber};
use crate::writer::Rtt;

impl ReaderCore {
    /// A reader with no matched writers.
    pub fn new(cfg: ReaderConfig) -> Self {
        let reassembly_bytes = Budget::new(cfg.shared_reassembly.clone());
        let buffered_bytes = Budget::new(cfg.shared_buffered.clone());
        ReaderCore {
            sh: Shared {
                cfg,
                counters: ReaderCounters::default(),
                acknack_count: 0,
                nackfrag_count: 0,
                reassembly_bytes,
                buffered_bytes,
            },
            writers: Vec::new(),
            rr: 0,
        }
    }

    /// The reader's GUID.
    pub fn guid(&self) -> Guid {
        self.sh.cfg.guid
    }

    /// The configuration.
    pub fn config(&self) -> &ReaderConfig {
        &self.sh.cfg
    }

    /// Whether every reliable matched writer has announced its history (a HEARTBEAT was
    /// heard) and everything it announced was delivered, lost or skipped: the historical data
    /// it offers is in (`wait_for_historical_data`). Best-effort writers send no history.
    pub fn historical_data_received(&self) -> bool {
        self.writers
            .iter()
            .all(|w| !w.reliable || (w.last_hb_count.is_some() && w.next > w.highest_known))
    }

    /// Statistics.
    pub fn counters(&self) -> ReaderCounters {
        self.sh.counters
    }

    /// Number of matched writers.
    pub fn matched_writers(&self) -> usize {
        self.writers.len()
    }

    /// Whether `guid` is a matched writer.
    pub fn has_writer(&self, guid: Guid) -> bool {
        self.writers.iter().any(|w| w.guid == guid)
    }

    /// Bytes held for out-of-order samples and partial fragmented samples.
    pub fn buffered_bytes(&self) -> usize {
        self.sh.buffered_bytes.used() + self.sh.reassembly_bytes.used()
    }

    /// Next sequence number expected from `writer` (everything below was delivered or
    /// skipped).
    pub fn next_expected(&self, writer: Guid) -> Option<SequenceNumber> {
        self.writers
            .iter()
            .find(|w| w.guid == writer)
            .map(|w| w.next)
    }

    /// Matches a writer (`reliable`: the match is reliable). Re-matching updates locators.
    pub fn add_writer(&mut self, guid: Guid, locators: Locators, reliable: bool, now: Instant) {
        if let Some(w) = self.writers.iter_mut().find(|w| w.guid == guid) {
            w.locators = locators;
            return;
        }
        self.writers.push(WriterProxy {
            guid,
            locators,
            reliable,
            next: 1,
            slots: VecDeque::new(),
            highest_known: 0,
            last_hb_count: None,
            last_hbfrag_count: None,
            // A reliable match starts with a pre-emptive ACKNACK (as Cyclone's and Fast DDS's
            // readers send): a writer that matched us earlier learns at once that we listen,
            // instead of on its next heartbeat.
            ack_due: reliable.then_some(now),
            nack_at: None,
            nack_hi: 0,
            nack_probe: None,
            repair_rtt: Rtt::default(),
            frags: Reassembler::new(),
            refused_seq: None,
            probing: false,
            probe_backoff: 0,
            ack_hold: None,
        });
    }

    /// Unmatches a writer, dropping its buffered samples; returns whether it was matched.
    pub fn remove_writer(&mut self, guid: Guid) -> bool {
        let Some(i) = self.writers.iter().position(|w| w.guid == guid) else {
            return false;
        };
        let mut w = self.writers.swap_remove(i);
        for s in w.slots.drain(..) {
            if let Slot::Sample(b) = s {
                self.sh.buffered_bytes.refund(b.payload.len());
            }
        }
        w.frags
            .drop_below(SequenceNumber::MAX, &mut self.sh.reassembly_bytes);
        true
    }
}
