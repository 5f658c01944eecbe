//! The replicated service's log thread: applies the services' log to the followed topics as
//! it commits, elects the topics proposed here at once, and asks writers to resend.

use super::{Followed, ReaderJob, Shared, TopicState, MAX_HELD_BYTES};
use crate::replicate::LogEntry;
use crate::store::StoredSample;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tessera::rtps::types::Guid;
use tessera::{DataReader, StateMasks, WaitSet};

impl Shared {
    /// Replicated: applies the log as it commits, until the service stops.
    pub(super) fn follow_log(&self, reader: &DataReader<LogEntry>) {
        let (resend, asks) = crossbeam_channel::unbounded::<ReaderJob>();
        let resender = std::thread::Builder::new()
            .name("tessera-dur-resend".into())
            .spawn(move || {
                for job in asks {
                    match job {
                        ReaderJob::Resend(r) => r.request_refused_samples(),
                        ReaderJob::MoveHold(r, state, writer) => {
                            r.set_acknowledgment_hold(writer, || {
                                state.held_acks.lock().lowest(&writer)
                            });
                        }
                    }
                }
            });
        if let Err(e) = &resender {
            // Refused samples then come again at their writers' next heartbeat.
            tracing::warn!(error = %e, "no resend thread");
        }
        let mut waitset = WaitSet::new();
        waitset.attach(&reader.create_readcondition(StateMasks::ANY));
        while !self.stop.load(Ordering::Relaxed) {
            let _ = waitset.wait(Some(Duration::from_millis(100)));
            self.elect(reader);
            loop {
                let taken = match reader.take(4096) {
                    Ok(t) => t,
                    Err(e) => {
                        tracing::error!(error = %e, "reading the services' log");
                        break;
                    }
                };
                let more = taken.len() == 4096;
                self.apply_log(taken.into_iter().filter_map(|s| s.data).collect(), &resend);
                if !more {
                    break;
                }
            }
            // Entries held for a topic whose type was learned since.
            self.apply_log(Vec::new(), &resend);
            if let Some(log) = &self.log {
                let states: Vec<Arc<TopicState>> = self
                    .topics
                    .lock()
                    .values()
                    .map(|f| f.state.clone())
                    .collect();
                for st in states {
                    st.propose_held(log);
                }
            }
        }
        drop(resend);
        if let Ok(t) = resender {
            let _ = t.join();
        }
    }

    /// Replicated: which topics this service proposes at once (see
    /// [`crate::replicate::designated`]).
    fn elect(&self, reader: &DataReader<LogEntry>) {
        let own = self.participant.guid().prefix;
        let services = crate::replicate::services(reader, own);
        let writers = self.participant.discovered_writers();
        for (name, f) in self.topics.lock().iter() {
            let d = crate::replicate::designated(name, own, &services, &writers);
            f.state.designated.store(d, Ordering::Relaxed);
        }
    }

    /// Applies log entries (in log order) to the topics they belong to; entries of a topic
    /// not followed yet wait for it (in order, bounded).
    fn apply_log(&self, entries: Vec<LogEntry>, resend: &crossbeam_channel::Sender<ReaderJob>) {
        let mut by_topic: HashMap<String, Vec<StoredSample>> = HashMap::new();
        for e in entries {
            if !self.wanted(&e.topic) {
                continue;
            }
            let topic = e.topic.clone();
            match e.sample() {
                Some(s) => by_topic.entry(topic).or_default().push(s),
                None => {
                    self.log_dropped.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(topic, "malformed log entry dropped");
                }
            }
        }
        let mut held = self.held.lock();
        let topics = self.topics.lock();
        let ready: Vec<String> = held
            .0
            .keys()
            .filter(|t| topics.contains_key(*t))
            .cloned()
            .collect();
        // Readers that refused samples, maybe applied now: their writers are asked to send them
        // again, by the resend thread (asking takes the reader's lock, which its receive thread
        // may hold while it waits for this thread to apply an entry).
        // The same thread moves acknowledgment holds the log released.
        let mut resume: Vec<ReaderJob> = Vec::new();
        let mut after = |f: &Followed, released: Vec<Guid>| {
            if f.state.refused.swap(false, Ordering::Relaxed) {
                resume.push(ReaderJob::Resend(f.reader.clone()));
            }
            for w in released {
                resume.push(ReaderJob::MoveHold(f.reader.clone(), f.state.clone(), w));
            }
        };
        for t in ready {
            let mut samples = held.0.remove(&t).unwrap_or_default();
            held.1 -= samples.iter().map(|s| s.payload.len()).sum::<usize>();
            samples.extend(by_topic.remove(&t).unwrap_or_default());
            let f = &topics[&t];
            let released = f.state.apply_log(samples);
            after(f, released);
        }
        for (t, samples) in by_topic {
            if let Some(f) = topics.get(&t) {
                let released = f.state.apply_log(samples);
                after(f, released);
                continue;
            }
            let bytes: usize = samples.iter().map(|s| s.payload.len()).sum();
            if held.1 + bytes > MAX_HELD_BYTES {
                // This service would miss what the others keep: said loudly, counted.
                self.log_dropped
                    .fetch_add(samples.len() as u64, Ordering::Relaxed);
                tracing::error!(
                    topic = t,
                    samples = samples.len(),
                    "log entries dropped: the topic's type is still unknown here"
                );
                continue;
            }
            held.1 += bytes;
            held.0.entry(t).or_default().extend(samples);
        }
        drop(topics);
        drop(held);
        for r in resume {
            let _ = resend.send(r);
        }
    }
}
