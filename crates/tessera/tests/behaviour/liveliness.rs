//! A participant that goes away without saying so: its writers' liveliness is lost when its
//! lease runs out (LIVELINESS_CHANGED, SUBSCRIPTION_MATCHED) and their instances become
//! NOT_ALIVE_NO_WRITERS.
//!
//! The lease is not configurable (SPDP announces a fixed 10 s), so this takes about 10 s, and
//! it runs only over the in-process networks: they can cut a node's incoming traffic, which is
//! what an abrupt disappearance looks like to it. A UDP participant cannot vanish silently
//! inside one test process (dropping it announces its departure).

use crate::harness::*;
use crate::support::FaultConfig;
use tessera::qos::DataWriterQos;
use tessera::InstanceState;

fn silent_departure_expires_the_lease(t: Transport) {
    let d = t.domain(2);
    let ps = &d.participants;
    let w = writer::<Keyed>(
        &ps[0],
        "L_lease",
        DataWriterQos::default().with_reliability(reliable()),
    );
    let r = reader::<Keyed>(&ps[1], "L_lease", keep_all_reader());
    matched(&w, &r);
    w.write(&Keyed { id: 1, seq: 1 }).unwrap();
    assert_eq!(
        take_n(&r, 1, 10)[0].info.instance_state,
        InstanceState::Alive
    );
    let alive = r.liveliness_changed_status();
    assert_eq!(alive.alive_count, 1);

    // Participant 1 (node 1) hears nothing from now on.
    let cut = FaultConfig {
        loss_percent: 100.0,
        ..FaultConfig::default()
    };
    assert!(d.net.as_ref().unwrap().set_node_faults(1, cut));
    let started = std::time::Instant::now();
    wait_until(20, "the lease to expire", || {
        r.subscription_matched_status().current_count == 0
    });
    let waited = started.elapsed();
    assert!(
        waited.as_secs() >= 5,
        "lost after {waited:?}: before the 10 s lease ran out"
    );
    let lost = r.liveliness_changed_status();
    assert_eq!((lost.alive_count, lost.not_alive_count), (0, 0));
    assert_eq!(lost.alive_count_change, -1);
    assert_eq!(lost.last_publication_handle, Some(w.guid()));
    assert_newest_state(&r, InstanceState::NotAliveNoWriters);
}

mod inproc {
    #[test]
    fn silent_departure_expires_the_lease() {
        super::silent_departure_expires_the_lease(crate::support::Transport::InProc)
    }
}

mod inproc_lossy {
    #[test]
    fn silent_departure_expires_the_lease() {
        super::silent_departure_expires_the_lease(crate::support::Transport::InProcLossy)
    }
}
