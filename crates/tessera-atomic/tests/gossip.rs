//! Members learn of each other by gossip, and a member that hears of a formed group does not
//! bootstrap its own (simulated network: no sockets).

use std::time::Duration;

use tessera_atomic::sim::SimNet;
use tessera_atomic::{
    ConsensusGroup, ConsensusThread, GroupSpec, MemberAddr, MemberId, OpenRaftGroup,
};

fn open(t: &ConsensusThread, net: &SimNet, id: MemberId) -> OpenRaftGroup {
    t.open(GroupSpec {
        group: "g".into(),
        me: id,
        initial: None,
        sim: Some(net.clone()),
        timing: Default::default(),
    })
    .unwrap()
}

#[test]
fn members_that_only_know_a_common_peer_learn_of_each_other_and_of_a_formed_group() {
    let net = SimNet::new(1);
    let t = ConsensusThread::start("g", None).unwrap();
    let [a, b, c] = [1u8, 2, 3].map(|i| MemberId([i; 12]));
    let (ga, gb, gc) = (open(&t, &net, a), open(&t, &net, b), open(&t, &net, c));
    // Discovery told a and b only of c (two writers and a reader); c knows both.
    ga.introduce(&[(c, MemberAddr::Sim(c))]);
    gb.introduce(&[(c, MemberAddr::Sim(c))]);
    gc.introduce(&[(a, MemberAddr::Sim(a)), (b, MemberAddr::Sim(b))]);
    let ids = |g: &OpenRaftGroup| g.known().into_iter().map(|k| k.0).collect::<Vec<_>>();
    assert_eq!(ids(&ga), vec![a, c]);
    ga.gossip(Duration::from_secs(1));
    assert_eq!(ids(&ga), vec![a, b, c], "a learned of b through c");
    assert!(!ga.group_formed_elsewhere());

    // a bootstraps with all three; a newcomer d that gossips with any of them learns the group
    // exists and must wait to be added.
    ga.bootstrap(ga.known(), Duration::from_secs(2)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while gb.voters().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "b never joined the group a formed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let d = MemberId([0; 12]);
    let gd = open(&t, &net, d);
    gd.introduce(&[(b, MemberAddr::Sim(b))]);
    gd.gossip(Duration::from_secs(1));
    assert!(gd.group_formed_elsewhere(), "b is in a formed group");
    assert!(ids(&gd).contains(&c), "and of c through b");
    drop((gb, gc));
}

#[test]
fn gossip_from_the_network_is_bounded() {
    let net = SimNet::new(2);
    let t = ConsensusThread::start("g", None).unwrap();
    let g = open(&t, &net, MemberId([1; 12]));
    let many: Vec<_> = (0..1000u32)
        .map(|i| {
            let mut id = [9u8; 12];
            id[..4].copy_from_slice(&i.to_be_bytes());
            (MemberId(id), MemberAddr::Sim(MemberId(id)))
        })
        .collect();
    g.introduce(&many);
    assert_eq!(g.known().len(), 256);
}
