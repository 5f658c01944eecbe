//! `dust_dds-perf`: dust_dds 0.16 running ddsperf's experiments for `tessera bench` (see
//! `../common/perf_core.rs` for the grammar and the output).
//!
//! This one speaks ddsperf's whole protocol, so it pairs with Tessera, Cyclone and Fast DDS:
//! topics `DDSPerf{R,U}{Data,Ping,Pong}KS` of type `KeyedSeq` (@final, key `keyval`),
//! participant USER_DATA `DDSPerf:<R>:<pid>:<host>`, the pong reader in our own GUID's
//! partition, one pong writer per peer in a publisher whose partition is that peer's GUID, and
//! the pong carrying the ping's source timestamp back. Readers wait on a WaitSet
//! (DataAvailable) on a thread each, whatever the read mode says.

#[path = "../../common/perf_core.rs"]
mod perf_core;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use dust_dds::domain::domain_participant::DomainParticipant;
use dust_dds::domain::domain_participant_factory::DomainParticipantFactory;
use dust_dds::infrastructure::error::DdsError;
use dust_dds::infrastructure::instance::InstanceHandle;
use dust_dds::infrastructure::listener::NO_LISTENER;
use dust_dds::infrastructure::qos::{
    DataReaderQos, DataWriterQos, DomainParticipantQos, PublisherQos, QosKind, SubscriberQos,
};
use dust_dds::infrastructure::qos_policy::{
    HistoryQosPolicy, HistoryQosPolicyKind, Length, PartitionQosPolicy, ReliabilityQosPolicy,
    ReliabilityQosPolicyKind, ResourceLimitsQosPolicy, UserDataQosPolicy,
};
use dust_dds::infrastructure::sample_info::{ANY_INSTANCE_STATE, ANY_SAMPLE_STATE, ANY_VIEW_STATE};
use dust_dds::infrastructure::status::{StatusKind, NO_STATUS};
use dust_dds::infrastructure::time::{Duration, DurationKind, Time};
use dust_dds::infrastructure::type_support::DdsType;
use dust_dds::publication::data_writer::DataWriter;
use dust_dds::subscription::data_reader::DataReader;
use dust_dds::topic_definition::topic::Topic;
use dust_dds::wait_set::{Condition, WaitSet};
use dust_dds::xtypes::data_storage::{DataStorage, DataStorageMapping};
use dust_dds::xtypes::dynamic_type::{DynamicType, ExtensibilityKind, TypeDescriptor, TypeKind};
use dust_dds::xtypes::error::XTypesResult;
use dust_dds::xtypes::type_support::Type;
use perf_core::{guid_partition, Config, Link, Perf, KS_FIXED};

/// ddsperf's KeyedSeq: `@final struct { uint32 seq; @key uint32 keyval; sequence<octet> baggage; }`.
#[derive(DdsType, Debug, Clone, Default)]
#[dust_dds(extensibility = "final")]
struct KeyedSeq {
    seq: u32,
    #[dust_dds(key)]
    keyval: u32,
    baggage: Octets,
}

/// `sequence<octet>` (unbounded). dust_dds derives `Vec<u8>` as `sequence<uint8, 2^32-1>`, a
/// different XTypes type: dust_dds matches remote endpoints on the type hash, so with it no
/// ddsperf peer (Tessera, Cyclone, Fast DDS) would match. Same storage as `Vec<u8>`.
#[derive(Debug, Clone, Default)]
struct Octets(Vec<u8>);

impl Type for Octets {
    const TYPE: DynamicType<'static> = DynamicType {
        descriptor: &TypeDescriptor {
            kind: TypeKind::SEQUENCE,
            name: "",
            base_type: None,
            discriminator_type: None,
            bound: &[0], // XTypes: 0 is unbounded
            element_type: Some(DynamicType {
                descriptor: &TypeDescriptor {
                    kind: TypeKind::BYTE,
                    name: "",
                    base_type: None,
                    discriminator_type: None,
                    bound: &[],
                    element_type: None,
                    key_element_type: None,
                    extensibility_kind: ExtensibilityKind::Final,
                    is_nested: true,
                    is_autoid_hash: false,
                },
                member_list: &[],
            }),
            key_element_type: None,
            extensibility_kind: ExtensibilityKind::Final,
            is_nested: false,
            is_autoid_hash: false,
        },
        member_list: &[],
    };
}

