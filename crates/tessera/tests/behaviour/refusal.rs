//! A reliable KEEP_ALL reader at its resource limits refuses samples, and its probes back off
//! while it stays full; whatever makes room again — every kind of `take`, typed or untyped,
//! and an autopurge — must ask the writer for the refused samples at once, not at the next
//! probe. The reader's `resumed` protocol counter says which of the two happened, so the tests
//! do not depend on timing: a refill by the backed-off probe alone leaves it unchanged.

use crate::harness::*;
use crate::per_transport;
use std::time::Duration;
use tessera::qos::{ReaderDataLifecycle, ResourceLimits};
use tessera::{DataReader, StateMasks};

const LIMIT: u32 = 5;

/// Five times: the reader fills up and refuses the next sample, then `take` (which must take
/// `LIMIT` samples) makes room, which must ask the writer again at once (`resumed` grows), and
/// the next batch arrives. A round may find nothing to ask again: a probe's resend can be
/// arriving while the take makes room, and its samples then go in before the take's resume
/// looks (the writer no longer waits to be asked); the test allows that in one round of five,
/// so a take that never asks still fails it.
fn asks_again_after(t: Transport, topic: &str, mut take: impl FnMut(&DataReader<Keyed>) -> usize) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(&ps[0], topic, keep_all_writer());
    let r = reader::<Keyed>(
        &ps[1],
        topic,
        keep_all_reader().with_resource_limits(ResourceLimits {
            max_samples: Some(LIMIT),
            max_instances: None,
            max_samples_per_instance: None,
        }),
    );
    matched(&w, &r);
    for seq in 0..6 * LIMIT {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    let full = || r.read(usize::MAX).unwrap().len() == LIMIT as usize;
    // Refusals counted up to the previous take: each round waits for one more (relative, so a
    // sample refused again on a resend in an earlier round cannot let a round start before
    // its own refusal).
    let mut refused_before = 0;
    let mut not_asked = Vec::new();
    for round in 0..5u64 {
        wait_until(10, "the reader to fill up", full);
        wait_until(10, "a refused sample", || {
            r.protocol_counters().refused > refused_before
        });
        let resumed = r.protocol_counters().resumed;
        refused_before = r.protocol_counters().refused;
        assert_eq!(take(&r), LIMIT as usize, "round {round}");
        if r.protocol_counters().resumed == resumed {
            not_asked.push(round);
        }
        wait_until(10, "the next batch", full);
    }
    assert!(
        not_asked.len() <= 1,
        "rounds {not_asked:?}: the take made room but did not ask the writer again"
    );
}

fn take_asks_again_at_once(t: Transport) {
    asks_again_after(t, "Ref_take", |r| r.take(usize::MAX).unwrap().len());
}

fn take_into_asks_again_at_once(t: Transport) {
    let mut out = Vec::with_capacity(2 * LIMIT as usize);
    asks_again_after(t, "Ref_take_into", |r| {
        out.clear();
        r.take_into(&mut out, usize::MAX)
    });
}

fn take_instance_asks_again_at_once(t: Transport) {
    asks_again_after(t, "Ref_take_instance", |r| {
        let h = r.lookup_instance(&Keyed { id: 1, seq: 0 }).unwrap();
        r.take_instance(h, usize::MAX, StateMasks::ANY)
            .unwrap()
            .len()
    });
}

fn take_next_instance_asks_again_at_once(t: Transport) {
    asks_again_after(t, "Ref_take_next", |r| {
        r.take_next_instance(None, usize::MAX, StateMasks::ANY)
            .unwrap()
            .len()
    });
}

fn take_serialized_asks_again_at_once(t: Transport) {
    asks_again_after(t, "Ref_take_ser", |r| {
        r.untyped()
            .take_serialized(usize::MAX, StateMasks::ANY)
            .unwrap()
            .len()
    });
}

fn take_serialized_into_asks_again_at_once(t: Transport) {
    let mut out = Vec::with_capacity(2 * LIMIT as usize);
    asks_again_after(t, "Ref_take_ser_into", |r| {
        out.clear();
        r.untyped().take_serialized_into(&mut out, usize::MAX)
    });
}

/// A reader whose one instance slot holds a disposed instance refuses a new instance until
/// the autopurge frees the slot; then it asks for the refused sample at once. `arrived` polls
/// for the new instance: with `read` (the purge runs in whichever comes first, that call or the
/// event thread) or with a read condition (which purges nothing: the event thread must).
fn asks_again_after_autopurge(
    t: Transport,
    topic: &str,
    arrived: impl Fn(&DataReader<Keyed>, u32) -> bool,
) {
    const DELAY: Duration = Duration::from_millis(1500);
    let ps = t.participants(2);
    let w = writer::<Keyed>(&ps[0], topic, keep_all_writer());
    let r = reader::<Keyed>(
        &ps[1],
        topic,
        keep_all_reader()
            .with_resource_limits(ResourceLimits {
                max_samples: None,
                max_instances: Some(1),
                max_samples_per_instance: None,
            })
            .with_reader_data_lifecycle(ReaderDataLifecycle {
                autopurge_disposed_samples_delay: DELAY,
                ..Default::default()
            }),
    );
    matched(&w, &r);
    w.write(&Keyed { id: 0, seq: 0 }).unwrap();
    wait_until(10, "the first instance", || arrived(&r, 0));
    for id in 0..3u32 {
        let resumed = r.protocol_counters().resumed;
        w.dispose(&Keyed { id, seq: 0 }).unwrap();
        w.write(&Keyed { id: id + 1, seq: 0 }).unwrap();
        // The new instance is refused while the disposed one waits DELAY for its purge.
        wait_until(10, "the new instance to be refused", || {
            r.protocol_counters().refused > u64::from(id)
        });
        wait_until(10, "the next instance", || arrived(&r, id + 1));
        assert!(
            r.protocol_counters().resumed > resumed,
            "instance {}: the purge made room but did not ask the writer again",
            id + 1
        );
    }
    assert!(r.sample_rejected_status().total_count >= 3);
}

fn autopurge_in_read_asks_again_at_once(t: Transport) {
    asks_again_after_autopurge(t, "Ref_purge_read", |r, id| {
        r.read(usize::MAX)
            .unwrap()
            .iter()
            .any(|s| s.data.as_ref().is_some_and(|d| d.id == id))
    });
}

fn autopurge_on_the_event_thread_asks_again_at_once(t: Transport) {
    asks_again_after_autopurge(t, "Ref_purge_event", |r, id| {
        // The condition looks at the history without purging; `read` (which may purge) runs
        // only once the sample is there, to mark it read and check what it is.
        if !r.create_readcondition(StateMasks::NOT_READ).trigger_value() {
            return false;
        }
        let got = r.read_with(usize::MAX, StateMasks::NOT_READ).unwrap();
        got.iter()
            .any(|s| s.data.as_ref().is_some_and(|d| d.id == id))
    });
}

per_transport!(
    take_asks_again_at_once,
    take_into_asks_again_at_once,
    take_instance_asks_again_at_once,
    take_next_instance_asks_again_at_once,
    take_serialized_asks_again_at_once,
    take_serialized_into_asks_again_at_once,
    autopurge_in_read_asks_again_at_once,
    autopurge_on_the_event_thread_asks_again_at_once,
);
