//! Members that are killed and come back under a new id replace their old id among the voters
//! ([`ConsensusGroup::reconcile`]), so repeated kills and restarts never pile up dead voters.
//!
//! Before reconcile, a restarted member was added and its old id stayed: after the second
//! kill of the same member a group of three had two dead voters out of four and no majority,
//! for good (removing them needs the majority they took).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tessera_atomic::sim::SimNet;
use tessera_atomic::{
    ConsensusGroup, ConsensusThread, Entry, EntryKind, GroupSpec, MemberAddr, MemberId,
    OpenRaftGroup, Timing,
};

const GROUP: &str = "0/replace/topic";

fn member_id(n: u32) -> MemberId {
    let mut id = [0u8; 12];
    id[..4].copy_from_slice(&n.to_be_bytes());
    MemberId(id)
}

fn timing() -> Timing {
    Timing {
        dead_after: Duration::from_millis(800),
        ..Timing::default()
    }
}

struct Live {
    id: MemberId,
    group: Arc<OpenRaftGroup>,
    _thread: ConsensusThread,
}

fn open(net: &SimNet, id: MemberId, initial: Option<Vec<(MemberId, MemberAddr)>>) -> Live {
    let thread = ConsensusThread::start(&id.to_string(), None).expect("consensus thread");
    let group = thread
        .open(GroupSpec {
            group: GROUP.into(),
            me: id,
            initial,
            sim: Some(net.clone()),
            timing: timing(),
        })
        .expect("open member");
    Live {
        id,
        group: Arc::new(group),
        _thread: thread,
    }
}

/// What the runtime's maintenance thread does for each member: introduce the members
/// discovery shows (the live ones), gossip, and reconcile (nothing is reported gone: a kill
/// is only seen as silence).
fn maintain(live: &Mutex<Vec<Live>>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let groups: Vec<Arc<OpenRaftGroup>> = live
            .lock()
            .unwrap()
            .iter()
            .map(|l| l.group.clone())
            .collect();
        let addrs: Vec<(MemberId, MemberAddr)> = groups
            .iter()
            .map(|g| (g.id(), MemberAddr::Sim(g.id())))
            .collect();
        for g in &groups {
            g.introduce(&addrs);
            g.gossip(Duration::from_millis(200));
            let _ = g.reconcile(&BTreeSet::new(), Duration::from_secs(2));
        }
        thread::sleep(Duration::from_millis(100));
    }
}

fn write(g: &OpenRaftGroup, sn: i64) -> bool {
    let entry = Entry {
        writer: [7; 16],
        sn,
        key_hash: [0; 16],
        timestamp_ns: 0,
        payload: sn.to_le_bytes().to_vec().into(),
        kind: EntryKind::Write,
    };
    g.propose(entry, Duration::from_secs(3)).is_ok()
}

