//! The QoS of the tool's data, ping and pong endpoints, as the configuration asks.

use super::*;

pub(super) fn reliability(cfg: &PerfConfig) -> Reliability {
    if cfg.reliable {
        Reliability::reliable(Duration::from_secs(10))
    } else {
        Reliability::best_effort()
    }
}

/// `--consistency`: of the Data, Ping and Pong endpoints (CPU statistics stay EVENTUAL).
pub(super) fn consistency(cfg: &PerfConfig) -> Consistency {
    if cfg.atomic {
        Consistency::Atomic
    } else {
        Consistency::Eventual
    }
}

/// Whether a ping or pong writer batches (then flushes after each write, as ddsperf does). An
/// ATOMIC one does not: with batching its `write` would only queue the sample for its committer
/// thread and the flush wait for that thread's commit, a hand-off a synchronous write skips.
pub(super) fn batches_pings(qos: &DataWriterQos) -> bool {
    qos.consistency != Consistency::Atomic
}

pub(super) fn data_history(cfg: &PerfConfig) -> QosHistory {
    match cfg.history {
        History::KeepAll => QosHistory::KeepAll,
        History::KeepLast(k) => QosHistory::KeepLast(k.max(1) as u32),
    }
}

pub(super) fn data_limits() -> ResourceLimits {
    ResourceLimits {
        max_samples: Some(DATA_MAX_SAMPLES as u32),
        ..ResourceLimits::UNLIMITED
    }
}
