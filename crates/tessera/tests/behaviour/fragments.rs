//! Fragmentation: reliable samples of 100 KiB and 1 MiB arrive whole, in order, exactly once —
//! also over the lossy network, where lost fragments must be repaired.

use crate::harness::*;
use crate::per_transport;
use std::time::Duration;

fn body(seq: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seq) as u8)
        .collect()
}

fn large_reliable_samples_arrive_whole(t: Transport) {
    let d = t.domain(2);
    let ps = &d.participants;
    let w = writer::<Blob>(&ps[0], "F_large", keep_all_writer());
    let r = reader::<Blob>(&ps[1], "F_large", keep_all_reader());
    matched(&w, &r);
    let sizes = [100 << 10, 1 << 20, 100 << 10, 1 << 20, 100 << 10];
    for (seq, &len) in sizes.iter().enumerate() {
        w.write(&Blob {
            seq: seq as u32,
            body: body(seq as u32, len),
        })
        .unwrap();
    }
    let got = take_n(&r, sizes.len(), 60);
    for (seq, (s, &len)) in got.iter().zip(&sizes).enumerate() {
        let d = s.data.as_ref().unwrap();
        assert_eq!(d.seq, seq as u32);
        assert_eq!(d.body.len(), len, "sample {seq}");
        assert!(d.body == body(seq as u32, len), "sample {seq} corrupted");
    }
    assert_eq!(got.len(), sizes.len());
    w.wait_for_acknowledgments(Duration::from_secs(20)).unwrap();
    settle(t);
    assert!(
        r.take(usize::MAX).unwrap().is_empty(),
        "a sample came twice"
    );
    assert_lossy_network_lost(&d);
}

per_transport!(all: large_reliable_samples_arrive_whole);
