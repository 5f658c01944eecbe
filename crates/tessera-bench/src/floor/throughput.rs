//! The throughput roles: `pub` sends sequence-numbered samples, paced or as fast as possible;
//! `sub` reassembles and counts them per second, counting sequence gaps as lost.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tessera_cli::perf::report::{ReportLine, Reporter};
use tessera_cli::perf::stats::{ClockDecimator, PubHist, PubPacer, SeqTracker};

use super::clock::{mono_ns, Clock};
use super::socket::Watchdog;
use super::wire::{fragment_lengths, is_wake, report_foreign, send_sample, Header};
use super::{FloorConfig, HEADER, MAX_FRAGMENT, SEC};

pub(super) fn publish<W: Write>(
    cfg: &FloorConfig,
    sock: &UdpSocket,
    rep: &mut Reporter<W>,
    stop: &AtomicBool,
) -> io::Result<i32> {
    let frags = fragment_lengths(cfg.size);
    let mut buf = vec![0u8; MAX_FRAGMENT.max(HEADER)];
    let mut clock = Clock::new(cfg);
    let mut t = clock.tstart;
    let mut pacer = PubPacer::new(cfg.rate, 1, t);
    let mut dec = ClockDecimator::default();
    let mut hist = PubHist::default();
    let mut seq: u64 = 0;
    let mut send_errors: u64 = 0;
    loop {
        match send_sample(sock, cfg.peer, &mut buf, (cfg.size, &frags), seq) {
            Ok(()) => {}
            // No receiver yet (ICMP port unreachable) or a full queue: the sample is lost,
            // as a datagram would be.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused | io::ErrorKind::WouldBlock
                ) || e.raw_os_error() == Some(libc::ENOBUFS) =>
            {
                send_errors += 1;
            }
            Err(e) => return Err(e),
        }
        seq += 1;
        let dt = if dec.read_clock_now() {
            let t2 = mono_ns();
            let d = t2 - t;
            t = t2;
            d
        } else {
            0
        };
        hist.record(dt.max(0) as u64);
        dec.after_write(dt);
        if pacer.after_write() {
            let mut slept = false;
            while pacer.must_wait(t) && !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
                t = mono_ns();
                slept = true;
            }
            if slept {
                dec.reset();
            }
        }
        if dt == 0 && seq % 64 != 0 {
            continue;
        }
        let now = if dt == 0 { mono_ns() } else { t };
        if let Some((stamp, dt_ns)) = clock.due(now) {
            rep.emit(&ReportLine::Pub {
                stamp,
                hist: hist.take(),
                dt_ns,
            })?;
        }
        if clock.ended(now, stop) {
            break;
        }
    }
    let t = (mono_ns() - clock.tstart) as f64 / 1e9;
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: clock.pid,
            latency: Vec::new(),
            received: 0,
            lost: send_errors,
            exit_code: 0,
        },
        t,
    )?;
    Ok(0)
}

pub(super) fn subscribe<W: Write>(
    cfg: &FloorConfig,
    sock: &UdpSocket,
    rep: &mut Reporter<W>,
    stop: Arc<AtomicBool>,
) -> io::Result<i32> {
    let mut rbuf = vec![0u8; 65_536];
    let mut clock = Clock::new(cfg);
    let last_loop = Arc::new(AtomicI64::new(clock.tstart));
    let _wd = Watchdog::start(sock, stop.clone(), clock.tend, last_loop.clone(), SEC / 2)?;
    let mut tracker = SeqTracker::new(1, false);
    // The sample being reassembled: (source, seq, fragments seen).
    let mut cur: Option<(SocketAddr, u64, usize)> = None;
    let mut foreign: u64 = 0;
    loop {
        let (n, from) = match sock.recv_from(&mut rbuf) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let now = mono_ns();
        last_loop.store(now, Ordering::Release);
        if let Some(h) = rbuf.get(..n).and_then(Header::read) {
            let same = matches!(cur, Some((f, s, _)) if f == from && s == h.seq);
            if !same {
                cur = Some((from, h.seq, 0));
            }
            if let Some(c) = cur.as_mut() {
                c.2 += 1;
                if c.2 == usize::from(h.nfrags) {
                    let handle = source_handle(from);
                    let _ = tracker.on_sample(handle, h.seq as u32, 0, h.size, 0, || Some(handle));
                    cur = None;
                }
            }
        } else if !is_wake(&rbuf[..n]) {
            // Not the floor's traffic: counted, reported at the end.
            foreign += 1;
        }
        if let Some((stamp, dt_ns)) = clock.due(now) {
            let counts = tracker.interval();
            if counts.delta > 0 {
                rep.emit(&ReportLine::Sub {
                    stamp,
                    counts,
                    dt_ns,
                })?;
            }
        }
        if clock.ended(now, &stop) {
            break;
        }
    }
    let received = tracker.publishers().iter().map(|p| p.nrecv).sum::<u64>();
    report_foreign(foreign);
    let t = (mono_ns() - clock.tstart) as f64 / 1e9;
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: clock.pid,
            latency: Vec::new(),
            received,
            lost: tracker.total_lost(),
            exit_code: 0,
        },
        t,
    )?;
    Ok(0)
}

/// A 64-bit name for a sender address.
fn source_handle(a: SocketAddr) -> u64 {
    let ip = match a.ip() {
        IpAddr::V4(v) => u64::from(u32::from(v)),
        IpAddr::V6(v) => {
            let o = v.octets();
            let mut x = [0u8; 8];
            x.copy_from_slice(&o[8..]);
            u64::from_be_bytes(x)
        }
    };
    (ip << 16) ^ u64::from(a.port())
}
