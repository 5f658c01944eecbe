//! The floor's wire format: how a sample is cut into datagrams, the header each datagram
//! starts with, wake-up datagrams, and sending one sample.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use super::clock::mono_ns;
use super::{HEADER, MAGIC_DATA, MAGIC_WAKE, MAX_FRAGMENT};

/// Lengths of the datagrams of one sample of `size` bytes.
pub fn fragment_lengths(size: usize) -> Vec<usize> {
    let size = size.max(HEADER);
    let n = size.div_ceil(MAX_FRAGMENT);
    (0..n)
        .map(|i| (size - i * MAX_FRAGMENT).clamp(HEADER, MAX_FRAGMENT))
        .collect()
}

/// The header of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Fragment index within the sample.
    pub frag: u16,
    /// Fragments of the sample.
    pub nfrags: u16,
    /// Size of the whole sample as the sender was asked (`--size`).
    pub size: u32,
    /// Sample sequence number.
    pub seq: u64,
    /// Send time (ns, sender's monotonic clock).
    pub t_ns: u64,
}

impl Header {
    /// Writes the header into the first [`HEADER`] bytes of `buf` (which must be that long).
    pub fn write(&self, buf: &mut [u8]) {
        if buf.len() < HEADER {
            return;
        }
        buf[0..4].copy_from_slice(&MAGIC_DATA.to_le_bytes());
        buf[4..6].copy_from_slice(&self.frag.to_le_bytes());
        buf[6..8].copy_from_slice(&self.nfrags.to_le_bytes());
        buf[8..12].copy_from_slice(&self.size.to_le_bytes());
        buf[12..16].fill(0);
        buf[16..24].copy_from_slice(&self.seq.to_le_bytes());
        buf[24..32].copy_from_slice(&self.t_ns.to_le_bytes());
    }

    /// Reads a data datagram's header; `None` for anything else (too short, wrong magic, a
    /// wake-up datagram, an impossible fragment index).
    pub fn read(buf: &[u8]) -> Option<Header> {
        let b = buf.get(..HEADER)?;
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        if u32::from_le_bytes([b[0], b[1], b[2], b[3]]) != MAGIC_DATA {
            return None;
        }
        let h = Header {
            frag: u16_at(4),
            nfrags: u16_at(6),
            size: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            seq: u64_at(16),
            t_ns: u64_at(24),
        };
        (h.frag < h.nfrags).then_some(h)
    }
}

/// Logs datagrams that were neither floor data nor wake-ups (dropped, never a panic).
pub(super) fn report_foreign(n: u64) {
    if n > 0 {
        eprintln!("udp floor: dropped {n} datagrams that were not floor data");
    }
}

pub(super) fn is_wake(buf: &[u8]) -> bool {
    buf.get(..4) == Some(&MAGIC_WAKE.to_le_bytes()[..])
}

pub(super) fn send_sample(
    sock: &UdpSocket,
    to: SocketAddr,
    buf: &mut [u8],
    (size, frags): (usize, &[usize]),
    seq: u64,
) -> io::Result<()> {
    let t_ns = mono_ns() as u64;
    let nfrags = frags.len() as u16;
    for (i, &len) in frags.iter().enumerate() {
        Header {
            frag: i as u16,
            nfrags,
            size: size as u32,
            seq,
            t_ns,
        }
        .write(buf);
        sock.send_to(&buf[..len], to)?;
    }
    Ok(())
}
