//! Instance states (dispose, unregister, writer deleted), generation counts, view states, and
//! register/lookup, as a remote reader sees them.

use crate::harness::*;
use crate::per_transport;
use std::time::Duration;
use tessera::qos::WriterDataLifecycle;
use tessera::{DataReader, DataWriter, DomainParticipant, InstanceState, SampleInfo, ViewState};

fn pair(ps: &[DomainParticipant], topic: &str) -> (DataWriter<Keyed>, DataReader<Keyed>) {
    let w = writer::<Keyed>(
        &ps[0],
        topic,
        keep_all_writer()
            // Unregistering does not dispose, so the two NOT_ALIVE states stay distinct.
            .with_writer_data_lifecycle(WriterDataLifecycle {
                autodispose_unregistered_instances: false,
            }),
    );
    let r = reader::<Keyed>(&ps[1], topic, keep_all_reader());
    matched(&w, &r);
    (w, r)
}

/// The newest sample info of instance `id` (reading leaves the samples in the cache).
fn newest(r: &DataReader<Keyed>, id: u32) -> Option<SampleInfo> {
    let h = r.lookup_instance(&Keyed { id, seq: 0 })?;
    r.read(usize::MAX)
        .unwrap()
        .into_iter()
        .rfind(|s| s.info.instance_handle == h)
        .map(|s| s.info)
}

fn state(r: &DataReader<Keyed>, id: u32) -> Option<InstanceState> {
    newest(r, id).map(|i| i.instance_state)
}

fn dispose_unregister_and_writer_deletion(t: Transport) {
    let ps = t.participants(2);
    let (w, r) = pair(&ps, "I_states");
    for id in 1..=3 {
        w.write(&Keyed { id, seq: 0 }).unwrap();
    }
    w.dispose(&Keyed { id: 1, seq: 0 }).unwrap();
    w.unregister_instance(&Keyed { id: 2, seq: 0 }).unwrap();
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    assert_eq!(state(&r, 1), Some(InstanceState::NotAliveDisposed));
    assert_eq!(state(&r, 2), Some(InstanceState::NotAliveNoWriters));
    assert_eq!(state(&r, 3), Some(InstanceState::Alive));
    drop(w);
    wait_until(
        10,
        "the deleted writer's instance to lose its writers",
        || state(&r, 3) == Some(InstanceState::NotAliveNoWriters),
    );
    assert_eq!(state(&r, 1), Some(InstanceState::NotAliveDisposed));
    wait_until(10, "the deleted writer to unmatch", || {
        r.subscription_matched_status().current_count == 0
    });
}

fn generation_counts_and_view_states(t: Transport) {
    let ps = t.participants(2);
    let (w, r) = pair(&ps, "I_generations");
    let k = Keyed { id: 7, seq: 0 };
    w.write(&Keyed { id: 7, seq: 1 }).unwrap();
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    let first = newest(&r, 7).unwrap();
    assert_eq!(first.view_state, ViewState::New);
    assert_eq!(
        (
            first.disposed_generation_count,
            first.no_writers_generation_count
        ),
        (0, 0)
    );
    // Once accessed, the instance is no longer new.
    w.write(&Keyed { id: 7, seq: 2 }).unwrap();
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    assert_eq!(newest(&r, 7).unwrap().view_state, ViewState::NotNew);
    // Disposed, then written again: a new generation, new again.
    w.dispose(&k).unwrap();
    w.write(&Keyed { id: 7, seq: 3 }).unwrap();
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    let reborn = newest(&r, 7).unwrap();
    assert_eq!(reborn.instance_state, InstanceState::Alive);
    assert_eq!(reborn.view_state, ViewState::New);
    assert_eq!(
        (
            reborn.disposed_generation_count,
            reborn.no_writers_generation_count
        ),
        (1, 0)
    );
    // Unregistered (no writers), then written again.
    w.unregister_instance(&k).unwrap();
    w.write(&Keyed { id: 7, seq: 4 }).unwrap();
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    let again = newest(&r, 7).unwrap();
    assert_eq!(again.instance_state, InstanceState::Alive);
    assert_eq!(
        (
            again.disposed_generation_count,
            again.no_writers_generation_count
        ),
        (1, 1)
    );
    let data: Vec<u32> = r
        .take(usize::MAX)
        .unwrap()
        .into_iter()
        .filter_map(|s| s.data.map(|d| d.seq))
        .collect();
    assert_eq!(data, [1, 2, 3, 4]);
}

fn register_and_lookup(t: Transport) {
    let ps = t.participants(2);
    let (w, r) = pair(&ps, "I_lookup");
    let k = Keyed { id: 42, seq: 0 };
    let h = w.register_instance(&k).unwrap();
    assert_eq!(
        w.register_instance(&k).unwrap(),
        h,
        "registering twice: one instance"
    );
    assert_ne!(w.register_instance(&Keyed { id: 43, seq: 0 }).unwrap(), h);
    assert_eq!(
        r.lookup_instance(&k),
        None,
        "the reader has no sample of it yet"
    );
    w.write(&Keyed { id: 42, seq: 5 }).unwrap();
    let s = take_n(&r, 1, 10).remove(0);
    assert_eq!(s.data.unwrap().seq, 5);
    assert_eq!(r.lookup_instance(&k), Some(s.info.instance_handle));
    assert_eq!(r.lookup_instance(&Keyed { id: 44, seq: 0 }), None);
}

per_transport!(all:
    dispose_unregister_and_writer_deletion,
    generation_counts_and_view_states,
    register_and_lookup,
);
