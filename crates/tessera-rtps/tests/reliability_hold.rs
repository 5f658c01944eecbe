//! A reader that took samples but may not acknowledge them yet (a durability service that
//! stores a sample only once its group committed it) holds its acknowledgments: the writer
//! keeps those samples until the hold moves, and nothing is delivered twice.

use std::time::Duration;

use tessera_rtps::sim::{writer_guid, NetConfig, Sim};
use tessera_rtps::writer::{HistoryKind, WriterConfig};

fn keep_all() -> WriterConfig {
    WriterConfig {
        history: HistoryKind::KeepAll,
        max_samples: 1000,
        ..Sim::writer_config()
    }
}

fn move_hold(sim: &mut Sim, hold: Option<i64>) {
    let now = sim.now;
    sim.readers[0]
        .core
        .set_acknowledgment_hold(writer_guid(), hold, now);
}

#[test]
fn held_samples_stay_with_the_writer_until_the_hold_moves() {
    let mut sim = Sim::new(keep_all(), NetConfig::default());
    sim.add_reader(true, false);
    sim.readers[0].core.hold_acknowledgment(writer_guid(), 4);
    for i in 1..=10u8 {
        sim.write(&[0, 1, 0, 0, i]).expect("write");
    }
    sim.run_for(Duration::from_secs(2));
    assert_eq!(
        sim.seqs(0),
        (1..=10).collect::<Vec<_>>(),
        "all delivered at once"
    );
    assert_eq!(
        sim.writer.history_len(),
        7,
        "the writer keeps what the hold covers (4..=10) and drops what was acknowledged"
    );

    // Part of the held range is done: the writer may drop up to it.
    move_hold(&mut sim, Some(8));
    sim.run_for(Duration::from_millis(500));
    assert_eq!(sim.writer.history_len(), 3);

    move_hold(&mut sim, None);
    assert!(sim.run_until_quiescent(Duration::from_secs(5)));
    assert!(sim.writer.all_acked());
    assert_eq!(sim.writer.history_len(), 0);
    assert_eq!(sim.seqs(0), (1..=10).collect::<Vec<_>>(), "nothing twice");
}

#[test]
fn a_hold_under_loss_still_repairs_what_is_missing_and_releases_everything() {
    let net = NetConfig {
        seed: 11,
        loss: 0.2,
        ..NetConfig::default()
    };
    let mut sim = Sim::new(keep_all(), net);
    sim.add_reader(true, false);
    sim.readers[0].core.hold_acknowledgment(writer_guid(), 1);
    for i in 1..=50u8 {
        sim.write(&[0, 1, 0, 0, i]).expect("write");
        sim.run_for(Duration::from_millis(2));
    }
    sim.run_for(Duration::from_secs(5));
    assert_eq!(
        sim.seqs(0),
        (1..=50).collect::<Vec<_>>(),
        "repairs go on under a hold"
    );
    assert_eq!(
        sim.writer.history_len(),
        50,
        "nothing acknowledged while held at 1"
    );
    move_hold(&mut sim, None);
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert!(sim.writer.all_acked());
    assert_eq!(sim.seqs(0), (1..=50).collect::<Vec<_>>());
}
