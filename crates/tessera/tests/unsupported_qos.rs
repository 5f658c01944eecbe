//! Durability kinds that are not built (TRANSIENT, PERSISTENT) are refused at creation with a
//! typed error rather than silently behaving as TRANSIENT_LOCAL.

mod support;
use support::{Keyed, Transport};
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, TopicQos};
use tessera::Error;

fn transient_and_persistent_endpoints_are_refused(t: Transport) {
    let ps = t.participants(1);
    let p = &ps[0];
    let t = p
        .create_topic::<Keyed>("Durable", TopicQos::default())
        .unwrap();
    let publ = p.create_publisher(Default::default()).unwrap();
    let sub = p.create_subscriber(Default::default()).unwrap();
    for d in [Durability::Transient, Durability::Persistent] {
        let w = publ.create_datawriter(&t, DataWriterQos::default().with_durability(d));
        assert!(matches!(w, Err(Error::Unsupported(_))), "{d:?}: {w:?}");
        let r = sub.create_datareader(&t, DataReaderQos::default().with_durability(d));
        assert!(matches!(r, Err(Error::Unsupported(_))), "{d:?}: {r:?}");
    }
    for d in [Durability::Volatile, Durability::TransientLocal] {
        publ.create_datawriter(&t, DataWriterQos::default().with_durability(d))
            .unwrap();
        sub.create_datareader(&t, DataReaderQos::default().with_durability(d))
            .unwrap();
    }
}

per_transport!(transient_and_persistent_endpoints_are_refused);