/// The voters as the leader sees them, once they equal `want` (or what they were at the end).
fn wait_voters(
    live: &Mutex<Vec<Live>>,
    want: &BTreeSet<MemberId>,
    within: Duration,
) -> Vec<MemberId> {
    let end = Instant::now() + within;
    loop {
        let voters: Vec<MemberId> = {
            let l = live.lock().unwrap();
            let leader = l.iter().find(|m| m.group.leader() == Some(m.id));
            leader.map(|m| m.group.voters()).unwrap_or_default()
        };
        if voters.iter().copied().collect::<BTreeSet<_>>() == *want || Instant::now() > end {
            return voters;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// `n` members bootstrapped together, and the maintenance thread over them.
type Started = (
    Vec<MemberId>,
    Arc<Mutex<Vec<Live>>>,
    Arc<AtomicBool>,
    thread::JoinHandle<()>,
);

fn start(net: &SimNet, n: u32) -> Started {
    let ids: Vec<MemberId> = (0..n).map(member_id).collect();
    let initial: Vec<_> = ids.iter().map(|id| (*id, MemberAddr::Sim(*id))).collect();
    let live = Arc::new(Mutex::new(
        ids.iter()
            .map(|id| open(net, *id, Some(initial.clone())))
            .collect::<Vec<_>>(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let m = {
        let (live, stop) = (live.clone(), stop.clone());
        thread::spawn(move || maintain(&live, &stop))
    };
    (ids, live, stop, m)
}

#[test]
fn a_member_killed_and_restarted_twice_leaves_three_live_voters_and_a_majority() {
    let net = SimNet::new(5);
    let (_, live, stop, m) = start(&net, 3);
    let writer = live.lock().unwrap()[0].group.clone();
    let mut sn = 0;
    let mut commit = |what: &str| {
        sn += 1;
        let end = Instant::now() + Duration::from_secs(10);
        while !write(&writer, sn) {
            assert!(Instant::now() < end, "no write committed {what}");
            sn += 1;
        }
    };
    commit("before the faults");

    for (round, new) in [(1, member_id(10)), (2, member_id(11))] {
        // kill -9 of member 2's current incarnation: gone without a word.
        let old = live.lock().unwrap().remove(2);
        let old_id = old.id;
        drop(old);
        commit(&format!("with member 2 down (round {round})"));
        // It comes back under a new id (an in-memory member lost its log and vote).
        let restarted = open(&net, new, None);
        live.lock().unwrap().push(restarted);
        let want: BTreeSet<MemberId> = live.lock().unwrap().iter().map(|l| l.id).collect();
        let voters = wait_voters(&live, &want, Duration::from_secs(20));
        assert_eq!(
            voters.iter().copied().collect::<BTreeSet<_>>(),
            want,
            "round {round}: voters {voters:?}, old id {old_id} should have been replaced by {new}"
        );
        commit(&format!("after restart {round}"));
    }
    // The last incarnation delivers what is committed (it caught up as a learner).
    let last = live.lock().unwrap()[2].group.clone();
    let end = Instant::now() + Duration::from_secs(5);
    let mut delivered = 0;
    while delivered == 0 && Instant::now() < end {
        delivered += last.deliveries().try_iter().count();
        thread::sleep(Duration::from_millis(20));
    }
    assert!(delivered > 0, "the restarted member delivered nothing");
    stop.store(true, Ordering::Relaxed);
    m.join().unwrap();
}

/// A voter cut off for longer than `dead_after` in a group of five stays a voter (no successor
/// came: it is not replaced), the others go on committing, and once healed it delivers what
/// they committed meanwhile.
#[test]
fn a_partitioned_voter_of_five_stays_and_catches_up() {
    let net = SimNet::new(9);
    let (ids, live, stop, m) = start(&net, 5);
    let groups: Vec<_> = live
        .lock()
        .unwrap()
        .iter()
        .map(|l| l.group.clone())
        .collect();
    let mut sn = 0;
    let mut commit = |g: &OpenRaftGroup| {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            sn += 1;
            if write(g, sn) {
                return sn;
            }
            assert!(Instant::now() < end, "no write committed");
        }
    };
    commit(&groups[0]);
    // As in the harness's warm-up: every voter acknowledges the leader for a while.
    thread::sleep(Duration::from_secs(1));
    // Cut off a follower (the harness's "partition m3 | rest").
    let leader = groups[0].leader().unwrap();
    let cut = groups.iter().find(|g| g.id() != leader).unwrap().clone();
    let rest: Vec<MemberId> = ids.iter().copied().filter(|id| *id != cut.id()).collect();
    net.partition(&[cut.id()], &rest);
    let other = groups.iter().find(|g| g.id() == leader).unwrap().clone();
    let mut last = 0;
    let until = Instant::now() + timing().dead_after * 3;
    while Instant::now() < until {
        last = commit(&other);
    }
    let all: BTreeSet<MemberId> = ids.iter().copied().collect();
    let v = wait_voters(&live, &all, Duration::ZERO);
    assert_eq!(
        v.iter().copied().collect::<BTreeSet<_>>(),
        all,
        "a cut-off voter was removed"
    );
    net.heal();
    // It catches up: its deliveries reach the last committed write.
    let end = Instant::now() + Duration::from_secs(10);
    let mut seen = 0;
    while seen != last {
        assert!(
            Instant::now() < end,
            "the healed member delivered up to {seen}, not {last}"
        );
        for d in cut.deliveries().try_iter() {
            if let tessera_atomic::Delivery::Entry { entry, .. } = d {
                seen = i64::from_le_bytes(entry.payload[..8].try_into().unwrap());
            }
        }
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    m.join().unwrap();
}

/// A removal planned at one leader can reach the member it removes once that member leads
/// (seed 3023 of the long fault schedules: a member paused, reported gone, then elected). The
/// leader refuses to remove itself; before, it dropped itself from the configuration and the
/// next change tripped an assertion in openraft that stopped its consensus thread.
#[test]
fn a_leader_refuses_a_request_to_remove_itself_and_the_group_goes_on_changing() {
    let net = SimNet::new(13);
    let (_, live, stop, m) = start(&net, 3);
    let writer = live.lock().unwrap()[0].group.clone();
    let end = Instant::now() + Duration::from_secs(10);
    let mut sn = 1;
    while !write(&writer, sn) {
        assert!(Instant::now() < end, "no write committed");
        sn += 1;
    }
    let leader = writer.leader().expect("a leader");
    // Asked through a follower: the request follows leadership to the member it names.
    let follower = live
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.id != leader)
        .unwrap()
        .group
        .clone();
    let refused = follower.remove_member(leader, Duration::from_secs(3));
    assert!(
        matches!(refused, Err(tessera_atomic::MembershipError::Refused(_))),
        "removing the leader through a follower: {refused:?}"
    );
    // The group still commits and still adds a newcomer (a change made by that same leader).
    sn += 1;
    assert!(write(&writer, sn), "no write committed after the refusal");
    live.lock().unwrap().push(open(&net, member_id(20), None));
    let want: BTreeSet<MemberId> = live.lock().unwrap().iter().map(|l| l.id).collect();
    let voters = wait_voters(&live, &want, Duration::from_secs(20));
    assert_eq!(voters.iter().copied().collect::<BTreeSet<_>>(), want);
    stop.store(true, Ordering::Relaxed);
    m.join().unwrap();
}
