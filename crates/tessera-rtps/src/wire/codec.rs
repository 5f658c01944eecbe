//! Encoding and decoding of RTPS messages. (Bodies to be written: see the issue notes.)

use super::{DecodeError, Header, Submessage};
use crate::types::{GuidPrefix, Timestamp, VendorId};

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
    pub fn parse(buf: &'a [u8]) -> Result<(Header, SubmessageIter<'a>), DecodeError> {
        let _ = buf;
        todo!("wire codec")
    }
}

impl<'a> Iterator for SubmessageIter<'a> {
    type Item = Result<Submessage<'a>, DecodeError>;
    fn next(&mut self) -> Option<Self::Item> {
        let _ = (self.buf, self.pos, self.failed);
        todo!("wire codec")
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
/// their context. Interpreter submessages themselves are not yielded.
#[derive(Debug, Clone)]
pub struct MessageReceiver<'a> {
    header: Header,
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
            inner,
            dest_prefix: GuidPrefix::UNKNOWN,
            timestamp: None,
        })
    }

    /// The message header.
    pub fn header(&self) -> &Header {
        &self.header
    }
}

impl<'a> Iterator for MessageReceiver<'a> {
    type Item = Result<ReceivedSubmessage<'a>, DecodeError>;
    fn next(&mut self) -> Option<Self::Item> {
        let _ = (&mut self.inner, self.dest_prefix, self.timestamp);
        todo!("wire codec")
    }
}

/// Appends submessages to a message buffer. The header is written by [`MessageBuilder::new`].
#[derive(Debug)]
pub struct MessageBuilder<'b> {
    out: &'b mut Vec<u8>,
}

impl<'b> MessageBuilder<'b> {
    /// Clears `out` and writes a Tessera header for `prefix`.
    pub fn new(out: &'b mut Vec<u8>, prefix: GuidPrefix) -> Self {
        let _ = prefix;
        MessageBuilder { out }
    }

    /// Bytes written so far (header included).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Appends any submessage (little-endian).
    pub fn submessage(&mut self, sm: &Submessage<'_>) -> &mut Self {
        let _ = sm;
        todo!("wire codec")
    }
}
