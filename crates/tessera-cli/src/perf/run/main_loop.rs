//! `tessera perf`'s main loop: a report line a second, the ping, matching, maxwait and
//! duration timers, and the verdict at the end.

use super::*;

/// What the main loop hands to the verdict.
pub(super) struct LoopResult {
    pub(super) aborted: bool,
    /// The time reference of the report lines (ns).
    pub(super) tref: i64,
    /// RSS at the first report with output after `minmatch` was reached, and at the last.
    pub(super) rss: Option<(f64, f64)>,
}

/// The once-per-second reporting loop (§10, §11) with the ping, matching, maxwait and
/// duration timers.
pub(super) fn main_loop(
    ctx: &Shared,
    typed: &dyn Typed,
    hostname: &str,
    cpu_writer: &DataWriter<CpuStats>,
    cpu_reader: Option<&DataReader<CpuStats>>,
) -> LoopResult {
    let cfg = &ctx.cfg;
    let pid = ctx.pid;
    let tstart = now_ns();
    let tref = cfg.time_ref.unwrap_or(tstart);
    let tend = cfg.duration_ns().map(|d| tstart + d);
    let tmaxwait = cfg.max_wait_ns().map(|d| tstart + d);
    let mut tnext = tstart + SEC;
    let mut tprev = tstart;
    let mut tping = lock(&ctx.ping).first_deadline(tstart);
    let mut cpu = CpuSampler::new(now_ns(), hostname.to_string());
    let mut netload = cfg
        .netload
        .as_ref()
        .map(|n| NetloadSampler::new(&n.device, n.bandwidth, now_ns()));
    let mut peer_cpu: PeerCpu = Vec::new();
    let mut rss: Option<(f64, f64)> = None;
    let mut ws = WaitSet::new();
    ws.attach(&ctx.guard.condition());
    let mut active = Vec::new();
    let mut aborted = false;

    loop {
        // `--count` ends the run between reports: one last report then, so that the
        // per-second lines cover the whole run.
        let last_report = ctx.stopping() && cfg.count.is_some();
        if ctx.stopping() && !last_report {
            break;
        }
        let now = now_ns();
        if last_report {
            tnext = now;
        }
        let mut deadline = tnext;
        for d in [tend, tmaxwait, lock(&ctx.peers).next_deadline(), tping]
            .into_iter()
            .flatten()
        {
            deadline = deadline.min(d);
        }
        if now < deadline {
            let wait = Duration::from_nanos((deadline - now) as u64);
            let _ = ws.wait_into(&mut active, Some(wait));
            continue;
        }

        for line in lock(&ctx.peers).check_deadlines(now) {
            ctx.emit(&line);
        }
        if let Some(tp) = tping.filter(|_| !last_report) {
            if now >= tp {
                let action = lock(&ctx.ping).on_timer(now);
                if let Some(total) = action.warn_timeouts {
                    ctx.emit(&ReportLine::PingTimeout { pid, total });
                }
                if let Some(seq) = action.send_seq {
                    typed.send_ping(seq);
                }
                tping = Some(action.next_deadline.unwrap_or(now + SEC).max(now + 1));
            }
        }
        if now >= tnext {
            let printed = report(
                ctx,
                typed,
                Stamp::new(pid, now, tref),
                now - tprev,
                now,
                cpu.as_mut(),
                cpu_writer,
                cpu_reader,
                &mut peer_cpu,
                netload.as_mut(),
            );
            if let Some(c) = &cpu {
                let m = c.maxrss();
                if lock(&ctx.peers).match_count() >= cfg.criteria.min_match {
                    match &mut rss {
                        None if printed => rss = Some((m, m)),
                        Some(r) => r.1 = m,
                        None => {}
                    }
                }
            }
            tprev = now;
            tnext += SEC;
            if now > tnext - SEC + SEC / 2 {
                tnext = now + SEC;
            }
        }
        if last_report {
            break;
        }
        if let Some(tmw) = tmaxwait {
            if now >= tmw && lock(&ctx.peers).match_count() < cfg.criteria.min_match {
                aborted = true;
                break;
            }
        }
        if let Some(te) = tend {
            if now >= te {
                break;
            }
        }
    }
    LoopResult { aborted, tref, rss }
}

