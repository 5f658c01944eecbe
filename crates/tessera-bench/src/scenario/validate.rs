//! Loading and validating scenarios: presets or files into [`Scenario`], and the per-kind
//! checks that turn each `[[experiment]]` table into an [`Experiment`] with its axes, settings
//! and defaults.

use std::collections::BTreeMap;

use serde_json::Value;

use super::axis_values::{nasa_case, parse_history, parse_pairs, FAILURE_ARCHITECTURES};
use super::file::{ExperimentFile, OneOrMany, ScenarioFile};
use super::presets::PRESETS;
use super::{Experiment, Scenario, ScenarioError};
use crate::results::{Implementation, Kind, Pair};

impl Scenario {
    /// Loads a preset by name, or a scenario file by path.
    pub fn load(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        if let Some((name, _, text)) = PRESETS.iter().find(|(n, _, _)| *n == name_or_path) {
            return Scenario::parse(text, name);
        }
        let path = std::path::Path::new(name_or_path);
        if !path.exists() {
            return Err(ScenarioError::Unknown(name_or_path.to_string()));
        }
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: name_or_path.to_string(),
            source,
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name_or_path.to_string());
        let mut s = Scenario::parse(&text, name_or_path)?;
        if s.name == name_or_path {
            s.name = stem;
        }
        Ok(s)
    }

    /// Parses and validates scenario text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let file: ScenarioFile = toml::from_str(text).map_err(|e| ScenarioError::Toml {
            origin: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let invalid = |experiment: &str, message: String| ScenarioError::Invalid {
            origin: origin.to_string(),
            experiment: experiment.to_string(),
            message,
        };
        let rounds = file.rounds.unwrap_or(3);
        if rounds == 0 || rounds > 1000 {
            return Err(invalid(
                "",
                format!("rounds must be 1..=1000, not {rounds}"),
            ));
        }
        let hosts = file.hosts.unwrap_or(1);
        if hosts == 0 || hosts > 64 {
            return Err(invalid("", format!("hosts must be 1..=64, not {hosts}")));
        }
        let loss_pct = file.loss_pct.unwrap_or(0.0);
        check_loss(loss_pct).map_err(|m| invalid("", m))?;
        let default_pairs = match &file.pairs {
            Some(p) => parse_pairs(p).map_err(|m| invalid("", m))?,
            None => vec![
                Pair::same(Implementation::Tessera),
                Pair::same(Implementation::Cyclone),
            ],
        };
        if file.experiment.is_empty() {
            return Err(invalid("", "no [[experiment]] tables".into()));
        }
        let mut experiments = Vec::new();
        for e in &file.experiment {
            if experiments.iter().any(|x: &Experiment| x.name == e.name) {
                return Err(invalid(&e.name, "duplicate experiment name".into()));
            }
            if e.name.is_empty() || e.name.contains(['|', ',', '/']) {
                return Err(invalid(
                    &e.name,
                    "names must be non-empty, without '|', ',' or '/'".into(),
                ));
            }
            let exp =
                build_experiment(e, &default_pairs, rounds).map_err(|m| invalid(&e.name, m))?;
            experiments.push(exp);
        }
        Ok(Scenario {
            name: file.name.clone().unwrap_or_else(|| origin.to_string()),
            description: file.description.clone().unwrap_or_default(),
            text: text.to_string(),
            hosts,
            loss_pct,
            link_mbit: file.link_mbit,
            notes: file.notes.clone(),
            experiments,
        })
    }
}

fn check_loss(loss: f64) -> Result<(), String> {
    if !(0.0..100.0).contains(&loss) {
        return Err(format!("loss_pct must be in [0, 100), not {loss}"));
    }
    Ok(())
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    Ok(match s {
        "latency" => Kind::Latency,
        "throughput" => Kind::Throughput,
        "rate_step" => Kind::RateStep,
        "discovery" => Kind::Discovery,
        "late_joiner" => Kind::LateJoiner,
        "reliability" => Kind::Reliability,
        "failure" => Kind::Failure,
        other => {
            return Err(format!(
                "unknown kind {other:?} (latency, throughput, rate_step, discovery, \
                 late_joiner, reliability, failure)"
            ))
        }
    })
}

