//! The DCPS-facing driver of `tessera perf`: entities, threads and the once-per-second main
//! loop (`docs/ddsperf-protocol.md` §4–§10 and the plan in §14).
//!
//! Threads:
//! - the participant's own receive and event threads, which also run the reader listeners
//!   (data, ping and pong handling by default, as in ddsperf);
//! - `discovery`: participant discovery events (new/gone lines, one pong writer per peer) and
//!   the endpoint-match bookkeeping of [`PeerTable`]. Listeners only *notify* it over a
//!   channel: entity creation never happens inside a listener;
//! - `pub` (with `pub`), `sub` (with `sub waitset|polling`), `ping`/`pong` (with the waitset
//!   trigger);
//! - `signals`: turns SIGINT/SIGTERM/SIGHUP into the termination guard condition;
//! - the main thread: reports, timers and the end-of-run verdict.
//!
//! Mapping of ddsperf's DCPS facilities onto the Tessera API (which has no built-in topic
//! readers): a remote endpoint's participant is the one with the same GUID prefix, so the
//! publication handle of a sample (the writer's GUID) names the peer to answer, and the
//! matched-endpoint GUID lists of our readers/writers name the peers whose endpoints matched.
//! DDS instance handles are stood in for by [`handle_of`], a 64-bit fold of the GUID.
//!
//! Known differences from ddsperf, both from the runtime: `-L` has no effect on matching
//! (Tessera never matches a reader and a writer of the same participant, so with `-L` our own
//! participant stays "unmatched"), and the `-X` line's `rexmit` counts retransmitted *samples*
//! of the data writer (Cyclone counts bytes) while `discarded`, `Trexmit`, `Tthrottle` and
//! `Nthrottle` stay 0 (no such counters are exposed per endpoint).
//!
//! Tessera extensions: `--warmup` (round trips of the first seconds after the first pong stay
//! out of the whole-run histogram), and with `--json` every line carries `"t"`: the stamped
//! lines as in the text, the event lines (participant, errors, summary) seconds since `-R` or,
//! without `-R`, since the process started. Every line is flushed as it is written.

use std::collections::HashSet;
use std::io::{Stdout, Write};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use tessera::crossbeam_channel::{self, Receiver, Sender};
use tessera::qos::{
    Consistency, DataReaderQos, DataWriterQos, DomainParticipantQos, History as QosHistory,
    Partition, PublisherQos, Reliability, ResourceLimits, SubscriberQos, TopicQos, UserData,
};
use tessera::rtps::fasthash::FastHashMap;
use tessera::rtps::types::{EntityId, Guid};
use tessera::status::{PublicationMatchedStatus, SubscriptionMatchedStatus};
use tessera::{
    DataReader, DataReaderListener, DataWriter, DataWriterListener, DomainParticipant,
    GuardCondition, ParticipantConfig, ParticipantEvent, Publisher, SampleBuffer, StateMasks,
    Subscriber, Topic, WaitSet,
};

use super::args::{History, PerfConfig, PingInterval, PubRate, SubMode};
use super::loan::{with_loan_type, LoanSample, LoanTypeFn, PerfIo};
use super::peers::PeerTable;
use super::protocol::{
    data_timestamp, guid_partition, is_ping_timestamp, one_way_latency_ns, pong_timestamp_for_data,
    pong_timestamp_for_ping, user_data, MatchMask, TopicKind, TopicRole, CPU_STATS_TOPIC,
    DATA_MAX_SAMPLES, DATA_TAKE_MAX, PINGPONG_TAKE_MAX,
};
use super::report::{
    verdict, ExtendedStats, PeerLabel, PingAnswers, ReportLine, Reporter, Stamp, VerdictInput,
};
use super::stats::{
    ClockDecimator, KeyOutOfRange, LatencyStats, PingScheduler, PubHist, PubPacer, SeqTracker,
};
use super::sysinfo::{self, CpuSampler, NetloadSampler};
use super::types::{
    CpuStats, Keyed256, Keyed32, KeyedSeq, OneULong, Struct16, Struct256, Struct32k, Struct4k,
    Unkeyed1024, Unkeyed16,
};
use super::{EXIT_BAD_ARGS, EXIT_DDS_ERROR};

