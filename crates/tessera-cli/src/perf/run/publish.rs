//! The publishing side: the paced write loop (with the random ping flag) and the writer
//! linger at the end of a run.

use super::*;

/// Cyclone's `DDS_RETCODE_TIMEOUT`, printed by `write error: ...` when a write timed out.
const RETCODE_TIMEOUT: i32 = -10;
/// Cyclone's `DDS_RETCODE_ERROR`, printed for any other write failure.
const RETCODE_ERROR: i32 = -1;

/// A small xorshift generator for the `pub ... X%` ping flag (quality is irrelevant here).
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new() -> Self {
        let seed = (now_ns() as u64) ^ (u64::from(sysinfo::pid()) << 32) | 1;
        Rng(seed)
    }

    pub(super) fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x >> 32) as u32
    }
}

/// How long a reliable publisher waits at the end of the run for its readers to acknowledge
/// what it wrote, like Cyclone DDS's writer linger duration (1 s by default): without it, the
/// unacknowledged tail of a lossy run dies with the process.
const WRITER_LINGER: Duration = Duration::from_secs(1);

/// The writer linger: a reliable publisher waits up to [`WRITER_LINGER`] for acknowledgments
/// before its writer is deleted; with `-X` the retransmit counter is reported once more after.
pub(super) fn linger<T: PerfIo>(ctx: &Ctx<T>, w: &DataWriter<T>, tref: i64) {
    let cfg = &ctx.cfg;
    if !cfg.publishes() || !cfg.reliable {
        return;
    }
    let before = w.retransmitted_samples();
    let _ = w.wait_for_acknowledgments(WRITER_LINGER);
    let rexmit = w.retransmitted_samples();
    if cfg.extended_stats && rexmit != before {
        let mut out = lock(&ctx.out);
        let _ = out.emit(&ReportLine::Extended {
            stamp: Stamp::new(ctx.pid, now_ns(), tref),
            stats: ExtendedStats {
                rexmit,
                ..ExtendedStats::default()
            },
        });
        let _ = out.flush();
    }
}

/// The publishing loop (§7): registers the instances, then writes as fast as allowed.
pub(super) fn publish<T: PerfIo>(ctx: &Ctx<T>, w: &DataWriter<T>) {
    let cfg = &ctx.cfg;
    let n = cfg.nkeyvals.max(1);
    let mut sample = T::template(cfg.baggage);
    T::register(w, &mut sample, n);
    let (mut seq, mut keyval) = (0u32, 0u32);
    let rate = match cfg.pub_rate {
        PubRate::Hz(r) => Some(r),
        PubRate::Unlimited | PubRate::Off => None,
    };
    let mut t = now_ns();
    let mut pacer = PubPacer::new(rate, cfg.burst, t);
    let mut dec = ClockDecimator::default();
    let mut rng = Rng::new();
    while !ctx.stopping() {
        let flag = cfg.ping_fraction != 0 && rng.next_u32() <= cfg.ping_fraction;
        match T::write_new(w, &mut sample, seq, keyval, data_timestamp(t, flag)) {
            Ok(()) => {}
            // An ATOMIC write may also end without a verdict (no commit seen in time): like a
            // timeout, the sample may be missing, and publishing goes on.
            Err(tessera::Error::Timeout | tessera::Error::Indeterminate) => {
                ctx.emit(&ReportLine::WriteError {
                    code: RETCODE_TIMEOUT,
                });
                dec.reset();
                t = now_ns();
                continue;
            }
            Err(_) if ctx.stopping() => break,
            Err(_) => {
                ctx.emit(&ReportLine::WriteError {
                    code: RETCODE_ERROR,
                });
                std::process::exit(EXIT_DDS_ERROR);
            }
        }
        if flag {
            w.flush();
        }
        let dt = if dec.read_clock_now() {
            let t2 = now_ns();
            let d = t2 - t;
            t = t2;
            d
        } else {
            0
        };
        lock(&ctx.pubhist).record(dt.max(0) as u64);
        dec.after_write(dt);
        seq = seq.wrapping_add(1);
        if n > 1 {
            keyval = (keyval + 1) % n;
        }
        if pacer.after_write() {
            let mut slept = false;
            while pacer.must_wait(t) && !ctx.stopping() {
                w.flush();
                std::thread::sleep(Duration::from_millis(1));
                t = now_ns();
                slept = true;
            }
            if slept {
                dec.reset();
            }
        }
    }
    w.flush();
}
