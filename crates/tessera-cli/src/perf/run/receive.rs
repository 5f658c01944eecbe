//! The receiving side: `Ctx`'s taking of data, ping and pong samples, its answers through
//! the per-peer pong writers, and the reader and writer listeners.

use super::*;

impl<T: PerfIo> Ctx<T> {
    /// Flushes the batch after a ping/pong write that succeeded.
    fn flush_ok(w: &DataWriter<T>, r: tessera::Result<()>) {
        if r.is_ok() {
            w.flush();
        }
    }

    /// Answers a sample from the writer `writer_guid` on the pong writer for its participant;
    /// nothing if that participant is not (yet) a known peer.
    ///
    /// Writes under the map's read lock rather than on a clone: this runs in a listener, inside
    /// the participant's receive path, and a clone could become the writer's last handle (the
    /// peer was just lost, or the run is ending) whose drop there deletes the writer and
    /// deadlocks on the participant's endpoint table. Pong writers are KEEP_LAST(1), so
    /// writing never blocks while the lock is held; writers are dropped only after they leave
    /// the map ([`Ctx::remove_pong_writers`]).
    fn answer(&self, writer_guid: &[u8; 16], sample: &T::Item, ts: i64) {
        let writers = self.pong_writers.read().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = writers.get(&prefix_of(writer_guid)) {
            Self::flush_ok(w, T::echo(w, sample, ts));
        }
    }

    /// Adds the pong writer for the peer `prefix`; one it replaces is dropped after the map's
    /// lock is released (see [`Ctx::remove_pong_writers`]).
    pub(super) fn add_pong_writer(&self, prefix: [u8; 12], w: DataWriter<T>) {
        let old = self
            .pong_writers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(prefix, w);
        drop(old);
    }

    /// Takes the pong writers out of the map (all, or the one of `prefix`) and returns them, so
    /// that the caller drops them with no lock held (deleting a writer takes the participant's
    /// endpoint table, which a listener in [`Ctx::answer`] holds while waiting for the map).
    pub(super) fn remove_pong_writers(&self, prefix: Option<&[u8; 12]>) -> Vec<DataWriter<T>> {
        let mut map = self.pong_writers.write().unwrap_or_else(|e| e.into_inner());
        match prefix {
            Some(p) => map.remove(p).into_iter().collect(),
            None => map.drain().map(|(_, w)| w).collect(),
        }
    }

    /// Takes up to [`DATA_TAKE_MAX`] data samples and accounts them; answers those flagged as
    /// pings. Returns how many samples were taken.
    pub(super) fn process_data(
        &self,
        reader: &DataReader<T>,
        buf: &mut SampleBuffer<T::Item>,
    ) -> usize {
        buf.clear();
        let mut any_ping = false;
        let n;
        {
            // Take under the tracker's lock, so that batches taken by concurrent callers
            // (two receive threads, or the start-up drain) are accounted in order.
            let mut seq = lock(&self.seq);
            n = T::take(reader, buf, DATA_TAKE_MAX);
            if n == 0 {
                return 0;
            }
            let now = now_ns();
            for s in buf.iter() {
                let Some(d) = s.data.as_ref().map(T::data) else {
                    continue;
                };
                let ts = s.info.source_timestamp;
                let w = &s.info.publication_handle;
                let r = seq.on_sample(
                    handle_of(w),
                    d.seq(),
                    d.keyval(),
                    d.size(),
                    now - ts,
                    || Some(participant_handle_of(w)),
                );
                if let Err(k) = r {
                    drop(seq);
                    self.key_out_of_range(k);
                }
                any_ping |= is_ping_timestamp(ts);
            }
        }
        if any_ping {
            for s in buf.iter() {
                let ts = s.info.source_timestamp;
                if let (Some(d), true) = (&s.data, is_ping_timestamp(ts)) {
                    self.answer(&s.info.publication_handle, d, pong_timestamp_for_data(ts));
                }
            }
        }
        n
    }

    /// Takes pings and answers each on the pong writer for its sender.
    fn process_ping(&self, reader: &DataReader<T>, buf: &mut SampleBuffer<T::Item>) -> usize {
        let n = T::take(reader, buf, PINGPONG_TAKE_MAX);
        for s in buf.iter() {
            if let Some(d) = &s.data {
                self.answer(
                    &s.info.publication_handle,
                    d,
                    pong_timestamp_for_ping(s.info.source_timestamp),
                );
            }
        }
        n
    }

