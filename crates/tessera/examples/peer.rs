//! A scriptable Tessera peer for the two-process tests in `tests/interop/`.
//!
//! ```text
//! peer pub  [options]   publish --count samples (seq 0..count), then linger
//! peer sub  [options]   receive and check; exit 0 when every expectation held
//!
//! --topic NAME          topic (default "PeerTest")
//! --count N             samples to publish / expect (default 1000)
//! --size BYTES          payload bytes per sample (default 64)
//! --best-effort         best-effort instead of reliable
//! --keep-last K         keep-last K instead of keep-all
//! --transient-local     TRANSIENT_LOCAL durability instead of VOLATILE
//! --linger SECS         pub: stay alive this long after writing (default 5)
//! --wait-readers N      pub: wait for N matched readers before writing (default 1, 0 = don't)
//! --timeout SECS        sub: give up after this long (default 60)
//! --expect-incompatible sub/pub: succeed when an incompatible-QoS status is reported
//! --expect-liveliness-lost  sub: after receiving, succeed when the writer's liveliness is lost
//! ```
//! Every run must happen inside a network namespace (see `scripts/netns-run`).

use std::process::ExitCode;
use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History, Reliability, TopicQos};
use tessera::{DomainParticipant, TopicType};

#[derive(TopicType, Debug, Clone)]
#[topic(type_name = "PeerSample")]
struct PeerSample {
    seq: u32,
    payload: Vec<u8>,
}

