//! Parameter lists (RTPS 9.4.2.11): the encoding of inline QoS and of discovery data.
//!
//! A parameter list is a sequence of `(pid: u16, length: u16, value)` entries, each value padded
//! to a multiple of 4 bytes, terminated by `PID_SENTINEL`. [`ParameterList`] is a checked,
//! borrowing view; [`ParameterListBuilder`] writes one.

use super::DecodeError;

/// Parameter ids used by Tessera (RTPS 2.5 table 9.12/9.13 and DDS-XTypes).
pub mod pid {
    #![allow(missing_docs)]
    pub const PAD: u16 = 0x0000;
    pub const SENTINEL: u16 = 0x0001;
    pub const USER_DATA: u16 = 0x002c;
    pub const TOPIC_NAME: u16 = 0x0005;
    pub const TYPE_NAME: u16 = 0x0007;
    pub const GROUP_DATA: u16 = 0x002d;
    pub const TOPIC_DATA: u16 = 0x002e;
    pub const DURABILITY: u16 = 0x001d;
    pub const DURABILITY_SERVICE: u16 = 0x001e;
    pub const DEADLINE: u16 = 0x0023;
    pub const LATENCY_BUDGET: u16 = 0x0027;
    pub const LIVELINESS: u16 = 0x001b;
    pub const RELIABILITY: u16 = 0x001a;
    pub const LIFESPAN: u16 = 0x002b;
    pub const DESTINATION_ORDER: u16 = 0x0025;
    pub const HISTORY: u16 = 0x0040;
    pub const RESOURCE_LIMITS: u16 = 0x0041;
    pub const OWNERSHIP: u16 = 0x001f;
    pub const OWNERSHIP_STRENGTH: u16 = 0x0006;
    pub const PRESENTATION: u16 = 0x0021;
    pub const PARTITION: u16 = 0x0029;
    pub const TIME_BASED_FILTER: u16 = 0x0004;
    pub const TRANSPORT_PRIORITY: u16 = 0x0049;
    pub const DATA_REPRESENTATION: u16 = 0x0073;
    pub const TYPE_CONSISTENCY_ENFORCEMENT: u16 = 0x0074;
    pub const TYPE_INFORMATION: u16 = 0x0075;
    pub const DOMAIN_ID: u16 = 0x000f;
    pub const DOMAIN_TAG: u16 = 0x4014;
    pub const PROTOCOL_VERSION: u16 = 0x0015;
    pub const VENDOR_ID: u16 = 0x0016;
    pub const UNICAST_LOCATOR: u16 = 0x002f;
    pub const MULTICAST_LOCATOR: u16 = 0x0030;
    pub const DEFAULT_UNICAST_LOCATOR: u16 = 0x0031;
    pub const DEFAULT_MULTICAST_LOCATOR: u16 = 0x0048;
    pub const METATRAFFIC_UNICAST_LOCATOR: u16 = 0x0032;
    pub const METATRAFFIC_MULTICAST_LOCATOR: u16 = 0x0033;
    pub const EXPECTS_INLINE_QOS: u16 = 0x0043;
    pub const PARTICIPANT_MANUAL_LIVELINESS_COUNT: u16 = 0x0034;
    pub const CONTENT_FILTER_PROPERTY: u16 = 0x0035;
    pub const PARTICIPANT_LEASE_DURATION: u16 = 0x0002;
    pub const PARTICIPANT_GUID: u16 = 0x0050;
    pub const GROUP_GUID: u16 = 0x0052;
    pub const BUILTIN_ENDPOINT_SET: u16 = 0x0058;
    pub const BUILTIN_ENDPOINT_QOS: u16 = 0x0077;
    pub const PROPERTY_LIST: u16 = 0x0059;
    pub const TYPE_MAX_SIZE_SERIALIZED: u16 = 0x0060;
    pub const ENTITY_NAME: u16 = 0x0062;
    pub const ENDPOINT_GUID: u16 = 0x005a;
    pub const KEY_HASH: u16 = 0x0070;
    pub const STATUS_INFO: u16 = 0x0071;
    /// Set in a pid when the receiver must reject the list if it does not understand it.
    pub const MUST_UNDERSTAND: u16 = 0x4000;
    /// Set in a pid for vendor-specific parameters.
    pub const VENDOR_SPECIFIC: u16 = 0x8000;
    /// Tessera's CONSISTENCY policy and consensus endpoint (vendor range; the value starts with
    /// the magic `TSRC`, so another vendor's use of the same pid is ignored).
    pub const TESSERA_CONSISTENCY: u16 = 0x8011;
    /// A Tessera reader's plain-type layout hash: it resolves zero-copy loan references of
    /// writers whose type has this layout (vendor range; the value starts with the magic
    /// `TSRL`, then the hash as two 32-bit halves, low first, then optionally a 32-bit word
    /// of flags: bit 0, it resolves references to serialized samples in shared memory).
    pub const TESSERA_LOAN_LAYOUT: u16 = 0x8012;
}

/// A checked, borrowing view of an encoded parameter list.
///
/// Construction with [`ParameterList::parse`] walks the whole list once, so that iteration
/// afterwards cannot fail and `len()` gives the exact number of bytes used (up to and including
/// the sentinel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParameterList<'a> {
    bytes: &'a [u8],
    little_endian: bool,
}

