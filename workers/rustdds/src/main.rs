//! `rustdds-perf`: RustDDS 0.15 running ddsperf's experiments for `tessera bench` (see
//! `../common/perf_core.rs` for the grammar and the output).
//!
//! ddsperf's topics (`DDSPerf{R,U}{Data,Ping,Pong}KS`), type name (`KeyedSeq`, key `keyval`),
//! reliability and history, and its timestamp trick (an odd source timestamp asks for an
//! answer; the pong carries the ping's timestamp back). What RustDDS 0.15 lacks: PARTITION QoS
//! and participant USER_DATA (both commented out in its SEDP/SPDP messages), so there is one
//! pong writer in the default partition instead of one per peer in the peer's GUID partition,
//! and ddsperf peers (Tessera, Cyclone, Fast DDS) do not see this process as a ddsperf peer.

#[path = "../../common/perf_core.rs"]
mod perf_core;

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt;
use perf_core::{Config, Link, Perf, KS_FIXED};
use rustdds::policy::{History, Reliability};
use rustdds::with_key::{DataReader, DataWriter, Sample};
use rustdds::{
    CDRDeserializerAdapter, CDRSerializerAdapter, DomainParticipant, Keyed, QosPolicies,
    QosPolicyBuilder, RTPSEntity, Timestamp, TopicKind,
};
use serde::{Deserialize, Serialize};

/// ddsperf's KeyedSeq: `{ uint32 seq; @key uint32 keyval; sequence<octet> baggage; }`.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
struct KeyedSeq {
    seq: u32,
    keyval: u32,
    #[serde(with = "serde_bytes")]
    baggage: Vec<u8>,
}

impl Keyed for KeyedSeq {
    type K = u32;
    fn key(&self) -> u32 {
        self.keyval
    }
}

type Writer = DataWriter<KeyedSeq, CDRSerializerAdapter<KeyedSeq>>;
type Reader = DataReader<KeyedSeq, CDRDeserializerAdapter<KeyedSeq>>;

/// Nanoseconds since the epoch to an RTPS time (2^-32 s fraction), rounded: the reverse
/// rounding gives the same nanoseconds back, so a ping's odd timestamp stays odd.
fn to_rtps(ns: i64) -> Timestamp {
    let ns = ns.max(0) as u64;
    let frac = ((ns % 1_000_000_000) << 32).div_ceil(1_000_000_000);
    let frac = frac.min(u64::from(u32::MAX));
    Timestamp::from_ticks(((ns / 1_000_000_000) << 32) + frac)
}

fn from_rtps(t: Timestamp) -> i64 {
    let ticks = t.to_ticks();
    let frac = ticks & 0xffff_ffff;
    let ns = (frac * 1_000_000_000 + (1 << 31)) >> 32;
    ((ticks >> 32) * 1_000_000_000 + ns) as i64
}

struct RustDdsLink {
    cfg: Config,
    ping_w: Writer,
    data_w: Writer,
    ping_sample: KeyedSeq,
    data_sample: KeyedSeq,
    participant: std::sync::Mutex<Option<DomainParticipant>>,
}

impl Link for RustDdsLink {
    fn send_ping(&self, seq: u32, ts_ns: i64) -> Result<(), String> {
        let mut s = self.ping_sample.clone();
        s.seq = seq;
        self.ping_w
            .write(s, Some(to_rtps(ts_ns)))
            .map_err(|e| e.to_string())
    }

    fn publish(&self, seq: u32, key: u32, ts_ns: i64) -> Result<bool, String> {
        let mut s = self.data_sample.clone();
        s.seq = seq;
        s.keyval = key;
        match self.data_w.write(s, Some(to_rtps(ts_ns))) {
            Ok(()) => Ok(true),
            Err(rustdds::dds::result::WriteError::WouldBlock { .. }) => Ok(false),
            Err(e) => Err(e.to_string()),
        }
    }

    fn matched(&self) -> u32 {
        let guard = self.participant.lock().unwrap();
        let Some(dp) = guard.as_ref() else { return 0 };
        let me = dp.guid().to_bytes();
        let remote = |g: [u8; 16]| (g[..12] != me[..12]).then(|| g[..12].try_into().unwrap());
        let readers = |topic: String| -> BTreeSet<[u8; 12]> {
            dp.discovered_readers()
                .iter()
                .filter(|r| *r.subscription_topic_data.topic_name() == topic)
                .filter_map(|r| remote(r.subscription_topic_data.key().to_bytes()))
                .collect()
        };
        if self.cfg.ping {
            // A peer that reads our pings and writes pongs.
            let pongs: BTreeSet<[u8; 12]> = dp
                .discovered_writers()
                .iter()
                .filter(|w| *w.publication_topic_data.topic_name() == self.cfg.topic("Pong"))
                .filter_map(|w| remote(w.publication_topic_data.key.to_bytes()))
                .collect();
            readers(self.cfg.topic("Ping")).intersection(&pongs).count() as u32
        } else if self.cfg.publish {
            readers(self.cfg.topic("Data")).len() as u32
        } else {
            0
        }
    }

    fn close(&self) {
        // Dropping the participant sends its dispose over SPDP.
        self.participant.lock().unwrap().take();
    }
}

