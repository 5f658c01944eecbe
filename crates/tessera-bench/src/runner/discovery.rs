//! The discovery experiments (participants matching, with or without a discovery server) and
//! the late joiner.

use super::*;

impl Ctx<'_> {
    pub(super) fn discovery(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        point: &mut Point,
    ) -> anyhow::Result<()> {
        let n = param_u64(&p.params, "participants", 2) as usize;
        let centralized = param_str(&p.params, "architecture", "decentralized") == "centralized";
        let timeout = exp.setting("timeout_s", 30.0);
        let nhosts = topo.hosts().len();
        let traffic_before = discovery_traffic(topo);
        // Centralized: the implementation's own discovery server on host 0, and every
        // participant a client of it through ROS_DISCOVERY_SERVER (which both Tessera and Fast
        // DDS read).
        let server = if centralized {
            Some(self.discovery_server(topo, p.pair.writer, timeout)?)
        } else {
            None
        };
        let server_env = server.as_ref().map(|(_, addr)| addr.clone());
        let t0 = Instant::now();
        let mut workers = Vec::new();
        let mut offsets = Vec::new();
        for i in 0..n {
            let args = strings(&["-D", &(timeout.ceil() as u64 + 5).to_string(), "pong"]);
            offsets.push(t0.elapsed().as_secs_f64());
            let mut cmd = self.perf_command(topo, i % nhosts, p.pair.writer, &args, true)?;
            if let Some(addr) = &server_env {
                cmd.env("ROS_DISCOVERY_SERVER", addr);
            }
            workers.push(Self::spawn_worker(
                cmd,
                &format!("participant{}", i + 1),
                p.pair.writer,
                Capture::Lines,
            )?);
        }
        let mut done: Vec<Option<f64>> = vec![None; n];
        while t0.elapsed().as_secs_f64() < timeout && done.iter().any(Option::is_none) {
            std::thread::sleep(Duration::from_millis(20));
            for (i, w) in workers.iter().enumerate() {
                if done[i].is_some() {
                    continue;
                }
                let own = w.proc.pid();
                let mut seen = BTreeSet::new();
                for (t, line) in w.proc.lines() {
                    for pl in parse_output(w.implementation, &line).participants_new {
                        if pl.peer_pid != own {
                            seen.insert((pl.host.clone(), pl.peer_pid));
                        }
                    }
                    if seen.len() + 1 >= n {
                        done[i] = Some(offsets[i] + t);
                        break;
                    }
                }
            }
        }
        let traffic_after = discovery_traffic(topo);
        for w in &mut workers {
            w.proc.kill();
        }
        let mut all_procs: Vec<&Worker> = workers.iter().collect();
        let mut server = server.map(|(w, _)| w);
        if let Some(s) = server.as_mut() {
            s.stop();
        }
        if let Some(s) = server.as_ref() {
            all_procs.push(s);
            let cpu = s
                .proc
                .stats()
                .map(|st| st.cpu_user_s + st.cpu_sys_s)
                .unwrap_or(0.0);
            point.metrics.insert("server_cpu_s".into(), cpu);
        }
        point.procs = collect_stats(&all_procs);
        if let (Some(a), Some(b)) = (traffic_before, traffic_after) {
            point.metrics.insert(
                "discovery_datagrams".into(),
                b.datagrams.saturating_sub(a.datagrams) as f64,
            );
            point.metrics.insert(
                "discovery_bytes".into(),
                b.bytes.saturating_sub(a.bytes) as f64,
            );
        }
        let mut times: Vec<f64> = done.iter().flatten().map(|s| s * 1000.0).collect();
        if times.len() < n {
            anyhow::bail!(
                "{} of {n} participants did not discover all others within {timeout} s",
                n - times.len()
            );
        }
        let all = times.iter().copied().fold(0.0, f64::max);
        point.metrics.insert("discovery_ms".into(), all);
        if let Some(m) = crate::results::median_of(&mut times) {
            point.metrics.insert("discovery_median_ms".into(), m);
        }
        Ok(())
    }

    /// Starts `implementation`'s discovery server on host 0 (Tessera's `tessera
    /// discovery-server`, Fast DDS's `fast-discovery-server`) and waits until it says it runs.
    /// Returns the server and the `ROS_DISCOVERY_SERVER` value that reaches it.
    pub(super) fn discovery_server(
        &self,
        topo: &Topology,
        implementation: Implementation,
        timeout: f64,
    ) -> anyhow::Result<(Worker, String)> {
        let server = ServerSpec {
            id: 0,
            port: 11811,
            extra: Vec::new(),
        };
        self.discovery_server_as(topo, implementation, &server, timeout)
    }

    /// [`Self::discovery_server`] with the server's id, port and further options of `spec`.
    pub(super) fn discovery_server_as(
        &self,
        topo: &Topology,
        implementation: Implementation,
        spec: &ServerSpec,
        timeout: f64,
    ) -> anyhow::Result<(Worker, String)> {
        let addr = topo.hosts()[0].addr.to_string();
        let port = spec.port.to_string();
        let program: PathBuf = if implementation.is_tessera() {
            self.opts.tessera_exe.clone()
        } else if implementation.is_fastdds() {
            PathBuf::from("fast-discovery-server")
        } else {
            anyhow::bail!("{} has no discovery server", implementation.display());
        };
        let mut cmd = topo.command(0, &program);
        if implementation.is_tessera() {
            cmd.arg("discovery-server");
        }
        cmd.args(["-i", &spec.id.to_string(), "-l", &addr, "-p", &port])
            .args(&spec.extra);
        // Server 0 keeps the role (and log name) it always had.
        let role = match spec.id {
            0 => "server".to_string(),
            id => format!("server{id}"),
        };
        let server = Self::spawn_worker(cmd, &role, implementation, Capture::Lines)?;
        wait_for_line(&server, "Server is running", secs(timeout.min(10.0)))
            .with_context(|| format!("discovery server {} did not start", spec.id))?;
        Ok((server, format!("{addr}:{port}")))
    }

    pub(super) fn late_joiner(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        point: &mut Point,
    ) -> anyhow::Result<()> {
        let samples = param_u64(&p.params, "samples", 100);
        let size = param_u64(&p.params, "size", 64);
        let timeout = exp.setting("timeout_s", 20.0);
        let writer = self.tool(
            topo,
            0,
            &strings(&[
                "worker",
                "late-writer",
                "--samples",
                &samples.to_string(),
                "--size",
                &size.to_string(),
                "--duration",
                &(timeout.ceil() as u64 + 30).to_string(),
            ]),
            "writer",
            Implementation::Tessera,
            Capture::Lines,
        )?;
        let t0 = Instant::now();
        while !writer
            .proc
            .lines()
            .iter()
            .any(|(_, l)| l.contains("\"ready\""))
        {
            if t0.elapsed() > secs(timeout) {
                anyhow::bail!(
                    "the writer did not get ready: {}",
                    tail(&writer.proc.output())
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut reader = self.tool(
            topo,
            Self::reader_host(topo, 0),
            &strings(&[
                "worker",
                "late-reader",
                "--samples",
                &samples.to_string(),
                "--timeout",
                &format!("{timeout}"),
            ]),
            "reader",
            Implementation::Tessera,
            Capture::File(self.log_path(seq, &exp.name, p.pair, "reader")),
        )?;
        let code = reader.proc.wait_timeout(secs(timeout + 10.0));
        let mut writer = writer;
        writer.proc.kill();
        reader.proc.kill();
        std::fs::write(
            self.log_path(seq, &exp.name, p.pair, "writer"),
            writer.proc.output(),
        )
        .ok();
        point.procs = collect_stats(&[&writer, &reader]);
        let out = reader.proc.output();
        let line = out
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v.get("type").and_then(Value::as_str) == Some("late_joiner"));
        let Some(v) = line else {
            anyhow::bail!(
                "the reader reported nothing (exit {code:?}): {}",
                tail(&out)
            );
        };
        for key in [
            "first_sample_ms",
            "all_samples_ms",
            "participant_ms",
            "received",
        ] {
            if let Some(x) = v.get(key).and_then(Value::as_f64) {
                point.metrics.insert(key.into(), x);
            }
        }
        if code != Some(0) {
            anyhow::bail!(
                "the reader got {:?} of {samples} samples",
                v.get("received")
            );
        }
        Ok(())
    }
}
