//! What DDS promises for one writer × reader cell, and the checks of what each side observed.
//! Pure code (no sockets, no clocks), so the promise itself is unit-tested below.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History, Reliability};

/// HISTORY of one side.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Hist {
    Last(u32),
    All,
}

impl Hist {
    /// Samples kept per instance (`None` = unbounded).
    pub(crate) fn depth(self) -> Option<u32> {
        match self {
            Hist::Last(d) => Some(d),
            Hist::All => None,
        }
    }
}

/// The QoS of one side of a cell: `rel|be` . `vol|tl` . `k1|k8|all`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Side {
    pub(crate) reliable: bool,
    pub(crate) transient_local: bool,
    pub(crate) hist: Hist,
}

impl Side {
    pub(crate) const ALL: [Side; 12] = {
        let h = [Hist::Last(1), Hist::Last(8), Hist::All];
        let mut out = [Side {
            reliable: true,
            transient_local: false,
            hist: Hist::All,
        }; 12];
        let mut i = 0;
        while i < 12 {
            out[i] = Side {
                reliable: i / 6 == 0,
                transient_local: (i / 3) % 2 == 1,
                hist: h[i % 3],
            };
            i += 1;
        }
        out
    };

    pub(crate) fn parse(s: &str) -> Result<Side, String> {
        let parts: Vec<&str> = s.split('.').collect();
        let [rel, dur, hist] = parts[..] else {
            return Err(format!("'{s}': want REL.DUR.HIST, e.g. rel.tl.k8"));
        };
        let reliable = match rel {
            "rel" => true,
            "be" => false,
            _ => return Err(format!("'{rel}': reliability is rel or be")),
        };
        let transient_local = match dur {
            "vol" => false,
            "tl" => true,
            _ => return Err(format!("'{dur}': durability is vol or tl")),
        };
        let hist = match hist {
            "all" => Hist::All,
            k => match k.strip_prefix('k').and_then(|d| d.parse::<u32>().ok()) {
                Some(d) if d >= 1 => Hist::Last(d),
                _ => return Err(format!("'{k}': history is kN (N >= 1) or all")),
            },
        };
        Ok(Side {
            reliable,
            transient_local,
            hist,
        })
    }

    fn reliability(&self, default: Reliability) -> Reliability {
        match (self.reliable, default.kind) {
            (true, tessera::qos::ReliabilityKind::Reliable) => default,
            (true, _) => Reliability::reliable(Duration::from_secs(1)),
            (false, _) => Reliability::best_effort(),
        }
    }

    fn durability(&self) -> Durability {
        if self.transient_local {
            Durability::TransientLocal
        } else {
            Durability::Volatile
        }
    }

    fn history(&self) -> History {
        match self.hist {
            Hist::Last(d) => History::KeepLast(d),
            Hist::All => History::KeepAll,
        }
    }

    /// The writer QoS: the defaults with this side's three policies (so `rel.vol.k1` *is*
    /// `DataWriterQos::default()`).
    pub(crate) fn writer_qos(&self) -> DataWriterQos {
        let d = DataWriterQos::default();
        let rel = self.reliability(d.reliability);
        d.with_reliability(rel)
            .with_durability(self.durability())
            .with_history(self.history())
    }

    /// The reader QoS (`be.vol.k1` is `DataReaderQos::default()`).
    pub(crate) fn reader_qos(&self) -> DataReaderQos {
        let d = DataReaderQos::default();
        let rel = self.reliability(d.reliability);
        d.with_reliability(rel)
            .with_durability(self.durability())
            .with_history(self.history())
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rel = if self.reliable { "rel" } else { "be" };
        let dur = if self.transient_local { "tl" } else { "vol" };
        match self.hist {
            Hist::Last(d) => write!(f, "{rel}.{dur}.k{d}"),
            Hist::All => write!(f, "{rel}.{dur}.all"),
        }
    }
}

/// Which process starts first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Order {
    /// The reader exists before the writer: there is no history, only the live stream.
    ReaderFirst,
    /// The writer writes its history first; the reader joins late.
    WriterFirst,
}

/// One cell: `WRITER~READER@rfirst|wfirst`, e.g. `rel.vol.k1~be.vol.k1@rfirst`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Cell {
    pub(crate) w: Side,
    pub(crate) r: Side,
    pub(crate) order: Order,
}

