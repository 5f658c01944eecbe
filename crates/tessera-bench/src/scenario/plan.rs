//! Expansion into points: an experiment's cells, and the planned measurements of a scenario
//! in run order with the cells left out.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Experiment, Planned, Scenario};

impl Experiment {
    /// The cells: the cartesian product of the axes.
    pub fn cells(&self) -> Vec<BTreeMap<String, Value>> {
        let mut cells = vec![BTreeMap::new()];
        for (name, values) in &self.axes {
            let mut next = Vec::with_capacity(cells.len() * values.len());
            for cell in &cells {
                for v in values {
                    let mut c = cell.clone();
                    c.insert(name.clone(), v.clone());
                    next.push(c);
                }
            }
            cells = next;
        }
        cells
    }
}

impl Scenario {
    /// Every measurement in run order: per experiment, rounds outermost, then cells, then the
    /// pairs interleaved. Cells a pair cannot measure are left out (see [`Scenario::skipped`]).
    pub fn plan(&self) -> Vec<Planned> {
        let mut out = Vec::new();
        for (i, e) in self.experiments.iter().enumerate() {
            let cells = e.cells();
            for round in 0..e.rounds {
                for cell in &cells {
                    for &pair in &e.pairs {
                        if e.supports(pair, cell).is_ok() {
                            out.push(Planned {
                                experiment: i,
                                pair,
                                params: cell.clone(),
                                round,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// Human-readable reasons for cells left out of the plan (one line per experiment × pair ×
    /// reason).
    pub fn skipped(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for e in &self.experiments {
            for &pair in &e.pairs {
                let mut reasons: Vec<String> = Vec::new();
                for cell in e.cells() {
                    if let Err(r) = e.supports(pair, &cell) {
                        if !reasons.contains(&r) {
                            reasons.push(r);
                        }
                    }
                }
                for r in reasons {
                    notes.push(format!("{}: {} skipped: {r}", e.name, pair.display()));
                }
            }
        }
        notes
    }
}
