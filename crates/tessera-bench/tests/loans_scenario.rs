//! `docs/bench/loans.toml` states issue 8's loan targets as `--expect` criteria (its
//! `# expect = …` lines): each must parse, name an experiment of the file, and only pairs that
//! experiment plans, so that no criterion of the documented command fails with "no data".

use tessera_bench::expect::{Criterion, Metric};
use tessera_bench::scenario::Scenario;

#[test]
fn the_loans_scenario_states_criteria_it_can_check() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bench/loans.toml");
    let s = Scenario::load(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let text = std::fs::read_to_string(path).unwrap();
    let criteria: Vec<Criterion> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# expect = "))
        .map(|c| Criterion::parse(c).unwrap_or_else(|e| panic!("{c}: {e}")))
        .collect();
    assert_eq!(criteria.len(), 7, "the issue's targets and failed==0");
    let plan = s.plan();
    for c in &criteria {
        let pairs: Vec<&str> = match &c.metric {
            Metric::PairScalar { pair, .. } => vec![pair],
            Metric::PairRatio { num, den, .. } => vec![num, den],
            Metric::Failed => continue,
            other => panic!(
                "{}: {other:?} compares with Cyclone, not in this file",
                c.text
            ),
        };
        let exp = c
            .experiment
            .as_deref()
            .expect("every target names its experiment");
        for pair in pairs {
            assert!(
                plan.iter()
                    .any(|p| { s.experiments[p.experiment].name == exp && p.pair.label() == pair }),
                "{}: {pair} is not planned in {exp}",
                c.text
            );
        }
    }
    // The four loan sizes of the targets are planned for the spinning loan pair.
    let sizes: Vec<u64> = plan
        .iter()
        .filter(|p| {
            p.pair.label() == "tessera-loan-spin"
                && s.experiments[p.experiment].kind == tessera_bench::results::Kind::Latency
        })
        .filter_map(|p| p.params["size"].as_u64())
        .collect();
    for size in [16, 65536, 4194304] {
        assert!(sizes.contains(&size), "{size} in {sizes:?}");
    }
}
