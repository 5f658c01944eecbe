//! The service's memory of one topic: per instance, the samples its DURABILITY_SERVICE
//! history keeps, within its resource limits; what changed comes out as [`Op`]s, which the
//! persistent store ([`crate::persist`]) applies to disk for PERSISTENT topics.
//!
//! Sans-IO: no clock (time is passed in), no file, no thread.

use std::collections::{HashMap, HashSet, VecDeque};
use tessera::qos::{DurabilityService, History};
use tessera::rtps::types::Guid;

/// One stored sample (or dispose), as received from its original writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSample {
    /// The original writer.
    pub writer: Guid,
    /// Its sequence number.
    pub sequence_number: i64,
    /// The instance.
    pub key_hash: [u8; 16],
    /// 0 for data, 1 for a dispose (with the key as payload).
    pub status_info: u32,
    /// Source timestamp (ns since the epoch).
    pub source_timestamp: i64,
    /// Arrival order in this service (kept on disk, so a reload keeps the order).
    pub arrival: u64,
    /// Serialized sample, or key for a dispose (encapsulation header included).
    pub payload: Vec<u8>,
}

/// A change to apply to the persistent copy of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Keep this sample.
    Put(StoredSample),
    /// Forget the sample of this writer and number.
    Delete(Guid, i64),
    /// The highest sequence number taken from this writer (duplicates stay out after a
    /// restart even when the samples themselves were replaced).
    High(Guid, i64),
}

/// What [`TopicStore::insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Kept (and maybe older samples replaced).
    Stored,
    /// This writer's number was taken before (from the writer itself or another service).
    Duplicate,
    /// An unregister: nothing to keep (unregistered, undisposed instances stay).
    Ignored,
    /// Over a resource limit (max_samples, max_instances, or KEEP_ALL per instance): dropped.
    OverLimit,
}

#[derive(Debug, Default)]
struct Instance {
    samples: VecDeque<StoredSample>,
    /// Source time of the dispose, if the instance is disposed.
    disposed_at: Option<i64>,
    /// The writers that wrote it: the instance is cleaned up only when none is alive.
    writers: HashSet<Guid>,
}

/// Statistics of one topic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopicStats {
    /// Samples kept now.
    pub samples: usize,
    /// Instances kept now.
    pub instances: usize,
    /// Samples dropped as already taken.
    pub duplicates: u64,
    /// Samples dropped over a resource limit.
    pub over_limit: u64,
    /// Instances removed by cleanup.
    pub cleaned_up: u64,
}

impl std::fmt::Display for TopicStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} samples, {} instances, {} duplicates, {} over limits, {} cleaned up",
            self.samples, self.instances, self.duplicates, self.over_limit, self.cleaned_up
        )
    }
}

/// The samples kept for one topic.
#[derive(Debug)]
pub struct TopicStore {
    policy: DurabilityService,
    instances: HashMap<[u8; 16], Instance>,
    high: HashMap<Guid, i64>,
    next_arrival: u64,
    stats: TopicStats,
}

impl TopicStore {
    /// An empty store with the DURABILITY_SERVICE policy of the topic's writers.
    pub fn new(policy: DurabilityService) -> Self {
        TopicStore {
            policy,
            instances: HashMap::new(),
            high: HashMap::new(),
            next_arrival: 0,
            stats: TopicStats::default(),
        }
    }

    /// The policy it keeps samples by.
    pub fn policy(&self) -> &DurabilityService {
        &self.policy
    }

    /// Statistics.
    pub fn stats(&self) -> TopicStats {
        let mut s = self.stats;
        s.instances = self.instances.len();
        s.samples = self.instances.values().map(|i| i.samples.len()).sum();
        s
    }

    /// The next arrival number (a new sample's `arrival`).
    pub fn next_arrival(&self) -> u64 {
        self.next_arrival
    }

    /// Restores the high-water mark of a writer (reload).
    pub fn restore_high(&mut self, writer: Guid, seq: i64) {
        let h = self.high.entry(writer).or_insert(seq);
        *h = (*h).max(seq);
    }

    /// The highest sequence number taken from `writer`, if any.
    pub fn high_of(&self, writer: &Guid) -> Option<i64> {
        self.high.get(writer).copied()
    }

