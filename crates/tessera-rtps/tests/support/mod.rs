//! Shared by the discovery tests that pass engines' datagrams through real encoding.

use tessera_rtps::types::{EntityId, GuidPrefix};
use tessera_rtps::wire::{MessageBuilder, Submessage};
use tessera_rtps::writer::Transmit;

/// The RTPS message `from` sends for `t` (INFO_DST first when it has one).
pub fn encode(from: GuidPrefix, t: &Transmit) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    let mut m = MessageBuilder::new(&mut buf, from);
    if let Some(dst) = t.dest.info_dst() {
        m.submessage(&Submessage::InfoDst(dst));
    }
    for sm in &t.submessages {
        m.submessage(&sm.as_submessage(&mut scratch));
    }
    buf
}

/// The writer a submessage a client routes to its engine concerns (None for others).
#[allow(dead_code)] // Not every test that shares this module routes by writer.
pub fn writer_of(sm: &Submessage<'_>) -> Option<EntityId> {
    Some(match sm {
        Submessage::Data(d) => d.writer_id,
        Submessage::Heartbeat(h) => h.writer_id,
        Submessage::Gap(g) => g.writer_id,
        Submessage::AckNack(a) => a.writer_id,
        Submessage::DataFrag(d) => d.writer_id,
        _ => return None,
    })
}
