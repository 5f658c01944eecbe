//! The glue between the sans-IO reliability cores and the sockets: QoS → core configuration, and
//! draining a core's transmits into datagrams.

use crate::endpoint::{send_datagram, with_send_buf};
use crate::history::HistoryConfig;
use crate::participant::ParticipantShared;
use crate::qos::{DataReaderQos, DataWriterQos};
use std::cell::RefCell;
use std::time::Instant;
use tessera_rtps::qos::{DestinationOrder, Durability, History, ReliabilityKind};
use tessera_rtps::reader::ReaderCore;
use tessera_rtps::types::Guid;
use tessera_rtps::wire::{MessageBuilder, Submessage};
use tessera_rtps::writer::{HistoryKind, Transmit, WriterConfig, WriterCore};

thread_local! {
    static TRANSMIT: RefCell<(Transmit, Vec<u8>)> = RefCell::new((Transmit::new(), Vec::with_capacity(64)));
}

/// Encodes and sends everything `poll` yields, one datagram per transmit.
fn drain(p: &ParticipantShared, mut poll: impl FnMut(&mut Transmit) -> bool) {
    TRANSMIT.with(|cell| {
        let (t, qos_scratch) = &mut *cell.borrow_mut();
        while poll(t) {
            with_send_buf(|buf| {
                let mut m = MessageBuilder::new(buf, p.guid_prefix);
                if let Some(dst) = t.dest.info_dst() {
                    m.submessage(&Submessage::InfoDst(dst));
                }
                for sm in &t.submessages {
                    m.submessage(&sm.as_submessage(qos_scratch));
                }
                send_datagram(p, buf, t.dest.locators().as_slice());
            });
        }
    });
}

/// Sends every datagram a writer core has ready.
pub(crate) fn flush_writer(p: &ParticipantShared, core: &mut WriterCore, now: Instant) {
    drain(p, |t| core.poll_transmit_into(now, t));
}

/// Sends every datagram (ACKNACK, NACK_FRAG) a reader core has ready.
pub(crate) fn flush_reader(p: &ParticipantShared, core: &mut ReaderCore, now: Instant) {
    drain(p, |t| core.poll_transmit_into(now, t));
}

/// The reliability core's configuration for a user writer with this QoS.
pub(crate) fn writer_config(guid: Guid, qos: &DataWriterQos) -> WriterConfig {
    let mut c = WriterConfig::new(guid);
    // Readers derive keys from the payload (as Cyclone's do); an inline PID_KEY_HASH on every
    // sample would only cost bytes and parsing.
    c.send_key_hash = false;
    c.reliable = qos.reliability.kind == ReliabilityKind::Reliable;
    c.transient_local = qos.durability != Durability::Volatile;
    c.history = match qos.history {
        History::KeepLast(n) => HistoryKind::KeepLast(n.max(1)),
        History::KeepAll => HistoryKind::KeepAll,
    };
    if let Some(max) = qos.resource_limits.max_samples {
        c.max_samples = max as usize;
    }
    c
}

/// SEDP writers: reliable, transient-local, keep-last 1 per endpoint (keyed by GUID).
pub(crate) fn builtin_writer_config(guid: Guid) -> WriterConfig {
    let mut c = WriterConfig::new(guid);
    c.reliable = true;
    c.transient_local = true;
    c.history = HistoryKind::KeepLast(1);
    c
}

/// The history cache configuration of a reader with this QoS.
pub(crate) fn history_config(qos: &DataReaderQos) -> HistoryConfig {
    let limit = |v: Option<u32>| v.map(|n| n as usize);
    HistoryConfig {
        history: match qos.history {
            History::KeepLast(n) => crate::history::HistoryKind::KeepLast(n),
            History::KeepAll => crate::history::HistoryKind::KeepAll,
        },
        limits: crate::history::ResourceLimits {
            max_samples: limit(qos.resource_limits.max_samples),
            max_instances: limit(qos.resource_limits.max_instances),
            max_samples_per_instance: limit(qos.resource_limits.max_samples_per_instance),
        },
        destination_order: match qos.destination_order {
            DestinationOrder::BySourceTimestamp => {
                crate::history::DestinationOrder::BySourceTimestamp
            }
            _ => crate::history::DestinationOrder::ByReceptionTimestamp,
        },
        lifecycle: crate::history::Lifecycle {
            autopurge_nowriter_samples_delay: finite(
                qos.reader_data_lifecycle.autopurge_nowriter_samples_delay,
            ),
            autopurge_disposed_samples_delay: finite(
                qos.reader_data_lifecycle.autopurge_disposed_samples_delay,
            ),
        },
    }
}

/// `None` for the DDS infinite duration.
fn finite(d: std::time::Duration) -> Option<std::time::Duration> {
    (!tessera_rtps::qos::is_infinite(d)).then_some(d)
}

/// Whether a writer with this QoS serializes as XCDR2 (its first data representation).
pub(crate) fn prefers_xcdr2(qos: &DataWriterQos) -> bool {
    qos.data_representation.offered() == tessera_rtps::qos::data_representation::XCDR2
}