impl DataStorageMapping for Octets {
    fn into_storage(self) -> DataStorage {
        self.0.into_storage()
    }

    fn try_from_storage(data_storage: DataStorage) -> XTypesResult<Self> {
        Vec::<u8>::try_from_storage(data_storage).map(Octets)
    }
}

fn to_time(ns: i64) -> Time {
    Time::new((ns / 1_000_000_000) as i32, (ns % 1_000_000_000) as u32)
}

fn from_time(t: Time) -> i64 {
    i64::from(t.sec()) * 1_000_000_000 + i64::from(t.nanosec())
}

fn err(e: DdsError) -> String {
    format!("{e:?}")
}

struct Peers {
    /// Pong writers by the participant GUID they answer (ddsperf's per-peer pong publisher).
    pong_writers: HashMap<[u8; 16], DataWriter<KeyedSeq>>,
}

struct DustLink {
    cfg: Config,
    me: [u8; 16],
    participant: DomainParticipant,
    pong_topic: Topic,
    ping_w: DataWriter<KeyedSeq>,
    data_w: DataWriter<KeyedSeq>,
    ping_r: DataReader<KeyedSeq>,
    pong_r: DataReader<KeyedSeq>,
    ping_sample: KeyedSeq,
    data_sample: KeyedSeq,
    peers: Mutex<Peers>,
    pong_qos: DataWriterQos,
}

impl DustLink {
    fn writer_participants(&self, w: &DataWriter<KeyedSeq>) -> BTreeSet<[u8; 16]> {
        let handles = w.get_matched_subscriptions().unwrap_or_default();
        handles
            .into_iter()
            .filter_map(|h| w.get_matched_subscription_data(h).ok())
            .map(|d| d.participant_key().value)
            .filter(|p| *p != self.me)
            .collect()
    }

    fn reader_participants(&self, r: &DataReader<KeyedSeq>) -> BTreeSet<[u8; 16]> {
        let handles = r.get_matched_publications().unwrap_or_default();
        handles
            .into_iter()
            .filter_map(|h| r.get_matched_publication_data(h).ok())
            .map(|d| d.participant_key().value)
            .filter(|p| *p != self.me)
            .collect()
    }

    /// Creates the pong writers of newly matched pingers (every participant whose ping
    /// writer our ping reader matched), before their first ping, as ddsperf does on discovery.
    fn make_pong_writers(&self) {
        let pingers = self.reader_participants(&self.ping_r);
        let mut peers = self.peers.lock().unwrap();
        for p in pingers {
            if peers.pong_writers.contains_key(&p) {
                continue;
            }
            let qos = PublisherQos {
                partition: PartitionQosPolicy {
                    name: vec![guid_partition(&p)],
                },
                ..Default::default()
            };
            let w = self
                .participant
                .create_publisher(QosKind::Specific(qos), NO_LISTENER, NO_STATUS)
                .and_then(|publ| {
                    publ.create_datawriter::<KeyedSeq>(
                        &self.pong_topic,
                        QosKind::Specific(self.pong_qos.clone()),
                        NO_LISTENER,
                        NO_STATUS,
                    )
                });
            match w {
                Ok(w) => {
                    peers.pong_writers.insert(p, w);
                }
                Err(e) => eprintln!("dust_dds-perf: creating a pong writer: {}", err(e)),
            }
        }
    }

    fn answer(&self, ping: KeyedSeq, publication: InstanceHandle, ts: Time) {
        let Ok(d) = self.ping_r.get_matched_publication_data(publication) else {
            return;
        };
        let p = d.participant_key().value;
        if p == self.me {
            return;
        }
        if !self.peers.lock().unwrap().pong_writers.contains_key(&p) {
            self.make_pong_writers();
        }
        let peers = self.peers.lock().unwrap();
        if let Some(w) = peers.pong_writers.get(&p) {
            let _ = w.write_w_timestamp(ping, None, ts);
        }
    }
}

impl Link for DustLink {
    fn send_ping(&self, seq: u32, ts_ns: i64) -> Result<(), String> {
        let mut s = self.ping_sample.clone();
        s.seq = seq;
        self.ping_w
            .write_w_timestamp(s, None, to_time(ts_ns))
            .map_err(err)
    }

