//! What a consensus group orders: one sample (or instance change) of one ATOMIC writer.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A member of a consensus group: the GUID prefix of its participant. An in-memory member that
/// restarts comes back with a new participant, so a new id (it rejoins as a learner, then a voter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemberId(pub [u8; 12]);

impl MemberId {
    /// Parses the 24 hex digits [`Display`](fmt::Display) writes.
    pub fn parse(hex: &str) -> Option<MemberId> {
        if hex.len() != 24 {
            return None;
        }
        let mut id = [0u8; 12];
        for (i, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(MemberId(id))
    }
}

// As a hex string: openraft keeps members in maps keyed by id, and JSON keys are strings.
impl Serialize for MemberId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MemberId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        MemberId::parse(&s).ok_or_else(|| serde::de::Error::custom("a member id is 24 hex digits"))
    }
}

impl fmt::Display for MemberId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// What a committed entry does to its instance (RTPS status info).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryKind {
    /// A sample.
    Write,
    /// The instance is disposed.
    Dispose,
    /// The writer unregisters the instance.
    Unregister,
    /// Both.
    DisposeUnregister,
}

impl EntryKind {
    /// The kind an RTPS status info (its dispose and unregister bits) stands for.
    pub fn from_status_info(status: u32) -> EntryKind {
        match status & 3 {
            0 => EntryKind::Write,
            1 => EntryKind::Dispose,
            2 => EntryKind::Unregister,
            _ => EntryKind::DisposeUnregister,
        }
    }

    /// The RTPS status info of this kind.
    pub fn status_info(self) -> u32 {
        match self {
            EntryKind::Write => 0,
            EntryKind::Dispose => 1,
            EntryKind::Unregister => 2,
            EntryKind::DisposeUnregister => 3,
        }
    }
}

/// One proposal: a writer's sample with the identity that makes retries idempotent. Applying the
/// log skips an entry whose `(writer, sn)` was already applied, so a write retried after an
/// indeterminate timeout is delivered once.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The writer's full GUID (prefix + entity id).
    #[serde(with = "hex16")]
    pub writer: [u8; 16],
    /// The writer's sequence number; strictly increasing per writer.
    pub sn: i64,
    /// The instance's key hash (zero for keyless topics).
    #[serde(with = "hex16")]
    pub key_hash: [u8; 16],
    /// Source timestamp, nanoseconds since the Unix epoch.
    pub timestamp_ns: i64,
    /// The serialized sample (encapsulation header included), empty for a dispose or unregister
    /// of a keyless topic.
    #[serde(with = "crate::frame::bytes")]
    pub payload: bytes::Bytes,
    /// Sample or instance change.
    pub kind: EntryKind,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Entry({:02x?}:{} {:?} {} B)",
            &self.writer[12..],
            self.sn,
            self.kind,
            self.payload.len()
        )
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What one log entry holds: one or more entries proposed together (a writer's group commit:
/// the samples written while its previous proposal was in flight), applied in order, each
/// deduplicated on its own `(writer, sn)`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch(pub Vec<Entry>);

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [one] => fmt::Debug::fmt(one, f),
            all => write!(f, "Batch({} entries)", all.len()),
        }
    }
}

impl fmt::Display for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Most entries in one [`Batch`]: a delivery's position keeps 16 bits for the place in it.
pub const MAX_BATCH_ENTRIES: usize = (1 << POSITION_SHIFT) - 1;

const POSITION_SHIFT: u32 = 16;

/// An entry's position in the total order: its log index, then its place in the log entry's
/// batch. Positions only grow along the log; consecutive ones need not be adjacent.
pub fn position(log_index: u64, place: usize) -> u64 {
    (log_index << POSITION_SHIFT) | place as u64
}

/// The last position a log index can hold (a snapshot up to it covers all of its batch).
pub fn last_position(log_index: u64) -> u64 {
    position(log_index, MAX_BATCH_ENTRIES)
}

/// What the group delivers to a member, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// A committed entry and its position: the position is the total order, the same at every
    /// member.
    Entry {
        /// Position in the total order ([`position`]: log index, then place in the batch; gaps
        /// are entries the application never sees: leader blanks, membership, duplicates).
        index: u64,
        /// The entry.
        entry: Entry,
    },
    /// This member was behind a purged log and installed a snapshot: the entries up to `index`
    /// were never delivered here (their effect on deduplication is in the snapshot). Readers count
    /// them as lost.
    Skipped {
        /// The last position the snapshot covers ([`last_position`] of its last log index).
        index: u64,
    },
}

/// Sixteen bytes as 32 hex digits in JSON: as serde's default array of numbers, the writer GUID
/// and key hash of every entry cost 32 numbers to write and parse.
mod hex16 {
    use serde::{Deserialize, Deserializer, Serializer};

    const DIGITS: &[u8; 16] = b"0123456789abcdef";

    pub fn serialize<S: Serializer>(v: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
        let mut text = [0u8; 32];
        for (i, b) in v.iter().enumerate() {
            text[2 * i] = DIGITS[usize::from(b >> 4)];
            text[2 * i + 1] = DIGITS[usize::from(b & 15)];
        }
        s.serialize_str(std::str::from_utf8(&text).expect("hex digits are ASCII"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 16], D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        let bad = || serde::de::Error::custom("16 bytes are 32 hex digits");
        let digits = text.as_bytes();
        if digits.len() != 32 {
            return Err(bad());
        }
        let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        let mut v = [0u8; 16];
        for (i, b) in v.iter_mut().enumerate() {
            *b = (nibble(digits[2 * i]).ok_or_else(bad)? << 4)
                | nibble(digits[2 * i + 1]).ok_or_else(bad)?;
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_and_key_hashes_are_hex_in_json_and_round_trip() {
        let e = Entry {
            writer: core::array::from_fn(|i| (i * 17) as u8),
            sn: 5,
            key_hash: [0xff; 16],
            timestamp_ns: 1,
            payload: bytes::Bytes::from_static(b"x"),
            kind: EntryKind::Dispose,
        };
        let json = serde_json::to_string(&e).unwrap();
        assert!(
            json.contains(r#""writer":"00112233445566778899aabbccddeeff""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Entry>(&json).unwrap(), e);
        for bad in [
            "00",
            "zz112233445566778899aabbccddeeff",
            "é0112233445566778899aabbccddeef",
        ] {
            let j = json.replace("00112233445566778899aabbccddeeff", bad);
            assert!(serde_json::from_str::<Entry>(&j).is_err(), "{bad}");
        }
    }
}
