//! The matrix cells Cyclone's `ddsperf` can express: a Tessera writer or reader of ddsperf's
//! data topic (`DDSPerfRDataKS`, reliable, or `DDSPerfUDataKS`, best effort with `-u`) with the
//! QoS of `--qos SIDE`, against `ddsperf pub` / `ddsperf sub`.
//!
//! ddsperf numbers samples 0.. across keys with `keyval = seq % n` and checks, per writer and
//! key, that each sample follows the previous one by `n`; `perf-writer` writes the same way
//! (with even source timestamps: an odd one asks ddsperf for a pong). `perf-reader` checks what
//! ddsperf's own subscriber would, plus that the stream does not stall.

use crate::promise::Side;
use crate::{js, problems_json, say, verdict, wait_until, KeyedSeq, Opts};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tessera::qos::TopicQos;
use tessera::DomainParticipant;

fn side(o: &Opts) -> Side {
    o.side.unwrap_or(Side {
        reliable: true,
        transient_local: false,
        hist: crate::promise::Hist::All,
    })
}

fn even_now_ns() -> i64 {
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    ns & !1
}

pub(crate) fn run_writer(o: &Opts) -> tessera::Result<ExitCode> {
    let me = side(o);
    let p = DomainParticipant::new(o.domain)?;
    let t = p.create_topic::<KeyedSeq>(&o.topic, TopicQos::default())?;
    let w = p
        .create_publisher(Default::default())?
        .create_datawriter(&t, me.writer_qos())?;
    let sample = |seq: u32| KeyedSeq {
        seq,
        keyval: seq % o.instances,
        baggage: Vec::new(),
    };
    // --pre: written before any reader exists (a late-joining ddsperf is started after
    // `ready`); a VOLATILE reader must not get them, and they must not hold up the rest.
    let mut errors = 0u32;
    for seq in 0..o.pre {
        if w.write_with_timestamp(&sample(seq), even_now_ns()).is_err() {
            errors += 1;
        }
    }
    say("ready");
    let mut problems = Vec::new();
    let appeared = wait_until(o.timeout, || {
        w.publication_matched_status().total_count > 0
            || w.offered_incompatible_qos_status().total_count > 0
    });
    let (mut written, mut acked) = (0u32, None);
    if !appeared {
        problems.push(format!("no reader appeared within {:?}", o.timeout));
    } else if !o.expect_incompatible {
        // Our writer sees the match first; a VOLATILE Cyclone reader takes data only from its
        // first HEARTBEAT after it discovered us. --settle-ms covers that discovery, so that
        // "every sample" below means every sample written once both sides matched.
        std::thread::sleep(o.settle);
        for seq in o.pre..o.pre + o.live {
            match w.write_with_timestamp(&sample(seq), even_now_ns()) {
                Ok(()) => written += 1,
                Err(e) => {
                    eprintln!("perf-writer: write {seq}: {e}");
                    errors += 1;
                }
            }
            std::thread::sleep(o.period);
        }
        if me.reliable {
            acked = Some(w.wait_for_acknowledgments(Duration::from_secs(3)).is_ok());
        }
    }
    let matched = w.publication_matched_status().total_count;
    let incompatible = w.offered_incompatible_qos_status().total_count;
    if o.expect_incompatible {
        if incompatible == 0 {
            problems.push("no OFFERED_INCOMPATIBLE_QOS".into());
        }
        if matched > 0 {
            problems.push(format!("matched {matched} reader(s)"));
        }
    } else {
        if incompatible > 0 {
            problems.push("OFFERED_INCOMPATIBLE_QOS on a compatible pair".into());
        }
        if errors > 0 {
            problems.push(format!("{errors} writes failed"));
        }
    }
    say(&format!(
        "json {{\"role\":\"perf-writer\",\"qos\":{},\"topic\":{},\"written\":{written},\"matched\":{matched},\"incompatible\":{incompatible},\"acked\":{},\"problems\":{}}}",
        js(&me.to_string()),
        js(&o.topic),
        acked.map_or("null".to_string(), |a: bool| a.to_string()),
        problems_json(&problems),
    ));
    let code = verdict(&problems);
    // Leave ddsperf time to print the interval that holds our last samples.
    std::thread::sleep(o.linger);
    Ok(code)
}