/// Prints one report (the lines due each second, in ddsperf's order). Returns whether
/// anything was printed.
#[allow(clippy::too_many_arguments)]
fn report(
    ctx: &Shared,
    typed: &dyn Typed,
    stamp: Stamp,
    dt_ns: i64,
    now: i64,
    cpu: Option<&mut CpuSampler>,
    cpu_writer: &DataWriter<CpuStats>,
    cpu_reader: Option<&DataReader<CpuStats>>,
    peer_cpu: &mut PeerCpu,
    netload: Option<&mut NetloadSampler>,
) -> bool {
    let cfg = &ctx.cfg;
    let mut lines: Vec<ReportLine> = Vec::new();
    if cfg.publishes() {
        let hist = lock(&ctx.pubhist).take();
        lines.push(ReportLine::Pub { stamp, hist, dt_ns });
    }
    if cfg.has_data_reader() {
        let mut seq = lock(&ctx.seq);
        let counts = seq.interval();
        if counts.delta > 0 || cfg.sub_every_second {
            lines.push(ReportLine::Sub {
                stamp,
                counts,
                dt_ns,
            });
        }
        if cfg.sub_latency {
            let peers = lock(&ctx.peers);
            for p in seq.publishers_mut() {
                let size = p.last_size;
                let label = peers.label(p.participant, p.handle);
                if let Some(stats) = p.latency.as_mut().and_then(|l| l.take_interval()) {
                    lines.push(ReportLine::Latency {
                        stamp,
                        sublat: true,
                        peer: label,
                        size,
                        stats,
                    });
                }
            }
        }
    }
    {
        let mut pongs = lock(&ctx.pongs);
        let peers = lock(&ctx.peers);
        for p in pongs.iter_mut() {
            if let Some(stats) = p.stats.take_interval() {
                lines.push(ReportLine::Latency {
                    stamp,
                    sublat: false,
                    peer: peers.label(Some(p.participant), p.handle),
                    size: cfg.payload_size(),
                    stats,
                });
            }
        }
    }
    if let Some(c) = cpu {
        let s = c.sample(now).clone();
        let _ = cpu_writer.write(&CpuStats::from(&s));
        lines.push(ReportLine::Cpu {
            stamp,
            remote: None,
            stale: false,
            stats: s,
        });
    }
    if let Some(r) = cpu_reader {
        if let Ok(samples) = r.take(usize::MAX) {
            for s in samples.into_iter().filter_map(|s| s.data) {
                let key = (s.hostname.clone(), s.pid);
                let sample = crate::perf::protocol::CpuStatsSample::from(s);
                match peer_cpu.iter_mut().find(|e| e.0 == key) {
                    Some(e) => {
                        e.1 = sample;
                        e.2 = true;
                    }
                    None => peer_cpu.push((key, sample, true)),
                }
            }
        }
        for (key, s, fresh) in peer_cpu.iter_mut() {
            lines.push(ReportLine::Cpu {
                stamp,
                remote: Some(key.clone()),
                stale: !*fresh,
                stats: s.clone(),
            });
            *fresh = false;
        }
    }

    let mut out = lock(&ctx.out);
    let mut printed = false;
    for l in &lines {
        printed |= out.emit(l).unwrap_or(false);
    }
    if let Some(n) = netload {
        if let Some(reading) = n.sample(now) {
            if printed {
                let _ = out.emit(&ReportLine::Netload { stamp, reading });
            }
        }
    }
    if cfg.extended_stats && printed {
        // Tessera counts retransmitted samples per writer (not bytes); it has no throttle
        // or per-reader discard counters: those stay 0.
        let _ = out.emit(&ReportLine::Extended {
            stamp,
            stats: ExtendedStats {
                rexmit: typed.retransmitted_samples(),
                ..ExtendedStats::default()
            },
        });
    }
    let _ = out.flush();
    printed
}

/// The end-of-run checks (§12): prints the errors (and the JSON summary) and returns the exit
/// status.
pub(super) fn finish(ctx: &Shared, aborted: bool, rss: Option<(f64, f64)>) -> i32 {
    let cfg = &ctx.cfg;
    let (unmatched, match_count) = {
        let p = lock(&ctx.peers);
        (p.unmatched(), p.match_count())
    };
    let (lost, samples_ok, received) = {
        let s = lock(&ctx.seq);
        (
            s.total_lost(),
            s.all_received_at_least(cfg.criteria.min_samples),
            s.publishers().iter().map(|p| p.nrecv).sum::<u64>(),
        )
    };
    let (roundtrips_ok, overall) = {
        let pongs = lock(&ctx.pongs);
        let peers = lock(&ctx.peers);
        (
            pongs
                .iter()
                .all(|p| p.stats.total_count() >= cfg.criteria.min_roundtrips),
            pongs
                .iter()
                .filter_map(|p| {
                    p.stats
                        .overall()
                        .map(|o| (peers.label(Some(p.participant), p.handle), o))
                })
                .collect::<Vec<(PeerLabel, _)>>(),
        )
    };
    let min_match = if aborted && match_count >= cfg.criteria.min_match {
        u32::MAX
    } else {
        cfg.criteria.min_match
    };
    let (lines, code) = verdict(&VerdictInput {
        pid: ctx.pid,
        unmatched,
        match_count,
        min_match,
        lost,
        loss_is_error: cfg.loss_is_error(),
        roundtrips_ok,
        samples_ok,
        rss: cfg.criteria.rss.and_then(|c| rss.map(|(a, b)| (c, a, b))),
    });
    for l in &lines {
        ctx.emit(l);
    }
    let answers = (cfg.ping != PingInterval::Never).then(|| {
        let a = lock(&ctx.answers);
        PingAnswers {
            pings: a.pings,
            first: a.first.overall(),
            all: a.all.overall(),
        }
    });
    if cfg.json {
        ctx.emit(&ReportLine::Summary {
            pid: ctx.pid,
            latency: overall,
            answers,
            received,
            lost,
            exit_code: code,
        });
    }
    code
}
