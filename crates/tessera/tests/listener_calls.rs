//! Every listener method is really called when its status changes.

mod support;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::peer::{listener, FakePeer};
use support::{serial, udp_participants, wait_until, Keyed, Transport};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, ResourceLimits, TopicQos};
use tessera::rtps::discovery::DiscoveredWriterData;
use tessera::rtps::types::EntityId;
use tessera::status::{
    IncompatibleQosStatus, LivelinessChangedStatus, PublicationMatchedStatus, SampleLostStatus,
    SampleRejectedStatus, SubscriptionMatchedStatus,
};
use tessera::{DataReader, DataReaderListener, DataWriter, DataWriterListener, TopicType};

/// Calls of each method, in the order of the trait.
#[derive(Default)]
struct Calls([AtomicU32; 6]);

impl Calls {
    fn get(&self, i: usize) -> u32 {
        self.0[i].load(Ordering::Acquire)
    }
    fn hit(&self, i: usize) {
        self.0[i].fetch_add(1, Ordering::AcqRel);
    }
}

const DATA: usize = 0;
const MATCHED: usize = 1;
const INCOMPATIBLE: usize = 2;
const LIVELINESS: usize = 3;
const LOST: usize = 4;
const REJECTED: usize = 5;

impl DataReaderListener<Keyed> for Calls {
    fn on_data_available(&self, _: &DataReader<Keyed>) {
        self.hit(DATA);
    }
    fn on_subscription_matched(&self, _: &DataReader<Keyed>, _: SubscriptionMatchedStatus) {
        self.hit(MATCHED);
    }
    fn on_requested_incompatible_qos(&self, _: &DataReader<Keyed>, _: IncompatibleQosStatus) {
        self.hit(INCOMPATIBLE);
    }
    fn on_liveliness_changed(&self, _: &DataReader<Keyed>, _: LivelinessChangedStatus) {
        self.hit(LIVELINESS);
    }
    fn on_sample_lost(&self, _: &DataReader<Keyed>, _: SampleLostStatus) {
        self.hit(LOST);
    }
    fn on_sample_rejected(&self, _: &DataReader<Keyed>, s: SampleRejectedStatus) {
        assert!(s.total_count > 0);
        self.hit(REJECTED);
    }
}

impl DataWriterListener<Keyed> for Calls {
    fn on_publication_matched(&self, _: &DataWriter<Keyed>, _: PublicationMatchedStatus) {
        self.hit(MATCHED);
    }
    fn on_offered_incompatible_qos(&self, _: &DataWriter<Keyed>, _: IncompatibleQosStatus) {
        self.hit(INCOMPATIBLE);
    }
}

fn reliable() -> Reliability {
    Reliability::reliable(Duration::from_secs(1))
}

fn reader_and_writer_listeners_hear_every_status(t: Transport) {
    let _serial = serial();
    let ps = t.participants(1);
    let p = &ps[0];
    let t = p
        .create_topic::<Keyed>("LC_all", TopicQos::default())
        .unwrap();
    let sub = p.create_subscriber(Default::default()).unwrap();
    let publ = p.create_publisher(Default::default()).unwrap();
    let r = sub
        .create_datareader(
            &t,
            DataReaderQos::default()
                .with_reliability(reliable())
                .with_history(History::KeepAll)
                .with_resource_limits(ResourceLimits {
                    max_samples: Some(1),
                    max_instances: None,
                    max_samples_per_instance: None,
                }),
        )
        .unwrap();
    let rc = Arc::new(Calls::default());
    r.set_listener(Some(rc.clone()));
    let w = publ
        .create_datawriter(&t, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap();
    wait_until(5, "match", || rc.get(MATCHED) == 1);
    assert!(rc.get(LIVELINESS) >= 1);
    w.write(&Keyed { id: 1, seq: 1 }).unwrap();
    w.write(&Keyed { id: 1, seq: 2 }).unwrap();
    wait_until(5, "data and rejection", || {
        rc.get(DATA) >= 1 && rc.get(REJECTED) >= 1
    });

    // A best-effort writer cannot serve a reliable reader; a reliable reader asking more than a
    // writer offers is reported on both sides.
    let wc = Arc::new(Calls::default());
    let be = publ
        .create_datawriter(
            &t,
            DataWriterQos::default().with_reliability(Reliability::best_effort()),
        )
        .unwrap();
    wait_until(5, "requested incompatible", || rc.get(INCOMPATIBLE) == 1);
    be.set_listener(Some(wc.clone()));
    let _r2 = sub
        .create_datareader(&t, DataReaderQos::default().with_reliability(reliable()))
        .unwrap();
    wait_until(5, "offered incompatible", || wc.get(INCOMPATIBLE) == 1);
    let ok_reader = sub.create_datareader(&t, DataReaderQos::default()).unwrap();
    wait_until(5, "publication matched", || wc.get(MATCHED) == 1);
    drop(ok_reader);
}

#[test]
#[ignore = "needs a network namespace (talks to a scripted UDP peer): scripts/netns-run (scripts/test runs it)"]
fn sample_lost_reaches_the_listener() {
    let _serial = serial();
    let ps = udp_participants(1);
    let t = ps[0]
        .create_topic::<Keyed>("LC_lost", TopicQos::default())
        .unwrap();
    let r = ps[0]
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, DataReaderQos::default().with_reliability(reliable()))
        .unwrap();
    let rc = Arc::new(Calls::default());
    r.set_listener(Some(rc.clone()));
    let (_s, l) = listener();
    let (_m, lm) = listener();
    let mut peer = FakePeer::new(20, l, lm);
    peer.announce();
    let wid = EntityId::new(9, 0x02);
    std::thread::sleep(Duration::from_millis(100));
    peer.announce_writer(&DiscoveredWriterData::new(
        peer.guid(wid),
        "LC_lost",
        Keyed::TYPE_NAME,
    ));
    wait_until(5, "match", || r.matched_publications().len() == 1);
    // The writer's first heartbeat says where the stream starts; a later one that starts
    // further on means samples were lost for good.
    peer.heartbeat_range(wid, 1, 2);
    std::thread::sleep(Duration::from_millis(50));
    peer.heartbeat_range(wid, 5, 6);
    wait_until(5, "on_sample_lost", || rc.get(LOST) >= 1);
    assert!(r.sample_lost_status().total_count >= 1);
}

per_transport!(reader_and_writer_listeners_hear_every_status);