    /// Takes pongs: records the latency per pong writer and, in as-fast-as-possible mode,
    /// sends the next ping once every peer answered.
    fn process_pong(&self, reader: &DataReader<T>, buf: &mut SampleBuffer<T::Item>) -> usize {
        let n = T::take(reader, buf, PINGPONG_TAKE_MAX);
        if n == 0 {
            return 0;
        }
        let now = now_ns();
        let overall = self.past_warmup(now);
        for s in buf.iter_mut() {
            let ts = s.info.source_timestamp;
            let w = s.info.publication_handle;
            let Some(d) = s.data.as_mut() else { continue };
            let ns = one_way_latency_ns(now, ts);
            {
                let h = handle_of(&w);
                let mut pongs = lock(&self.pongs);
                let idx = match pongs.iter().position(|p| p.handle == h) {
                    Some(i) => i,
                    None => {
                        pongs.push(PongSource {
                            handle: h,
                            participant: participant_handle_of(&w),
                            stats: LatencyStats::new(),
                        });
                        pongs.len() - 1
                    }
                };
                pongs[idx].stats.record_with(ns, overall);
            }
            let seq = T::data(d).seq();
            let (current, next) = {
                let mut sched = lock(&self.ping);
                let current = is_ping_timestamp(ts) && seq == sched.current_seq();
                (current, sched.on_pong(is_ping_timestamp(ts), seq, now))
            };
            if current {
                let pings = lock(&self.answers).on_pong(seq, ns, next.is_some(), overall);
                if self.cfg.count.is_some_and(|n| pings >= n) {
                    self.request_stop();
                    continue;
                }
            }
            if let Some(seq) = next {
                let w = &self.ping_writer;
                Self::flush_ok(w, T::write_next(w, d, seq, now_ns() | 1));
            }
        }
        n
    }

    /// Sends a ping with sequence number `seq` (from the main loop's timer).
    pub(super) fn send_ping(&self, seq: u32) {
        let mut t = T::template(self.cfg.baggage);
        let w = &self.ping_writer;
        Self::flush_ok(w, T::write_new(w, &mut t, seq, 0, now_ns() | 1));
    }
}

/// Which reader a listener or service thread handles.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ReaderRole {
    Data,
    Ping,
    Pong,
}

pub(super) fn process<T: PerfIo>(
    ctx: &Ctx<T>,
    role: ReaderRole,
    reader: &DataReader<T>,
    buf: &mut SampleBuffer<T::Item>,
) -> usize {
    match role {
        ReaderRole::Data => ctx.process_data(reader, buf),
        ReaderRole::Ping => ctx.process_ping(reader, buf),
        ReaderRole::Pong => ctx.process_pong(reader, buf),
    }
}

/// Reader listener: handles data when `handle_data` (listener trigger mode; for the data
/// reader only once `Ctx::data_on` is set) and always tells the discovery thread about
/// matches.
pub(super) struct ReaderListener<T: PerfIo> {
    pub(super) ctx: Arc<Ctx<T>>,
    pub(super) role: ReaderRole,
    pub(super) handle_data: bool,
    pub(super) buf: Mutex<SampleBuffer<T::Item>>,
}

impl<T: PerfIo> DataReaderListener<T> for ReaderListener<T> {
    fn on_data_available(&self, reader: &DataReader<T>) {
        if !self.handle_data
            || (self.role == ReaderRole::Data && !self.ctx.data_on.load(Ordering::Acquire))
        {
            return;
        }
        let mut buf = lock(&self.buf);
        process(&self.ctx, self.role, reader, &mut buf);
    }

    fn on_subscription_matched(&self, _reader: &DataReader<T>, _s: SubscriptionMatchedStatus) {
        let _ = self.ctx.matched.try_send(());
    }
}

/// Writer listener: tells the discovery thread about matches.
pub(super) struct WriterListener {
    pub(super) matched: Sender<()>,
}

impl<T: PerfIo> DataWriterListener<T> for WriterListener {
    fn on_publication_matched(&self, _writer: &DataWriter<T>, _s: PublicationMatchedStatus) {
        let _ = self.matched.try_send(());
    }
}