impl<'a> ParameterList<'a> {
    /// Parses a parameter list at the start of `buf`. Bytes after the sentinel are not part of
    /// the list; [`ParameterList::len`] tells how many bytes it used.
    pub fn parse(buf: &'a [u8], little_endian: bool) -> Result<ParameterList<'a>, DecodeError> {
        let mut pos = 0usize;
        loop {
            if buf.len() < pos + 4 {
                return Err(DecodeError::Truncated);
            }
            let pid = read_u16(&buf[pos..], little_endian);
            let len = read_u16(&buf[pos + 2..], little_endian) as usize;
            pos += 4;
            if pid == pid::SENTINEL {
                // The sentinel's length field is ignored by the spec.
                return Ok(ParameterList {
                    bytes: &buf[..pos],
                    little_endian,
                });
            }
            if len % 4 != 0 {
                return Err(DecodeError::BadParameterLength);
            }
            if buf.len() < pos + len {
                return Err(DecodeError::Truncated);
            }
            pos += len;
        }
    }

    /// Number of bytes the list occupies, sentinel included.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether values are little-endian.
    pub fn little_endian(&self) -> bool {
        self.little_endian
    }

    /// The raw bytes of the list, sentinel included.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Iterates over `(pid, value)` pairs, stopping at the sentinel. PAD entries are skipped.
    pub fn iter(&self) -> ParameterIter<'a> {
        ParameterIter {
            bytes: self.bytes,
            pos: 0,
            little_endian: self.little_endian,
        }
    }

    /// The value of the first parameter with this pid.
    pub fn get(&self, wanted: u16) -> Option<&'a [u8]> {
        self.iter().find(|(p, _)| *p == wanted).map(|(_, v)| v)
    }
}

/// Iterator over a parsed [`ParameterList`].
#[derive(Clone, Debug)]
pub struct ParameterIter<'a> {
    bytes: &'a [u8],
    pos: usize,
    little_endian: bool,
}

impl<'a> Iterator for ParameterIter<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            // `parse` already checked every bound; the `get`s only keep this panic-free.
            let head = self.bytes.get(self.pos..self.pos + 4)?;
            let pid = read_u16(head, self.little_endian);
            let len = read_u16(&head[2..], self.little_endian) as usize;
            if pid == pid::SENTINEL {
                return None;
            }
            let value = self.bytes.get(self.pos + 4..self.pos + 4 + len)?;
            self.pos += 4 + len;
            if pid != pid::PAD {
                return Some((pid, value));
            }
        }
    }
}

/// Writes a parameter list into a byte vector (always little-endian).
#[derive(Debug)]
pub struct ParameterListBuilder<'b> {
    out: &'b mut Vec<u8>,
}

impl<'b> ParameterListBuilder<'b> {
    /// Starts a list at the end of `out`. `out`'s length should be 4-aligned relative to the
    /// start of the enclosing submessage or payload.
    pub fn new(out: &'b mut Vec<u8>) -> Self {
        ParameterListBuilder { out }
    }

    /// Appends a parameter whose value is written by `f`; pads the value to 4 bytes.
    pub fn param_with(&mut self, pid: u16, f: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        let head = self.out.len();
        self.out.extend_from_slice(&pid.to_le_bytes());
        self.out.extend_from_slice(&[0, 0]);
        let start = self.out.len();
        f(self.out);
        while (self.out.len() - start) % 4 != 0 {
            self.out.push(0);
        }
        let len = (self.out.len() - start) as u16;
        self.out[head + 2..head + 4].copy_from_slice(&len.to_le_bytes());
        self
    }

    /// Appends a parameter with the given raw value.
    pub fn param(&mut self, pid: u16, value: &[u8]) -> &mut Self {
        self.param_with(pid, |o| o.extend_from_slice(value))
    }

    /// Writes the sentinel, ending the list.
    pub fn finish(self) {
        self.out.extend_from_slice(&pid::SENTINEL.to_le_bytes());
        self.out.extend_from_slice(&[0, 0]);
    }
}

fn read_u16(b: &[u8], le: bool) -> u16 {
    let a = [b[0], b[1]];
    if le {
        u16::from_le_bytes(a)
    } else {
        u16::from_be_bytes(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_then_parse() {
        let mut v = Vec::new();
        let mut b = ParameterListBuilder::new(&mut v);
        b.param(pid::TOPIC_NAME, &[1, 2, 3])
            .param(pid::KEY_HASH, &[9; 16]);
        b.finish();
        let pl = ParameterList::parse(&v, true).unwrap();
        assert_eq!(pl.len(), v.len());
        let items: Vec<_> = pl.iter().collect();
        assert_eq!(
            items,
            vec![
                (pid::TOPIC_NAME, &[1u8, 2, 3, 0][..]),
                (pid::KEY_HASH, &[9u8; 16][..])
            ]
        );
    }

    #[test]
    fn lying_lengths_are_rejected() {
        // length says 8 but only 4 bytes follow
        let bad = [0x05, 0x00, 0x08, 0x00, 1, 2, 3, 4];
        assert_eq!(
            ParameterList::parse(&bad, true),
            Err(DecodeError::Truncated)
        );
        let odd = [0x05, 0x00, 0x03, 0x00, 1, 2, 3, 4, 1, 0, 0, 0];
        assert_eq!(
            ParameterList::parse(&odd, true),
            Err(DecodeError::BadParameterLength)
        );
        assert_eq!(ParameterList::parse(&[], true), Err(DecodeError::Truncated));
    }
}
