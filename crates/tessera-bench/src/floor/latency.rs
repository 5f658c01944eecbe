//! The latency roles: `ping` measures half round trips against a `pong`, which echoes every
//! datagram back to its sender.

use std::io::{self, Write};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tessera_cli::perf::report::{FinalError, PeerLabel, ReportLine, Reporter};
use tessera_cli::perf::stats::LatencyStats;

use super::clock::{mono_ns, Clock};
use super::socket::Watchdog;
use super::wire::{fragment_lengths, is_wake, report_foreign, send_sample, Header};
use super::{FloorConfig, HEADER, MAX_FRAGMENT, PING_TIMEOUT, SEC};

pub(super) fn ping<W: Write>(
    cfg: &FloorConfig,
    sock: &UdpSocket,
    rep: &mut Reporter<W>,
    stop: Arc<AtomicBool>,
) -> io::Result<i32> {
    let frags = fragment_lengths(cfg.size);
    let mut buf = vec![0u8; MAX_FRAGMENT.max(HEADER)];
    let mut rbuf = vec![0u8; 65_536];
    let mut clock = Clock::new(cfg);
    let last_loop = Arc::new(AtomicI64::new(clock.tstart));
    let _wd = Watchdog::start(sock, stop.clone(), clock.tend, last_loop.clone(), SEC / 2)?;
    let label = PeerLabel::HostPid {
        host: cfg.peer.ip().to_string(),
        pid: u32::from(cfg.peer.port()),
    };
    let period = cfg.rate.map(|r| (1e9 / r) as i64);
    let warmup = cfg.warmup.map(|d| d.as_nanos() as i64).filter(|&w| w > 0);
    let mut stats = LatencyStats::new();
    let mut first_echo: Option<i64> = None;
    let mut seq: u64 = 0;
    let mut got: usize = 0;
    let mut sent_at = mono_ns();
    send_sample(sock, cfg.peer, &mut buf, (cfg.size, &frags), seq)?;
    let mut foreign: u64 = 0;
    loop {
        let (n, _) = match sock.recv_from(&mut rbuf) {
            Ok(r) => r,
            // ICMP port unreachable from a pong not (yet) there: try again later.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => (0, cfg.peer),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut now = mono_ns();
        last_loop.store(now, Ordering::Release);
        let mut send_next = false;
        if let Some(h) = rbuf.get(..n).and_then(Header::read) {
            if h.seq == seq && usize::from(h.nfrags) == frags.len() {
                got += 1;
                if got == frags.len() {
                    let rtt = now - h.t_ns as i64;
                    let first = *first_echo.get_or_insert(now);
                    let overall = warmup.is_none_or(|w| now >= first + w);
                    stats.record_with(rtt / 2, overall);
                    send_next = true;
                }
            }
        } else if !is_wake(&rbuf[..n]) {
            // Not the floor's traffic: counted, reported at the end.
            foreign += 1;
        }
        if !send_next && now - sent_at >= PING_TIMEOUT {
            send_next = true;
        }
        if let Some((stamp, _)) = clock.due(now) {
            if let Some(s) = stats.take_interval() {
                rep.emit(&ReportLine::Latency {
                    stamp,
                    sublat: false,
                    peer: label.clone(),
                    size: cfg.size as u32,
                    stats: s,
                })?;
            }
        }
        if clock.ended(now, &stop) {
            break;
        }
        if send_next {
            if let Some(p) = period {
                let next = sent_at + p;
                if next > now {
                    std::thread::sleep(Duration::from_nanos((next - now) as u64));
                    now = mono_ns();
                }
            }
            seq += 1;
            got = 0;
            sent_at = now;
            last_loop.store(now, Ordering::Release);
            send_sample(sock, cfg.peer, &mut buf, (cfg.size, &frags), seq)?;
        }
    }
    let overall: Vec<_> = stats.overall().map(|o| (label, o)).into_iter().collect();
    let code = if stats.total_count() == 0 {
        rep.emit(&ReportLine::Error {
            pid: clock.pid,
            error: FinalError::TooFewRoundtrips,
        })?;
        1
    } else {
        0
    };
    report_foreign(foreign);
    let t = (mono_ns() - clock.tstart) as f64 / 1e9;
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: clock.pid,
            latency: overall,
            received: 0,
            lost: 0,
            exit_code: code,
        },
        t,
    )?;
    Ok(code)
}

pub(super) fn pong<W: Write>(
    cfg: &FloorConfig,
    sock: &UdpSocket,
    rep: &mut Reporter<W>,
    stop: Arc<AtomicBool>,
) -> io::Result<i32> {
    let mut rbuf = vec![0u8; 65_536];
    let clock = Clock::new(cfg);
    // Nothing to report per second: only the end of the run needs a wake-up.
    let last_loop = Arc::new(AtomicI64::new(i64::MAX / 2));
    let _wd = Watchdog::start(sock, stop.clone(), clock.tend, last_loop, i64::MAX)?;
    let mut echoed: u64 = 0;
    loop {
        let (n, from) = match sock.recv_from(&mut rbuf) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => return Err(e),
        };
        let msg = &rbuf[..n];
        if !is_wake(msg) {
            // A pinger that went away makes the send fail with ECONNREFUSED later: ignore.
            if sock.send_to(msg, from).is_ok() {
                echoed += 1;
            }
        } else if clock.ended(mono_ns(), &stop) {
            break;
        }
    }
    let t = (mono_ns() - clock.tstart) as f64 / 1e9;
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: clock.pid,
            latency: Vec::new(),
            received: echoed,
            lost: 0,
            exit_code: 0,
        },
        t,
    )?;
    Ok(0)
}
