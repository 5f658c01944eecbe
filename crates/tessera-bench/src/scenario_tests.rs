//! Tests of `scenario.rs`: presets, scenario files, the axes and settings each kind takes,
//! and the planned points.

use super::*;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, "test")
}

#[test]
fn latency_takes_a_round_trip_count() {
    let s = parse(
        "[[experiment]]\nname = \"l\"\nkind = \"latency\"\ncount = 10000\nsubscribers = [2, 4]",
    )
    .unwrap();
    assert_eq!(s.experiments[0].settings.get("count"), Some(&10_000.0));
    let s = parse("[[experiment]]\nname = \"l\"\nkind = \"latency\"").unwrap();
    assert_eq!(s.experiments[0].settings.get("count"), None);
    for (bad, why) in [
        ("kind = \"latency\"\ncount = 0", "count must be"),
        ("kind = \"latency\"\ncount = -5", ""),
        ("kind = \"throughput\"\ncount = 100", "not a parameter"),
    ] {
        let e = parse(&format!("[[experiment]]\nname = \"l\"\n{bad}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
    // A Rust peer cannot ping several pongers; Tessera and the C worker can.
    let s = parse(
        "pairs = [\"tessera\", \"cyclone-c\", \"rustdds\", \"zenoh\"]\n\
         [[experiment]]\nname = \"l\"\nkind = \"latency\"\nsubscribers = [1, 2]",
    )
    .unwrap();
    let planned: Vec<String> = s
        .plan()
        .iter()
        .map(|p| format!("{}/{}", p.pair.label(), p.params["subscribers"]))
        .collect();
    for want in ["tessera/2", "cyclone-c/2", "rustdds/1", "zenoh/1"] {
        assert!(planned.contains(&want.to_string()), "{planned:?}");
    }
    assert!(!planned.iter().any(|p| p == "rustdds/2" || p == "zenoh/2"));
}

#[test]
fn a_throughput_warm_up_is_whole_seconds() {
    let s = parse("[[experiment]]\nname = \"t\"\nkind = \"throughput\"\nwarmup_s = 3").unwrap();
    assert_eq!(s.experiments[0].settings.get("warmup_s"), Some(&3.0));
    let s = parse("[[experiment]]\nname = \"t\"\nkind = \"throughput\"").unwrap();
    assert_eq!(s.experiments[0].settings.get("warmup_s"), Some(&1.0));
    for bad in ["0.5", "0", "61"] {
        let e = parse(&format!(
            "[[experiment]]\nname = \"t\"\nkind = \"throughput\"\nwarmup_s = {bad}"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("whole number of seconds"), "{bad}: {e}");
    }
}

#[test]
fn the_atomic_pair_runs_reliable_latency_throughput_and_reliability_with_itself_only() {
    let s = parse(
        r#"
        rounds = 1
        pairs = ["tessera-atomic", "tessera", "tessera-atomic>tessera"]
        [[experiment]]
        name = "lat"
        kind = "latency"
        size = 16
        subscribers = [1, 6]
        reliability = ["reliable", "best_effort"]
        [[experiment]]
        name = "nasa"
        kind = "rate_step"
        case = ["a", "c"]
        [[experiment]]
        name = "rel"
        kind = "reliability"
        phase = "steady"
        [[experiment]]
        name = "disc"
        kind = "discovery"
        participants = 2
        "#,
    )
    .unwrap();
    let atomic: Vec<String> = s
        .plan()
        .iter()
        .filter(|p| p.pair.writer == Implementation::TesseraAtomic)
        .map(|p| {
            let e = &s.experiments[p.experiment];
            let rel = p.params.get("reliability").and_then(Value::as_str);
            let subs = p.params.get("subscribers").and_then(Value::as_u64);
            format!("{}/{}/{rel:?}/{subs:?}", e.name, p.pair.label())
        })
        .collect();
    assert_eq!(
        atomic,
        [
            "lat/tessera-atomic/Some(\"reliable\")/Some(1)",
            "lat/tessera-atomic/Some(\"reliable\")/Some(6)",
            "rel/tessera-atomic/None/None",
        ]
    );
    let skipped = s.skipped().join("\n");
    for why in [
        "reliable by construction",
        "pairs only with itself",
        "no rate_step experiment",
        "no discovery experiment",
    ] {
        assert!(skipped.contains(why), "{why}: {skipped}");
    }
    // EVENTUAL Tessera still runs the best-effort cells.
    assert!(s.plan().iter().any(|p| p.pair.label() == "tessera"
        && p.params.get("reliability").and_then(Value::as_str) == Some("best_effort")));
}

#[test]
fn the_consistency_preset_covers_the_issue_and_its_criteria_parse() {
    let (name, _, text) = PRESETS
        .iter()
        .find(|(n, _, _)| *n == "consistency")
        .unwrap();
    let s = Scenario::parse(text, name).unwrap();
    let plan = s.plan();
    let cells = |exp: &str, axis: &str| -> Vec<u64> {
        let mut v: Vec<u64> = plan
            .iter()
            .filter(|p| {
                s.experiments[p.experiment].name == exp
                    && p.pair.writer == Implementation::TesseraAtomic
                    && p.round == 0
            })
            .filter_map(|p| p.params.get(axis).and_then(Value::as_u64))
            .collect();
        v.dedup();
        v
    };
    assert_eq!(cells("latency-payload", "size"), [16, 1024, 8192, 65536]);
    assert_eq!(cells("latency-members", "subscribers"), [1, 2, 4, 6]);
    assert_eq!(cells("throughput", "size"), [4096, 65536]);
    assert_eq!(cells("reliability", "rate"), [1000]);
    assert!(s.skipped().is_empty(), "{:?}", s.skipped());
    // Every `# expect = ` line parses and names an experiment (and cell values) it has.
    let mut n = 0;
    for line in text.lines() {
        let Some(c) = line.strip_prefix("# expect = ") else {
            continue;
        };
        let c = crate::expect::Criterion::parse(c).unwrap_or_else(|e| panic!("{c}: {e}"));
        let exp = c.experiment.as_deref().expect("scoped to an experiment");
        let e = s.experiments.iter().find(|e| e.name == exp);
        let e = e.unwrap_or_else(|| panic!("{}: no experiment {exp}", c.text));
        for (param, values) in &c.cell_filter {
            let axis = e.axes.iter().find(|(a, _)| a == param);
            let (_, have) = axis.unwrap_or_else(|| panic!("{}: no axis {param}", c.text));
            let have: Vec<String> = have.iter().map(crate::results::value_text).collect();
            assert!(values.iter().all(|v| have.contains(v)), "{}", c.text);
        }
        n += 1;
    }
    assert_eq!(n, 5);
}

#[test]
fn every_preset_parses_and_plans() {
    for (name, _, text) in PRESETS {
        let s = Scenario::parse(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!s.plan().is_empty(), "{name} plans nothing");
    }
}

#[test]
fn axes_expand_to_the_cartesian_product_and_pairs_interleave() {
    let s = parse(
        r#"
        rounds = 2
        pairs = ["tessera", "cyclone"]
        [[experiment]]
        name = "lat"
        kind = "latency"
        size = [16, 1024]
        reliability = ["reliable", "best_effort"]
        "#,
    )
    .unwrap();
    let plan = s.plan();
    assert_eq!(plan.len(), 2 * 2 * 2 * 2);
    // A B A B within a round.
    assert_eq!(plan[0].pair.label(), "tessera");
    assert_eq!(plan[1].pair.label(), "cyclone");
    assert_eq!(plan[0].params, plan[1].params);
    assert_eq!(plan[0].round, 0);
    assert_eq!(plan.last().unwrap().round, 1);
}

#[test]
fn applications_and_the_federated_architecture_plan_for_tessera_only() {
    let s = parse(
        r#"
        pairs = ["tessera", "cyclone", "udp"]
        rounds = 1
        [[experiment]]
        name = "apps"
        kind = "throughput"
        hosts = 2
        applications = [1, 16]
        architecture = ["decentralized", "federated"]
        rate = 1000
        "#,
    )
    .unwrap();
    let plan = s.plan();
    let cells = |pair: &str, arch: &str| {
        plan.iter()
            .filter(|p| p.pair.label() == pair && p.params["architecture"] == arch)
            .count()
    };
    assert_eq!(cells("tessera", "federated"), 2);
    assert_eq!(cells("tessera", "decentralized"), 2);
    assert_eq!(cells("cyclone", "federated"), 0);
    assert_eq!(cells("cyclone", "decentralized"), 2);
    // The raw floor has one publisher and no node.
    assert_eq!(cells("udp", "decentralized"), 1);
    let skipped = s.skipped().join("\n");
    assert!(skipped.contains("node service"), "{skipped}");
    assert!(skipped.contains("one publisher"), "{skipped}");
    // A plain throughput experiment keeps its columns: no applications/architecture axis.
    let plain = parse("[[experiment]]\nname = \"t\"\nkind = \"throughput\"\n").unwrap();
    assert!(plain
        .plan()
        .iter()
        .all(|p| !p.params.contains_key("architecture") && !p.params.contains_key("applications")));
    for bad in [
        "applications = 0",
        "applications = 65",
        "architecture = \"centralized\"",
    ] {
        let text = format!("[[experiment]]\nname = \"t\"\nkind = \"throughput\"\n{bad}\n");
        assert!(parse(&text).is_err(), "{bad} was accepted");
    }
    let lat = "[[experiment]]\nname = \"l\"\nkind = \"latency\"\narchitecture = \"federated\"\n";
    assert!(parse(lat).is_ok());
}

#[test]
fn udp_and_cyclone_limits_are_reported_not_planned() {
    let s = parse(
        r#"
        pairs = ["tessera", "cyclone", "udp"]
        rounds = 1
        [[experiment]]
        name = "lj"
        kind = "late_joiner"
        [[experiment]]
        name = "fan"
        kind = "throughput"
        subscribers = [1, 4]
        "#,
    )
    .unwrap();
    let plan = s.plan();
    assert!(plan
        .iter()
        .all(|p| !(s.experiments[p.experiment].kind == Kind::LateJoiner
            && p.pair.writer != Implementation::Tessera)));
    let skipped = s.skipped().join("\n");
    assert!(skipped.contains("TRANSIENT_LOCAL"), "{skipped}");
    assert!(skipped.contains("one subscriber"), "{skipped}");
}

#[test]
fn fastdds_pairs_run_latency_and_throughput_only() {
    let s = parse(
        r#"
        pairs = ["fastdds", "tessera>fastdds", "fastdds-udp>cyclone", "tessera"]
        rounds = 1
        notes = ["a note"]
        [[experiment]]
        name = "lat"
        kind = "latency"
        [[experiment]]
        name = "tp"
        kind = "throughput"
        subscribers = [1, 2]
        [[experiment]]
        name = "steps"
        kind = "rate_step"
        [[experiment]]
        name = "disc"
        kind = "discovery"
        participants = 2
        "#,
    )
    .unwrap();
    assert_eq!(s.notes, vec!["a note".to_string()]);
    let plan = s.plan();
    let planned = |exp: &str| {
        plan.iter()
            .filter(|p| s.experiments[p.experiment].name == exp)
            .map(|p| p.pair.label())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        planned("lat"),
        [
            "fastdds",
            "tessera>fastdds",
            "fastdds-udp>cyclone",
            "tessera"
        ]
    );
    assert_eq!(planned("tp").len(), 8);
    // Rate stepping sends pings among the data; discovery has no fastdds-perf mode.
    assert_eq!(planned("steps"), ["tessera"]);
    assert_eq!(planned("disc"), ["tessera"]);
    let skipped = s.skipped().join("\n");
    assert!(skipped.contains("steps: Fast DDS skipped"), "{skipped}");
    assert!(skipped.contains("no discovery experiment"), "{skipped}");
    assert!(parse_pairs(&["fastdds>opendds".to_string()]).is_err());
}

#[test]
fn loan_pairs_run_latency_and_throughput_of_their_sizes_only() {
    let s = parse(
        r#"
        pairs = ["tessera-loan", "tessera-loan-spin", "tessera-loan>tessera"]
        rounds = 1
        [[experiment]]
        name = "lat"
        kind = "latency"
        size = [16, 100, 4194304]
        [[experiment]]
        name = "disc"
        kind = "discovery"
        participants = 2
        "#,
    )
    .unwrap();
    let plan = s.plan();
    let planned: Vec<(String, u64)> = plan
        .iter()
        .map(|p| (p.pair.label(), p.params["size"].as_u64().unwrap()))
        .collect();
    let want = |l: &str, n| (l.to_string(), n);
    assert_eq!(
        planned,
        [
            want("tessera-loan", 16),
            want("tessera-loan-spin", 16),
            want("tessera-loan", 4194304),
            want("tessera-loan-spin", 4194304)
        ]
    );
    let skipped = s.skipped().join("\n");
    assert!(skipped.contains("pairs only with itself"), "{skipped}");
    assert!(skipped.contains("no type of 100 B"), "{skipped}");
    assert!(skipped.contains("no discovery experiment"), "{skipped}");
}

#[test]
fn the_peers_preset_covers_every_implementation_in_every_cell() {
    let s = Scenario::load("peers").unwrap();
    let plan = s.plan();
    let labels = |exp: &str| {
        let mut v: Vec<String> = plan
            .iter()
            .filter(|p| s.experiments[p.experiment].name == exp)
            .map(|p| p.pair.label())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let same = [
        "cyclone",
        "cyclone-c",
        "dust_dds",
        "fastdds",
        "fastdds-udp",
        "rustdds",
        "tessera",
        "udp",
        "zenoh",
    ];
    let with = |extra: &[&str]| {
        let mut v: Vec<String> = same.iter().chain(extra).map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    // RustDDS pairs with Tessera in throughput only (no PARTITION for the pongs); a
    // timestamp through dust_dds loses ddsperf's odd answer-me flag: both are skipped
    // with a note.
    assert_eq!(
        labels("latency"),
        with(&[
            "cyclone-c>tessera",
            "fastdds>tessera",
            "tessera>cyclone-c",
            "tessera>fastdds"
        ])
    );
    assert_eq!(
        labels("throughput"),
        with(&[
            "fastdds>tessera",
            "tessera>fastdds",
            "rustdds>tessera",
            "tessera>rustdds",
            "dust_dds>tessera",
            "tessera>dust_dds"
        ])
    );
    assert_eq!(
        labels("fan_out"),
        [
            "cyclone",
            "cyclone-c",
            "dust_dds",
            "fastdds",
            "fastdds-udp",
            "rustdds",
            "tessera",
            "zenoh"
        ]
    );
    assert_eq!(labels("latency_1_to_n"), ["cyclone-c", "tessera"]);
    let one_to_n = &s.experiments[3];
    assert_eq!(one_to_n.settings.get("count"), Some(&10_000.0));
    assert_eq!(plan.len(), 3 * 13 + 3 * 15 + 8 + 2 * 2);
    let skipped = s.skipped();
    for gap in [
        "latency: Tessera → RustDDS skipped: RustDDS 0.15 has no PARTITION",
        "latency: Tessera → dust_dds skipped: ddsperf's answer-me flag",
    ] {
        assert!(skipped.iter().any(|n| n.starts_with(gap)), "{gap}");
    }
}

#[test]
fn nasa_cases_expand() {
    let s = parse(
        r#"
        [[experiment]]
        name = "nasa"
        kind = "rate_step"
        case = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
        "#,
    )
    .unwrap();
    assert_eq!(s.experiments[0].cells().len(), 9);
    assert_eq!(nasa_case("e"), Some((70_000, "reliable", "polling")));
}

#[test]
fn errors_name_the_problem() {
    let cases: &[(&str, &str)] = &[
        ("rounds = 1", "no [[experiment]]"),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"latncy\"",
            "unknown kind",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"latency\"\nsizes = [1]",
            "unknown field",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"latency\"\ninstances = 5",
            "not a parameter of a latency",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"latency\"\nsize = 0",
            "outside 1 B",
        ),
        (
            "pairs = [\"opendds\"]\n[[experiment]]\nname = \"x\"\nkind = \"latency\"",
            "unknown pair",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"throughput\"\nreliability = \"sure\"",
            "is not one of",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"throughput\"\nhistory = \"keep_last_0\"",
            "keep_last_N",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"rate_step\"\ncase = \"z\"",
            "NASA",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"rate_step\"\ncase = \"a\"\ninstances = 2",
            "case sets",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"latency\"\n[[experiment]]\nname = \"x\"\nkind = \"latency\"",
            "duplicate",
        ),
        ("loss_pct = 100\n[[experiment]]\nname = \"x\"\nkind = \"latency\"", "loss_pct"),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"discovery\"\nparticipants = 1",
            "outside 2..=100",
        ),
        (
            "[[experiment]]\nname = \"x\"\nkind = \"latency\"\nsize = [\"big\"]",
            "size",
        ),
    ];
    for (text, want) in cases {
        let err = parse(text).expect_err(text).to_string();
        assert!(err.contains(want), "{text:?}: {err:?} lacks {want:?}");
    }
    assert!(matches!(
        Scenario::load("no-such-preset"),
        Err(ScenarioError::Unknown(_))
    ));
}

#[test]
fn reliability_runs_on_two_hosts_at_least() {
    let s = parse("[[experiment]]\nname = \"r\"\nkind = \"reliability\"").unwrap();
    assert_eq!(s.experiments[0].hosts, Some(2));
    assert_eq!(s.experiments[0].cells().len(), 3);
}

#[test]
fn dropping_cyclone_removes_mixed_pairs_too() {
    let mut s = parse(
        "pairs = [\"tessera\", \"cyclone\", \"tessera>cyclone\"]\n[[experiment]]\nname = \"x\"\nkind = \"latency\"",
    )
    .unwrap();
    assert!(s.drop_implementation(Implementation::Cyclone));
    assert_eq!(
        s.experiments[0].pairs,
        vec![Pair::same(Implementation::Tessera)]
    );
}
