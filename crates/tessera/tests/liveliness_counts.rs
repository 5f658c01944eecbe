//! LIVELINESS_CHANGED counts writers as they are now: `not_alive_count` is the number of matched
//! writers that are currently not alive, so it does not grow with every writer ever lost.

mod support;
use std::time::Duration;
use support::peer::{listener, FakePeer};
use support::{reliable_reader, serial, udp_participants, wait_until, Keyed};
use tessera::rtps::discovery::DiscoveredWriterData;
use tessera::rtps::types::EntityId;
use tessera::TopicType;

#[test]
#[ignore = "needs a network namespace (talks to a scripted UDP peer): scripts/netns-run (scripts/test runs it)"]
fn writers_lost_with_their_participant_do_not_stay_counted() {
    let _serial = serial();
    let ps = udp_participants(1);
    let r = reliable_reader(&ps[0], "Liveliness");
    let (_s, l) = listener();
    let (_m, lm) = listener();
    let wid = EntityId::new(4, 0x02);
    for round in 1..=2 {
        // The same participant again, restarted (its sequence numbers start over).
        let mut peer = FakePeer::new(30, l, lm);
        peer.spdp.lease_duration = Duration::from_millis(500);
        let wd = DiscoveredWriterData::new(peer.guid(wid), "Liveliness", Keyed::TYPE_NAME);
        peer.announce();
        std::thread::sleep(Duration::from_millis(50));
        peer.announce_writer(&wd);
        wait_until(5, "match", || r.matched_publications().len() == 1);
        let s = r.liveliness_changed_status();
        assert_eq!(
            (s.alive_count, s.not_alive_count),
            (1, 0),
            "round {round}: {s:?}"
        );
        // The peer falls silent: its lease expires and its writer goes with it.
        wait_until(5, "lease expiry", || r.matched_publications().is_empty());
        let s = r.liveliness_changed_status();
        assert_eq!(
            (s.alive_count, s.not_alive_count),
            (0, 0),
            "round {round}: {s:?}"
        );
        assert_eq!(s.not_alive_count_change, 0, "round {round}: {s:?}");
    }
}
