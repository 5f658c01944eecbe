//! CPU per sample over one measurement window, the same window for every implementation.
//!
//! The `rusage` of a reaped process ([`super::procmon::Proc::stats`]) covers its whole life:
//! start-up, discovery and warm-up included, and each tool drops a different warm-up from its
//! sample count, so dividing one by the other compares unlike windows. Here a [`CpuMonitor`]
//! thread samples the summed user + system time of a point's processes from `/proc` every
//! [`PERIOD`], and the window is cut from the tools' own per-second report lines: from the
//! first line kept after warm-up to the last line. Samples (or round trips) in the window come
//! from the cumulative counts of those lines, interpolated at the window's ends, so every
//! implementation is charged for exactly the CPU it spent while it produced the counted
//! samples.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often the monitor samples `/proc` (CPU time itself has a 10 ms tick).
pub const PERIOD: Duration = Duration::from_millis(50);

/// Samples the summed CPU time of a set of processes on a thread until [`CpuMonitor::finish`].
#[derive(Debug)]
pub struct CpuMonitor {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<CpuSeries>>,
}

impl CpuMonitor {
    /// Starts sampling `pids` (a process that exits keeps its last figure in the sum).
    pub fn start(pids: Vec<u32>) -> CpuMonitor {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::Builder::new()
            .name("cpu-monitor".into())
            .spawn(move || {
                let mut last: HashMap<u32, f64> = HashMap::new();
                let mut series = CpuSeries::default();
                loop {
                    let done = flag.load(Ordering::Relaxed);
                    for &pid in &pids {
                        if let Some(s) = super::procmon::sample(pid) {
                            last.insert(pid, s.utime_s + s.stime_s);
                        }
                    }
                    series.push(Instant::now(), last.values().sum());
                    if done {
                        return series;
                    }
                    thread::sleep(PERIOD);
                }
            })
            .ok();
        CpuMonitor { stop, handle }
    }

