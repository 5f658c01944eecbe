//! Writing samples: the `write` family and its admission control (history room, flow window,
//! acknowledgment rhythm). Separate from the receive-side acknowledgment handling and the
//! transmit pass that later send what is written here.

use std::sync::Arc;

use super::{GroupTag, Refused, Sample, WriteError, WriterCore};
use crate::types::{Guid, SequenceNumber, Timestamp};
use crate::Now;

impl WriterCore {
    /// Whether a `write` would currently find room (KEEP_ALL/resource limits). A blocked
    /// writer re-checks this after each [`WriterCore::on_acknack`] that returned true.
    pub fn can_accept(&self) -> bool {
        let floor = self.reliable_floor();
        self.sh.can_accept(self.min_needed(), floor)
    }

    /// Flow control: how many samples may be outstanding (written but not yet acknowledged by
    /// every reliable reader) before `write` reports [`WriteError::HistoryFull`] — which makes
    /// the caller wait for acknowledgments exactly as for a full KEEP_ALL history. The runtime
    /// sizes it from the sample size (a byte budget); the default is unlimited.
    pub fn set_flow_window(&mut self, samples: usize) {
        let w = samples.clamp(1, i64::MAX as usize) as i64;
        if w != self.sh.flow_window {
            self.sh.flow_window = w;
            // Ask for acknowledgments often enough that the window never runs dry.
            self.sh.ack_every = self.sh.base_ack_every.min((w / 4).max(1));
        }
    }

    /// Asks reliable readers for an acknowledgment at least every `samples` new samples (never
    /// less often than the history's own rhythm): for a writer whose samples hold a resource
    /// that only acknowledgments release, such as a zero-copy loan's chunk under KEEP_LAST.
    pub fn ack_at_least_every(&mut self, samples: usize) {
        let n = samples.clamp(1, i64::MAX as usize) as i64;
        self.sh.base_ack_every = self.sh.base_ack_every.min(n);
        self.sh.ack_every = self.sh.ack_every.min(n);
    }

    /// How many samples some reliable reader has not acknowledged yet.
    pub fn unacked_samples(&self) -> u64 {
        let floor = self.reliable_floor();
        floor.map_or(0, |f| (self.sh.last_seq + 1 - f).max(0) as u64)
    }

    /// Adds a sample to the history and returns its sequence number; the sample goes out on
    /// the next [`WriterCore::poll_transmit_into`].
    ///
    /// `payload` is the serialized sample (encapsulation header included) or, with `key_flag`,
    /// the serialized key; it may be empty for a dispose/unregister identified by `key_hash`.
    /// `status_info` is 0, or 1 (disposed) | 2 (unregistered).
    pub fn write(
        &mut self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status_info: u32,
        key_flag: bool,
        source_timestamp: Option<Timestamp>,
        now: impl Into<Now>,
    ) -> Result<SequenceNumber, WriteError> {
        self.write_relayed(
            payload,
            key_hash,
            status_info,
            key_flag,
            source_timestamp,
            None,
            now,
        )
    }

    /// [`WriterCore::write`] for a sample that relays another writer's sample `origin`
    /// (its GUID and sequence number), sent as the sample identity (see
    /// [`WriterConfig::send_sample_identity`](super::WriterConfig::send_sample_identity)).
    #[allow(clippy::too_many_arguments)]
    pub fn write_relayed(
        &mut self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status_info: u32,
        key_flag: bool,
        source_timestamp: Option<Timestamp>,
        origin: Option<(Guid, SequenceNumber)>,
        now: impl Into<Now>,
    ) -> Result<SequenceNumber, WriteError> {
        self.try_write_relayed(
            payload,
            key_hash,
            status_info,
            key_flag,
            source_timestamp,
            origin,
            now,
        )
        .map_err(|refused| refused.error)
    }

    /// [`WriterCore::write_relayed`] that hands the payload back when the sample was refused
    /// for room ([`WriteError::HistoryFull`]): a writer that waits for room and tries again
    /// moves the same payload in each time instead of cloning its `Arc` for every write (two
    /// locked instructions, a few per cent of a 16 B write).
    #[allow(clippy::too_many_arguments)]
    pub fn try_write_relayed(
        &mut self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status_info: u32,
        key_flag: bool,
        source_timestamp: Option<Timestamp>,
        origin: Option<(Guid, SequenceNumber)>,
        now: impl Into<Now>,
    ) -> Result<SequenceNumber, Refused> {
        let tag = self.sh.coherent.tag(self.sh.last_seq + 1);
        self.write_tagged(
            payload,
            key_hash,
            status_info,
            key_flag,
            source_timestamp,
            origin,
            tag,
            &now.into(),
        )
    }

    /// [`WriterCore::try_write_relayed`] with the sample's PID_COHERENT_SET and group values
    /// given.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_tagged(
        &mut self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status_info: u32,
        key_flag: bool,
        source_timestamp: Option<Timestamp>,
        origin: Option<(Guid, SequenceNumber)>,
        (coherent_set, group): (Option<SequenceNumber>, Option<GroupTag>),
        now: &Now,
    ) -> Result<SequenceNumber, Refused> {
        if payload.len() > u32::MAX as usize {
            return Err(Refused::dropping(WriteError::PayloadTooLarge));
        }
        let keep = self.sh.cfg.transient_local || !self.readers.is_empty();
        let floor = self.reliable_floor();
        if floor.is_some_and(|f| self.sh.last_seq + 1 - f >= self.sh.flow_window) {
            // Too much in flight: wait for acknowledgments (the next transmit asks for them).
            self.sh.counters.flow_blocked += 1;
            return Err(Refused::full(payload));
        }
        let seq = self.sh.last_seq + 1;
        if keep {
            // What the new sample replaces: the oldest of its instance (KEEP_LAST), or at
            // max_samples the oldest sample every reader acknowledged.
            let victim = self.sh.history.keep_last_victim(key_hash);
            let mut oldest = None;
            if victim.is_none() && self.sh.history.len() >= self.sh.cfg.max_samples {
                match self.sh.history.first_seq() {
                    Some(f) if f < self.min_needed() => oldest = Some(f),
                    _ => return Err(Refused::full(payload)),
                }
            }
            let mut sample = Sample {
                payload,
                key_hash,
                status_info,
                key_flag,
                timestamp: source_timestamp,
                frag_size: 0,
                origin,
                coherent_set,
                group,
            };
            sample.frag_size = self
                .sh
                .frag_size_for(sample.payload.len(), &self.sh.inline_qos(seq, &sample));
            // Stored first: a store that refuses leaves everything as it was.
            self.sh
                .history
                .push(seq, sample)
                .map_err(|e| Refused::dropping(e.into()))?;
            if let Some(f) = oldest {
                self.sh.history.remove_below(f + 1);
            }
            if let Some(v) = victim {
                self.sh.history.remove(v);
            }
        }
        self.sh.last_seq = seq;
        self.sh.counters.samples_written += 1;
        if !self.sh.cfg.push_mode {
            for r in self.readers.iter_mut().filter(|r| r.reliable) {
                r.unsent = seq + 1;
            }
        }
        if self.next_hb.is_none() && self.readers.iter().any(|r| r.reliable) {
            self.next_hb = Some(now.get() + self.sh.cfg.heartbeat_period);
        }
        Ok(seq)
    }
}