mod main_loop;
mod matching;
mod publish;
mod qos;
mod receive;
mod setup;
mod state;
mod threads;

use main_loop::{finish, main_loop};
use matching::{Discovery, DiscoveryTyped, MatchSources};
use publish::{linger, publish};
use qos::{batches_pings, consistency, data_history, data_limits, reliability};
use receive::{process, ReaderListener, ReaderRole, WriterListener};
use setup::{run_typed, Base};
use state::{Ctx, PongSource, Shared, Typed};
use threads::{block_signals, spawn_signal_thread, start_threads};

const SEC: i64 = 1_000_000_000;
/// How often the discovery thread re-checks the matched-endpoint lists without being told to.
const MATCH_RESCAN: Duration = Duration::from_millis(100);

/// Runs the benchmark described by `cfg` and returns the exit status.
pub fn run(cfg: &PerfConfig) -> i32 {
    let base = match Base::new(cfg) {
        Ok(b) => b,
        Err(code) => return code,
    };
    if let Some(size) = cfg.loan {
        /// The run with the loan type of the size.
        struct Loaned<'a>(&'a PerfConfig, Base);
        impl LoanTypeFn<i32> for Loaned<'_> {
            fn call<T: PerfIo + LoanSample>(self) -> i32 {
                run_typed::<T>(self.0, self.1)
            }
        }
        // The size was checked by the argument parser.
        return with_loan_type(size, Loaned(cfg, base)).unwrap_or(EXIT_BAD_ARGS);
    }
    match cfg.topic {
        TopicKind::KS => run_typed::<KeyedSeq>(cfg, base),
        TopicKind::K32 => run_typed::<Keyed32>(cfg, base),
        TopicKind::K256 => run_typed::<Keyed256>(cfg, base),
        TopicKind::OU => run_typed::<OneULong>(cfg, base),
        TopicKind::UK16 => run_typed::<Unkeyed16>(cfg, base),
        TopicKind::UK1024 => run_typed::<Unkeyed1024>(cfg, base),
        TopicKind::S16 => run_typed::<Struct16>(cfg, base),
        TopicKind::S256 => run_typed::<Struct256>(cfg, base),
        TopicKind::S4k => run_typed::<Struct4k>(cfg, base),
        TopicKind::S32k => run_typed::<Struct32k>(cfg, base),
    }
}

/// Wall-clock time in ns since the Unix epoch (ddsperf's `dds_time()`): source timestamps
/// and latencies use it.
fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A 64-bit stand-in for a DDS instance handle of the entity with this GUID.
fn handle_of(guid: &[u8; 16]) -> u64 {
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    a.copy_from_slice(&guid[..8]);
    b.copy_from_slice(&guid[8..]);
    u64::from_be_bytes(a) ^ u64::from_be_bytes(b).rotate_left(32)
}

/// The GUID of the participant owning the endpoint `guid`.
fn participant_guid(guid: &[u8; 16]) -> [u8; 16] {
    let mut p = *guid;
    p[12..].copy_from_slice(&EntityId::PARTICIPANT.0);
    p
}

fn participant_handle_of(endpoint: &[u8; 16]) -> u64 {
    handle_of(&participant_guid(endpoint))
}

fn prefix_of(guid: &[u8; 16]) -> [u8; 12] {
    let mut p = [0u8; 12];
    p.copy_from_slice(&guid[..12]);
    p
}

/// Locks a mutex, ignoring poisoning (a panicking thread already ended the run's usefulness,
/// and the state it guards stays consistent enough for the final report).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Peers' CPU statistics seen with `-c`: the latest sample per (host, pid) and whether it is
/// new since the last report.
type PeerCpu = Vec<((String, u32), super::protocol::CpuStatsSample, bool)>;

#[cfg(test)]
mod tests;