/// Which optional fields each kind accepts (beyond name, kind, pairs, rounds, hosts, loss).
fn allowed_fields(kind: Kind) -> &'static [&'static str] {
    const FLOW: &[&str] = &[
        "size",
        "subscribers",
        "applications",
        "architecture",
        "reliability",
        "history",
        "read_mode",
        "instances",
        "rate",
        "burst",
        "multicast",
        "case",
        "duration_s",
        "warmup_s",
    ];
    match kind {
        Kind::Latency => &[
            "size",
            "subscribers",
            "reliability",
            "read_mode",
            "architecture",
            "duration_s",
            "warmup_s",
            "count",
        ],
        Kind::Throughput => FLOW,
        Kind::RateStep => &[
            "size",
            "subscribers",
            "reliability",
            "history",
            "read_mode",
            "instances",
            "burst",
            "multicast",
            "case",
            "start_rate",
            "step_rate",
            "max_rate",
            "step_duration_s",
            "ping_percent",
            "tolerance",
        ],
        Kind::Discovery => &["participants", "architecture", "timeout_s"],
        Kind::LateJoiner => &["samples", "size", "timeout_s"],
        Kind::Failure => &["architecture", "rate", "size", "duration_s"],
        Kind::Reliability => &[
            "phase",
            "rate",
            "size",
            "link_mbit",
            "background_size",
            "background_load",
            "burst_on_s",
            "burst_off_s",
            "duration_s",
        ],
    }
}

/// The fields of `e` that are set, by name.
fn set_fields(e: &ExperimentFile) -> Vec<&'static str> {
    let mut v = Vec::new();
    macro_rules! check {
        ($($f:ident),*) => { $( if e.$f.is_some() { v.push(stringify!($f)); } )* };
    }
    check!(
        size,
        subscribers,
        applications,
        reliability,
        history,
        read_mode,
        instances,
        rate,
        burst,
        multicast,
        case,
        architecture,
        duration_s,
        warmup_s,
        count,
        start_rate,
        step_rate,
        max_rate,
        step_duration_s,
        ping_percent,
        tolerance,
        participants,
        samples,
        timeout_s,
        phase,
        link_mbit,
        background_size,
        background_load,
        burst_on_s,
        burst_off_s
    );
    v
}

fn one_of(axis: &str, v: &[String], allowed: &[&str]) -> Result<(), String> {
    for x in v {
        if !allowed.contains(&x.as_str()) {
            return Err(format!(
                "{axis}: {x:?} is not one of {}",
                allowed.join(", ")
            ));
        }
    }
    Ok(())
}

fn positive(name: &str, v: f64, max: f64) -> Result<f64, String> {
    if !(v > 0.0 && v <= max) {
        return Err(format!("{name} must be in (0, {max}], not {v}"));
    }
    Ok(v)
}

