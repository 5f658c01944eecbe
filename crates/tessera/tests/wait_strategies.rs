//! Every receive wait strategy (`ParticipantConfig::wait`, `TESSERA_WAIT`) delivers reliable
//! data exactly once over UDPv4 and over shared memory, and a participant that busy-polls
//! still shuts down promptly (its receive threads must notice the stop while polling).

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::WaitStrategy;
use tessera::DomainParticipant;

mod support;
use support::{Keyed, Transport};

fn strategies() -> Vec<WaitStrategy> {
    vec![
        WaitStrategy::Block,
        WaitStrategy::Spin {
            max: Duration::from_micros(30),
            adaptive: false,
        },
        WaitStrategy::Spin {
            max: Duration::from_micros(100),
            adaptive: true,
        },
        WaitStrategy::BusyPoll,
    ]
}

fn reliable_delivery_and_prompt_shutdown_with_every_strategy(t: Transport) {
    for (i, wait) in strategies().into_iter().enumerate() {
        let d = t.domain(0);
        let config = || tessera::ParticipantConfig {
            wait: Some(wait),
            ..d.config()
        };
        let a = DomainParticipant::with_qos(d.domain_id(), Default::default(), config()).unwrap();
        let b = DomainParticipant::with_qos(d.domain_id(), Default::default(), config()).unwrap();
        let name = format!("Wait{i}");
        let ta = a.create_topic::<Keyed>(&name, TopicQos::default()).unwrap();
        let tb = b.create_topic::<Keyed>(&name, TopicQos::default()).unwrap();
        let w = a
            .create_publisher(Default::default())
            .unwrap()
            .create_datawriter(&ta, DataWriterQos::default().with_history(History::KeepAll))
            .unwrap();
        let r = b
            .create_subscriber(Default::default())
            .unwrap()
            .create_datareader(
                &tb,
                DataReaderQos::default()
                    .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                    .with_history(History::KeepAll),
            )
            .unwrap();
        support::wait_until(10, "match", || {
            w.publication_matched_status().current_count == 1
        });
        const N: u32 = 500;
        for seq in 0..N {
            w.write(&Keyed { id: seq % 5, seq }).unwrap();
            // Paced in part, so that receive threads also go idle and wait.
            if seq % 50 == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let mut got =
            support::take_until_each_has(std::slice::from_ref(&r), N as usize, |d| d.seq).remove(0);
        got.sort_unstable();
        assert_eq!(got, (0..N).collect::<Vec<_>>(), "{wait:?}");
        let t0 = Instant::now();
        drop((w, r, ta, tb));
        drop(a);
        drop(b);
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{wait:?}: shutdown took {:?}",
            t0.elapsed()
        );
    }
}

mod udp4 {
    #[test]
    #[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
    fn reliable_delivery_and_prompt_shutdown_with_every_strategy() {
        super::reliable_delivery_and_prompt_shutdown_with_every_strategy(super::Transport::Udp4)
    }
}

mod shm {
    #[test]
    #[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
    fn reliable_delivery_and_prompt_shutdown_with_every_strategy() {
        super::reliable_delivery_and_prompt_shutdown_with_every_strategy(super::Transport::Shm)
    }
}
