//! WRITER_DATA_LIFECYCLE: unregistering disposes by default, and deleting a writer unregisters
//! (and so, by default, disposes) every instance it registered or wrote.

mod support;
use std::time::Duration;
use support::{wait_until, Keyed, Transport};
use tessera::qos::{DataWriterQos, TopicQos, WriterDataLifecycle};
use tessera::{DataReader, DataWriter, DomainParticipant, InstanceState};

fn writer(p: &DomainParticipant, topic: &str, autodispose: bool) -> DataWriter<Keyed> {
    let t = p.create_topic::<Keyed>(topic, TopicQos::default()).unwrap();
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
        let w = writer(&ps[0], &topic, autodispose);
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
        let w = writer(&ps[0], &topic, autodispose);
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
    let w = writer(&ps[0], "WL_remote", true);
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

per_transport!(
    unregister_disposes_unless_told_not_to,
    deleting_a_writer_unregisters_its_instances,
    a_remote_reader_sees_the_instances_of_a_deleted_writer_disposed
);
