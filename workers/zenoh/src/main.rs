//! `zenoh-perf`: Zenoh 1.10 in peer mode running ddsperf's experiments for `tessera bench` (see
//! `../common/perf_core.rs` for the grammar and the output).
//!
//! Zenoh is not DDS: there are no topics, types, QoS policies or source timestamps, so this
//! worker maps them. Key expressions `tessera/perf/{R,U}/{data,ping,pong}` stand for ddsperf's
//! topics; a sample is `seq u32 | keyval u32 | writer id u64 | timestamp ns i64` (little
//! endian) then `size − 12` octets of 0xEE, so the bench's "size" (ddsperf's KeyedSeq size)
//! means the same payload. RELIABLE KEEP_ALL becomes congestion control Block (the publisher
//! waits for the slow reader instead of dropping), `-u` becomes Drop; Zenoh has no history
//! depth, so `-k N` is accepted and has no effect. Peers find each other by Zenoh's default
//! multicast scouting; the match counts come from liveliness tokens.

#[path = "../../common/perf_core.rs"]
mod perf_core;

use std::sync::Arc;
use std::time::Duration;

use perf_core::{Config, Link, Perf, KS_FIXED};
use zenoh::liveliness::LivelinessToken;
use zenoh::pubsub::{Publisher, Subscriber};
use zenoh::qos::CongestionControl;
use zenoh::{Session, Wait};

/// seq, keyval, writer id, timestamp.
const HEADER: usize = 24;

struct Header {
    seq: u32,
    key: u32,
    writer: u64,
    ts: i64,
}

fn encode(buf: &mut [u8], h: &Header) {
    buf[0..4].copy_from_slice(&h.seq.to_le_bytes());
    buf[4..8].copy_from_slice(&h.key.to_le_bytes());
    buf[8..16].copy_from_slice(&h.writer.to_le_bytes());
    buf[16..24].copy_from_slice(&h.ts.to_le_bytes());
}

