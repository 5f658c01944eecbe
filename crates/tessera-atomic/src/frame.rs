//! Frames on the consensus links: a JSON document, then the byte strings it carries (sample
//! payloads, snapshots) appended raw after it, which the document names by offset and length.
//!
//! ```text
//! u32 LE: length of the JSON document | JSON document | byte strings, back to back
//! ```
//!
//! In JSON a payload was a base64 string: encoding it, escaping-scanning it and decoding it cost
//! about a third of an ATOMIC member's CPU under a saturating writer. Out of band it costs two
//! copies. Serde has no side channel, so [`encode`] and [`decode`] lend one to the byte-string
//! fields ([`bytes`], used with `#[serde(with = ...)]`) through a thread-local for the duration
//! of one synchronous serde call; outside those calls (a state machine's own JSON, a test) the
//! fields fall back to base64 strings, and a decoder accepts either form.

use std::cell::RefCell;
use std::io;

use ::bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The byte strings of the frame being encoded or decoded on this thread.
enum Side {
    /// Encoding: the strings so far (shared, not copied) and their total length.
    Out(Vec<Bytes>, usize),
    /// Decoding: the whole frame and where its strings start (strings are slices of it).
    In { frame: Bytes, start: usize },
}

thread_local! {
    static SIDE: RefCell<Option<Side>> = const { RefCell::new(None) };
}

/// An encoded frame: the length of its document and the document, then its byte strings, to be
/// written one after the other (no copy of a payload is made to send it).
pub(crate) struct Frame {
    pub head: Vec<u8>,
    pub strings: Vec<Bytes>,
}

impl Frame {
    /// Bytes in all.
    pub(crate) fn len(&self) -> usize {
        self.head.len() + self.strings.iter().map(Bytes::len).sum::<usize>()
    }

    /// The frame in one buffer.
    pub(crate) fn into_bytes(self) -> Bytes {
        if self.strings.is_empty() {
            return self.head.into();
        }
        let mut all = Vec::with_capacity(self.len());
        all.extend_from_slice(&self.head);
        for s in &self.strings {
            all.extend_from_slice(s);
        }
        all.into()
    }
}

/// Encodes `v` as a frame (without the transport's own length prefix).
pub(crate) fn encode<T: Serialize>(v: &T) -> io::Result<Frame> {
    SIDE.with(|s| *s.borrow_mut() = Some(Side::Out(Vec::new(), 0)));
    let mut head = vec![0; 4];
    let json = serde_json::to_writer(&mut head, v);
    let side = SIDE.with(|s| s.borrow_mut().take());
    json.map_err(io::Error::other)?;
    let len = u32::try_from(head.len() - 4)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    head[..4].copy_from_slice(&len.to_le_bytes());
    let strings = match side {
        Some(Side::Out(strings, _)) => strings,
        _ => Vec::new(),
    };
    Ok(Frame { head, strings })
}

/// Decodes a frame [`encode`] made. A malformed one is `InvalidData`, never a panic. Byte
/// strings are slices of `frame` (they keep it alive).
pub(crate) fn decode<T: DeserializeOwned>(frame: Bytes) -> io::Result<T> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
    let head: [u8; 4] = frame
        .get(..4)
        .and_then(|h| h.try_into().ok())
        .ok_or_else(|| bad("frame shorter than its header"))?;
    let json_len = u32::from_le_bytes(head) as usize;
    let start = 4usize
        .checked_add(json_len)
        .filter(|&e| e <= frame.len())
        .ok_or_else(|| bad("frame shorter than its JSON document"))?;
    let json = frame.slice(4..start);
    SIDE.with(|s| *s.borrow_mut() = Some(Side::In { frame, start }));
    let v = serde_json::from_slice::<T>(&json);
    SIDE.with(|s| s.borrow_mut().take());
    v.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// `#[serde(with = "crate::frame::bytes")]` for a `Bytes` field: out of band inside a frame (a
/// shared reference when encoding, a slice of the frame when decoding), a base64 string
/// elsewhere.
pub(crate) mod bytes {
    use ::bytes::Bytes;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use serde::de::{self, Visitor};
    use serde::ser::SerializeTuple;
    use serde::{Deserializer, Serializer};

    use super::{Side, SIDE};

