//! WRITER_DATA_LIFECYCLE: unregistering disposes by default, and deleting a writer unregisters
//! (and so, by default, disposes) every instance it registered or wrote.

mod support;
use std::time::Duration;
use support::{wait_until, Keyed, Keyless, Transport};
use tessera::qos::{
    DataReaderQos, DataWriterQos, History, Reliability, TopicQos, WriterDataLifecycle,
};
use tessera::{DataReader, DataWriter, DomainParticipant, InstanceState, TopicType};

fn writer<T: TopicType>(p: &DomainParticipant, topic: &str, autodispose: bool) -> DataWriter<T> {
    let t = p.create_topic::<T>(topic, TopicQos::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &t,
            DataWriterQos::default().with_writer_data_lifecycle(WriterDataLifecycle {
                autodispose_unregistered_instances: autodispose,
            }),
        )
        .unwrap()
}

/// The instance state the reader shows for key `id` (reading leaves the samples in place).
fn state(r: &DataReader<Keyed>, id: u32) -> Option<InstanceState> {
    let h = r.lookup_instance(&Keyed { id, seq: 0 })?;
    r.read(256)
        .unwrap()
        .into_iter()
        .find(|s| s.info.instance_handle == h)
        .map(|s| s.info.instance_state)
}

fn unregister_disposes_unless_told_not_to(t: Transport) {
    let ps = t.participants(1);
    for (autodispose, expected) in [
        (true, InstanceState::NotAliveDisposed),
        (false, InstanceState::NotAliveNoWriters),
    ] {
        let topic = format!("WL_unregister_{autodispose}");
        let r = support::reliable_reader(&ps[0], &topic);
        let w = writer::<Keyed>(&ps[0], &topic, autodispose);
        w.write(&Keyed { id: 1, seq: 1 }).unwrap();
        assert_eq!(state(&r, 1), Some(InstanceState::Alive));
        w.unregister_instance(&Keyed { id: 1, seq: 0 }).unwrap();
        assert_eq!(state(&r, 1), Some(expected), "autodispose {autodispose}");
    }
}

fn deleting_a_writer_unregisters_its_instances(t: Transport) {
    let ps = t.participants(1);
    for (autodispose, expected) in [
        (true, InstanceState::NotAliveDisposed),
        (false, InstanceState::NotAliveNoWriters),
    ] {
        let topic = format!("WL_delete_{autodispose}");
        let r = support::reliable_reader(&ps[0], &topic);
        let w = writer::<Keyed>(&ps[0], &topic, autodispose);
        for id in 0..3 {
            w.write(&Keyed { id, seq: id }).unwrap();
        }
        drop(w);
        for id in 0..3 {
            assert_eq!(
                state(&r, id),
                Some(expected),
                "instance {id}, autodispose {autodispose}"
            );
        }
    }
}

fn a_remote_reader_sees_the_instances_of_a_deleted_writer_disposed(t: Transport) {
    let ps = t.participants(2);
    let r = support::reliable_reader(&ps[1], "WL_remote");
    let w = writer::<Keyed>(&ps[0], "WL_remote", true);
    wait_until(10, "match", || w.matched_subscriptions().len() == 1);
    for id in 0..3 {
        w.write(&Keyed { id, seq: id }).unwrap();
    }
    w.wait_for_acknowledgments(Duration::from_secs(5)).unwrap();
    drop(w);
    wait_until(5, "instances disposed", || {
        (0..3).all(|id| state(&r, id) == Some(InstanceState::NotAliveDisposed))
    });
}

fn keyless_reader(p: &DomainParticipant, topic: &str) -> DataReader<Keyless> {
    let t = p
        .create_topic::<Keyless>(topic, TopicQos::default())
        .unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )
        .unwrap()
}

/// The state of a keyless topic's single instance, as the reader shows it.
fn keyless_state(r: &DataReader<Keyless>) -> Option<InstanceState> {
    r.read(256).unwrap().last().map(|s| s.info.instance_state)
}

/// Deleting a keyless writer unregisters the topic's single instance too, so that readers in
/// the writer's participant and in another one see it disposed (autodispose) or without
/// writers, as with a keyed topic.
fn deleting_a_keyless_writer_unregisters_its_instance(t: Transport) {
    let ps = t.participants(2);
    for (autodispose, expected) in [
        (true, InstanceState::NotAliveDisposed),
        (false, InstanceState::NotAliveNoWriters),
    ] {
        let topic = format!("WL_keyless_{autodispose}");
        let local = keyless_reader(&ps[0], &topic);
        let remote = keyless_reader(&ps[1], &topic);
        let w = writer::<Keyless>(&ps[0], &topic, autodispose);
        wait_until(10, "match", || w.matched_subscriptions().len() == 2);
        w.write(&Keyless {
            seq: 1,
            text: "one".into(),
        })
        .unwrap();
        w.wait_for_acknowledgments(Duration::from_secs(5)).unwrap();
        assert_eq!(keyless_state(&local), Some(InstanceState::Alive));
        wait_until(5, "the remote sample", || {
            keyless_state(&remote) == Some(InstanceState::Alive)
        });
        drop(w);
        assert_eq!(
            keyless_state(&local),
            Some(expected),
            "local, autodispose {autodispose}"
        );
        wait_until(5, "the remote instance state", || {
            keyless_state(&remote) == Some(expected)
        });
    }
}

per_transport!(
    deleting_a_keyless_writer_unregisters_its_instance,
    unregister_disposes_unless_told_not_to,
    deleting_a_writer_unregisters_its_instances,
    a_remote_reader_sees_the_instances_of_a_deleted_writer_disposed
);
