//! SPDP/SEDP encoding and decoding: round trips, bytes shaped like Cyclone DDS's, default
//! filling, and malformed or lying input.

mod captured;
mod content_filter;
mod dispose;
mod malformed;
mod proptests;
mod sedp;
mod spdp;

use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix};
use tessera_rtps::wire::pid;

// ------------------------------------------------------------------ a raw byte builder

/// Builds a PL_CDR payload by hand, independently of the encoder under test.
struct Raw {
    v: Vec<u8>,
    le: bool,
}

impl Raw {
    fn new(le: bool) -> Self {
        Raw {
            v: vec![0, if le { 3 } else { 2 }, 0, 0],
            le,
        }
    }
    fn u16b(&self, x: u16) -> [u8; 2] {
        if self.le {
            x.to_le_bytes()
        } else {
            x.to_be_bytes()
        }
    }
    fn u32b(&self, x: u32) -> [u8; 4] {
        if self.le {
            x.to_le_bytes()
        } else {
            x.to_be_bytes()
        }
    }
    /// A parameter with an explicit (possibly lying) length field.
    fn param_len(mut self, p: u16, len: u16, value: &[u8]) -> Self {
        let (a, b) = (self.u16b(p), self.u16b(len));
        self.v.extend_from_slice(&a);
        self.v.extend_from_slice(&b);
        self.v.extend_from_slice(value);
        self
    }
    fn param(self, p: u16, value: &[u8]) -> Self {
        let mut val = value.to_vec();
        while val.len() % 4 != 0 {
            val.push(0);
        }
        let len = val.len() as u16;
        self.param_len(p, len, &val)
    }
    fn u32p(self, p: u16, x: u32) -> Self {
        let b = self.u32b(x);
        self.param(p, &b)
    }
    fn string(&self, s: &str) -> Vec<u8> {
        let mut v = self.u32b(s.len() as u32 + 1).to_vec();
        v.extend_from_slice(s.as_bytes());
        v.push(0);
        v
    }
    fn str_param(self, p: u16, s: &str) -> Self {
        let v = self.string(s);
        self.param(p, &v)
    }
    fn locator(self, p: u16, kind: u32, ip: [u8; 4], port: u32) -> Self {
        let mut v = self.u32b(kind).to_vec();
        v.extend_from_slice(&self.u32b(port));
        v.extend_from_slice(&[0; 12]);
        v.extend_from_slice(&ip);
        self.param(p, &v)
    }
    fn duration(self, p: u16, secs: u32, frac: u32) -> Self {
        let mut v = self.u32b(secs).to_vec();
        v.extend_from_slice(&self.u32b(frac));
        self.param(p, &v)
    }
    fn octets(self, p: u16, b: &[u8]) -> Self {
        let mut v = self.u32b(b.len() as u32).to_vec();
        v.extend_from_slice(b);
        self.param(p, &v)
    }
    fn finish(mut self) -> Vec<u8> {
        let s = self.u16b(pid::SENTINEL);
        self.v.extend_from_slice(&s);
        self.v.extend_from_slice(&[0, 0]);
        self.v
    }
}

const PREFIX: [u8; 12] = [
    0x01, 0x10, 0x07, 0xb8, 0xd4, 0x46, 0x09, 0x24, 0x80, 0x8f, 0x73, 0xf4,
];

fn participant_guid() -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..12].copy_from_slice(&PREFIX);
    g[12..].copy_from_slice(&[0, 0, 1, 0xc1]);
    g
}

fn endpoint_guid(key: u32, kind: u8) -> Guid {
    Guid::new(GuidPrefix(PREFIX), EntityId::new(key, kind))
}

/// An SPDP sample shaped like Cyclone 0.10.2's, including vendor-specific parameters and a
/// Fast DDS shared-memory locator that must be kept (the runtime decides what it can reach).
fn cyclone_spdp(le: bool) -> Vec<u8> {
    Raw::new(le)
        .param(pid::PROTOCOL_VERSION, &[2, 1])
        .param(pid::VENDOR_ID, &[0x01, 0x10])
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x0000_0c3f)
        .u32p(pid::DOMAIN_ID, 0)
        .duration(pid::PARTICIPANT_LEASE_DURATION, 10, 0)
        .locator(pid::DEFAULT_UNICAST_LOCATOR, 1, [127, 0, 0, 1], 44123)
        .locator(pid::DEFAULT_UNICAST_LOCATOR, 16, [0, 0, 0, 0], 7777)
        .locator(pid::METATRAFFIC_UNICAST_LOCATOR, 1, [127, 0, 0, 1], 44123)
        .locator(pid::DEFAULT_MULTICAST_LOCATOR, 1, [239, 255, 0, 1], 7401)
        .locator(
            pid::METATRAFFIC_MULTICAST_LOCATOR,
            1,
            [239, 255, 0, 1],
            7400,
        )
        .octets(pid::USER_DATA, b"DDSPerf:0:1234:host")
        .param(0x8007, &[0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]) // ADLINK participant version info
        .u32p(0x8019 | pid::MUST_UNDERSTAND, 0) // vendor-specific: skipped even with MU
        .str_param(pid::ENTITY_NAME, "ddsperf")
        .finish()
}

fn cyclone_sedp_writer_minimal(le: bool) -> Raw {
    let g = endpoint_guid(0x107, entity_kind::USER_WRITER_WITH_KEY);
    Raw::new(le)
        .param(pid::ENDPOINT_GUID, &g.to_bytes())
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .str_param(pid::TOPIC_NAME, "DDSPerfRPingKS")
        .str_param(pid::TYPE_NAME, "KeyedSeq")
}
