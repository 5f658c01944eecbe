//! Three members over TCP on loopback: writes through two of them, the same sequence at all
//! three; a member dropped, the other two keep committing. Opens sockets: run it in a namespace,
//! `scripts/netns-run cargo test -p tessera-atomic --test tcp -- --include-ignored`.

use std::time::Duration;

use tessera_atomic::check::{check, History, MemberLog, Outcome, Write};
use tessera_atomic::{
    ConsensusGroup, ConsensusThread, Delivery, Entry, EntryKind, GroupSpec, MemberAddr, MemberId,
};

fn entry(writer: u8, sn: i64) -> Entry {
    let mut w = [0u8; 16];
    w[0] = writer;
    Entry {
        writer: w,
        sn,
        key_hash: [0; 16],
        timestamp_ns: 0,
        payload: (((writer as u64) << 32) | sn as u64)
            .to_le_bytes()
            .to_vec()
            .into(),
        kind: EntryKind::Write,
    }
}

fn drain(g: &dyn ConsensusGroup, log: &mut MemberLog, want: usize) {
    while log.deliveries.len() < want {
        match g.deliveries().recv_timeout(Duration::from_secs(5)) {
            Ok(Delivery::Entry { index, entry }) => log.deliveries.push((
                index,
                u64::from_le_bytes(entry.payload[..8].try_into().unwrap()),
            )),
            Ok(Delivery::Skipped { index }) => log.snapshots.push((log.deliveries.len(), index)),
            Err(_) => break,
        }
    }
}

#[test]
#[ignore = "opens TCP sockets: run inside scripts/netns-run"]
fn three_members_over_tcp_agree_and_survive_a_crash() {
    let threads: Vec<_> = (0..3)
        .map(|i| {
            ConsensusThread::start(&format!("m{i}"), Some("127.0.0.1:0".parse().unwrap())).unwrap()
        })
        .collect();
    let ids: Vec<MemberId> = (0..3u8).map(|i| MemberId([i + 1; 12])).collect();
    let initial: Vec<_> = ids
        .iter()
        .zip(&threads)
        .map(|(id, t)| (*id, MemberAddr::Tcp(t.tcp_addr().unwrap())))
        .collect();
    let mut groups: Vec<_> = threads
        .iter()
        .zip(&ids)
        .map(|(t, id)| {
            t.open(GroupSpec {
                group: "0//t".into(),
                me: *id,
                initial: Some(initial.clone()),
                sim: None,
                timing: Default::default(),
            })
            .unwrap()
        })
        .collect();
    let mut writes = Vec::new();
    for sn in 1..=20 {
        for w in [0u8, 1] {
            let i = groups[w as usize]
                .propose(entry(w, sn), Duration::from_secs(5))
                .expect("commit");
            writes.push(Write {
                writer: w as u64,
                value: ((w as u64) << 32) | sn as u64,
                outcome: Outcome::Ok(i),
            });
        }
    }
    // A retried (writer, sn) is not delivered again and answers the original index.
    let again = groups[1]
        .propose(entry(0, 20), Duration::from_secs(5))
        .unwrap();
    assert_eq!(Outcome::Ok(again), writes[38].outcome);

    let mut logs: Vec<MemberLog> = ids
        .iter()
        .map(|id| MemberLog {
            member: id.to_string(),
            stayed_up: true,
            ..Default::default()
        })
        .collect();
    for (g, log) in groups.iter().zip(&mut logs) {
        drain(g, log, 40);
    }
    // Member 2 goes away; 0 and 1 keep committing.
    let gone = groups.pop().unwrap();
    drop(gone);
    logs[2].stayed_up = false;
    for sn in 21..=25 {
        for w in [0u8, 1] {
            let i = groups[w as usize]
                .propose(entry(w, sn), Duration::from_secs(10))
                .expect("commit with 2 of 3");
            writes.push(Write {
                writer: w as u64,
                value: ((w as u64) << 32) | sn as u64,
                outcome: Outcome::Ok(i),
            });
        }
    }
    for (g, log) in groups.iter().zip(&mut logs) {
        drain(g, log, 50);
    }
    let h = History {
        writes,
        members: logs,
    };
    assert_eq!(check(&h), vec![]);
    assert_eq!(h.members[0].deliveries.len(), 50);
}

#[test]
#[ignore = "opens TCP sockets: run inside scripts/netns-run"]
fn hostile_frames_close_their_connection_and_the_member_keeps_working() {
    use std::io::{Read, Write as _};
    let t = ConsensusThread::start("m", Some("127.0.0.1:0".parse().unwrap())).unwrap();
    let id = MemberId([9; 12]);
    let addr = t.tcp_addr().unwrap();
    let g = t
        .open(GroupSpec {
            group: "0//h".into(),
            me: id,
            initial: Some(vec![(id, MemberAddr::Tcp(addr))]),
            sim: None,
            timing: Default::default(),
        })
        .unwrap();
    let before = tessera_atomic::bad_frames();
    let hostile: [&[u8]; 3] = [
        &[0xff, 0xff, 0xff, 0xff], // a 4 GiB frame: refused before allocating
        &[0, 0, 0, 5, b'{', b'x', b'"', 0, 1], // not JSON
        &[0, 0, 0, 2, b'{', b'}'], // JSON, not an envelope
    ];
    for bytes in hostile {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(bytes).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 16];
        // The server closes the connection without answering.
        assert_eq!(s.read(&mut buf).unwrap_or(0), 0);
    }
    assert_eq!(tessera_atomic::bad_frames() - before, 3);
    // A one-member group commits on its own.
    assert!(g.propose(entry(1, 1), Duration::from_secs(5)).is_ok());
}
