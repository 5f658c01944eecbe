//! The reader endpoint as the runtime sees it ([`LocalReader`]): samples and protocol
//! messages from the receive thread, matches and unmatches from discovery, in-process
//! deliveries, liveliness and QoS incompatibilities.

use super::*;

impl LocalReader for ReaderEndpoint {
    fn guid(&self) -> Guid {
        self.guid
    }

    fn handle(&self, ctx: &RuntimeContext, rs: &ReceivedSubmessage<'_>, now: Instant) {
        if self.policies_on.load(Ordering::Relaxed) {
            // What asserts a writer's liveliness: its samples and its HEARTBEATs with the
            // liveliness flag (`assert_liveliness`), not the protocol's periodic HEARTBEATs
            // or GAPs, which flow whether the application asserts or not.
            let writer = match &rs.submessage {
                Submessage::Data(d) => Some(d.writer_id),
                Submessage::DataFrag(d) => Some(d.writer_id),
                Submessage::Heartbeat(h) if h.liveliness_flag => Some(h.writer_id),
                _ => None,
            };
            if let Some(w) = writer {
                self.writer_seen(Guid::new(rs.source_prefix, w), now);
            }
        }
        let mut available = false;
        let rejected;
        let lost_before;
        let lost_after;
        {
            let mut core = self.core.lock();
            let holds = self
                .sink_on
                .load(Ordering::Relaxed)
                .then(|| durable::HoldScope::enter(self as *const ReaderEndpoint as usize));
            lost_before = core.counters().lost + self.stale_loans.load(Ordering::Relaxed);
            let refused_before = core.counters().refused;
            // Locked only when a sample is actually delivered: a piggy-backed HEARTBEAT (on
            // nearly every datagram) then costs no history lock.
            let mut history = None;
            let mut deliver = |d: Delivered<'_>| {
                // A large sample a writer on this host left in shared memory: copied out
                // once, before the history lock, and kept as it is (not copied again).
                let chunk = if crate::loan::is_cdr_chunk_payload(&d.payload) {
                    match self.resolve_cdr_chunk(&d.payload) {
                        Some(bytes) => Some(bytes),
                        None => return Verdict::Accepted,
                    }
                } else {
                    None
                };
                let h = history.get_or_insert_with(|| self.history.lock());
                let mut refused = 0;
                available |= match d.payload {
                    _ if chunk.is_some() => {
                        let bytes = chunk.as_ref().expect("checked");
                        let d = Delivered {
                            payload: Cow::Borrowed(bytes.as_slice()),
                            ..d
                        };
                        self.accept(&d, Some(bytes), h, &mut refused)
                    }
                    // Bytes the core assembled from fragments (or kept out of order) are this
                    // sample's own: the history keeps a large payload as it is, not a copy
                    // (at 64 KiB a copy is ~3 % of a shared-memory round trip's CPU).
                    Cow::Owned(bytes) if !PayloadPool::pools(bytes.len()) => {
                        let bytes = Arc::new(bytes);
                        let d = Delivered {
                            payload: Cow::Borrowed(bytes.as_slice()),
                            ..d
                        };
                        self.accept(&d, Some(&bytes), h, &mut refused)
                    }
                    _ => self.accept(&d, None, h, &mut refused),
                };
                if refused == 0 {
                    return Verdict::Accepted;
                }
                // A resource limit: a reliable writer keeps the sample unacknowledged and
                // resends it once a `take` or a purge made room (a best-effort one's is dropped).
                self.refused.store(true, Ordering::Relaxed);
                Verdict::Refused
            };
            match &rs.submessage {
                Submessage::Data(d) => {
                    core.on_data(rs.source_prefix, d, rs.timestamp, now, &mut deliver)
                }
                Submessage::DataFrag(d) => {
                    core.on_data_frag(rs.source_prefix, d, rs.timestamp, now, &mut deliver)
                }
                Submessage::Heartbeat(h) => {
                    core.on_heartbeat(rs.source_prefix, h, now, &mut deliver)
                }
                Submessage::HeartbeatFrag(h) => core.on_heartbeat_frag(rs.source_prefix, h, now),
                Submessage::Gap(g) => core.on_gap(rs.source_prefix, g, now, &mut deliver),
                _ => {}
            }
            drop(history);
            if let Some(scope) = holds {
                for (writer, seq) in scope.take_held() {
                    core.hold_acknowledgment(writer, seq);
                }
            }
            if self.sink_on.load(Ordering::Relaxed) {
                // Before any acknowledgment of these samples leaves (flush below).
                if let Some(sink) = self.sink.read().clone() {
                    sink.end_of_batch();
                }
            }
            lost_after = core.counters().lost + self.stale_loans.load(Ordering::Relaxed);
            // SAMPLE_REJECTED counts each sample once, not each resend of it.
            rejected = (core.counters().refused - refused_before) as u32;
            outbox::flush_reader(ctx, &mut core, now);
            ctx.kick.ensure_by(core.poll_timeout());
        }
        if let Some(g) = self.group.get() {
            // A group set this sample completed, into every reader it touches.
            g.flush();
        }
        // One DATA_AVAILABLE per reader and run of DATA (see `DatagramScope`).
        let available = available && !DatagramScope::defer_available(self);
        self.raise(
            &ctx.counters,
            available,
            rejected,
            lost_after.saturating_sub(lost_before),
        );
    }

    fn deliver_local(
        &self,
        sample: &Delivered<'_>,
        shared: Option<&Arc<Vec<u8>>>,
        holder: Option<&Weak<dyn LocalHolder>>,
    ) -> LocalOutcome {
        // Local delivery (maybe from a listener inside a datagram's scope) reads the clock
        // per sample.
        let _clock = ReceptionClock::set(NOT_IN_DATAGRAM);
        // Not from this reader's protocol core: its sink may not hold the acknowledgment.
        let _holds = self
            .sink_on
            .load(Ordering::Relaxed)
            .then(|| durable::HoldScope::enter(0));
        // A writer of this participant does not send readers of it chunk references (see
        // `publication/cdr_chunks.rs`); one that got here anyway is resolved like a remote one.
        let chunk;
        let resolved;
        let (sample, shared) = if crate::loan::is_cdr_chunk_payload(&sample.payload) {
            let Some(bytes) = self.resolve_cdr_chunk(&sample.payload) else {
                return LocalOutcome::default();
            };
            chunk = bytes;
            resolved = Delivered {
                payload: Cow::Borrowed(chunk.as_slice()),
                ..sample.clone()
            };
            (&resolved, Some(&chunk))
        } else {
            (sample, shared)
        };
        let mut history = self.history.lock();
        let mut rejected = 0;
        let available = self.accept(sample, shared, &mut history, &mut rejected);
        if rejected > 0 && self.qos.reliability.kind == ReliabilityKind::Reliable {
            if let Some(h) = holder {
                self.hold(h);
            }
        }
        drop(history);
        LocalOutcome {
            available,
            rejected,
            lost: 0,
            group: self.group.get().is_some() && crate::subscription::GroupAssembler::takes(sample),
        }
    }

    fn notify_local(&self, ctx: &RuntimeContext, o: LocalOutcome) {
        if let Some(g) = self.group.get() {
            g.flush();
        }
        if o.available || o.rejected > 0 || o.lost > 0 {
            self.raise(&ctx.counters, o.available, o.rejected, o.lost.into());
        }
    }

    fn writer_asserted(&self, writer: Guid, now: Instant) {
        self.writer_seen(writer, now);
    }

    fn participant_asserted(
        &self,
        prefix: tessera_rtps::types::GuidPrefix,
        manual: bool,
        now: Instant,
    ) {
        if !self.policies_on.load(Ordering::Relaxed) {
            return;
        }
        let mut revived = Vec::new();
        self.policies
            .lock()
            .participant_asserted(&prefix.0, manual, now, &mut revived);
        self.revived(&revived);
    }

    fn on_timeout(&self, ctx: &RuntimeContext, now: Instant) -> Option<Instant> {
        let policy_next = if self.policies_on.load(Ordering::Relaxed) {
            self.policy_timeout(now)
        } else {
            None
        };
        // Autopurge runs here too, so an application that never reads still frees memory
        // (within the event thread's period, at most 100 ms late); room it makes lets refused
        // samples come again. The core stays locked from the purge to the request (the order
        // `handle` takes them in: core, then history): a refused sample resent in between
        // would end its writer's probe, and the rest of what that writer had refused would
        // wait for its next heartbeat instead of being asked for now.
        let mut core = self.core.lock();
        let purged = purge_due(&mut self.history.lock());
        if purged > 0 && self.refused.swap(false, Ordering::Relaxed) {
            core.resume(now);
        }
        core.handle_timeout(now);
        outbox::flush_reader(ctx, &mut core, now);
        let next = match (core.poll_timeout(), policy_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        drop(core);
        if purged > 0 {
            self.resume_local(ctx);
        }
        next
    }

    fn matched(&self, ctx: &RuntimeContext, remote: &RemoteEndpoint, now: Instant) {
        {
            // The pair is reliable only when this reader asks for it: a reliable writer treats
            // a best-effort reader as best effort (no HEARTBEAT, no GAP), so a reliable proxy
            // here would wait for ever for sequence numbers it will never be told about.
            let reliable =
                remote.reliable && self.qos.reliability.kind == ReliabilityKind::Reliable;
            // A writer of this participant hands its samples over directly
            // (`deliver_local`): no reliability protocol with it.
            if remote.guid.prefix != self.guid.prefix {
                let mut core = self.core.lock();
                core.add_writer(remote.guid, remote.locators, reliable, now);
                outbox::flush_reader(ctx, &mut core, now);
            }
        }
        let t = &remote.writer_terms;
        // An ATOMIC reader's samples from an ATOMIC writer are committed log entries that
        // every member delivers: a LIFESPAN judged against each member's own wall clock would
        // have members with different clocks (a skewed writer, an NTP step) drop different
        // ones and diverge. It still applies to EVENTUAL readers of the writer.
        let via_log = self.qos.consistency == Consistency::Atomic && remote.consensus.is_some();
        let terms = WriterTerms {
            strength: t.strength,
            lifespan_ns: finite_ns(t.lifespan.duration).filter(|_| !via_log),
            lease: watched_lease(t.liveliness.kind, t.liveliness.lease_duration),
            kind: t.liveliness.kind,
        };
        let on = self.policies_on.load(Ordering::Relaxed);
        if on || terms.lifespan_ns.is_some() || terms.lease.is_some() {
            // Also a re-announcement: a changed strength applies from the writer's next sample.
            self.policies
                .lock()
                .writer_matched(remote.guid.to_bytes(), terms, now);
            if !on {
                self.policies_on.store(true, Ordering::Relaxed);
            }
            if terms.lease.is_some() {
                ctx.kick.ensure_by(Some(now));
            }
        }
        {
            let mut m = self.matched.lock();
            if m.contains(&remote.guid) {
                // A re-announcement: the core took the new locators; not a new match.
                return;
            }
            m.push(remote.guid);
        }
        {
            let mut s = self.statuses.lock();
            let st = &mut s.subscription_matched;
            st.total_count += 1;
            st.total_count_change += 1;
            st.current_count += 1;
            st.current_count_change += 1;
            st.last_publication_handle = Some(remote.guid);
            let l = &mut s.liveliness_changed;
            l.alive_count += 1;
            l.alive_count_change += 1;
            l.last_publication_handle = Some(remote.guid);
        }
        self.status_changed(StatusMask::SUBSCRIPTION_MATCHED | StatusMask::LIVELINESS_CHANGED);
    }

    fn unmatched(&self, remote: Guid, lost: bool) {
        tracing::debug!(reader = ?self.guid, writer = ?remote, lost, "writer unmatched");
        self.core.lock().remove_writer(remote);
        self.matched.lock().retain(|g| *g != remote);
        if let Some(sets) = self.coherent.get() {
            // A set the writer never ended is never delivered.
            sets.lock().writer_gone(remote);
        }
        if let Some(g) = self.group.get() {
            g.writer_gone(remote);
        }
        let was_alive = !self.policies_on.load(Ordering::Relaxed)
            || self.policies.lock().writer_unmatched(remote.to_bytes());
        let data_changed = self
            .history
            .lock()
            .writer_lost(remote.to_bytes(), crate::publication::now_nanos())
            > 0;
        {
            let mut s = self.statuses.lock();
            let st = &mut s.subscription_matched;
            st.current_count -= 1;
            st.current_count_change -= 1;
            st.last_publication_handle = Some(remote);
            // A removed writer leaves the counts altogether, from whichever it was in: a
            // participant lease that runs out removes its writers (`lost`); a manual writer
            // whose own lease ran out is matched but not alive until it asserts again.
            let l = &mut s.liveliness_changed;
            if was_alive {
                l.alive_count -= 1;
                l.alive_count_change -= 1;
            } else {
                l.not_alive_count -= 1;
                l.not_alive_count_change -= 1;
            }
            l.last_publication_handle = Some(remote);
        }
        let mut mask = StatusMask::SUBSCRIPTION_MATCHED | StatusMask::LIVELINESS_CHANGED;
        if data_changed {
            mask |= StatusMask::DATA_AVAILABLE;
        }
        self.status_changed(mask);
    }

    fn incompatible(&self, policies: &[u32]) {
        self.statuses
            .lock()
            .requested_incompatible_qos
            .record(policies);
        self.status_changed(StatusMask::REQUESTED_INCOMPATIBLE_QOS);
    }
}