    pub fn serialize<S: Serializer>(bytes: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        let at = SIDE.with(|side| match &mut *side.borrow_mut() {
            Some(Side::Out(out, len)) => {
                let at = *len;
                *len += bytes.len();
                out.push(bytes.clone());
                Some(at)
            }
            _ => None,
        });
        match at {
            Some(at) => {
                let mut t = s.serialize_tuple(2)?;
                t.serialize_element(&(at as u64))?;
                t.serialize_element(&(bytes.len() as u64))?;
                t.end()
            }
            None => s.serialize_str(&STANDARD.encode(bytes)),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        d.deserialize_any(BytesVisitor)
    }

    struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Bytes;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a base64 string or [offset, length] into the frame's byte strings")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Bytes, E> {
            STANDARD
                .decode(text.as_bytes())
                .map(Bytes::from)
                .map_err(|e| E::custom(format!("payload: {e}")))
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
            let missing = || de::Error::custom("[offset, length] expected");
            let at: u64 = seq.next_element()?.ok_or_else(missing)?;
            let len: u64 = seq.next_element()?.ok_or_else(missing)?;
            if seq.next_element::<de::IgnoredAny>()?.is_some() {
                return Err(missing());
            }
            SIDE.with(|side| match &*side.borrow() {
                Some(Side::In { frame, start }) => usize::try_from(at)
                    .ok()
                    .zip(usize::try_from(len).ok())
                    .and_then(|(at, len)| {
                        let from = start.checked_add(at)?;
                        let to = from.checked_add(len)?;
                        (to <= frame.len()).then(|| frame.slice(from..to))
                    })
                    .ok_or_else(|| de::Error::custom("byte string outside the frame")),
                _ => Err(de::Error::custom("a frame's byte string outside a frame")),
            })
        }
    }
}

/// `#[serde(with = "crate::frame::vec")]`: [`bytes`] for a `Vec<u8>` field (a snapshot: rare
/// and small, copied).
pub(crate) mod vec {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        super::bytes::serialize(&::bytes::Bytes::copy_from_slice(v), s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        super::bytes::deserialize(d).map(Vec::from)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Two {
        #[serde(with = "bytes")]
        a: Bytes,
        n: u32,
        #[serde(with = "vec")]
        b: Vec<u8>,
    }

    fn two() -> Two {
        Two {
            a: Bytes::from_static(&[1, 2, 3]),
            n: 7,
            b: (0..=255).collect(),
        }
    }

    #[test]
    fn byte_strings_travel_after_the_document_and_as_base64_elsewhere() {
        let frame = encode(&two()).unwrap().into_bytes();
        let json_len = u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(frame.len(), 4 + json_len + 3 + 256);
        assert_eq!(
            std::str::from_utf8(&frame[4..4 + json_len]).unwrap(),
            r#"{"a":[0,3],"n":7,"b":[3,256]}"#
        );
        assert_eq!(decode::<Two>(frame).unwrap(), two());
        // Outside a frame: base64, and a frame's decoder takes that form too.
        let json = serde_json::to_vec(&two()).unwrap();
        assert!(std::str::from_utf8(&json)
            .unwrap()
            .contains(r#""a":"AQID""#));
        let mut frame = (json.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&json);
        assert_eq!(decode::<Two>(frame.into()).unwrap(), two());
    }

    #[test]
    fn malformed_frames_are_errors() {
        let good = encode(&two()).unwrap().into_bytes().to_vec();
        let json_len = u32::from_le_bytes(good[..4].try_into().unwrap()) as usize;
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![1, 0],
            // The document runs past the end.
            {
                let mut f = good.clone();
                f[..4].copy_from_slice(&u32::MAX.to_le_bytes());
                f
            },
            // A string past the end of the frame.
            good[..good.len() - 1].to_vec(),
            // Offsets that overflow.
            {
                let doc = br#"{"a":[18446744073709551615,2],"n":7,"b":[0,0]}"#;
                let mut f = (doc.len() as u32).to_le_bytes().to_vec();
                f.extend_from_slice(doc);
                f
            },
            // Not JSON.
            {
                let mut f = good.clone();
                f[4] = b'!';
                f
            },
        ];
        for (i, f) in cases.into_iter().enumerate() {
            let e = decode::<Two>(f.into()).expect_err(&format!("case {i}"));
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "case {i}");
        }
        assert!(json_len > 0);
        // Nothing is left lent on the thread after a failure.
        assert_eq!(decode::<Two>(good.into()).unwrap(), two());
    }
}