    fn publish(&self, seq: u32, key: u32, ts_ns: i64) -> Result<bool, String> {
        let mut s = self.data_sample.clone();
        s.seq = seq;
        s.keyval = key;
        match self.data_w.write_w_timestamp(s, None, to_time(ts_ns)) {
            Ok(()) => Ok(true),
            Err(DdsError::Timeout) | Err(DdsError::OutOfResources) => Ok(false),
            Err(e) => Err(err(e)),
        }
    }

    fn tick(&self) {
        self.make_pong_writers();
    }

    fn matched(&self) -> u32 {
        if self.cfg.ping {
            // A peer reading our pings whose pong writer (in our partition) we matched.
            let readers = self.writer_participants(&self.ping_w);
            let pongs = self.reader_participants(&self.pong_r);
            readers.intersection(&pongs).count() as u32
        } else if self.cfg.publish {
            self.writer_participants(&self.data_w).len() as u32
        } else {
            0
        }
    }

    fn close(&self) {
        let _ = self.participant.delete_contained_entities();
    }
}

/// Takes every sample `reader` gets, on a thread of its own, waking on DataAvailable.
fn pump(
    reader: DataReader<KeyedSeq>,
    perf: Arc<Perf>,
    mut f: impl FnMut(KeyedSeq, Option<Time>, InstanceHandle) + Send + 'static,
) -> Result<(), String> {
    let cond = reader.get_statuscondition();
    cond.set_enabled_statuses(&[StatusKind::DataAvailable])
        .map_err(err)?;
    let mut ws = WaitSet::new();
    ws.attach_condition(Condition::StatusCondition(cond))
        .map_err(err)?;
    std::thread::spawn(move || {
        while !perf.stopping() {
            // Timed, so the thread notices the end of the run.
            let _ = ws.wait(Duration::new(0, 200_000_000));
            while let Ok(samples) =
                reader.take(256, ANY_SAMPLE_STATE, ANY_VIEW_STATE, ANY_INSTANCE_STATE)
            {
                if samples.is_empty() {
                    break;
                }
                for s in samples {
                    let info = s.sample_info;
                    if let Some(d) = s.data {
                        f(d, info.source_timestamp, info.publication_handle);
                    }
                }
            }
        }
    });
    Ok(())
}

fn main() {
    perf_core::worker_main("dust_dds-perf", start);
}

