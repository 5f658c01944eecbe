//! A remote endpoint that re-announces itself (SEDP update, SPDP locator change) is the same
//! match: counts do not grow, and traffic follows the new locators.

mod support;
use std::time::Duration;
use support::peer::{listener, receives, FakePeer};
use support::{serial, udp_participants, wait_until, Keyed};
use tessera::rtps::discovery::{DiscoveredReaderData, DiscoveredWriterData};
use tessera::rtps::types::EntityId;
use tessera::rtps::wire::Submessage;
use tessera::TopicType;

fn is_acknack(sm: &Submessage<'_>) -> bool {
    matches!(sm, Submessage::AckNack(_))
}

#[test]
#[ignore = "needs a network namespace (talks to a scripted UDP peer): scripts/netns-run (scripts/test runs it)"]
fn sedp_and_spdp_updates_are_not_new_matches() {
    let _serial = serial();
    let ps = udp_participants(1);
    let r = support::reliable_reader(&ps[0], "Reannounce");
    let (s1, l1) = listener();
    let (s2, l2) = listener();
    let (s3, l3) = listener();
    let (meta, lmeta) = listener();
    let mut peer = FakePeer::new(1, l1, lmeta);
    peer.announce();
    let wid = EntityId::new(7, 0x02);
    let mut wd = DiscoveredWriterData::new(peer.guid(wid), "Reannounce", Keyed::TYPE_NAME);
    wait_until(5, "our SEDP at the fake peer", || {
        receives(&meta, 1, || {}, |_| true)
    });
    peer.announce_writer(&wd);
    wait_until(5, "match", || r.matched_publications().len() == 1);
    assert!(
        receives(&s1, 3, || peer.heartbeat(wid), is_acknack),
        "no ACKNACK at the writer's participant's default locator"
    );

    // SEDP update: the writer now announces a locator of its own.
    wd.unicast_locators = vec![l2];
    peer.announce_writer(&wd);
    assert!(
        receives(&s2, 3, || peer.heartbeat(wid), is_acknack),
        "no ACKNACK at the writer's re-announced locator"
    );

    // SPDP update: the participant's default locator moves; the writer goes back to announcing
    // none of its own, so it is reached at the new default.
    wd.unicast_locators.clear();
    peer.spdp.default_unicast_locators = vec![l3];
    peer.announce();
    peer.announce_writer(&wd);
    assert!(
        receives(&s3, 3, || peer.heartbeat(wid), is_acknack),
        "no ACKNACK at the participant's new default locator"
    );

    let m = r.subscription_matched_status();
    assert_eq!((m.total_count, m.current_count), (1, 1), "{m:?}");
    let l = r.liveliness_changed_status();
    assert_eq!((l.alive_count, l.not_alive_count), (1, 0), "{l:?}");
    assert_eq!(r.matched_publications(), vec![peer.guid(wid)]);
}

#[test]
#[ignore = "needs a network namespace (talks to a scripted UDP peer): scripts/netns-run (scripts/test runs it)"]
fn spdp_metatraffic_change_moves_sedp_traffic() {
    let _serial = serial();
    let ps = udp_participants(1);
    let (_s1, l1) = listener();
    let (meta1, lmeta1) = listener();
    let (meta2, lmeta2) = listener();
    let mut peer = FakePeer::new(2, l1, lmeta1);
    peer.announce();
    wait_until(5, "our SEDP at the fake peer", || {
        receives(&meta1, 1, || {}, |_| true)
    });
    peer.spdp.metatraffic_unicast_locators = vec![lmeta2];
    peer.announce();
    std::thread::sleep(Duration::from_millis(100));
    // SEDP (heartbeats until the peer acknowledges, then data) follows the new metatraffic locator.
    let _r = support::reliable_reader(&ps[0], "MetaMove");
    assert!(
        receives(
            &meta2,
            3,
            || {},
            |sm| matches!(sm, Submessage::Heartbeat(_) | Submessage::Data(_))
        ),
        "SEDP still goes to the old metatraffic locator"
    );
}

#[test]
#[ignore = "needs a network namespace (talks to a scripted UDP peer): scripts/netns-run (scripts/test runs it)"]
fn a_re_announced_reader_is_not_a_new_match_of_a_writer() {
    let _serial = serial();
    let ps = udp_participants(1);
    let t = ps[0]
        .create_topic::<Keyed>("ReannounceReader", Default::default())
        .unwrap();
    let w = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, Default::default())
        .unwrap();
    let (_s1, l1) = listener();
    let (_s2, l2) = listener();
    let (_meta, lmeta) = listener();
    let mut peer = FakePeer::new(3, l1, lmeta);
    peer.announce();
    std::thread::sleep(Duration::from_millis(100));
    let mut rd = DiscoveredReaderData::new(
        peer.guid(EntityId::new(5, 0x07)),
        "ReannounceReader",
        Keyed::TYPE_NAME,
    );
    peer.announce_reader(&rd);
    wait_until(5, "match", || w.matched_subscriptions().len() == 1);
    rd.unicast_locators = vec![l2];
    peer.announce_reader(&rd);
    peer.spdp.default_unicast_locators = vec![l2];
    peer.announce();
    std::thread::sleep(Duration::from_millis(200));
    let m = w.publication_matched_status();
    assert_eq!((m.total_count, m.current_count), (1, 1), "{m:?}");
}