/// The header and the payload's KeyedSeq size; `None` for a payload too short (a foreign
/// publisher on our key expression), which is ignored.
fn decode(b: &[u8]) -> Option<(Header, usize)> {
    if b.len() < HEADER {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let h = Header {
        seq: u32_at(0),
        key: u32_at(4),
        writer: u64::from_le_bytes(b[8..16].try_into().unwrap()),
        ts: i64::from_le_bytes(b[16..24].try_into().unwrap()),
    };
    Some((h, b.len() - HEADER + KS_FIXED as usize))
}

/// A payload of KeyedSeq size `size`: the header, then `size − 12` octets of 0xEE.
fn payload(size: u32) -> Vec<u8> {
    let mut v = vec![0xEE; HEADER + (size - KS_FIXED) as usize];
    v[..HEADER].fill(0);
    v
}

struct ZenohLink {
    cfg: Config,
    session: Session,
    id: u64,
    prefix: String,
    ping_p: Publisher<'static>,
    data_p: Publisher<'static>,
    ping_buf: std::sync::Mutex<Vec<u8>>,
    data_buf: std::sync::Mutex<Vec<u8>>,
    _subs: Vec<Subscriber<()>>,
    _tokens: Vec<LivelinessToken>,
}

impl ZenohLink {
    /// The other processes holding a `role` token.
    fn peers(&self, role: &str) -> u32 {
        let me = self.session.zid().to_string();
        let Ok(replies) = self
            .session
            .liveliness()
            .get(format!("{}/live/{role}/*", self.prefix))
            .timeout(Duration::from_millis(300))
            .wait()
        else {
            return 0;
        };
        let mut n = 0;
        while let Ok(r) = replies.recv() {
            if let Ok(s) = r.result() {
                if !s.key_expr().as_str().ends_with(&me) {
                    n += 1;
                }
            }
        }
        n
    }
}

impl Link for ZenohLink {
    fn send_ping(&self, seq: u32, ts_ns: i64) -> Result<(), String> {
        let mut b = self.ping_buf.lock().unwrap();
        let h = Header {
            seq,
            key: 0,
            writer: self.id,
            ts: ts_ns,
        };
        encode(&mut b, &h);
        self.ping_p.put(b.clone()).wait().map_err(|e| e.to_string())
    }

    fn publish(&self, seq: u32, key: u32, ts_ns: i64) -> Result<bool, String> {
        let mut b = self.data_buf.lock().unwrap();
        let h = Header {
            seq,
            key,
            writer: self.id,
            ts: ts_ns,
        };
        encode(&mut b, &h);
        self.data_p
            .put(b.clone())
            .wait()
            .map_err(|e| e.to_string())?;
        Ok(true)
    }

    fn matched(&self) -> u32 {
        if self.cfg.ping {
            let subscribed = self
                .ping_p
                .matching_status()
                .wait()
                .map(|m| m.matching())
                .unwrap_or(false);
            if subscribed {
                self.peers("pong")
            } else {
                0
            }
        } else if self.cfg.publish {
            self.peers("sub")
        } else {
            0
        }
    }

    fn close(&self) {
        let _ = self.session.close().wait();
    }
}

fn main() {
    perf_core::worker_main("zenoh-perf", start);
}

fn start(cfg: &Config, perf: &Arc<Perf>) -> Result<Arc<dyn Link>, String> {
    let e = |e: zenoh::Error| e.to_string();
    let mut zc = zenoh::Config::default();
    zc.insert_json5("mode", "\"peer\"")
        .map_err(|x| x.to_string())?;
    let session = zenoh::open(zc).wait().map_err(e)?;
    perf.participant(&perf_core::hostname(), std::process::id(), true);
    let prefix = format!(
        "tessera/perf/{}/{}",
        cfg.domain,
        if cfg.best_effort { 'U' } else { 'R' }
    );
    let cc = if cfg.best_effort {
        CongestionControl::Drop
    } else {
        CongestionControl::Block
    };
    let id = u64::from_le_bytes(session.zid().to_le_bytes()[..8].try_into().unwrap());
    let publisher = |kind: &str| {
        session
            .declare_publisher(format!("{prefix}/{kind}"))
            .congestion_control(cc)
            // Samples go out at once, as DDS writers without batching do.
            .express(true)
            .wait()
            .map_err(e)
    };
    let ping_p = publisher("ping")?;
    let data_p = publisher("data")?;
    let pong_p = publisher("pong")?;
    let mut subs = Vec::new();
    // Every process answers pings: the same payload back (it carries the timestamp). Pongs
    // go to every pinger, as Zenoh has no partitions; the pinger keeps its own only.
    subs.push(
        session
            .declare_subscriber(format!("{prefix}/ping"))
            .callback(move |s| {
                let b = s.payload().to_bytes();
                if decode(&b).is_some_and(|(h, _)| h.writer != id) {
                    let _ = pong_p.put(b.into_owned()).wait();
                }
            })
            .wait()
            .map_err(e)?,
    );
    let mut tokens = vec![session
        .liveliness()
        .declare_token(format!("{prefix}/live/pong/{}", session.zid()))
        .wait()
        .map_err(e)?];
    if cfg.ping {
        let p = perf.clone();
        subs.push(
            session
                .declare_subscriber(format!("{prefix}/pong"))
                .callback(move |s| {
                    let b = s.payload().to_bytes();
                    if let Some((h, _)) = decode(&b).filter(|(h, _)| h.writer == id) {
                        // The answering peer is not in the payload: one source per pinger.
                        p.on_pong([0; 16], "zenoh", h.seq, h.ts);
                    }
                })
                .wait()
                .map_err(e)?,
        );
    }
    if cfg.sub {
        let p = perf.clone();
        subs.push(
            session
                .declare_subscriber(format!("{prefix}/data"))
                .callback(move |s| {
                    if let Some((h, size)) = decode(&s.payload().to_bytes()) {
                        let mut w = [0u8; 16];
                        w[..8].copy_from_slice(&h.writer.to_le_bytes());
                        p.on_data(w, h.seq, h.key, size - KS_FIXED as usize);
                    }
                })
                .wait()
                .map_err(e)?,
        );
        tokens.push(
            session
                .liveliness()
                .declare_token(format!("{prefix}/live/sub/{}", session.zid()))
                .wait()
                .map_err(e)?,
        );
    }
    Ok(Arc::new(ZenohLink {
        cfg: cfg.clone(),
        session,
        id,
        prefix,
        ping_p,
        data_p,
        ping_buf: std::sync::Mutex::new(payload(cfg.ping_size)),
        data_buf: std::sync::Mutex::new(payload(cfg.pub_size)),
        _subs: subs,
        _tokens: tokens,
    }))
}