fn start(cfg: &Config, perf: &Arc<Perf>) -> Result<Arc<dyn Link>, String> {
    let factory = DomainParticipantFactory::get_instance();
    let pqos = DomainParticipantQos {
        user_data: UserDataQosPolicy {
            value: perf_core::user_data(cfg).into_bytes(),
        },
        ..Default::default()
    };
    let dp = factory
        .create_participant(
            cfg.domain as i32,
            QosKind::Specific(pqos),
            NO_LISTENER,
            NO_STATUS,
        )
        .map_err(err)?;
    perf.participant(&perf_core::hostname(), std::process::id(), true);
    let me: [u8; 16] = dp.get_instance_handle().into();
    let reliability = ReliabilityQosPolicy {
        kind: if cfg.best_effort {
            ReliabilityQosPolicyKind::BestEffort
        } else {
            ReliabilityQosPolicyKind::Reliable
        },
        max_blocking_time: DurationKind::Finite(Duration::new(10, 0)),
    };
    let keep_last_1 = HistoryQosPolicy {
        kind: HistoryQosPolicyKind::KeepLast(1),
    };
    // ddsperf's data and pong readers and its data writer: KEEP_ALL (or -k). ddsperf bounds
    // them at max_samples 10000; dust_dds 0.16 then stops delivering after 10000 samples taken
    // (they keep counting against the limit), so they are unbounded here.
    let bulk_history = HistoryQosPolicy {
        kind: match cfg.keep_last {
            None => HistoryQosPolicyKind::KeepAll,
            Some(d) => HistoryQosPolicyKind::KeepLast(d),
        },
    };
    let limits = ResourceLimitsQosPolicy {
        max_samples: Length::Unlimited,
        max_instances: Length::Unlimited,
        max_samples_per_instance: Length::Unlimited,
    };
    let wqos = |history: &HistoryQosPolicy, bulk: bool| DataWriterQos {
        reliability: reliability.clone(),
        history: history.clone(),
        resource_limits: if bulk {
            limits.clone()
        } else {
            Default::default()
        },
        ..Default::default()
    };
    let rqos = |history: &HistoryQosPolicy, bulk: bool| DataReaderQos {
        reliability: reliability.clone(),
        history: history.clone(),
        resource_limits: if bulk {
            limits.clone()
        } else {
            Default::default()
        },
        ..Default::default()
    };
    let topic = |kind: &str| {
        dp.create_topic::<KeyedSeq>(
            &cfg.topic(kind),
            "KeyedSeq",
            QosKind::Default,
            NO_LISTENER,
            NO_STATUS,
        )
        .map_err(err)
    };
    let (t_data, t_ping, t_pong) = (topic("Data")?, topic("Ping")?, topic("Pong")?);
    let publisher = dp
        .create_publisher(QosKind::Default, NO_LISTENER, NO_STATUS)
        .map_err(err)?;
    let subscriber = dp
        .create_subscriber(QosKind::Default, NO_LISTENER, NO_STATUS)
        .map_err(err)?;
    let pong_sub = dp
        .create_subscriber(
            QosKind::Specific(SubscriberQos {
                partition: PartitionQosPolicy {
                    name: vec![guid_partition(&me)],
                },
                ..Default::default()
            }),
            NO_LISTENER,
            NO_STATUS,
        )
        .map_err(err)?;
    let writer = |t: &Topic, q: DataWriterQos| {
        publisher
            .create_datawriter::<KeyedSeq>(t, QosKind::Specific(q), NO_LISTENER, NO_STATUS)
            .map_err(err)
    };
    let ping_w = writer(&t_ping, wqos(&keep_last_1, false))?;
    let data_w = writer(&t_data, wqos(&bulk_history, true))?;
    let ping_r = subscriber
        .create_datareader::<KeyedSeq>(
            &t_ping,
            QosKind::Specific(rqos(&keep_last_1, false)),
            NO_LISTENER,
            NO_STATUS,
        )
        .map_err(err)?;
    let pong_r = pong_sub
        .create_datareader::<KeyedSeq>(
            &t_pong,
            QosKind::Specific(rqos(&bulk_history, true)),
            NO_LISTENER,
            NO_STATUS,
        )
        .map_err(err)?;
    let sample = |size: u32| KeyedSeq {
        seq: 0,
        keyval: 0,
        baggage: Octets(vec![0xEE; (size - KS_FIXED) as usize]),
    };
    let link = Arc::new(DustLink {
        cfg: cfg.clone(),
        me,
        participant: dp.clone(),
        pong_topic: t_pong,
        ping_w,
        data_w,
        ping_r: ping_r.clone(),
        pong_r: pong_r.clone(),
        ping_sample: sample(cfg.ping_size),
        data_sample: sample(cfg.pub_size),
        peers: Mutex::new(Peers {
            pong_writers: HashMap::new(),
        }),
        pong_qos: wqos(&keep_last_1, false),
    });
    // Every process answers pings: the same sample back to the pinger, with its timestamp.
    let l = link.clone();
    pump(ping_r, perf.clone(), move |s, ts, publication| {
        if let Some(ts) = ts {
            l.answer(s, publication, ts);
        }
    })?;
    if cfg.ping {
        let p = perf.clone();
        let l = link.clone();
        let mut names: HashMap<InstanceHandle, ([u8; 16], String)> = HashMap::new();
        pump(pong_r, perf.clone(), move |s, ts, publication| {
            let Some(ts) = ts else { return };
            let (src, name) = names.entry(publication).or_insert_with(|| {
                let src: [u8; 16] = publication.into();
                let part = l
                    .pong_r
                    .get_matched_publication_data(publication)
                    .map(|d| guid_partition(&d.participant_key().value))
                    .unwrap_or_default();
                (src, format!("dust_dds:{}", part.get(..17).unwrap_or("")))
            });
            p.on_pong(*src, name, s.seq, from_time(ts));
        })?;
    }
    if cfg.sub {
        let data_r = subscriber
            .create_datareader::<KeyedSeq>(
                &t_data,
                QosKind::Specific(rqos(&bulk_history, true)),
                NO_LISTENER,
                NO_STATUS,
            )
            .map_err(err)?;
        let p = perf.clone();
        pump(data_r, perf.clone(), move |s, _, publication| {
            p.on_data(publication.into(), s.seq, s.keyval, s.baggage.0.len());
        })?;
    }
    Ok(link)
}
