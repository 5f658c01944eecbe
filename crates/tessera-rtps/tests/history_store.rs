//! The writer's history-store seam: a second `HistoryStore` (one that records every call and
//! can refuse samples) behind a `WriterCore` on the simulated network.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tessera_rtps::sim::{NetConfig, Sim};
use tessera_rtps::types::SequenceNumber;
use tessera_rtps::writer::{
    HistoryKind, HistoryStore, MemoryHistory, Sample, StoreError, WriteError, WriterConfig,
    WriterCore,
};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Push(SequenceNumber),
    Remove(SequenceNumber),
    RemoveBelow(SequenceNumber, usize),
}

/// Shared between the test and the store the writer owns.
#[derive(Debug, Default)]
struct Log {
    calls: Vec<Call>,
    /// Refuse pushes while set.
    refuse: Option<StoreError>,
}

/// Records every mutating call and keeps samples in a `MemoryHistory`.
#[derive(Debug)]
struct Recording {
    inner: MemoryHistory,
    log: Arc<Mutex<Log>>,
}

impl HistoryStore for Recording {
    fn push(&mut self, seq: SequenceNumber, sample: Sample) -> Result<(), StoreError> {
        let mut log = self.log.lock().unwrap();
        if let Some(e) = log.refuse {
            return Err(e);
        }
        log.calls.push(Call::Push(seq));
        self.inner.push(seq, sample)
    }
    fn get(&self, seq: SequenceNumber) -> Option<&Sample> {
        self.inner.get(seq)
    }
    fn next_from(&self, seq: SequenceNumber) -> Option<(SequenceNumber, &Sample)> {
        self.inner.next_from(seq)
    }
    fn remove(&mut self, seq: SequenceNumber) -> bool {
        self.log.lock().unwrap().calls.push(Call::Remove(seq));
        self.inner.remove(seq)
    }
    fn remove_below(&mut self, seq: SequenceNumber) -> usize {
        let n = self.inner.remove_below(seq);
        if n > 0 {
            self.log
                .lock()
                .unwrap()
                .calls
                .push(Call::RemoveBelow(seq, n));
        }
        n
    }
    fn keep_last_victim(&self, key: Option<[u8; 16]>) -> Option<SequenceNumber> {
        self.inner.keep_last_victim(key)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn first_seq(&self) -> Option<SequenceNumber> {
        self.inner.first_seq()
    }
}

fn sim_with(cfg: WriterConfig, loss: f64) -> (Sim, Arc<Mutex<Log>>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let store = Recording {
        inner: MemoryHistory::for_config(&cfg),
        log: log.clone(),
    };
    let net = NetConfig {
        loss,
        seed: 21,
        ..NetConfig::default()
    };
    let mut sim = Sim::new(cfg.clone(), net);
    sim.writer = WriterCore::with_store(cfg, Box::new(store));
    (sim, log)
}

fn payload(i: u64) -> Vec<u8> {
    let mut v = vec![0u8, 1, 0, 0];
    v.extend_from_slice(&i.to_le_bytes());
    v
}

#[test]
fn samples_are_pushed_in_order_and_released_once_acknowledged() {
    let cfg = WriterConfig {
        history: HistoryKind::KeepAll,
        max_samples: 64,
        ..Sim::writer_config()
    };
    let (mut sim, log) = sim_with(cfg, 0.1);
    sim.add_reader(true, false);
    sim.add_reader(true, false);
    sim.run_for(Duration::from_millis(50));
    for i in 1..=200 {
        sim.write_blocking(&payload(i), Duration::from_secs(10))
            .unwrap();
        sim.run_for(Duration::from_micros(200));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    for r in 0..2 {
        assert_eq!(sim.seqs(r), (1..=200).collect::<Vec<_>>());
    }
    let calls = log.lock().unwrap().calls.clone();
    let pushes: Vec<SequenceNumber> = calls
        .iter()
        .filter_map(|c| match c {
            Call::Push(s) => Some(*s),
            _ => None,
        })
        .collect();
    assert_eq!(
        pushes,
        (1..=200).collect::<Vec<_>>(),
        "the core numbers samples"
    );
    // Everything acknowledged was released, each sample once, never before it was pushed.
    let mut released = 0;
    let mut pushed_so_far = 0;
    for c in &calls {
        match c {
            Call::Push(s) => pushed_so_far = *s,
            Call::RemoveBelow(below, n) => {
                assert!(*below <= pushed_so_far + 1, "{c:?}");
                released += n;
            }
            Call::Remove(s) => panic!("KEEP_ALL never replaces: {s}"),
        }
    }
    assert_eq!(released, 200);
    assert!(sim.writer.store().is_empty());
    assert!(
        sim.writer.counters().retransmits > 0,
        "repairs read the store"
    );
}

#[test]
fn a_refused_push_writes_nothing_and_consumes_no_number() {
    let cfg = WriterConfig {
        history: HistoryKind::KeepLast(1),
        // Keeps sample 1 after it is acknowledged, until a newer one replaces it.
        transient_local: true,
        ..Sim::writer_config()
    };
    let (mut sim, log) = sim_with(cfg, 0.0);
    sim.add_reader(true, false);
    sim.run_for(Duration::from_millis(50));
    let key = Some([7; 16]);
    assert_eq!(sim.write_keyed(&payload(1), key), Ok(1));
    sim.run_for(Duration::from_millis(1));
    log.lock().unwrap().refuse = Some(StoreError::Unavailable);
    assert_eq!(
        sim.write_keyed(&payload(2), key),
        Err(WriteError::Store(StoreError::Unavailable))
    );
    assert_eq!(sim.writer.last_seq(), 1);
    // The KEEP_LAST sample it would have replaced is still there.
    assert_eq!(sim.writer.store().first_seq(), Some(1));
    assert!(!log
        .lock()
        .unwrap()
        .calls
        .iter()
        .any(|c| matches!(c, Call::Remove(_))));
    log.lock().unwrap().refuse = None;
    assert_eq!(sim.write_keyed(&payload(3), key), Ok(2));
    assert!(sim.run_until_quiescent(Duration::from_secs(5)));
    assert_eq!(sim.seqs(0), vec![1, 2]);
    assert_eq!(sim.readers[0].received[1].payload, payload(3));
    assert_eq!(sim.readers[0].core.counters().lost, 0);
    // KEEP_LAST 1: the second sample replaced the first, after it was pushed.
    let calls = log.lock().unwrap().calls.clone();
    let p2 = calls.iter().position(|c| *c == Call::Push(2)).unwrap();
    let r1 = calls.iter().position(|c| *c == Call::Remove(1)).unwrap();
    assert!(p2 < r1, "{calls:?}");
}