    /// Stops sampling (after one last sample) and returns the series.
    pub fn finish(mut self) -> CpuSeries {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for CpuMonitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A non-decreasing series of (instant, value) points, read by linear interpolation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuSeries {
    points: Vec<(Instant, f64)>,
}

impl CpuSeries {
    /// Appends a point (instants must not go backwards).
    pub fn push(&mut self, at: Instant, value: f64) {
        self.points.push((at, value));
    }

    /// When the first sample was taken.
    pub fn start(&self) -> Option<Instant> {
        self.points.first().map(|p| p.0)
    }

    /// The value at `t`, interpolated between the samples around it; `None` outside the
    /// sampled span.
    pub fn at(&self, t: Instant) -> Option<f64> {
        interpolate(&self.points, t)
    }
}

/// Linear interpolation of `points` (sorted by instant) at `t`; `None` outside their span.
pub fn interpolate(points: &[(Instant, f64)], t: Instant) -> Option<f64> {
    let i = points.partition_point(|(at, _)| *at < t);
    if i < points.len() && points[i].0 == t {
        return Some(points[i].1);
    }
    if i == 0 || i == points.len() {
        return None;
    }
    let (t0, v0) = points[i - 1];
    let (t1, v1) = points[i];
    let span = t1.duration_since(t0).as_secs_f64();
    if span <= 0.0 {
        return Some(v1);
    }
    let f = t.duration_since(t0).as_secs_f64() / span;
    Some(v0 + (v1 - v0) * f)
}

/// Cumulative counts of one reporting stream: (instant of a report line, count so far).
pub type Counts = Vec<(Instant, f64)>;

/// Turns per-line interval counts, with each line's time `t` in seconds since `started`, into
/// cumulative counts (lines in any order; sorted by time).
pub fn cumulative(started: Instant, lines: impl IntoIterator<Item = (f64, u64)>) -> Counts {
    let mut v: Vec<(f64, u64)> = lines
        .into_iter()
        .filter(|(t, _)| t.is_finite() && *t >= 0.0)
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sum = 0.0;
    v.into_iter()
        .map(|(t, n)| {
            sum += n as f64;
            (started + Duration::from_secs_f64(t), sum)
        })
        .collect()
}

/// Like [`cumulative`] for per-second lines that each count the second before them: a zero
/// point one second before the first line is added, so that a run with a single line (a short
/// latency run: ddsperf prints its first line after its first full second of pinging) still
/// has a window, that line's second. No such point is added before `not_before` (the start of
/// the process, or of the CPU samples).
pub fn cumulative_per_second(
    started: Instant,
    not_before: Instant,
    lines: impl IntoIterator<Item = (f64, u64)>,
) -> Counts {
    let mut c = cumulative(started, lines);
    if let Some(&(first, _)) = c.first() {
        if let Some(origin) = first.checked_sub(Duration::from_secs(1)) {
            if origin >= started && origin >= not_before {
                c.insert(0, (origin, 0.0));
            }
        }
    }
    c
}

/// CPU microseconds per counted sample over the window `[from, to]`: the CPU the monitored
/// processes spent in it over the samples every stream counted in it. `None` when the
/// window is empty, a stream or the CPU series does not cover it, or nothing was counted.
pub fn cpu_us_per_sample(
    cpu: &CpuSeries,
    streams: &[Counts],
    from: Instant,
    to: Instant,
) -> Option<f64> {
    if to <= from || streams.is_empty() {
        return None;
    }
    let spent = cpu.at(to)? - cpu.at(from)?;
    let mut counted = 0.0;
    for s in streams {
        counted += interpolate(s, to)? - interpolate(s, from)?;
    }
    (counted > 0.0 && spent >= 0.0).then(|| spent * 1e6 / counted)
}

/// The window shared by `streams`: from the latest first line to the earliest last line.
/// A line counts the interval that ends with it, so the first line's interval (start-up,
/// discovery, warm-up) is never in the window. `None` when a stream has fewer than two
/// lines or the streams do not overlap.
pub fn common_window(streams: &[Counts]) -> Option<(Instant, Instant)> {
    let mut from: Option<Instant> = None;
    let mut to: Option<Instant> = None;
    for s in streams {
        if s.len() < 2 {
            return None;
        }
        let a = s[0].0;
        let b = s[s.len() - 1].0;
        from = Some(from.map_or(a, |f| f.max(a)));
        to = Some(to.map_or(b, |t| t.min(b)));
    }
    let (from, to) = (from?, to?);
    (to > from).then_some((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, s: f64) -> Instant {
        base + Duration::from_secs_f64(s)
    }

    #[test]
    fn interpolates_inside_and_refuses_outside() {
        let b = Instant::now();
        let p = vec![(at(b, 1.0), 10.0), (at(b, 2.0), 20.0), (at(b, 4.0), 20.0)];
        assert_eq!(interpolate(&p, at(b, 1.0)), Some(10.0));
        assert!((interpolate(&p, at(b, 1.5)).unwrap() - 15.0).abs() < 1e-9);
        assert_eq!(interpolate(&p, at(b, 3.0)), Some(20.0));
        assert_eq!(interpolate(&p, at(b, 0.5)), None);
        assert_eq!(interpolate(&p, at(b, 4.5)), None);
    }

    #[test]
    fn cpu_per_sample_uses_only_the_window() {
        let b = Instant::now();
        // 1 s of start-up at 100 % CPU, then 0.5 CPU-s per second while 1000 samples/s flow.
        let mut cpu = CpuSeries::default();
        cpu.push(at(b, 0.0), 0.0);
        cpu.push(at(b, 1.0), 1.0);
        cpu.push(at(b, 2.0), 1.5);
        cpu.push(at(b, 3.0), 2.0);
        cpu.push(at(b, 4.0), 2.5);
        let lines = [(1.0, 10), (2.0, 1000), (3.0, 1000), (4.0, 1000)];
        let s = cumulative(b, lines);
        let (from, to) = common_window(std::slice::from_ref(&s)).unwrap();
        assert_eq!((from, to), (at(b, 1.0), at(b, 4.0)));
        // 1.5 CPU-s for 3000 samples.
        let us = cpu_us_per_sample(&cpu, &[s], from, to).unwrap();
        assert!((us - 500.0).abs() < 1e-6, "{us}");
    }

    #[test]
    fn streams_on_different_clocks_share_the_overlap() {
        let b = Instant::now();
        let s1 = cumulative(b, [(1.0, 5), (2.0, 100), (3.0, 100), (4.0, 100)]);
        let s2 = cumulative(at(b, 0.5), [(1.0, 5), (2.0, 200), (3.0, 200), (4.0, 200)]);
        let (from, to) = common_window(&[s1.clone(), s2.clone()]).unwrap();
        assert_eq!((from, to), (at(b, 1.5), at(b, 4.0)));
        let mut cpu = CpuSeries::default();
        cpu.push(at(b, 0.0), 0.0);
        cpu.push(at(b, 5.0), 5.0);
        // 2.5 CPU-s over 2.5 s; stream 1 counts 250 there, stream 2 100 (its 1.5 → 2.0 s
        // half of the 200) + 200 + 200 = 500.
        let us = cpu_us_per_sample(&cpu, &[s1, s2], from, to).unwrap();
        assert!((us - 2.5e6 / 750.0).abs() < 1e-6, "{us}");
    }

    #[test]
    fn a_single_per_second_line_is_its_own_window() {
        let b = Instant::now();
        let s = cumulative_per_second(b, b, [(2.0, 1000)]);
        let (from, to) = common_window(std::slice::from_ref(&s)).unwrap();
        assert_eq!((from, to), (at(b, 1.0), at(b, 2.0)));
        let mut cpu = CpuSeries::default();
        cpu.push(at(b, 0.0), 0.0);
        cpu.push(at(b, 1.0), 0.5);
        cpu.push(at(b, 2.0), 0.6);
        let us = cpu_us_per_sample(&cpu, &[s], from, to).unwrap();
        assert!((us - 100.0).abs() < 1e-6, "{us}");
        // A line before one second has no full second before it.
        assert_eq!(cumulative_per_second(b, b, [(0.5, 10)]).len(), 1);
        // Nor one before the CPU samples start.
        assert_eq!(cumulative_per_second(b, at(b, 0.2), [(1.0, 10)]).len(), 1);
        assert_eq!(cumulative_per_second(b, b, [(1.0, 10)]).len(), 2);
    }

    #[test]
    fn too_short_or_disjoint_streams_give_no_window() {
        let b = Instant::now();
        let short = cumulative(b, [(1.0, 5)]);
        assert!(common_window(&[short]).is_none());
        let early = cumulative(b, [(1.0, 1), (2.0, 1)]);
        let late = cumulative(at(b, 10.0), [(1.0, 1), (2.0, 1)]);
        assert!(common_window(&[early, late]).is_none());
        assert!(common_window(&[]).is_none());
    }

    #[test]
    fn monitor_sees_this_process_spend_cpu() {
        // Spins for 300 ms of this thread's CPU time, not of wall time: on a loaded machine
        // 300 ms of wall time gave the thread as little as 90 ms of CPU.
        fn thread_cpu() -> Duration {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes the timespec we pass.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
        }
        let m = CpuMonitor::start(vec![std::process::id()]);
        let c0 = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - c0 < Duration::from_millis(300) {
            for _ in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let series = m.finish();
        let first = series.points.first().unwrap().1;
        let last = series.points.last().unwrap().1;
        assert!(last - first >= 0.1, "{first} → {last}");
    }
}
