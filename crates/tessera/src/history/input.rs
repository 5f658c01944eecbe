//! Input to the cache: inserting samples (with keep-last replacement, resource limits and
//! destination order), dispose, unregister and lost writers, with the invalid samples that
//! announce state changes.

use super::instance::Stored;
use super::*;

impl<T> History<T> {
    /// Stores a sample with data written by `writer` to the instance `key`.
    ///
    /// Creates the instance if needed, makes a not-alive instance alive again (new generation,
    /// view state NEW) and registers `writer` with it. In keep-last mode a full instance drops
    /// its oldest sample; in keep-all mode a sample beyond the resource limits is rejected and
    /// nothing changes.
    pub fn insert(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        data: T,
        source_ts: i64,
        reception_ts: i64,
    ) -> InsertOutcome {
        let mut replaced = None;
        self.insert_reclaiming(key, writer, data, source_ts, reception_ts, &mut replaced)
    }

    /// [`History::insert`] that hands the data of a sample it drops (keep-last replacement)
    /// to the caller through `replaced`, so that its buffers can be reused.
    pub fn insert_reclaiming(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        data: T,
        source_ts: i64,
        reception_ts: i64,
        replaced: &mut Option<T>,
    ) -> InsertOutcome {
        let by_source = self.config.destination_order == DestinationOrder::BySourceTimestamp;
        self.insert_ordered(
            key,
            writer,
            (data, source_ts, reception_ts),
            by_source,
            replaced,
        )
    }

    /// [`History::insert_reclaiming`] for a sample whose place in the order is already agreed
    /// (an ATOMIC writer's committed log entry at an ATOMIC reader): stored in the order given
    /// even under DESTINATION_ORDER BY_SOURCE_TIMESTAMP, so an older source timestamp does not
    /// make it [`InsertOutcome::Outdated`].
    pub fn insert_reclaiming_in_order(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        data: T,
        source_ts: i64,
        reception_ts: i64,
        replaced: &mut Option<T>,
    ) -> InsertOutcome {
        self.insert_ordered(
            key,
            writer,
            (data, source_ts, reception_ts),
            false,
            replaced,
        )
    }

    /// The insert; `by_source`: drop a sample older than the instance's newest.
    fn insert_ordered(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        (data, source_ts, reception_ts): (T, i64, i64),
        by_source: bool,
        replaced: &mut Option<T>,
    ) -> InsertOutcome {
        self.purge_due(reception_ts);
        let limits = self.config.limits;
        let slot = match self.find_cached(&key) {
            Some(s) => s,
            None => {
                if limits.max_samples.is_some_and(|m| self.valid_total >= m) {
                    return InsertOutcome::Rejected(RejectReason::SamplesLimit);
                }
                if self.config.history == HistoryKind::KeepAll
                    && limits.max_samples_per_instance == Some(0)
                {
                    return InsertOutcome::Rejected(RejectReason::SamplesPerInstanceLimit);
                }
                match self.create(key, InstanceState::Alive) {
                    Ok(s) => s,
                    Err(r) => return InsertOutcome::Rejected(r),
                }
            }
        };
        let (depth, keep_all) = match self.config.history {
            HistoryKind::KeepLast(d) => (d.max(1) as usize, false),
            HistoryKind::KeepAll => (usize::MAX, true),
        };
        let per_instance = limits.max_samples_per_instance.unwrap_or(usize::MAX);
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return InsertOutcome::Rejected(RejectReason::InstancesLimit);
        };
        if by_source && inst.last_source_ts.is_some_and(|t| source_ts < t) {
            return InsertOutcome::Outdated(inst.handle);
        }

        // Decide before changing anything.
        let replace = if keep_all {
            if inst.valid_len >= per_instance {
                return InsertOutcome::Rejected(RejectReason::SamplesPerInstanceLimit);
            }
            false
        } else {
            inst.valid_len >= depth.min(per_instance).max(1)
        };
        if !replace && limits.max_samples.is_some_and(|m| self.valid_total >= m) {
            return InsertOutcome::Rejected(RejectReason::SamplesLimit);
        }

