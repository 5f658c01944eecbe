//! Walking a received message: [`SubmessageIter`] frames and decodes its submessages,
//! [`MessageReceiver`] applies the receiver state (INFO_SRC, INFO_DST, INFO_TS) to them.

use super::decode::decode_body;
use super::{flag, SUBMESSAGE_HEADER_LEN};
use crate::types::{GuidPrefix, ProtocolVersion, Timestamp, VendorId};
use crate::wire::{submessage_id as smid, DecodeError, Header, Submessage, HEADER_LEN};

/// Iterates over the submessages of one message. After the first error it yields nothing more
/// (the rest of a message whose framing is broken cannot be trusted).
#[derive(Debug, Clone)]
pub struct SubmessageIter<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> SubmessageIter<'a> {
    /// Parses the header of `buf` and returns it with an iterator over the submessages.
    ///
    /// Accepts any RTPS 2.x version and any vendor.
    pub fn parse(buf: &'a [u8]) -> Result<(Header, SubmessageIter<'a>), DecodeError> {
        let h = buf.get(..HEADER_LEN).ok_or(DecodeError::Truncated)?;
        if &h[..4] != b"RTPS" || h[4] != 2 {
            return Err(DecodeError::BadHeader);
        }
        let mut prefix = [0u8; 12];
        prefix.copy_from_slice(&h[8..20]);
        let header = Header {
            version: ProtocolVersion {
                major: h[4],
                minor: h[5],
            },
            vendor: VendorId([h[6], h[7]]),
            guid_prefix: GuidPrefix(prefix),
        };
        Ok((
            header,
            SubmessageIter {
                buf,
                pos: HEADER_LEN,
                failed: false,
            },
        ))
    }

    /// Frames the next submessage: returns `(id, flags, body)` and advances.
    fn frame(&mut self) -> Result<(u8, u8, &'a [u8]), DecodeError> {
        let remaining = self.buf.len() - self.pos;
        let h = self
            .buf
            .get(self.pos..self.pos + SUBMESSAGE_HEADER_LEN)
            .ok_or(DecodeError::Truncated)?;
        let (id, flags) = (h[0], h[1]);
        let len_bytes = [h[2], h[3]];
        let len = if flags & flag::E != 0 {
            u16::from_le_bytes(len_bytes)
        } else {
            u16::from_be_bytes(len_bytes)
        } as usize;
        let avail = remaining - SUBMESSAGE_HEADER_LEN;
        let body_len = if len != 0 {
            if len > avail {
                return Err(DecodeError::BadSubmessageLength);
            }
            if len % 4 != 0 && len != avail {
                return Err(DecodeError::BadSubmessageLength);
            }
            len
        } else if id == smid::PAD || id == smid::INFO_TS {
            // RTPS 2.5 §9.4.5.1.3: for these two, 0 means an empty body.
            0
        } else {
            // 0 means "up to the end of the message" (the last submessage only).
            avail
        };
        let start = self.pos + SUBMESSAGE_HEADER_LEN;
        let body = self
            .buf
            .get(start..start + body_len)
            .ok_or(DecodeError::Truncated)?;
        self.pos = start + body_len;
        Ok((id, flags, body))
    }
}

impl<'a> Iterator for SubmessageIter<'a> {
    type Item = Result<Submessage<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let res = self
            .frame()
            .and_then(|(id, flags, body)| decode_body(id, flags, body));
        if res.is_err() {
            self.failed = true;
        }
        Some(res)
    }
}

/// A submessage with the receiver state (RTPS 8.3.4) in force where it stood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedSubmessage<'a> {
    /// Prefix of the participant that sent it (header, or the last INFO_SRC).
    pub source_prefix: GuidPrefix,
    /// Vendor of the sender.
    pub source_vendor: VendorId,
    /// Prefix it is addressed to (`GuidPrefix::UNKNOWN` when no INFO_DST preceded it).
    pub dest_prefix: GuidPrefix,
    /// Source timestamp from the last INFO_TS, if valid.
    pub timestamp: Option<Timestamp>,
    /// The submessage.
    pub submessage: Submessage<'a>,
}

/// Walks a message applying INFO_TS / INFO_DST / INFO_SRC, yielding the other submessages with
/// their context. Interpreter submessages themselves (including PAD) are not yielded; unknown
/// submessages are yielded as [`Submessage::Unknown`] so that callers can count them.
///
/// After a submessage fails to decode, its error is yielded once and the iteration ends.
#[derive(Debug, Clone)]
pub struct MessageReceiver<'a> {
    header: Header,
    /// The source in force: the header's, or the last INFO_SRC's.
    source: Header,
    inner: SubmessageIter<'a>,
    dest_prefix: GuidPrefix,
    timestamp: Option<Timestamp>,
}

impl<'a> MessageReceiver<'a> {
    /// Starts receiving `buf`.
    pub fn new(buf: &'a [u8]) -> Result<Self, DecodeError> {
        let (header, inner) = SubmessageIter::parse(buf)?;
        Ok(MessageReceiver {
            header,
            source: header,
            inner,
            dest_prefix: GuidPrefix::UNKNOWN,
            timestamp: None,
        })
    }

    /// The message header as received.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The source in force at this point: the header's, or the last INFO_SRC's.
    pub fn source(&self) -> &Header {
        &self.source
    }
}

impl<'a> Iterator for MessageReceiver<'a> {
    type Item = Result<ReceivedSubmessage<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let sm = match self.inner.next()? {
                Ok(sm) => sm,
                Err(e) => return Some(Err(e)),
            };
            match sm {
                Submessage::InfoTs(ts) => self.timestamp = ts,
                Submessage::InfoDst(prefix) => self.dest_prefix = prefix,
                Submessage::InfoSrc {
                    version,
                    vendor,
                    guid_prefix,
                } => {
                    // RTPS 8.3.7.9.4: a new source also invalidates the timestamp.
                    self.source = Header {
                        version,
                        vendor,
                        guid_prefix,
                    };
                    self.timestamp = None;
                }
                Submessage::Pad => {}
                submessage => {
                    return Some(Ok(ReceivedSubmessage {
                        source_prefix: self.source.guid_prefix,
                        source_vendor: self.source.vendor,
                        dest_prefix: self.dest_prefix,
                        timestamp: self.timestamp,
                        submessage,
                    }))
                }
            }
        }
    }
}