impl Cell {
    pub(crate) fn parse(s: &str) -> Result<Cell, String> {
        let (pair, order) = s.split_once('@').ok_or(format!("'{s}': want W~R@ORDER"))?;
        let (w, r) = pair
            .split_once('~')
            .ok_or(format!("'{s}': want W~R@ORDER"))?;
        let order = match order {
            "rfirst" => Order::ReaderFirst,
            "wfirst" => Order::WriterFirst,
            _ => return Err(format!("'{order}': order is rfirst or wfirst")),
        };
        Ok(Cell {
            w: Side::parse(w)?,
            r: Side::parse(r)?,
            order,
        })
    }

    /// The request/offered rules DDS defines for these two policies (history is not RxO).
    pub(crate) fn compatible(&self) -> bool {
        (self.w.reliable || !self.r.reliable) && (self.w.transient_local || !self.r.transient_local)
    }

    /// Both sides at their default QoS (reliable writer, best-effort reader).
    pub(crate) fn is_default_pair(&self) -> bool {
        self.w.writer_qos() == DataWriterQos::default()
            && self.r.reader_qos() == DataReaderQos::default()
    }

    /// Every cell the matrix runs. Pruned: for an incompatible pair nothing but the match
    /// decision happens and HISTORY takes no part in it, so each incompatible reliability ×
    /// durability combination runs with one history pair per order (rotating through the
    /// history kinds so every kind still appears on each side).
    pub(crate) fn matrix() -> Vec<Cell> {
        let h = [Hist::Last(1), Hist::Last(8), Hist::All];
        let mut out = Vec::new();
        for (o, order) in [Order::ReaderFirst, Order::WriterFirst]
            .into_iter()
            .enumerate()
        {
            let mut incompatible = 0;
            for w in Side::ALL {
                for r in Side::ALL {
                    let c = Cell { w, r, order };
                    if c.compatible() {
                        out.push(c);
                    } else if w.hist == h[0] && r.hist == h[0] {
                        // The first time this combination comes up: pick its histories.
                        let i = incompatible + 7 * o;
                        incompatible += 1;
                        out.push(Cell {
                            w: Side {
                                hist: h[i % 3],
                                ..w
                            },
                            r: Side {
                                hist: h[(i + 1) % 3],
                                ..r
                            },
                            order,
                        });
                    }
                }
            }
        }
        out
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = match self.order {
            Order::ReaderFirst => "rfirst",
            Order::WriterFirst => "wfirst",
        };
        write!(f, "{}~{}@{o}", self.w, self.r)
    }
}

/// The samples of a cell: `seq` runs 0.. over all instances and `keyval = seq % instances`
/// (ddsperf's scheme). Sequence numbers below `pre` are written before any reader exists
/// (only when the writer starts first); the `live` ones after the writer saw the match, paced
/// so that the reader keeps up; then, after a pause in which the reader takes the last of
/// them, `burst` ones as fast as `write` returns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Stream {
    pub(crate) instances: u32,
    pub(crate) pre: u32,
    pub(crate) live: u32,
    pub(crate) burst: u32,
}

impl Stream {
    pub(crate) fn total(&self) -> u32 {
        self.pre + self.live + self.burst
    }

    fn live_end(&self) -> u32 {
        self.pre + self.live
    }

    /// History sequence numbers of `instance` a writer of history `h` still holds when the
    /// reader joins: the last `depth` written.
    fn retained(&self, instance: u32, h: Hist) -> Vec<u32> {
        let all: Vec<u32> = (0..self.pre)
            .filter(|s| s % self.instances == instance)
            .collect();
        let keep = h.depth().map_or(all.len(), |d| (d as usize).min(all.len()));
        all[all.len() - keep..].to_vec()
    }
}

/// What the reader saw.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReaderObs {
    /// (keyval, seq) of every valid sample, in take order.
    pub(crate) received: Vec<(u32, u32)>,
    pub(crate) matched_total: i32,
    pub(crate) incompatible_total: i32,
}

/// What the writer saw.
#[derive(Clone, Debug, Default)]
pub(crate) struct WriterObs {
    pub(crate) matched_total: i32,
    pub(crate) incompatible_total: i32,
    pub(crate) write_errors: u32,
    /// `Some(false)` when reliable readers did not acknowledge everything in time.
    pub(crate) acked: Option<bool>,
}

/// Summary figures of a reader's observation, for the report line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) history: u32,
    pub(crate) live: u32,
    pub(crate) burst: u32,
    pub(crate) duplicates: u32,
    pub(crate) out_of_order: u32,
}