    /// Every writer's highest sequence number taken.
    pub fn highs(&self) -> impl Iterator<Item = (Guid, i64)> + '_ {
        self.high.iter().map(|(w, h)| (*w, *h))
    }

    /// Takes a sample received from `sample.writer`; the changes for disk go to `ops`.
    /// A number at or below the writer's highest taken is a duplicate: a writer's samples
    /// reach the service in order (reliable, one writer proxy), and replays of other
    /// services come in the original order too.
    pub fn insert(&mut self, mut sample: StoredSample, ops: &mut Vec<Op>) -> Outcome {
        if self
            .high
            .get(&sample.writer)
            .is_some_and(|&h| sample.sequence_number <= h)
        {
            self.stats.duplicates += 1;
            return Outcome::Duplicate;
        }
        self.high.insert(sample.writer, sample.sequence_number);
        ops.push(Op::High(sample.writer, sample.sequence_number));
        if sample.status_info & 1 == 0 && sample.status_info & 2 != 0 {
            return Outcome::Ignored;
        }
        let limits = self.policy.resource_limits;
        let total: usize = self.instances.values().map(|i| i.samples.len()).sum();
        if !self.instances.contains_key(&sample.key_hash)
            && limits
                .max_instances
                .is_some_and(|m| self.instances.len() >= m as usize)
        {
            self.stats.over_limit += 1;
            return Outcome::OverLimit;
        }
        let per_instance = limits.max_samples_per_instance.map(|m| m as usize);
        let inst = self.instances.entry(sample.key_hash).or_default();
        let depth = match self.policy.history {
            History::KeepLast(d) => {
                Some((d.max(1) as usize).min(per_instance.unwrap_or(usize::MAX)))
            }
            History::KeepAll => None,
        };
        let replaces = depth.is_some_and(|d| inst.samples.len() >= d);
        let full_instance =
            depth.is_none() && per_instance.is_some_and(|m| inst.samples.len() >= m);
        let full_topic = !replaces && limits.max_samples.is_some_and(|m| total >= m as usize);
        if full_instance || full_topic {
            if inst.samples.is_empty() {
                self.instances.remove(&sample.key_hash);
            }
            self.stats.over_limit += 1;
            return Outcome::OverLimit;
        }
        if let Some(d) = depth {
            while inst.samples.len() >= d {
                if let Some(old) = inst.samples.pop_front() {
                    ops.push(Op::Delete(old.writer, old.sequence_number));
                }
            }
        }
        inst.writers.insert(sample.writer);
        inst.disposed_at = if sample.status_info & 1 != 0 {
            Some(sample.source_timestamp)
        } else {
            None
        };
        sample.arrival = self.next_arrival.max(sample.arrival);
        self.next_arrival = sample.arrival + 1;
        ops.push(Op::Put(sample.clone()));
        inst.samples.push_back(sample);
        Outcome::Stored
    }

    /// Reloads a sample read from disk (in arrival order), without producing ops.
    pub fn reload(&mut self, sample: StoredSample) -> Outcome {
        let mut ignored = Vec::new();
        let high = self.high.remove(&sample.writer);
        let out = self.insert(sample.clone(), &mut ignored);
        // The disk's high-water mark stands (restored separately); reloading must not lower it.
        if let Some(h) = high {
            self.restore_high(sample.writer, h);
        }
        out
    }

    /// Removes the instances disposed at least `cleanup_delay` before `now_ns` (source
    /// time) whose writers are all gone, as DURABILITY_SERVICE says; returns how many. Their
    /// samples' deletions go to `ops`.
    pub fn cleanup(
        &mut self,
        now_ns: i64,
        alive: &dyn Fn(&Guid) -> bool,
        ops: &mut Vec<Op>,
    ) -> usize {
        let delay = i64::try_from(self.policy.service_cleanup_delay.as_nanos()).unwrap_or(i64::MAX);
        let before = self.instances.len();
        self.instances.retain(|_, inst| {
            let due = inst
                .disposed_at
                .is_some_and(|t| now_ns.saturating_sub(t) >= delay);
            if !due || inst.writers.iter().any(alive) {
                return true;
            }
            ops.extend(
                inst.samples
                    .iter()
                    .map(|s| Op::Delete(s.writer, s.sequence_number)),
            );
            false
        });
        let removed = before - self.instances.len();
        self.stats.cleaned_up += removed as u64;
        removed
    }

    /// Every kept sample, in arrival order: what a replay writer is filled with.
    pub fn samples(&self) -> Vec<&StoredSample> {
        let mut all: Vec<&StoredSample> = self
            .instances
            .values()
            .flat_map(|i| i.samples.iter())
            .collect();
        all.sort_by_key(|s| s.arrival);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tessera::qos::ResourceLimits;

    fn w(n: u8) -> Guid {
        Guid::from_bytes([n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2])
    }

    fn s(writer: u8, seq: i64, key: u8, status: u32) -> StoredSample {
        StoredSample {
            writer: w(writer),
            sequence_number: seq,
            key_hash: [key; 16],
            status_info: status,
            source_timestamp: seq * 1_000,
            arrival: 0,
            payload: vec![0, 1, 0, 0, key, seq as u8],
        }
    }

    fn policy(history: History, limits: ResourceLimits, delay: Duration) -> DurabilityService {
        DurabilityService {
            service_cleanup_delay: delay,
            history,
            resource_limits: limits,
        }
    }

    fn seqs(t: &TopicStore) -> Vec<i64> {
        t.samples().iter().map(|s| s.sequence_number).collect()
    }

    #[test]
    fn keep_last_per_instance_and_duplicates() {
        let mut t = TopicStore::new(policy(
            History::KeepLast(2),
            ResourceLimits::UNLIMITED,
            Duration::ZERO,
        ));
        let mut ops = Vec::new();
        for (seq, key) in [(1, 1), (2, 2), (3, 1), (4, 1)] {
            assert_eq!(t.insert(s(1, seq, key, 0), &mut ops), Outcome::Stored);
        }
        assert_eq!(seqs(&t), vec![2, 3, 4]);
        assert!(ops.contains(&Op::Delete(w(1), 1)));
        assert_eq!(t.insert(s(1, 3, 1, 0), &mut ops), Outcome::Duplicate);
        assert_eq!(
            t.insert(s(2, 1, 1, 0), &mut ops),
            Outcome::Stored,
            "another writer"
        );
        assert_eq!(t.stats().duplicates, 1);
    }

    #[test]
    fn limits_drop_and_count() {
        let limits = ResourceLimits {
            max_samples: Some(3),
            max_instances: Some(2),
            max_samples_per_instance: Some(2),
        };
        let mut t = TopicStore::new(policy(History::KeepAll, limits, Duration::ZERO));
        let mut ops = Vec::new();
        assert_eq!(t.insert(s(1, 1, 1, 0), &mut ops), Outcome::Stored);
        assert_eq!(t.insert(s(1, 2, 1, 0), &mut ops), Outcome::Stored);
        assert_eq!(
            t.insert(s(1, 3, 1, 0), &mut ops),
            Outcome::OverLimit,
            "per instance"
        );
        assert_eq!(t.insert(s(1, 4, 2, 0), &mut ops), Outcome::Stored);
        assert_eq!(
            t.insert(s(1, 5, 3, 0), &mut ops),
            Outcome::OverLimit,
            "instances"
        );
        assert_eq!(
            t.insert(s(1, 6, 2, 0), &mut ops),
            Outcome::OverLimit,
            "samples"
        );
        assert_eq!(t.stats().over_limit, 3);
        assert_eq!(t.stats().instances, 2);
    }

    #[test]
    fn disposed_instances_go_after_the_delay_once_their_writers_are_gone() {
        let mut t = TopicStore::new(policy(
            History::KeepLast(4),
            ResourceLimits::UNLIMITED,
            Duration::from_micros(10),
        ));
        let mut ops = Vec::new();
        t.insert(s(1, 1, 1, 0), &mut ops);
        t.insert(s(1, 2, 2, 0), &mut ops);
        t.insert(s(1, 3, 1, 1), &mut ops); // dispose of instance 1 at 3 µs
        assert_eq!(
            t.insert(s(1, 4, 2, 2), &mut ops),
            Outcome::Ignored,
            "unregister"
        );
        let mut ops = Vec::new();
        assert_eq!(t.cleanup(20_000, &|_| true, &mut ops), 0, "writer alive");
        assert_eq!(t.cleanup(5_000, &|_| false, &mut ops), 0, "too early");
        assert_eq!(t.cleanup(13_000, &|_| false, &mut ops), 1);
        assert_eq!(ops, vec![Op::Delete(w(1), 1), Op::Delete(w(1), 3)]);
        assert_eq!(seqs(&t), vec![2], "unregistered, undisposed instances stay");
    }

    #[test]
    fn reload_keeps_the_high_water_mark() {
        let mut t = TopicStore::new(DurabilityService::default());
        t.restore_high(w(1), 9);
        assert_eq!(t.reload(s(1, 5, 1, 0)), Outcome::Stored);
        assert_eq!(t.insert(s(1, 8, 1, 0), &mut Vec::new()), Outcome::Duplicate);
        assert_eq!(t.insert(s(1, 10, 1, 0), &mut Vec::new()), Outcome::Stored);
    }
}
