//! TRANSIENT and PERSISTENT endpoints without a durability service behave as TRANSIENT_LOCAL:
//! a late reader gets the live writer's history (and `wait_for_historical_data` says when).
//! With a service, see the `tessera-durability` crate's tests.

mod support;
use std::time::Duration;
use support::{Keyed, Transport};
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History, Reliability, TopicQos};

fn durable_endpoints_serve_late_joiners_without_a_service(t: Transport) {
    let ps = t.participants(2);
    for (i, d) in [Durability::Transient, Durability::Persistent]
        .into_iter()
        .enumerate()
    {
        let name = format!("Durable{i}");
        let tw = ps[0]
            .create_topic::<Keyed>(&name, TopicQos::default())
            .unwrap();
        let w = ps[0]
            .create_publisher(Default::default())
            .unwrap()
            .create_datawriter(
                &tw,
                DataWriterQos::default()
                    .with_durability(d)
                    .with_history(History::KeepLast(5)),
            )
            .unwrap();
        for seq in 0..8 {
            w.write(&Keyed { id: 1, seq }).unwrap();
        }
        let tr = ps[1]
            .create_topic::<Keyed>(&name, TopicQos::default())
            .unwrap();
        let r = ps[1]
            .create_subscriber(Default::default())
            .unwrap()
            .create_datareader(
                &tr,
                DataReaderQos::default()
                    .with_durability(d)
                    .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                    .with_history(History::KeepAll),
            )
            .unwrap();
        support::wait_until(10, "the writer matched", || {
            !r.matched_publications().is_empty()
        });
        r.wait_for_historical_data(Duration::from_secs(10))
            .expect("historical data");
        let got: Vec<u32> = r
            .take(100)
            .unwrap()
            .iter()
            .filter_map(|s| s.data.as_ref().map(|k| k.seq))
            .collect();
        assert_eq!(got, vec![3, 4, 5, 6, 7], "{d:?}");
        assert_eq!(r.duplicates_dropped(), 0);
    }
}

per_transport!(durable_endpoints_serve_late_joiners_without_a_service);
