//! DCPS behaviour across two participants over every transport: instance lifecycle (dispose,
//! unregister) with sample/instance states, wait sets with read and status conditions, and
//! listeners. The UDPv4 instances run inside a test network namespace (`scripts/test`).

mod support;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Transport;
use tessera::qos::{
    DataReaderQos, DataWriterQos, History, Reliability, TopicQos, WriterDataLifecycle,
};
use tessera::{
    DataReader, DataReaderListener, DomainParticipant, InstanceState, StateMasks, StatusMask,
    TopicType, WaitSet,
};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Track {
    #[key]
    id: u32,
    #[key]
    name: String,
    x: f64,
}

fn pair(
    t: Transport,
    topic: &str,
) -> (
    DomainParticipant,
    DomainParticipant,
    tessera::DataWriter<Track>,
    DataReader<Track>,
) {
    let mut ps = t.participants(2).into_iter();
    let (a, b) = (ps.next().unwrap(), ps.next().unwrap());
    let ta = a.create_topic::<Track>(topic, TopicQos::default()).unwrap();
    let tb = b.create_topic::<Track>(topic, TopicQos::default()).unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &ta,
            // Unregistering does not dispose, so the two instance states stay distinct.
            DataWriterQos::default()
                .with_history(History::KeepAll)
                .with_writer_data_lifecycle(WriterDataLifecycle {
                    autodispose_unregistered_instances: false,
                }),
        )
        .unwrap();
    let rqos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    let r = b
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&tb, rqos)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count == 0
        || r.subscription_matched_status().current_count == 0
    {
        assert!(Instant::now() < deadline, "no match");
        std::thread::sleep(Duration::from_millis(5));
    }
    (a, b, w, r)
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn dispose_and_unregister_reach_the_reader_as_instance_states(t: Transport) {
    let (_a, _b, w, r) = pair(t, "Lifecycle");
    let t1 = Track {
        id: 1,
        name: "alpha".into(),
        x: 1.0,
    };
    let t2 = Track {
        id: 2,
        name: "a string key longer than sixteen bytes".into(),
        x: 2.0,
    };
    w.write(&t1).unwrap();
    w.write(&t2).unwrap();
    let got = wait_for("two samples", || {
        let s = r.read(10).unwrap();
        (s.len() == 2).then_some(s)
    });
    assert!(got
        .iter()
        .all(|s| s.info.instance_state == InstanceState::Alive && s.info.valid_data));
    let h1 = r.lookup_instance(&t1).expect("instance 1 known");
    let h2 = r
        .lookup_instance(&t2)
        .expect("instance 2 known (MD5 key hash)");
    assert_ne!(h1, h2);

    w.dispose(&t1).unwrap();
    w.unregister_instance(&t2).unwrap();
    wait_for("instance states", || {
        let s1 = r.read_instance(h1, 10, StateMasks::ANY).ok()?;
        let s2 = r.read_instance(h2, 10, StateMasks::ANY).ok()?;
        let d = s1
            .iter()
            .any(|s| s.info.instance_state == InstanceState::NotAliveDisposed);
        let u = s2
            .iter()
            .any(|s| s.info.instance_state == InstanceState::NotAliveNoWriters);
        (d && u).then_some(())
    });
    // A new write brings the disposed instance back to life with a new generation.
    w.write(&Track {
        x: 3.0,
        ..t1.clone()
    })
    .unwrap();
    let s = wait_for("rebirth", || {
        let s = r.take_instance(h1, 10, StateMasks::ANY).ok()?;
        s.iter()
            .find(|s| s.info.valid_data && s.data.as_ref().is_some_and(|d| d.x == 3.0))
            .cloned()
    });
    assert_eq!(s.info.instance_state, InstanceState::Alive);
    assert_eq!(s.info.disposed_generation_count, 1);
}

fn waitset_wakes_on_read_and_status_conditions(t: Transport) {
    let (_a, _b, w, r) = pair(t, "Waiting");
    let mut ws = WaitSet::new();
    let data = r.create_readcondition(StateMasks::NOT_READ);
    let status = r.status_condition(StatusMask::DATA_AVAILABLE);
    ws.attach(&data);
    ws.attach(&status);
    assert!(matches!(
        ws.wait(Some(Duration::from_millis(50))),
        Err(tessera::Error::Timeout)
    ));
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        w.write(&Track {
            id: 9,
            name: "w".into(),
            x: 0.5,
        })
        .unwrap();
        w
    });
    let active = ws.wait(Some(Duration::from_secs(10))).unwrap();
    assert!(active.contains(&data) && active.contains(&status));
    let s = r.take(10).unwrap();
    assert_eq!(s.len(), 1);
    assert!(
        !data.trigger_value() && !status.trigger_value(),
        "take resets both"
    );
    drop(writer.join().unwrap());
}

struct Counting {
    data: AtomicUsize,
    matched: AtomicUsize,
}

impl DataReaderListener<Track> for Counting {
    fn on_data_available(&self, reader: &DataReader<Track>) {
        let n = reader.take(100).unwrap().len();
        self.data.fetch_add(n, Ordering::SeqCst);
    }
    fn on_subscription_matched(
        &self,
        _r: &DataReader<Track>,
        s: tessera::status::SubscriptionMatchedStatus,
    ) {
        self.matched
            .store(s.current_count as usize, Ordering::SeqCst);
    }
}

fn listener_takes_every_sample_on_the_receive_thread(t: Transport) {
    let (_a, _b, w, r) = pair(t, "Listening");
    let l = Arc::new(Counting {
        data: AtomicUsize::new(0),
        matched: AtomicUsize::new(usize::MAX),
    });
    r.set_listener(Some(l.clone()));
    for i in 0..500 {
        w.write(&Track {
            id: i % 5,
            name: "l".into(),
            x: i as f64,
        })
        .unwrap();
    }
    wait_for("500 samples via the listener", || {
        (l.data.load(Ordering::SeqCst) == 500).then_some(())
    });
    drop(w);
    wait_for("unmatch seen by the listener", || {
        (l.matched.load(Ordering::SeqCst) == 0).then_some(())
    });
}

per_transport!(
    dispose_and_unregister_reach_the_reader_as_instance_states,
    waitset_wakes_on_read_and_status_conditions,
    listener_takes_every_sample_on_the_receive_thread
);