fn build_experiment(
    e: &ExperimentFile,
    default_pairs: &[Pair],
    rounds: u32,
) -> Result<Experiment, String> {
    let kind = parse_kind(&e.kind)?;
    let allowed = allowed_fields(kind);
    for f in set_fields(e) {
        if !allowed.contains(&f) {
            return Err(format!(
                "{f} is not a parameter of a {} experiment (allowed: {})",
                kind.as_str(),
                allowed.join(", ")
            ));
        }
    }
    let pairs = match &e.pairs {
        Some(p) => parse_pairs(p)?,
        None => default_pairs.to_vec(),
    };
    let rounds = e.rounds.unwrap_or(rounds);
    if rounds == 0 || rounds > 1000 {
        return Err(format!("rounds must be 1..=1000, not {rounds}"));
    }
    if let Some(h) = e.hosts {
        if h == 0 || h > 64 {
            return Err(format!("hosts must be 1..=64, not {h}"));
        }
    }
    if let Some(l) = e.loss_pct {
        check_loss(l)?;
    }
    let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
    let mut settings = BTreeMap::new();
    let mut push_axis = |name: &str, values: Vec<Value>| -> Result<(), String> {
        if values.is_empty() {
            return Err(format!("{name}: the list is empty"));
        }
        axes.push((name.to_string(), values));
        Ok(())
    };

    let sizes = e.size.as_ref().map(OneOrMany::to_vec);
    if let Some(s) = &sizes {
        for &b in s {
            if b == 0 || b > 4 << 20 {
                return Err(format!("size {b} is outside 1 B ..= 4 MiB"));
            }
        }
    }
    let strings = |o: &Option<OneOrMany<String>>, d: &str| -> Vec<String> {
        o.as_ref()
            .map(OneOrMany::to_vec)
            .unwrap_or_else(|| vec![d.to_string()])
    };
    let to_values_u = |v: Vec<u64>| v.into_iter().map(Value::from).collect::<Vec<_>>();
    let to_values_s = |v: Vec<String>| v.into_iter().map(Value::from).collect::<Vec<_>>();

    match kind {
        Kind::Latency => {
            push_axis("size", to_values_u(sizes.unwrap_or(vec![16])))?;
            let subs = e
                .subscribers
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![1]);
            check_subscribers(&subs)?;
            push_axis("subscribers", subs.into_iter().map(Value::from).collect())?;
            let rel = strings(&e.reliability, "reliable");
            one_of("reliability", &rel, &["reliable", "best_effort"])?;
            push_axis("reliability", to_values_s(rel))?;
            let rm = strings(&e.read_mode, "listener");
            one_of("read_mode", &rm, &["listener", "waitset"])?;
            push_axis("read_mode", to_values_s(rm))?;
            if e.architecture.is_some() {
                let arch = strings(&e.architecture, "decentralized");
                one_of("architecture", &arch, &["decentralized", "federated"])?;
                push_axis("architecture", to_values_s(arch))?;
            }
            settings.insert(
                "duration_s".into(),
                positive("duration_s", e.duration_s.unwrap_or(2.0), 3600.0)?,
            );
            let w = e.warmup_s.unwrap_or(0.5);
            if !(0.0..=60.0).contains(&w) {
                return Err(format!("warmup_s must be in [0, 60], not {w}"));
            }
            settings.insert("warmup_s".into(), w);
            if let Some(n) = e.count {
                if !(1..=10_000_000).contains(&n) {
                    return Err(format!("count must be in 1..=10000000, not {n}"));
                }
                settings.insert("count".into(), n as f64);
            }
        }
        Kind::Throughput | Kind::RateStep => {
            push_axis("size", to_values_u(sizes.unwrap_or(vec![16])))?;
            let subs = e
                .subscribers
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![1]);
            check_subscribers(&subs)?;
            push_axis("subscribers", subs.into_iter().map(Value::from).collect())?;
            let hist = strings(&e.history, "keep_all");
            for h in &hist {
                parse_history(h)?;
            }
            push_axis("history", to_values_s(hist))?;
            if let Some(cases) = &e.case {
                if e.instances.is_some() || e.reliability.is_some() || e.read_mode.is_some() {
                    return Err(
                        "case sets instances, reliability and read_mode; do not set \
                                them too"
                            .into(),
                    );
                }
                let cases = cases.to_vec();
                for c in &cases {
                    if nasa_case(c).is_none() {
                        return Err(format!("case {c:?} is not a NASA test case a…i"));
                    }
                }
                push_axis("case", to_values_s(cases))?;
            } else {
                let rel = strings(&e.reliability, "reliable");
                one_of("reliability", &rel, &["reliable", "best_effort"])?;
                push_axis("reliability", to_values_s(rel))?;
                let rm = strings(&e.read_mode, "listener");
                one_of("read_mode", &rm, &["listener", "waitset", "polling"])?;
                push_axis("read_mode", to_values_s(rm))?;
                let inst = e
                    .instances
                    .as_ref()
                    .map(OneOrMany::to_vec)
                    .unwrap_or(vec![1]);
                for &i in &inst {
                    if i == 0 || i > 1_000_000 {
                        return Err(format!("instances {i} is outside 1..=1000000"));
                    }
                }
                push_axis("instances", inst.into_iter().map(Value::from).collect())?;
            }
            let mc = e
                .multicast
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![true]);
            push_axis("multicast", mc.into_iter().map(Value::from).collect())?;
            let burst = e.burst.unwrap_or(1);
            if burst == 0 || burst > 1_000_000 {
                return Err(format!("burst must be 1..=1000000, not {burst}"));
            }
            settings.insert("burst".into(), f64::from(burst));
            if kind == Kind::Throughput {
                // Axes only when asked for, so that other tables keep their columns.
                if let Some(apps) = &e.applications {
                    let apps = apps.to_vec();
                    if let Some(a) = apps.iter().find(|a| !(1..=64).contains(*a)) {
                        return Err(format!("applications {a} is outside 1..=64"));
                    }
                    push_axis("applications", apps.into_iter().map(Value::from).collect())?;
                }
                if e.architecture.is_some() {
                    let arch = strings(&e.architecture, "decentralized");
                    one_of("architecture", &arch, &["decentralized", "federated"])?;
                    push_axis("architecture", to_values_s(arch))?;
                }
                let rates = e.rate.as_ref().map(OneOrMany::to_vec).unwrap_or(vec![0]);
                push_axis("rate", to_values_u(rates))?;
                settings.insert(
                    "duration_s".into(),
                    positive("duration_s", e.duration_s.unwrap_or(3.0), 3600.0)?,
                );
                // Whole seconds: subscribers report once a second, and the first report
                // always counts as warm-up.
                let w = e.warmup_s.unwrap_or(1.0);
                if !(1.0..=60.0).contains(&w) || w.fract() != 0.0 {
                    return Err(format!(
                        "a throughput warmup_s is a whole number of seconds in 1..=60, not {w}"
                    ));
                }
                settings.insert("warmup_s".into(), w);
            } else {
                let start = e.start_rate.unwrap_or(10_000) as f64;
                let step = e.step_rate.unwrap_or(10_000) as f64;
                let max = e.max_rate.unwrap_or(200_000) as f64;
                positive("start_rate", start, 1e9)?;
                positive("step_rate", step, 1e9)?;
                if max < start {
                    return Err(format!("max_rate {max} is below start_rate {start}"));
                }
                if (max - start) / step > 200.0 {
                    return Err("more than 200 rate steps; raise step_rate".into());
                }
                settings.insert("start_rate".into(), start);
                settings.insert("step_rate".into(), step);
                settings.insert("max_rate".into(), max);
                settings.insert(
                    "step_duration_s".into(),
                    positive("step_duration_s", e.step_duration_s.unwrap_or(2.0), 600.0)?,
                );
                let pp = e.ping_percent.unwrap_or(1.0);
                if !(0.0..=100.0).contains(&pp) {
                    return Err(format!("ping_percent must be in [0, 100], not {pp}"));
                }
                settings.insert("ping_percent".into(), pp);
                let tol = e.tolerance.unwrap_or(0.02);
                if !(0.0..1.0).contains(&tol) {
                    return Err(format!("tolerance must be in [0, 1), not {tol}"));
                }
                settings.insert("tolerance".into(), tol);
            }
        }
        Kind::Discovery => {
            let n = e
                .participants
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![2, 5, 10]);
            for &p in &n {
                if !(2..=100).contains(&p) {
                    return Err(format!("participants {p} is outside 2..=100"));
                }
            }
            push_axis("participants", n.into_iter().map(Value::from).collect())?;
            let arch = strings(&e.architecture, "decentralized");
            one_of("architecture", &arch, &["decentralized", "centralized"])?;
            push_axis("architecture", to_values_s(arch))?;
            settings.insert(
                "timeout_s".into(),
                positive("timeout_s", e.timeout_s.unwrap_or(30.0), 600.0)?,
            );
        }
        Kind::Failure => {
            let arch = strings(&e.architecture, "decentralized");
            one_of("architecture", &arch, FAILURE_ARCHITECTURES)?;
            push_axis("architecture", to_values_s(arch))?;
            let rates = e.rate.as_ref().map(OneOrMany::to_vec).unwrap_or(vec![500]);
            if let Some(r) = rates.iter().find(|r| !(10..=10_000).contains(*r)) {
                return Err(format!("rate {r} is outside 10..=10000 samples/s"));
            }
            push_axis("rate", to_values_u(rates))?;
            push_axis("size", to_values_u(sizes.unwrap_or(vec![64])))?;
            settings.insert(
                "duration_s".into(),
                positive("duration_s", e.duration_s.unwrap_or(2.5), 60.0)?,
            );
        }
        Kind::LateJoiner => {
            let n = e
                .samples
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![100]);
            for &s in &n {
                if s == 0 || s > 1_000_000 {
                    return Err(format!("samples {s} is outside 1..=1000000"));
                }
            }
            push_axis("samples", n.into_iter().map(Value::from).collect())?;
            push_axis("size", to_values_u(sizes.unwrap_or(vec![64])))?;
            settings.insert(
                "timeout_s".into(),
                positive("timeout_s", e.timeout_s.unwrap_or(20.0), 600.0)?,
            );
        }
        Kind::Reliability => {
            let phases = strings(&e.phase, "alone");
            let phases = if e.phase.is_none() {
                vec!["alone".into(), "steady".into(), "bursty".into()]
            } else {
                phases
            };
            one_of("phase", &phases, &["alone", "steady", "bursty"])?;
            push_axis("phase", to_values_s(phases))?;
            let rates = e
                .rate
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![20_000]);
            for &r in &rates {
                if r == 0 {
                    return Err("the critical rate must be > 0".into());
                }
            }
            push_axis("rate", to_values_u(rates))?;
            push_axis("size", to_values_u(sizes.unwrap_or(vec![128])))?;
            let link = positive("link_mbit", e.link_mbit.unwrap_or(100.0), 100_000.0)?;
            push_axis("link_mbit", vec![Value::from(link)])?;
            settings.insert("link_mbit".into(), link);
            settings.insert(
                "background_size".into(),
                e.background_size.unwrap_or(8192) as f64,
            );
            settings.insert(
                "background_load".into(),
                positive("background_load", e.background_load.unwrap_or(1.0), 100.0)?,
            );
            settings.insert(
                "burst_on_s".into(),
                positive("burst_on_s", e.burst_on_s.unwrap_or(1.0), 600.0)?,
            );
            settings.insert(
                "burst_off_s".into(),
                positive("burst_off_s", e.burst_off_s.unwrap_or(2.0), 600.0)?,
            );
            settings.insert(
                "duration_s".into(),
                positive("duration_s", e.duration_s.unwrap_or(10.0), 3600.0)?,
            );
        }
    }
    let hosts = match kind {
        // The reliability test needs a link to saturate: two hosts at least.
        Kind::Reliability => Some(e.hosts.unwrap_or(2).max(2)),
        _ => e.hosts,
    };
    if let Some(h) = hosts {
        axes.push(("hosts".into(), vec![Value::from(h)]));
    }
    Ok(Experiment {
        name: e.name.clone(),
        kind,
        pairs,
        rounds,
        hosts,
        loss_pct: e.loss_pct,
        axes,
        settings,
    })
}

fn check_subscribers(subs: &[u32]) -> Result<(), String> {
    for &s in subs {
        if s == 0 || s > 64 {
            return Err(format!("subscribers {s} is outside 1..=64"));
        }
    }
    Ok(())
}