pub(crate) fn run_reader(o: &Opts) -> tessera::Result<ExitCode> {
    let me = side(o);
    let n = o.instances;
    let p = DomainParticipant::new(o.domain)?;
    let t = p.create_topic::<KeyedSeq>(&o.topic, TopicQos::default())?;
    let r = p
        .create_subscriber(Default::default())?
        .create_datareader(&t, me.reader_qos())?;
    say("ready");
    let start = Instant::now();
    let mut end = start + o.timeout;
    let mut buf = Vec::new();
    // Per key: the last seq; and the counts ddsperf's subscriber would keep.
    let mut last: BTreeMap<u32, u32> = BTreeMap::new();
    let (mut total, mut gaps, mut backwards, mut bad_key) = (0u64, 0u64, 0u64, 0u64);
    let (mut first_at, mut last_at, mut gone_at) = (None, None, None);
    let mut appeared = false;
    loop {
        buf.clear();
        r.take_into(&mut buf, 256);
        let now = Instant::now();
        for d in buf.iter().filter_map(|x| x.data.as_ref()) {
            total += 1;
            first_at.get_or_insert(now);
            last_at = Some(now);
            if d.keyval >= n || d.seq % n != d.keyval {
                bad_key += 1;
                continue;
            }
            if let Some(prev) = last.insert(d.keyval, d.seq) {
                if d.seq <= prev {
                    backwards += 1;
                } else {
                    gaps += u64::from((d.seq - prev) / n - 1);
                }
            }
        }
        let m = r.subscription_matched_status();
        if !appeared && (m.total_count > 0 || r.requested_incompatible_qos_status().total_count > 0)
        {
            appeared = true;
            // ddsperf publishes for --duration from about now; then lets us drain.
            end = now + o.duration + Duration::from_secs(2);
        }
        if m.total_count > 0 && m.current_count == 0 && gone_at.is_none() {
            gone_at = Some(now);
            end = end.min(now + Duration::from_millis(300));
        }
        if now >= end {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let matched = r.subscription_matched_status().total_count;
    let incompatible = r.requested_incompatible_qos_status().total_count;
    let mut problems = Vec::new();
    if !appeared {
        problems.push(format!("no writer appeared within {:?}", o.timeout));
    } else if o.expect_incompatible {
        if incompatible == 0 {
            problems.push("no REQUESTED_INCOMPATIBLE_QOS".into());
        }
        if matched > 0 {
            problems.push(format!("matched {matched} writer(s)"));
        }
        if total > 0 {
            problems.push(format!("received {total} samples"));
        }
    } else {
        if incompatible > 0 {
            problems.push("REQUESTED_INCOMPATIBLE_QOS on a compatible pair".into());
        }
        if bad_key > 0 {
            problems.push(format!("{bad_key} samples with a wrong key"));
        }
        if backwards > 0 {
            problems.push(format!("{backwards} duplicates or out of order"));
        }
        if me.reliable && gaps > 0 {
            problems.push(format!("reliable reader lost {gaps} samples"));
        }
        // No stall: samples arrive over most of the publication, and up to its end.
        let span = match (first_at, last_at) {
            (Some(a), Some(b)) => b - a,
            _ => Duration::ZERO,
        };
        if span < o.duration.mul_f64(0.6) {
            problems.push(format!(
                "stream stalled: samples arrived over {:.2} s of a {:.1} s publication ({total} received)",
                span.as_secs_f64(),
                o.duration.as_secs_f64()
            ));
        }
        if let (Some(g), Some(l)) = (gone_at, last_at) {
            if g.saturating_duration_since(l) > Duration::from_millis(750) {
                problems.push(format!(
                    "stream stalled: last sample {:.2} s before the writer left",
                    (g - l).as_secs_f64()
                ));
            }
        }
    }
    say(&format!(
        "json {{\"role\":\"perf-reader\",\"qos\":{},\"topic\":{},\"received\":{total},\"lost\":{gaps},\"out_of_order\":{backwards},\"bad_key\":{bad_key},\"span_s\":{:.3},\"writer_left\":{},\"matched\":{matched},\"incompatible\":{incompatible},\"problems\":{}}}",
        js(&me.to_string()),
        js(&o.topic),
        match (first_at, last_at) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            _ => 0.0,
        },
        gone_at.is_some(),
        problems_json(&problems),
    ));
    Ok(verdict(&problems))
}
