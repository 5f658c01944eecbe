//! Per-participant bounds (`ParticipantConfig::limits`): the participant-events channel and the
//! default instance cap of a reader, over the in-process transport and over UDPv4 (in a
//! network namespace).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use tessera::qos::{DataReaderQos, DataWriterQos, History, ReaderDataLifecycle, TopicQos};
use tessera::{DomainParticipant, ParticipantConfig, ResourceBounds, TopicType};

mod support;
use support::{Domain, Transport};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Keyed {
    #[key]
    id: u32,
    value: u32,
}

fn participant(d: &Domain, limits: ResourceBounds) -> DomainParticipant {
    let config = ParticipantConfig {
        limits,
        ..d.config()
    };
    DomainParticipant::with_qos(0, Default::default(), config).unwrap()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn events_channel_that_is_never_drained_stays_bounded(t: Transport) {
    let d = t.domain(0);
    let a = participant(
        &d,
        ResourceBounds {
            participant_events: 2,
            ..Default::default()
        },
    );
    let never_read = a.participant_events();
    let others: Vec<_> = (0..5)
        .map(|_| participant(&d, ResourceBounds::default()))
        .collect();
    wait_for("discovery", || a.discovered_participants().len() >= 5);
    assert_eq!(never_read.len(), 2, "bounded at its capacity");
    let dropped = a.counters().participant_events_dropped;
    assert!(dropped >= 3, "{dropped}");
    // A new channel starts with the known participants, as far as they fit.
    let late = a.participant_events();
    assert_eq!(late.len(), 2);
    assert!(a.counters().participant_events_dropped >= dropped + 3);
    // Draining makes room again: the peers leaving are announced to a reader that reads.
    late.try_iter().for_each(drop);
    drop(others);
    let mut lost = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while lost == 0 && Instant::now() < deadline {
        if let Ok(tessera::ParticipantEvent::Lost(_)) =
            late.recv_timeout(Duration::from_millis(100))
        {
            lost += 1;
        }
    }
    assert!(lost > 0, "a Lost event reached the drained channel");
    assert_eq!(never_read.len(), 2);
}

fn reader_without_instance_limit_gets_the_participant_cap(t: Transport) {
    let d = t.domain(0);
    const CAP: usize = 8;
    let a = participant(&d, ResourceBounds::default());
    let b = participant(
        &d,
        ResourceBounds {
            max_instances_per_reader: CAP,
            ..Default::default()
        },
    );
    let ta = a.create_topic::<Keyed>("Cap", TopicQos::default()).unwrap();
    let tb = b.create_topic::<Keyed>("Cap", TopicQos::default()).unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&ta, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap();
    // Best effort (the DDS default for readers): a rejected sample is not repaired.
    let r = b
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&tb, DataReaderQos::default())
        .unwrap();
    // Both sides: a best-effort reader drops what arrives before it knows the writer.
    wait_for("match", || {
        w.publication_matched_status().current_count > 0
            && r.subscription_matched_status().current_count > 0
    });
    for id in 0..100 {
        w.write(&Keyed { id, value: 1 }).unwrap();
    }
    wait_for("samples rejected", || b.counters().samples_rejected >= 1);
    std::thread::sleep(Duration::from_millis(200));
    let got = r.read(usize::MAX).unwrap();
    let instances: HashSet<_> = got.iter().map(|s| s.info.instance_handle).collect();
    assert_eq!(instances.len(), CAP);
    assert_eq!(
        b.counters().samples_rejected as usize,
        100 - CAP,
        "every refused sample counted"
    );
    assert_eq!(r.sample_rejected_status().total_count as usize, 100 - CAP);

    // Unregistering (which disposes, by default) and taking frees the instances: new keys are
    // accepted again.
    for s in &got {
        if let Some(d) = &s.data {
            w.unregister_instance(d).unwrap();
        }
    }
    wait_for("disposes", || {
        r.read(usize::MAX)
            .unwrap()
            .iter()
            .filter(|s| !s.info.instance_state.is_alive())
            .map(|s| s.info.instance_handle)
            .collect::<HashSet<_>>()
            .len()
            == CAP
    });
    r.take(usize::MAX).unwrap();
    for id in 1000..1000 + CAP as u32 {
        w.write(&Keyed { id, value: 2 }).unwrap();
    }
    wait_for("new keys", || r.read(usize::MAX).unwrap().len() == CAP);
    assert_eq!(b.counters().samples_rejected as usize, 100 - CAP);
}

fn autopurge_frees_disposed_instances_the_application_never_takes(t: Transport) {
    let d = t.domain(0);
    let a = participant(&d, ResourceBounds::default());
    let b = participant(&d, ResourceBounds::default());
    let ta = a
        .create_topic::<Keyed>("Purge", TopicQos::default())
        .unwrap();
    let tb = b
        .create_topic::<Keyed>("Purge", TopicQos::default())
        .unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&ta, DataWriterQos::default())
        .unwrap();
    let lifecycle = ReaderDataLifecycle {
        autopurge_disposed_samples_delay: Duration::from_millis(50),
        ..Default::default()
    };
    let r = b
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &tb,
            DataReaderQos::default().with_reader_data_lifecycle(lifecycle),
        )
        .unwrap();
    wait_for("match", || {
        w.publication_matched_status().current_count > 0
            && r.subscription_matched_status().current_count > 0
    });
    for id in 0..20 {
        let s = Keyed { id, value: 0 };
        w.write(&s).unwrap();
        w.dispose(&s).unwrap();
    }
    w.write(&Keyed { id: 99, value: 0 }).unwrap();
    wait_for("the alive sample", || {
        r.read(usize::MAX)
            .unwrap()
            .iter()
            .any(|s| s.data.as_ref().is_some_and(|d| d.id == 99))
    });
    std::thread::sleep(Duration::from_millis(100));
    // Only the alive instance is left; the disposed ones went with their unread samples.
    let left = r.read(usize::MAX).unwrap();
    let ids: Vec<_> = left
        .iter()
        .filter_map(|s| s.data.as_ref().map(|d| d.id))
        .collect();
    assert_eq!(ids, [99]);
}

per_transport!(
    events_channel_that_is_never_drained_stays_bounded,
    reader_without_instance_limit_gets_the_participant_cap,
    autopurge_frees_disposed_instances_the_application_never_takes
);
