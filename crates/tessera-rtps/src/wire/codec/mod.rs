//! Encoding and decoding of RTPS messages (RTPS 2.5 §9.4).
//!
//! Decoding is a checked walk over borrowed bytes: [`SubmessageIter`] frames submessages by their
//! `octetsToNextHeader` and decodes each into a [`Submessage`] that borrows payloads and
//! parameter lists from the receive buffer, so nothing is allocated. [`MessageReceiver`] adds the
//! receiver state of RTPS §8.3.4 (source, destination, timestamp). Every length read from the
//! wire is checked against the bytes that are really there; nothing here can panic on input.
//!
//! Encoding appends to a caller-owned `Vec<u8>` through [`MessageBuilder`]: submessages are
//! written little-endian (the `E` flag set) straight into the buffer, with
//! `octetsToNextHeader` patched in afterwards, so a message costs no allocation once the
//! buffer has grown to its working size.
//!
//! Leniency choices, all in the direction of accepting what real peers send:
//! - any protocol 2.x and any vendor is accepted;
//! - a submessage whose length is not a multiple of 4 is accepted only when it ends exactly at
//!   the end of the message (a last submessage some stacks leave unpadded); elsewhere it breaks
//!   the framing and is an error;
//! - bytes after the last field a submessage defines are ignored (room for extensions);
//! - a base-0, empty ACKNACK (Fast DDS/Connext "pre-emptive" ACKNACK) decodes with base 0 so the
//!   reliability layer can ignore it.

mod builder;
mod decode;
mod lengths;
mod receive;
#[cfg(test)]
mod tests;

pub use builder::{spliced_parts, MessageBuilder, Splice};
pub use receive::{MessageReceiver, ReceivedSubmessage, SubmessageIter};

// The module docs above link to `Submessage`, and `builder` links to
// `super::ParameterListBuilder`, through this module's names.
#[cfg(doc)]
use crate::wire::{ParameterListBuilder, Submessage};

/// Submessage flag bits (RTPS 2.5 §9.4.5).
mod flag {
    /// Endianness (all submessages): set = little-endian.
    pub const E: u8 = 0x01;
    /// DATA / DATA_FRAG: inline QoS present.
    pub const Q: u8 = 0x02;
    /// DATA: serialized data present.
    pub const DATA_D: u8 = 0x04;
    /// DATA: serialized key present.
    pub const DATA_K: u8 = 0x08;
    /// DATA_FRAG: the fragments are of a serialized key.
    pub const FRAG_K: u8 = 0x04;
    /// HEARTBEAT / ACKNACK: final.
    pub const F: u8 = 0x02;
    /// HEARTBEAT: liveliness.
    pub const L: u8 = 0x04;
    /// INFO_TS: invalidate.
    pub const I: u8 = 0x02;
}

/// Size of a submessage header.
const SUBMESSAGE_HEADER_LEN: usize = 4;
/// Bytes from after `octetsToInlineQos` to the inline QoS in a standard DATA.
const DATA_OCTETS_TO_INLINE_QOS: u16 = 16;
/// Bytes from after `octetsToInlineQos` to the inline QoS in a standard DATA_FRAG.
const DATA_FRAG_OCTETS_TO_INLINE_QOS: u16 = 28;
/// Largest bitmap of a sequence-number or fragment-number set.
const MAX_SET_BITS: u32 = 256;

/// Clears the bits at and after `num_bits` (they carry no meaning on the wire).
fn mask_bitmap(bitmap: &mut [u32; 8], num_bits: u32) {
    for (i, w) in bitmap.iter_mut().enumerate() {
        let first = i as u32 * 32;
        if num_bits <= first {
            *w = 0;
        } else if num_bits < first + 32 {
            *w &= !(u32::MAX >> (num_bits - first));
        }
    }
}
