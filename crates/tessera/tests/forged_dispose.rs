//! SPDP and SEDP disposes are accepted only for entities of the participant that sent them:
//! another host cannot unmatch someone else's participant or endpoint.

mod support;
use std::time::Duration;
use support::peer::{listener, FakePeer};
use support::{serial, udp_participants, wait_until, Keyed};
use tessera::qos::{DataReaderQos, TopicQos};
use tessera::rtps::discovery::DiscoveredWriterData;
use tessera::rtps::types::EntityId;
use tessera::TopicType;

#[test]
#[ignore = "needs a network namespace (talks to a scripted UDP peer): scripts/netns-run (scripts/test runs it)"]
fn disposes_for_other_participants_entities_are_ignored() {
    let _serial = serial();
    let ps = udp_participants(1);
    let t = ps[0]
        .create_topic::<Keyed>("Forged", TopicQos::default())
        .unwrap();
    let r = ps[0]
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, DataReaderQos::default())
        .unwrap();
    let (_s, l) = listener();
    let (_m, lm) = listener();
    let mut victim = FakePeer::new(10, l, lm);
    let mut forger = FakePeer::new(11, l, lm);
    victim.announce();
    forger.announce();
    wait_until(5, "both peers discovered", || {
        ps[0].discovered_participants().len() == 2
    });
    let wid = EntityId::new(3, 0x02);
    let wd = DiscoveredWriterData::new(victim.guid(wid), "Forged", Keyed::TYPE_NAME);
    victim.announce_writer(&wd);
    wait_until(5, "match", || r.matched_publications().len() == 1);

    forger.dispose_writer(victim.guid(wid));
    forger.dispose_participant(victim.guid(EntityId::PARTICIPANT));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(r.matched_publications(), vec![victim.guid(wid)]);
    assert_eq!(ps[0].discovered_participants().len(), 2);

    // The owners' own disposes still work.
    victim.dispose_writer(victim.guid(wid));
    wait_until(5, "unmatch by the owner", || {
        r.matched_publications().is_empty()
    });
    forger.dispose_participant(forger.guid(EntityId::PARTICIPANT));
    wait_until(5, "the forger's own dispose", || {
        ps[0].discovered_participants().len() == 1
    });
}