pub(crate) fn tally(s: &Stream, obs: &ReaderObs) -> Tally {
    let mut t = Tally::default();
    let mut seen = BTreeSet::new();
    let mut last: BTreeMap<u32, u32> = BTreeMap::new();
    for &(k, seq) in &obs.received {
        if !seen.insert(seq) {
            t.duplicates += 1;
            continue;
        }
        if seq < s.pre {
            t.history += 1;
        } else if seq < s.live_end() {
            t.live += 1;
        } else {
            t.burst += 1;
        }
        if let Some(prev) = last.insert(k, seq) {
            if seq <= prev {
                t.out_of_order += 1;
            }
        }
    }
    t
}

/// Compact list of sequence numbers for messages: `3,4,5,9` → `3-5,9`.
fn ranges(v: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// The reader side of the promise; returns the broken parts (empty = kept).
pub(crate) fn check_reader(c: &Cell, s: &Stream, obs: &ReaderObs) -> Vec<String> {
    let mut bad = Vec::new();
    if !c.compatible() {
        if obs.incompatible_total == 0 {
            bad.push("no REQUESTED_INCOMPATIBLE_QOS".into());
        }
        if obs.matched_total > 0 {
            bad.push(format!("matched {} writer(s)", obs.matched_total));
        }
        if !obs.received.is_empty() {
            bad.push(format!("received {} samples", obs.received.len()));
        }
        return bad;
    }
    if obs.incompatible_total > 0 {
        bad.push("REQUESTED_INCOMPATIBLE_QOS on a compatible pair".into());
    }
    if obs.matched_total == 0 {
        bad.push("never matched".into());
    }
    let bogus = obs
        .received
        .iter()
        .filter(|&&(k, seq)| seq >= s.total() || k != seq % s.instances)
        .count();
    if bogus > 0 {
        bad.push(format!("{bogus} samples with a wrong key or number"));
    }
    let t = tally(s, obs);
    if t.duplicates > 0 {
        bad.push(format!("{} duplicates", t.duplicates));
    }
    if t.out_of_order > 0 {
        bad.push(format!(
            "{} out of order within an instance",
            t.out_of_order
        ));
    }
    let got: BTreeSet<u32> = obs.received.iter().map(|&(_, seq)| seq).collect();

    // History: only a TRANSIENT_LOCAL reader gets any, only what the writer still holds, and
    // (when reliable) at least the last min(writer depth, reader depth) of every instance.
    let hist: Vec<u32> = got.range(..s.pre).copied().collect();
    if !c.r.transient_local {
        if !hist.is_empty() {
            bad.push(format!(
                "VOLATILE reader got history written before the match: {}",
                ranges(&hist)
            ));
        }
    } else {
        let mut evicted = Vec::new();
        let mut missing = Vec::new();
        for i in 0..s.instances {
            let kept = s.retained(i, c.w.hist);
            evicted.extend(
                hist.iter()
                    .filter(|&&q| q % s.instances == i && !kept.contains(&q)),
            );
            if c.r.reliable {
                let need =
                    c.r.hist
                        .depth()
                        .map_or(kept.len(), |d| (d as usize).min(kept.len()));
                missing.extend(
                    kept[kept.len() - need..]
                        .iter()
                        .filter(|q| !got.contains(q)),
                );
            }
        }
        if !evicted.is_empty() {
            evicted.sort_unstable();
            bad.push(format!(
                "got history the writer no longer held: {}",
                ranges(&evicted)
            ));
        }
        if !missing.is_empty() {
            missing.sort_unstable();
            bad.push(format!("missing history: {}", ranges(&missing)));
        }
    }

    // Live stream: reliable → everything (the writer is paced so that KEEP_LAST on either side
    // replaces nothing); best effort → samples keep arriving to the end: each of the last three
    // fifths of the stream has at least one (the start may go while the reader still learns
    // of the writer, which may take longer than the writer took to learn of it).
    let live = s.pre..s.live_end();
    if c.r.reliable {
        let missing: Vec<u32> = live.filter(|q| !got.contains(q)).collect();
        if !missing.is_empty() {
            bad.push(format!(
                "missing {} of {} live samples: {}",
                missing.len(),
                s.live,
                ranges(&missing)
            ));
        }
    } else {
        let fifth = s.live.div_ceil(5).max(1);
        let mut empty = Vec::new();
        for f in 2..5u32 {
            let lo = s.pre + f * fifth;
            let hi = (lo + fifth).min(s.live_end());
            if lo < hi && got.range(lo..hi).next().is_none() {
                empty.push(format!("{lo}-{}", hi - 1));
            }
        }
        if !empty.is_empty() {
            bad.push(format!(
                "stream stalled: nothing from live samples {} (got {} of {} live)",
                empty.join(", "),
                t.live,
                s.live
            ));
        }
    }

    // Burst: a writer faster than the reader. KEEP_ALL on both sides holds everything (the
    // writer waits for acknowledgments); with KEEP_LAST on either side samples may be replaced
    // before they are sent or taken, but the last one of every instance must arrive.
    if c.r.reliable && s.burst > 0 {
        let burst: Vec<u32> = (s.live_end()..s.total()).collect();
        let need: Vec<u32> = if c.w.hist == Hist::All && c.r.hist == Hist::All {
            burst
        } else {
            let last = |i: u32| burst.iter().rev().find(|&&q| q % s.instances == i).copied();
            (0..s.instances).filter_map(last).collect()
        };
        let mut missing: Vec<u32> = need.into_iter().filter(|q| !got.contains(q)).collect();
        missing.sort_unstable();
        if !missing.is_empty() {
            bad.push(format!("missing from the burst: {}", ranges(&missing)));
        }
    }
    bad
}

/// Whether `got` (indexed by seq) holds everything the reader is owed: it may stop waiting.
pub(crate) fn reader_complete(c: &Cell, s: &Stream, got: &[bool]) -> bool {
    let has = |q: u32| got.get(q as usize).copied().unwrap_or(false);
    if !c.compatible() || !has(s.total() - 1) {
        return false;
    }
    if !c.r.reliable {
        return true;
    }
    let obs = ReaderObs {
        received: (0..s.total())
            .filter(|&q| has(q))
            .map(|q| (q % s.instances, q))
            .collect(),
        matched_total: 1,
        incompatible_total: 0,
    };
    check_reader(c, s, &obs).is_empty()
}

/// The writer side of the promise.
pub(crate) fn check_writer(c: &Cell, obs: &WriterObs) -> Vec<String> {
    let mut bad = Vec::new();
    if !c.compatible() {
        if obs.incompatible_total == 0 {
            bad.push("no OFFERED_INCOMPATIBLE_QOS".into());
        }
        if obs.matched_total > 0 {
            bad.push(format!("matched {} reader(s)", obs.matched_total));
        }
    } else {
        if obs.incompatible_total > 0 {
            bad.push("OFFERED_INCOMPATIBLE_QOS on a compatible pair".into());
        }
        if obs.matched_total == 0 {
            bad.push("never matched".into());
        }
        if c.r.reliable && obs.acked == Some(false) {
            bad.push("reliable reader did not acknowledge everything".into());
        }
    }
    if obs.write_errors > 0 {
        bad.push(format!("{} writes failed", obs.write_errors));
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(s: &str) -> Cell {
        Cell::parse(s).unwrap()
    }

    const S: Stream = Stream {
        instances: 3,
        pre: 30,
        live: 30,
        burst: 0,
    };

    fn obs(seqs: impl IntoIterator<Item = u32>) -> ReaderObs {
        ReaderObs {
            received: seqs.into_iter().map(|q| (q % 3, q)).collect(),
            matched_total: 1,
            incompatible_total: 0,
        }
    }

    #[test]
    fn labels_round_trip_and_defaults_are_found() {
        for c in Cell::matrix() {
            assert_eq!(Cell::parse(&c.to_string()).unwrap(), c);
        }
        assert!(cell("rel.vol.k1~be.vol.k1@rfirst").is_default_pair());
        assert!(!cell("rel.vol.k1~rel.vol.k1@rfirst").is_default_pair());
        assert!(Cell::parse("rel.vol.k0~be.vol.k1@rfirst").is_err());
    }

    #[test]
    fn matrix_has_every_compatible_cell_and_each_incompatible_combination() {
        let m = Cell::matrix();
        assert_eq!(m.iter().filter(|c| c.compatible()).count(), 81 * 2);
        let mut combos = BTreeSet::new();
        for c in m.iter().filter(|c| !c.compatible()) {
            let o = c.order == Order::WriterFirst;
            let key = (
                c.w.reliable,
                c.w.transient_local,
                c.r.reliable,
                c.r.transient_local,
                o,
            );
            assert!(combos.insert(key), "{c} repeats a combination");
        }
        assert_eq!(combos.len(), 7 * 2);
        for side in [|c: &Cell| c.w.hist, |c: &Cell| c.r.hist] {
            let kinds: BTreeSet<_> = m
                .iter()
                .filter(|c| !c.compatible())
                .map(|c| format!("{:?}", side(c)))
                .collect();
            assert_eq!(kinds.len(), 3);
        }
        assert!(m.iter().any(|c| c.is_default_pair()));
    }

    #[test]
    fn reliable_late_joiner_gets_the_retained_history_then_everything() {
        let c = cell("rel.tl.k8~rel.tl.all@wfirst");
        // Writer KEEP_LAST 8: per instance the last 8 of the 10 history samples (seq 6..30).
        assert!(check_reader(&c, &S, &obs(6..60)).is_empty());
        let bad = check_reader(&c, &S, &obs(3..60));
        assert!(bad[0].contains("no longer held: 3-5"), "{bad:?}");
        let bad = check_reader(&c, &S, &obs((6..60).filter(|&q| q != 40)));
        assert_eq!(bad, vec!["missing 1 of 30 live samples: 40"]);
        // Reader KEEP_LAST 1 is only promised the last history sample of each instance.
        let c = cell("rel.tl.all~rel.tl.k1@wfirst");
        assert!(check_reader(&c, &S, &obs(27..60)).is_empty());
        let bad = check_reader(&c, &S, &obs((27..60).filter(|&q| q != 28)));
        assert_eq!(bad, vec!["missing history: 28"]);
    }

    #[test]
    fn volatile_reader_gets_no_history_and_best_effort_must_not_stall() {
        let c = cell("rel.tl.all~be.vol.k1@wfirst");
        assert!(check_reader(&c, &S, &obs(40..60)).is_empty());
        let bad = check_reader(&c, &S, &obs(29..60));
        assert!(bad[0].starts_with("VOLATILE reader got history"), "{bad:?}");
        // A stream that stops after its first samples is a stall.
        let bad = check_reader(&c, &S, &obs(30..37));
        assert!(bad[0].starts_with("stream stalled"), "{bad:?}");
        // Duplicates and reordering are never allowed.
        let bad = check_reader(&c, &S, &obs([30, 33, 33, 36, 45, 42, 48, 51, 54, 57]));
        assert_eq!(
            bad,
            vec!["1 duplicates", "1 out of order within an instance"]
        );
    }

    #[test]
    fn a_burst_owes_everything_only_to_keep_all_pairs() {
        let s = Stream { burst: 30, ..S };
        let late = cell("rel.tl.all~rel.vol.all@wfirst");
        assert!(check_reader(&late, &s, &obs(30..90)).is_empty());
        let bad = check_reader(&late, &s, &obs((30..90).filter(|&q| q != 70)));
        assert_eq!(bad, vec!["missing from the burst: 70"]);
        // KEEP_LAST on one side: only the last of each instance (87, 88, 89) is owed.
        let k8 = cell("rel.tl.k8~rel.vol.all@wfirst");
        let some = (30..60).chain([61, 75, 87, 88, 89]);
        assert!(check_reader(&k8, &s, &obs(some.clone())).is_empty());
        let bad = check_reader(&k8, &s, &obs((30..60).chain([61, 75, 87, 89])));
        assert_eq!(bad, vec!["missing from the burst: 88"]);
        let mut got = vec![false; 90];
        some.for_each(|q| got[q as usize] = true);
        assert!(reader_complete(&k8, &s, &got));
        got[88] = false;
        assert!(!reader_complete(&k8, &s, &got));
    }

    #[test]
    fn incompatible_pairs_must_not_match_and_must_report() {
        let c = cell("be.vol.k1~rel.vol.k1@rfirst");
        assert!(!c.compatible());
        assert!(!cell("rel.vol.k1~rel.tl.k1@rfirst").compatible());
        let mut o = ReaderObs {
            incompatible_total: 1,
            ..Default::default()
        };
        assert!(check_reader(&c, &S, &o).is_empty());
        o.received.push((0, 30));
        assert_eq!(check_reader(&c, &S, &o), vec!["received 1 samples"]);
        let w = WriterObs::default();
        assert_eq!(check_writer(&c, &w), vec!["no OFFERED_INCOMPATIBLE_QOS"]);
    }
}
