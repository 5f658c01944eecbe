//! Paced flows: one publisher (or many applications) to N subscribers, optionally through
//! the node services, and the rate steps that find where a flow stops keeping up.

use super::*;

impl Ctx<'_> {
    /// One publisher (or `applications` of them, each at `rate`) → N subscribers at `rate`
    /// (0 = unpaced) for `duration` measured seconds, optionally with a share of pings, through
    /// each host's node service when the point is `federated`; returns the subscribers'
    /// throughput, the (reaped) workers, publishers first, the CPU µs per delivered sample of
    /// all of them over the subscribers' common window ([`cpuwin`]), and the LAN's datagrams.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn flow(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        duration: f64,
        rate: f64,
        ping_percent: Option<f64>,
    ) -> anyhow::Result<FlowOutcome> {
        let size = param_u64(&p.params, "size", 16);
        let subs = param_u64(&p.params, "subscribers", 1) as usize;
        let multicast = p
            .params
            .get("multicast")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let (instances, reliability, read_mode) = match p.params.get("case").and_then(Value::as_str)
        {
            Some(c) => {
                let (i, r, m) = scenario::nasa_case(c).context("bad NASA case")?;
                (u64::from(i), r.to_string(), m.to_string())
            }
            None => (
                param_u64(&p.params, "instances", 1),
                param_str(&p.params, "reliability", "reliable").to_string(),
                param_str(&p.params, "read_mode", "listener").to_string(),
            ),
        };
        let burst = exp.setting("burst", 1.0) as u64;
        // Per-second reports a subscriber makes before the measured ones (1 unless the
        // scenario asks for a longer warm-up: an ATOMIC group settles its leader first).
        let warmup_lines = exp.setting("warmup_s", 1.0).max(1.0) as usize;
        let sub_s = duration.ceil().max(1.0) as u64 + warmup_lines as u64;

        if p.pair.writer == Implementation::Udp {
            let mut client = strings(&[
                "--size",
                &size.to_string(),
                "--duration",
                &(sub_s + 3).to_string(),
            ]);
            if rate > 0.0 {
                client.extend(strings(&["--rate", &format!("{rate}")]));
            }
            let (publisher, sub, _, cpu) = self.floor_pair(
                topo,
                exp,
                p,
                seq,
                ("sub", strings(&["--duration", &sub_s.to_string()])),
                ("pub", client),
                sub_s as f64 + 15.0,
            )?;
            let out = sub.output();
            let cpu_us =
                throughput_cpu_per_sample(&cpu, &[(sub.proc.started(), &out)], warmup_lines);
            let t = throughput_from_subs(&[out], size, rate, warmup_lines);
            return Ok((t, vec![publisher, sub], cpu_us, BTreeMap::new()));
        }

        let mut common: Vec<String> = Vec::new();
        if reliability == "best_effort" {
            common.push("-u".into());
        }
        common.extend(loan_args(p.pair, size));
        if let Some(h) = p.params.get("history").and_then(Value::as_str) {
            common.extend(strings(&[
                "-k",
                &scenario::parse_history(h).map_err(anyhow::Error::msg)?,
            ]));
        }
        if instances > 1 {
            // The subscriber checks received keys against the key count too.
            common.extend(strings(&["-n", &instances.to_string()]));
        }
        let apps = param_u64(&p.params, "applications", 1).max(1) as usize;
        let federated = param_str(&p.params, "architecture", "decentralized") == "federated";
        let mut nodes = federated::Nodes::new(self);
        if federated {
            nodes.start(topo, subs)?;
        }
        let mut sub_args = common.clone();
        sub_args.extend(strings(&[
            "-D",
            &sub_s.to_string(),
            "-1",
            "sub",
            &read_mode,
        ]));
        let mut subscribers =
            self.spawn_readers(topo, exp, p, seq, "sub", subs, &sub_args, multicast)?;
        // A Tessera publisher never counts a RustDDS reader as a ddsperf peer (no USER_DATA):
        // it publishes at once, and the subscriber measures from its first sample anyway.
        // Through a node the publisher sees the node, not the subscribers' participants: the
        // same.
        let minmatch = if federated
            || (p.pair.writer.is_tessera() && crate::rustpeers::writer_cannot_count(p.pair.reader))
        {
            0
        } else {
            subs
        };
        let mut args = common.clone();
        args.extend(strings(&[
            "-D",
            &(sub_s + 20).to_string(),
            &format!("-Qminmatch:{minmatch}"),
            "-Qinitwait:20",
            "pub",
        ]));
        if rate > 0.0 {
            args.push(format!("{}Hz", rate.round() as u64));
        }
        args.extend(strings(&["size", &size.max(KS_MIN_SIZE).to_string()]));
        if burst > 1 {
            args.extend(strings(&["burst", &burst.to_string()]));
        }
        if let Some(pp) = ping_percent.filter(|x| *x > 0.0) {
            // Without the optional `ping` keyword: ddsperf would read it as a new mode.
            args.push(format!("{pp}%"));
        }
        let mut publishers = Vec::new();
        for a in 0..apps {
            let role = if apps > 1 {
                format!("pub{}", a + 1)
            } else {
                "pub".to_string()
            };
            publishers.push(self.perf(
                topo,
                0,
                p.pair.writer,
                &args,
                multicast,
                &role,
                Capture::File(self.log_path(seq, &exp.name, p.pair, &role)),
            )?);
        }
        nodes.detach();
        let mut pids: Vec<u32> = publishers.iter().map(|w| w.proc.pid()).collect();
        pids.extend(subscribers.iter().map(|w| w.proc.pid()));
        pids.extend(nodes.pids());
        let monitor = CpuMonitor::start(pids);
        let deadline = Instant::now() + secs(sub_s as f64 + 40.0);
        // Several applications or a node: count the datagrams that cross the LAN meanwhile.
        let mut link = (apps > 1 || federated).then(|| federated::LinkWatch::start(topo));
        match link.as_mut() {
            Some(w) => w.follow(topo, &mut subscribers, deadline),
            None => {
                for s in &mut subscribers {
                    let left = deadline.saturating_duration_since(Instant::now());
                    s.proc.wait_timeout(left);
                }
            }
        }
        let cpu = monitor.finish();
        for w in &mut publishers {
            w.stop();
        }
        for s in &mut subscribers {
            s.stop();
        }
        let nodes = nodes.stop();
        let outs: Vec<PerfOutput> = subscribers.iter().map(Worker::output).collect();
        let started: Vec<(Instant, &PerfOutput)> = subscribers
            .iter()
            .map(|w| w.proc.started())
            .zip(&outs)
            .collect();
        let cpu_us = throughput_cpu_per_sample(&cpu, &started, warmup_lines);
        let mut t = throughput_from_subs(&outs, size, rate * apps as f64, warmup_lines);
        if let Some(t) = &mut t {
            if instances > 1 {
                t.duplicates = None;
            }
        }
        let link = match (link, t.as_ref()) {
            (Some(link), Some(t)) => link.metrics(t.samples_per_s),
            _ => BTreeMap::new(),
        };
        let mut workers = publishers;
        workers.extend(subscribers);
        workers.extend(nodes);
        Ok((t, workers, cpu_us, link))
    }

    pub(super) fn rate_step_group(
        &self,
        exp: &Experiment,
        group: &[&Planned],
        bar: &indicatif::ProgressBar,
    ) -> Vec<Point> {
        let start = exp.setting("start_rate", 10_000.0);
        let step = exp.setting("step_rate", 10_000.0);
        let max = exp.setting("max_rate", 200_000.0);
        let step_s = exp.setting("step_duration_s", 2.0);
        let ping = exp.setting("ping_percent", 1.0);
        let tol = exp.setting("tolerance", 0.02);
        struct PairState {
            steps: Vec<Step>,
            cpu: Vec<[f64; 2]>,
            failures: u32,
            errors: Vec<String>,
            t0: Instant,
            best: Option<(ThroughputStats, Option<LatencyStats>)>,
            procs: Vec<crate::results::ProcStats>,
        }
        let mut state: Vec<PairState> = group
            .iter()
            .map(|_| PairState {
                steps: Vec::new(),
                cpu: Vec::new(),
                failures: 0,
                errors: Vec::new(),
                t0: Instant::now(),
                best: None,
                procs: Vec::new(),
            })
            .collect();
        let mut rate = start;
        while rate <= max + 0.5 {
            let mut any = false;
            for (k, p) in group.iter().enumerate() {
                if state[k].failures >= 2 || state[k].errors.len() >= 2 {
                    continue;
                }
                any = true;
                bar.set_message(format!(
                    "{} {} {} @ {} /s",
                    exp.name,
                    p.pair.label(),
                    params_text(&p.params),
                    rate
                ));
                let seq = 10_000 + k * 1000 + state[k].steps.len();
                let r = self
                    .topology(exp, &p.params)
                    .and_then(|topo| self.flow(&topo, exp, p, seq, step_s, rate, Some(ping)));
                match r {
                    Ok((Some(t), workers, _, _)) => {
                        let lat = workers
                            .first()
                            .map(|w| round_trip(latency_from_lines(&w.output())))
                            .unwrap_or(None);
                        let procs = collect_stats(&workers.iter().collect::<Vec<_>>());
                        let cpu: f64 = procs.iter().map(|s| s.cpu_pct).sum();
                        let s = Step {
                            offered: rate,
                            received: t.samples_per_s,
                            lost: t.lost,
                            p50_us: lat.as_ref().map(|l| l.p50_us),
                            p99_us: lat.as_ref().map(|l| l.p99_us),
                        };
                        let kept_up = s.received >= rate * (1.0 - tol) && s.lost == 0;
                        if kept_up {
                            state[k].failures = 0;
                            state[k].best = Some((t, lat));
                            state[k].procs = procs;
                        } else {
                            state[k].failures += 1;
                        }
                        state[k].cpu.push([rate, cpu]);
                        state[k].steps.push(s);
                    }
                    Ok((None, workers, _, _)) => {
                        state[k].failures += 1;
                        state[k].errors.push(format!(
                            "no subscriber data at {rate}/s: {}",
                            tail_all(&workers)
                        ));
                        state[k].steps.push(Step {
                            offered: rate,
                            received: 0.0,
                            lost: 0,
                            p50_us: None,
                            p99_us: None,
                        });
                    }
                    Err(e) => state[k].errors.push(format!("{e:#}")),
                }
            }
            if !any {
                break;
            }
            rate += step;
        }
        group
            .iter()
            .zip(state)
            .map(|(p, st)| {
                let mut point = Point::new(&exp.name, exp.kind, p.pair, p.params.clone(), p.round);
                let msr = stats::max_sustainable_rate(&st.steps, tol);
                if let Some(m) = msr {
                    point.metrics.insert("max_sustainable_rate".into(), m);
                }
                if let Some(k) = stats::knee_rate(&st.steps) {
                    point.metrics.insert("knee_rate".into(), k);
                }
                let last_ok = st.steps.iter().map(|s| s.offered).fold(0.0, f64::max);
                point.metrics.insert("highest_rate_tried".into(), last_ok);
                point.series.insert(
                    "steps".into(),
                    st.steps.iter().map(|s| [s.offered, s.received]).collect(),
                );
                point.series.insert(
                    "step_p50_us".into(),
                    st.steps
                        .iter()
                        .filter_map(|s| s.p50_us.map(|v| [s.offered, v]))
                        .collect(),
                );
                point.series.insert(
                    "step_p99_us".into(),
                    st.steps
                        .iter()
                        .filter_map(|s| s.p99_us.map(|v| [s.offered, v]))
                        .collect(),
                );
                point.series.insert("step_cpu_pct".into(), st.cpu);
                if let Some((t, l)) = st.best {
                    point.throughput = Some(t);
                    point.latency = l;
                }
                point.procs = st.procs;
                if msr.is_none() {
                    point.ok = false;
                    point.error = Some(if st.errors.is_empty() {
                        format!("did not keep up even at the first step ({start}/s)")
                    } else {
                        st.errors.join("; ")
                    });
                } else if !st.errors.is_empty() {
                    point.error = Some(st.errors.join("; "));
                }
                point.wall_s = st.t0.elapsed().as_secs_f64();
                point
            })
            .collect()
    }
}
