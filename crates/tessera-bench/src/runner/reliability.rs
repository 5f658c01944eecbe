//! The reliability experiment: a paced critical flow over a rate-limited link, alone, beside
//! steady background traffic or beside bursts of it: what arrives, what is lost and how late.

use super::*;

impl Ctx<'_> {
    pub(super) fn reliability(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        point: &mut Point,
    ) -> anyhow::Result<()> {
        let phase = param_str(&p.params, "phase", "alone").to_string();
        let rate = param_u64(&p.params, "rate", 20_000);
        let size = param_u64(&p.params, "size", 128);
        let duration = exp.setting("duration_s", 10.0);
        let bg_size = exp.setting("background_size", 8192.0) as u64;
        let on_s = exp.setting("burst_on_s", 1.0);
        let off_s = exp.setting("burst_off_s", 2.0);
        let imp = p.pair.writer;
        // The background is best-effort, which ATOMIC cannot be: beside an ATOMIC critical
        // flow it is plain Tessera (EVENTUAL), on its own domain as always.
        let bg_imp = match imp {
            Implementation::TesseraAtomic => Implementation::Tessera,
            i => i,
        };
        let host_r = Self::reader_host(topo, 0);
        let grace = 30u64;
        let run_s = duration.ceil() as u64;
        let log = |role: &str| Capture::File(self.log_path(seq, &exp.name, p.pair, role));

        let mut workers: Vec<Worker> = Vec::new();
        let crit_sub_args = strings(&[
            "-k",
            "all",
            "-D",
            &(run_s + grace + 5).to_string(),
            "-1",
            "sub",
        ]);
        workers.push(self.perf(
            topo,
            host_r,
            imp,
            &crit_sub_args,
            true,
            "critical_sub",
            log("critical_sub"),
        )?);
        let t_sub = Instant::now();
        if phase != "alone" {
            let bg_sub = strings(&[
                "-i",
                "1",
                "-u",
                "-D",
                &(run_s + grace + 10).to_string(),
                "sub",
            ]);
            workers.push(self.perf(
                topo,
                host_r,
                bg_imp,
                &bg_sub,
                true,
                "background_sub",
                log("background_sub"),
            )?);
            // Paced to offer `background_load` times the link's capacity: the link is
            // saturated, as in the paper, without an unbounded sender drowning everything.
            let link = exp.setting("link_mbit", 100.0);
            let load = exp.setting("background_load", 1.0);
            let bg_rate = (link * 1e6 * load / (bg_size as f64 * 8.0)).ceil().max(1.0) as u64;
            let bg_pub = strings(&[
                "-i",
                "1",
                "-u",
                "-D",
                &(run_s + grace + 10).to_string(),
                "pub",
                &format!("{bg_rate}Hz"),
                "size",
                &bg_size.to_string(),
            ]);
            workers.push(self.perf(
                topo,
                0,
                bg_imp,
                &bg_pub,
                true,
                "background_pub",
                log("background_pub"),
            )?);
            // Let the background saturate the link before the critical flow starts.
            std::thread::sleep(Duration::from_secs(1));
        }
        let crit_pub_args = strings(&[
            "-k",
            "all",
            "-X",
            "-D",
            &run_s.to_string(),
            "-Qminmatch:1",
            "-Qinitwait:20",
            "pub",
            &format!("{rate}Hz"),
            "size",
            &size.max(KS_MIN_SIZE).to_string(),
        ]);
        let pub_offset = t_sub.elapsed().as_secs_f64();
        workers.push(self.perf(
            topo,
            0,
            imp,
            &crit_pub_args,
            true,
            "critical_pub",
            log("critical_pub"),
        )?);
        let crit_pub = workers.len() - 1;

        // Drive the bursts and wait for the critical publisher to finish.
        let t_pub = Instant::now();
        let bg_pub_idx = if phase == "bursty" { Some(2) } else { None };
        let mut paused = false;
        let mut next_toggle = t_pub + secs(0.0);
        loop {
            if let Some(b) = bg_pub_idx {
                if Instant::now() >= next_toggle {
                    let sig = if paused { libc::SIGCONT } else { libc::SIGSTOP };
                    workers[b].proc.signal(sig).ok();
                    paused = !paused;
                    next_toggle = Instant::now() + secs(if paused { off_s } else { on_s });
                }
            }
            if workers[crit_pub]
                .proc
                .wait_timeout(Duration::from_millis(20))
                .is_some()
            {
                break;
            }
            if t_pub.elapsed() > secs(duration + 40.0) {
                break;
            }
        }
        if let Some(b) = bg_pub_idx {
            workers[b].proc.signal(libc::SIGCONT).ok();
        }
        // The critical flow is complete when the subscriber's total stops growing.
        let done_by = Instant::now() + secs(grace as f64);
        let mut last_total = 0u64;
        let mut stable_since = Instant::now();
        while Instant::now() < done_by {
            std::thread::sleep(Duration::from_millis(250));
            let out = workers[0].output();
            let total = out.subs.last().map(|s| s.total).unwrap_or(0);
            if total != last_total {
                last_total = total;
                stable_since = Instant::now();
            } else if total > 0 && stable_since.elapsed() > secs(2.5) {
                break;
            }
        }
        for w in &mut workers {
            w.proc.kill();
        }
        point.procs = collect_stats(&workers.iter().collect::<Vec<_>>());
        let sub_out = workers[0].output();
        let pub_out = workers[crit_pub].output();
        let series: Vec<[f64; 2]> = sub_out
            .subs
            .iter()
            .map(|s| [s.t - pub_offset, s.rate_ksps * 1000.0])
            .collect();
        let Some(last) = sub_out.subs.iter().rev().find(|s| s.delta > 0) else {
            anyhow::bail!(
                "the critical subscriber received nothing: {}",
                tail(&workers[0].proc.output())
            );
        };
        point
            .metrics
            .insert("completion_s".into(), (last.t - pub_offset).max(0.0));
        point
            .metrics
            .insert("critical_received".into(), last.total as f64);
        point
            .metrics
            .insert("critical_loss".into(), last.lost as f64);
        point
            .metrics
            .insert("critical_expected".into(), (rate as f64 * duration).round());
        if let Some(x) = pub_out.extended.last() {
            // ddsperf's -X counts retransmitted bytes; Tessera's twin counts samples.
            let name = match imp {
                Implementation::Cyclone => "retransmit_bytes",
                _ => "retransmits",
            };
            point.metrics.insert(name.into(), x.rexmit as f64);
        }
        let active: Vec<f64> = series
            .iter()
            .filter(|[t, r]| *t > 0.5 && *t <= duration + 0.5 && *r > 0.0)
            .map(|[_, r]| *r)
            .collect();
        let mut sorted = active.clone();
        point.throughput = Some(ThroughputStats {
            samples_per_s: crate::results::median_of(&mut sorted).unwrap_or(0.0),
            mbit_per_s: 0.0,
            per_subscriber: Vec::new(),
            received: last.total,
            lost: last.lost,
            duplicates: None,
            boxplot: stats::rate_boxplot(&active),
            offered_per_s: Some(rate as f64),
        });
        point.series.insert("critical_rate".into(), series);
        // Complete when every sample the publisher says it wrote arrived; a publisher that
        // does not say (ddsperf) is held to its rate, within 1 %. (An ATOMIC publisher whose
        // group formed late writes fewer than rate × duration: 3,959 once, all delivered.)
        let incomplete = match pub_out.published {
            Some(written) => {
                point
                    .metrics
                    .insert("critical_published".into(), written as f64);
                last.total < written
            }
            None => (last.total as f64) < rate as f64 * duration * 0.99,
        };
        if incomplete {
            // Not completed: a completion time would flatter a flow that never finished.
            point.metrics.remove("completion_s");
            anyhow::bail!(
                "critical flow incomplete: {} of {} samples delivered within {grace} s after \
                 the publisher stopped",
                last.total,
                pub_out.published.map_or_else(
                    || format!("about {}", (rate as f64 * duration).round()),
                    |n| format!("{n} written"),
                )
            );
        }
        Ok(())
    }
}