        // A pending invalid sample is superseded by the new data.
        if inst.has_invalid {
            if let Some(s) = inst.samples.pop_back() {
                self.total -= 1;
                if !s.read {
                    inst.not_read -= 1;
                    self.not_read_total -= 1;
                }
            }
            inst.has_invalid = false;
        }
        if replace {
            if let Some(old) = inst.samples.pop_front() {
                inst.valid_len -= 1;
                self.valid_total -= 1;
                self.total -= 1;
                if !old.read {
                    inst.not_read -= 1;
                    self.not_read_total -= 1;
                }
                *replaced = old.data;
            }
        }
        match inst.state {
            InstanceState::Alive => {}
            InstanceState::NotAliveDisposed => {
                inst.disposed_gen = inst.disposed_gen.wrapping_add(1);
                inst.view = ViewState::New;
            }
            InstanceState::NotAliveNoWriters => {
                inst.no_writers_gen = inst.no_writers_gen.wrapping_add(1);
                inst.view = ViewState::New;
            }
        }
        inst.state = InstanceState::Alive;
        if let Some(at) = inst.purge_at.take() {
            self.purge_queue.remove(&(at, inst.handle));
        }
        inst.writers.insert(writer);
        inst.last_source_ts = Some(inst.last_source_ts.map_or(source_ts, |t| t.max(source_ts)));
        inst.samples.push_back(Stored {
            data: Some(data),
            source_ts,
            reception_ts,
            writer,
            disposed_gen: inst.disposed_gen,
            no_writers_gen: inst.no_writers_gen,
            read: false,
            taken: false,
            expires: i64::MAX,
            order: self.order.next(),
        });
        inst.valid_len += 1;
        inst.not_read += 1;
        let handle = inst.handle;
        self.total += 1;
        self.valid_total += 1;
        self.not_read_total += 1;
        self.link(slot);
        if replace {
            InsertOutcome::Replaced(handle)
        } else {
            InsertOutcome::Accepted(handle)
        }
    }

    /// `writer` disposed the instance `key` at source time `ts`; the cache learned of it at
    /// `reception_ts`.
    ///
    /// The instance becomes NOT_ALIVE_DISPOSED (created in that state if unknown, so the reader
    /// learns of it) and `writer` counts as registered with it.
    pub fn dispose(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        ts: i64,
        reception_ts: i64,
    ) -> UpdateOutcome {
        let by_source = self.config.destination_order == DestinationOrder::BySourceTimestamp;
        self.dispose_ordered(key, writer, (ts, reception_ts), by_source)
    }

    /// [`History::dispose`] in the order given whatever the source timestamp, as
    /// [`History::insert_reclaiming_in_order`].
    pub fn dispose_in_order(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        ts: i64,
        reception_ts: i64,
    ) -> UpdateOutcome {
        self.dispose_ordered(key, writer, (ts, reception_ts), false)
    }

    /// The dispose; `by_source`: ignore one older than the instance's newest update.
    fn dispose_ordered(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        (ts, reception_ts): (i64, i64),
        by_source: bool,
    ) -> UpdateOutcome {
        self.purge_due(reception_ts);
        let delay = self.config.lifecycle.autopurge_disposed_samples_delay;
        let slot = match self.find_cached(&key) {
            Some(s) => s,
            None => match self.create(key, InstanceState::NotAliveDisposed) {
                Ok(s) => {
                    if let Some(inst) = slot_mut(&mut self.slots, s) {
                        inst.writers.insert(writer);
                        inst.last_source_ts = Some(ts);
                    }
                    self.schedule_purge(s, reception_ts, delay);
                    let h = self.notify(s, writer, ts, reception_ts);
                    return UpdateOutcome::Changed(h);
                }
                Err(r) => return UpdateOutcome::Rejected(r),
            },
        };
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return UpdateOutcome::UnknownInstance;
        };
        if by_source && inst.last_source_ts.is_some_and(|t| ts < t) {
            return UpdateOutcome::Outdated(inst.handle);
        }
        inst.last_source_ts = Some(inst.last_source_ts.map_or(ts, |t| t.max(ts)));
        inst.writers.insert(writer);
        if inst.state == InstanceState::NotAliveDisposed {
            return UpdateOutcome::Unchanged(inst.handle);
        }
        inst.state = InstanceState::NotAliveDisposed;
        self.schedule_purge(slot, reception_ts, delay);
        UpdateOutcome::Changed(self.notify(slot, writer, ts, reception_ts))
    }

    /// `writer` unregistered the instance `key` at source time `ts`; the cache learned of it
    /// at `reception_ts`.
    ///
    /// When it was the last writer of an alive instance, the instance becomes
    /// NOT_ALIVE_NO_WRITERS. An instance left empty and not alive is purged.
    pub fn unregister(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        ts: i64,
        reception_ts: i64,
    ) -> UpdateOutcome {
        self.purge_due(reception_ts);
        match self.find_cached(&key) {
            Some(slot) => self.remove_writer(slot, &writer, ts, reception_ts),
            None => UpdateOutcome::UnknownInstance,
        }
    }

    /// `writer` is gone (lost its liveliness or no longer matches) at local time `now`: it is
    /// unregistered from every instance. Returns how many instances changed state (to
    /// NOT_ALIVE_NO_WRITERS). This visits every instance.
    pub fn writer_lost(&mut self, writer: WriterGuid, now: i64) -> usize {
        self.purge_due(now);
        let mut changed = 0;
        for slot in 0..self.slots.len() as Slot {
            let registered = self.inst(slot).is_some_and(|i| i.writers.contains(&writer));
            if registered && self.remove_writer(slot, &writer, now, now).is_changed() {
                changed += 1;
            }
        }
        changed
    }

    /// Announces a change to a not-alive state: adds an invalid sample unless a not-read sample
    /// already carries the news. Returns the instance handle.
    fn notify(
        &mut self,
        slot: Slot,
        writer: WriterGuid,
        ts: i64,
        reception_ts: i64,
    ) -> InstanceHandle {
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return InstanceHandle::NIL;
        };
        let handle = inst.handle;
        if inst.not_read > 0 {
            return handle;
        }
        if inst.has_invalid && inst.samples.pop_back().is_some() {
            // A read invalid sample is replaced by the new one.
            self.total -= 1;
        }
        inst.samples.push_back(Stored {
            data: None,
            source_ts: ts,
            reception_ts,
            writer,
            disposed_gen: inst.disposed_gen,
            no_writers_gen: inst.no_writers_gen,
            read: false,
            taken: false,
            expires: i64::MAX,
            order: self.order.next(),
        });
        inst.has_invalid = true;
        inst.not_read += 1;
        self.not_read_total += 1;
        self.total += 1;
        self.link(slot);
        handle
    }

    fn remove_writer(
        &mut self,
        slot: Slot,
        writer: &WriterGuid,
        ts: i64,
        now: i64,
    ) -> UpdateOutcome {
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return UpdateOutcome::UnknownInstance;
        };
        let handle = inst.handle;
        if !inst.writers.remove(writer) {
            return UpdateOutcome::Unchanged(handle);
        }
        if inst.writers.is_empty() && inst.state == InstanceState::Alive {
            inst.state = InstanceState::NotAliveNoWriters;
            let delay = self.config.lifecycle.autopurge_nowriter_samples_delay;
            self.schedule_purge(slot, now, delay);
            self.notify(slot, *writer, ts, now);
            return UpdateOutcome::Changed(handle);
        }
        self.purge_if_dead(slot);
        UpdateOutcome::Unchanged(handle)
    }
}