struct Opts {
    topic: String,
    count: u32,
    size: usize,
    reliable: bool,
    keep_last: Option<u32>,
    transient_local: bool,
    linger: f64,
    wait_readers: i32,
    timeout: f64,
    expect_incompatible: bool,
    expect_liveliness_lost: bool,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        topic: "PeerTest".into(),
        count: 1000,
        size: 64,
        reliable: true,
        keep_last: None,
        transient_local: false,
        linger: 5.0,
        wait_readers: 1,
        timeout: 60.0,
        expect_incompatible: false,
        expect_liveliness_lost: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--topic" => o.topic = val()?,
            "--count" => o.count = val()?.parse().map_err(|e| format!("--count: {e}"))?,
            "--size" => o.size = val()?.parse().map_err(|e| format!("--size: {e}"))?,
            "--best-effort" => o.reliable = false,
            "--keep-last" => {
                o.keep_last = Some(val()?.parse().map_err(|e| format!("--keep-last: {e}"))?)
            }
            "--transient-local" => o.transient_local = true,
            "--linger" => o.linger = val()?.parse().map_err(|e| format!("--linger: {e}"))?,
            "--wait-readers" => {
                o.wait_readers = val()?.parse().map_err(|e| format!("--wait-readers: {e}"))?
            }
            "--timeout" => o.timeout = val()?.parse().map_err(|e| format!("--timeout: {e}"))?,
            "--expect-incompatible" => o.expect_incompatible = true,
            "--expect-liveliness-lost" => o.expect_liveliness_lost = true,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

fn history(o: &Opts) -> History {
    o.keep_last.map_or(History::KeepAll, History::KeepLast)
}

fn durability(o: &Opts) -> Durability {
    if o.transient_local {
        Durability::TransientLocal
    } else {
        Durability::Volatile
    }
}

fn reliability(o: &Opts) -> Reliability {
    if o.reliable {
        Reliability::reliable(Duration::from_secs(10))
    } else {
        Reliability::best_effort()
    }
}

fn run_pub(o: &Opts) -> tessera::Result<bool> {
    let p = DomainParticipant::new(0)?;
    let t = p.create_topic::<PeerSample>(&o.topic, TopicQos::default())?;
    let qos = DataWriterQos::default()
        .with_reliability(reliability(o))
        .with_history(history(o))
        .with_durability(durability(o));
    let w = p
        .create_publisher(Default::default())?
        .create_datawriter(&t, qos)?;
    let deadline = Instant::now() + Duration::from_secs_f64(o.timeout);
    if o.expect_incompatible {
        while w.offered_incompatible_qos_status().total_count == 0 {
            if Instant::now() > deadline {
                println!("pub: no incompatible QoS reported");
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("pub: incompatible QoS reported");
        return Ok(true);
    }
    while (w.publication_matched_status().current_count) < o.wait_readers {
        if Instant::now() > deadline {
            println!("pub: readers did not match");
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    for seq in 0..o.count {
        let mut payload = vec![0u8; o.size];
        payload
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (seq as usize + i) as u8);
        w.write(&PeerSample { seq, payload })?;
    }
    println!(
        "pub: wrote {} samples in {:.3} s",
        o.count,
        started.elapsed().as_secs_f64()
    );
    if o.reliable && o.wait_readers > 0 {
        match w.wait_for_acknowledgments(Duration::from_secs_f64(o.timeout)) {
            Ok(()) => println!(
                "pub: all acknowledged after {:.3} s",
                started.elapsed().as_secs_f64()
            ),
            Err(e) => println!("pub: not all acknowledged: {e}"),
        }
    }
    std::thread::sleep(Duration::from_secs_f64(o.linger));
    Ok(true)
}

fn run_sub(o: &Opts) -> tessera::Result<bool> {
    let p = DomainParticipant::new(0)?;
    let t = p.create_topic::<PeerSample>(&o.topic, TopicQos::default())?;
    let qos = DataReaderQos::default()
        .with_reliability(reliability(o))
        .with_history(history(o))
        .with_durability(durability(o));
    let r = p
        .create_subscriber(Default::default())?
        .create_datareader(&t, qos)?;
    let deadline = Instant::now() + Duration::from_secs_f64(o.timeout);
    if o.expect_incompatible {
        while r.requested_incompatible_qos_status().total_count == 0 {
            if Instant::now() > deadline {
                println!("sub: no incompatible QoS reported");
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("sub: incompatible QoS reported");
        return Ok(true);
    }
    let (mut received, mut duplicates, mut reordered, mut corrupt) = (0u64, 0u64, 0u64, 0u64);
    let mut next_expected = 0u32;
    let mut seen = vec![false; o.count as usize];
    let mut buf = Vec::new();
    let start = Instant::now();
    let mut first_at = None;
    while received < o.count as u64 {
        if Instant::now() > deadline {
            break;
        }
        buf.clear();
        if r.take_into(&mut buf, 4096) == 0 {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        first_at.get_or_insert_with(|| start.elapsed());
        for s in buf.iter().filter_map(|s| s.data.as_ref()) {
            let ok = s.payload.len() == o.size
                && s.payload
                    .iter()
                    .enumerate()
                    .all(|(i, b)| *b == (s.seq as usize + i) as u8);
            if !ok {
                corrupt += 1;
            }
            match seen.get_mut(s.seq as usize) {
                Some(true) => duplicates += 1,
                Some(slot) => {
                    *slot = true;
                    received += 1;
                }
                None => corrupt += 1,
            }
            if s.seq < next_expected {
                reordered += 1;
            }
            next_expected = next_expected.max(s.seq + 1);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "sub: received {received} of {} (duplicates {duplicates}, reordered {reordered}, corrupt {corrupt}) in {secs:.3} s; first after {:?}; counters {:?}",
        o.count,
        first_at,
        p.counters()
    );
    let mut ok = received == o.count as u64
        && duplicates == 0
        && corrupt == 0
        && (reordered == 0 || !o.reliable);
    if ok && o.expect_liveliness_lost {
        let t0 = Instant::now();
        loop {
            // The writer's participant stops renewing its lease (killed): once the lease runs
            // out the writer is no longer alive. Tessera then removes it (as Cyclone does with
            // an expired proxy participant), so alive_count falls to 0 rather than the writer
            // lingering in not_alive_count.
            let l = r.liveliness_changed_status();
            if l.alive_count == 0 {
                println!(
                    "sub: liveliness lost after {:.3} s (alive {}, not alive {})",
                    t0.elapsed().as_secs_f64(),
                    l.alive_count,
                    l.not_alive_count
                );
                break;
            }
            if Instant::now() > deadline + Duration::from_secs(30) {
                println!("sub: liveliness loss not reported");
                ok = false;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(mode) = args.first() else {
        eprintln!("usage: peer pub|sub [options] (see the source's docs)");
        return ExitCode::from(3);
    };
    let o = match parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("peer: {e}");
            return ExitCode::from(3);
        }
    };
    let result = match mode.as_str() {
        "pub" => run_pub(&o),
        "sub" => run_sub(&o),
        _ => {
            eprintln!("peer: mode must be pub or sub");
            return ExitCode::from(3);
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("peer: {e}");
            ExitCode::from(2)
        }
    }
}