/// Runs `f` on every sample `reader` takes, on a thread of its own.
fn pump(
    reader: Reader,
    perf: Arc<Perf>,
    mut f: impl FnMut(KeyedSeq, Option<i64>, [u8; 16]) + Send + 'static,
) {
    std::thread::spawn(move || {
        let mut stream = reader.async_sample_stream();
        let mut said = false;
        futures::executor::block_on(async {
            while let Some(r) = stream.next().await {
                if perf.stopping() {
                    break;
                }
                let s = match r {
                    Ok(s) => s,
                    Err(e) => {
                        // Counted by the peer as lost; said once, never fatal.
                        if !said {
                            eprintln!("rustdds-perf: read error: {e}");
                            said = true;
                        }
                        continue;
                    }
                };
                let ts = s.sample_info().source_timestamp().map(from_rtps);
                let writer = s.sample_info().writer_guid().to_bytes();
                if let Sample::Value(v) = s.into_value() {
                    f(v, ts, writer);
                }
            }
        });
    });
}

fn main() {
    // RustDDS logs through `log`: RUST_LOG=rustdds=debug shows its view of a failed match.
    env_logger::init();
    perf_core::worker_main("rustdds-perf", start);
}

fn start(cfg: &Config, perf: &Arc<Perf>) -> Result<Arc<dyn Link>, String> {
    let domain = u16::try_from(cfg.domain).map_err(|e| e.to_string())?;
    let dp = DomainParticipant::new(domain).map_err(|e| e.to_string())?;
    perf.participant(&perf_core::hostname(), std::process::id(), true);
    let reliability = if cfg.best_effort {
        Reliability::BestEffort
    } else {
        Reliability::Reliable {
            max_blocking_time: rustdds::Duration::from_secs(10),
        }
    };
    let topic_qos = QosPolicyBuilder::new().reliability(reliability).build();
    let keep_last_1 = QosPolicyBuilder::new()
        .reliability(reliability)
        .history(History::KeepLast { depth: 1 })
        .build();
    // ddsperf's data and pong readers (and the data writer): KEEP_ALL or -k. ddsperf also
    // bounds them at max_samples 10000; RustDDS 0.15 takes RESOURCE_LIMITS' -1 (unlimited)
    // literally and then delivers nothing, so no resource limits here.
    let bulk: QosPolicies = QosPolicyBuilder::new()
        .reliability(reliability)
        .history(match cfg.keep_last {
            None => History::KeepAll,
            Some(d) => History::KeepLast { depth: d as i32 },
        })
        .build();
    let topic = |kind: &str| {
        dp.create_topic(
            cfg.topic(kind),
            "KeyedSeq".into(),
            &topic_qos,
            TopicKind::WithKey,
        )
        .map_err(|e| e.to_string())
    };
    let (t_data, t_ping, t_pong) = (topic("Data")?, topic("Ping")?, topic("Pong")?);
    let publisher = dp.create_publisher(&topic_qos).map_err(|e| e.to_string())?;
    let subscriber = dp
        .create_subscriber(&topic_qos)
        .map_err(|e| e.to_string())?;
    let ping_w: Writer = publisher
        .create_datawriter_cdr(&t_ping, Some(keep_last_1.clone()))
        .map_err(|e| e.to_string())?;
    let pong_w: Writer = publisher
        .create_datawriter_cdr(&t_pong, Some(keep_last_1.clone()))
        .map_err(|e| e.to_string())?;
    let data_w: Writer = publisher
        .create_datawriter_cdr(&t_data, Some(bulk.clone()))
        .map_err(|e| e.to_string())?;
    let ping_r: Reader = subscriber
        .create_datareader_cdr(&t_ping, Some(keep_last_1))
        .map_err(|e| e.to_string())?;
    let pong_r: Reader = subscriber
        .create_datareader_cdr(&t_pong, Some(bulk.clone()))
        .map_err(|e| e.to_string())?;

    // RustDDS matches the readers and writers of one participant with each other, where
    // ddsperf (Cyclone's default) ignores them: our own pings and pongs are skipped here.
    let me: [u8; 12] = dp.guid().to_bytes()[..12].try_into().unwrap();
    // Every process answers pings: the same sample back with the ping's timestamp.
    pump(ping_r, perf.clone(), move |s, ts, w| {
        if w[..12] == me {
            return;
        }
        if let Some(ts) = ts.filter(|t| t & 1 == 1) {
            let _ = pong_w.write(s, Some(to_rtps(ts)));
        }
    });
    if cfg.ping {
        let p = perf.clone();
        pump(pong_r, perf.clone(), move |s, ts, w| {
            if w[..12] == me {
                return;
            }
            if let Some(ts) = ts {
                let name = format!(
                    "rustdds:{}",
                    perf_core::guid_partition(&w).get(..17).unwrap_or("")
                );
                p.on_pong(w, &name, s.seq, ts);
            }
        });
    }
    if cfg.sub {
        let data_r: Reader = subscriber
            .create_datareader_cdr(&t_data, Some(bulk))
            .map_err(|e| e.to_string())?;
        let p = perf.clone();
        pump(data_r, perf.clone(), move |s, _, w| {
            p.on_data(w, s.seq, s.keyval, s.baggage.len());
        });
    }
    let sample = |size: u32| KeyedSeq {
        seq: 0,
        keyval: 0,
        baggage: vec![0xEE; (size - KS_FIXED) as usize],
    };
    Ok(Arc::new(RustDdsLink {
        cfg: cfg.clone(),
        ping_w,
        data_w,
        ping_sample: sample(cfg.ping_size),
        data_sample: sample(cfg.pub_size),
        participant: std::sync::Mutex::new(Some(dp)),
    }))
}
