//! The narrow runtime context that drives local endpoints: what the data path needs and
//! nothing else.
//!
//! A writer or reader endpoint sends, schedules timers, counts and draws from the shared byte
//! budgets through a [`RuntimeContext`]; it never sees the participant's endpoint tables, its
//! discovery state or its configuration. The participant builds one context and hands it to
//! its endpoints ([`crate::participant::ParticipantShared`] holds it and dereferences to it, so
//! code that has the participant can pass it where a context is wanted); something else — a
//! per-node service, a durability service, a test — can build its own over the transports it
//! chooses and drive endpoints with it, routing received submessages itself.
//!
//! Endpoints keep an `Arc<RuntimeContext>` for the calls made from application threads
//! (`write`, `flush`, `take` resuming refused samples). It is a strong reference on purpose:
//! the context owns no endpoint, so there is no cycle, and an endpoint can still send while a
//! handle to it is alive. [`RuntimeContext::close`] marks the end of its owner instead.

use crate::bounds::{Budgets, ResourceBounds};
use crate::outbox::SendQueues;
use crate::participant::{EventKick, RuntimeCounters};
use crate::transport::{AllowMulticast, Transports};
use std::sync::atomic::{AtomicBool, Ordering};
use tessera_rtps::types::GuidPrefix;

/// What local endpoints need to run the data path (see the module docs).
pub(crate) struct RuntimeContext {
    /// The prefix of every GUID the endpoints send under (RTPS header).
    pub guid_prefix: GuidPrefix,
    /// The transports, keyed by locator kind.
    pub transport: Transports,
    /// Datagrams waiting for destinations that could not take them without blocking.
    pub send_queues: SendQueues,
    /// Wakes the thread that runs the endpoints' timers when a deadline moves earlier.
    pub kick: EventKick,
    /// Traffic and drop counters.
    pub counters: RuntimeCounters,
    /// Resource bounds (instances per reader, event channel capacity, byte budgets).
    pub limits: ResourceBounds,
    /// The byte budgets shared by the readers' cores (reassembly, out-of-order).
    pub budgets: Budgets,
    /// What multicast is used for.
    pub allow_multicast: AllowMulticast,
    /// Payload buffers the writers' histories released, for the next writes (one pool per
    /// participant: an acknowledgment releases a writer's samples by the thousand, more than
    /// a pool per writer could keep without holding memory for every quiet writer).
    pub write_buffers: std::sync::Arc<crate::sample::BufferPool>,
    /// The owner (participant) stopped: writes fail with `AlreadyDeleted`.
    closed: AtomicBool,
}

/// A participant's pool of write buffers: 16,384 at most, of 4 KiB at most, 2 MiB together.
const WRITE_BUFFERS: (usize, usize, usize) = (16_384, 4096, 2 << 20);

impl RuntimeContext {
    /// A context over `transport` with the given bounds (budgets made from them).
    pub fn new(
        guid_prefix: GuidPrefix,
        transport: Transports,
        limits: ResourceBounds,
        allow_multicast: AllowMulticast,
    ) -> RuntimeContext {
        RuntimeContext {
            guid_prefix,
            transport,
            send_queues: SendQueues::default(),
            kick: EventKick::new(),
            counters: RuntimeCounters::default(),
            budgets: Budgets::new(&limits),
            limits,
            allow_multicast,
            write_buffers: std::sync::Arc::new(crate::sample::BufferPool::new(
                WRITE_BUFFERS.0,
                WRITE_BUFFERS.1,
                WRITE_BUFFERS.2,
            )),
            closed: AtomicBool::new(false),
        }
    }

    /// Marks the context's owner as stopped.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Whether [`RuntimeContext::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

impl std::fmt::Debug for RuntimeContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeContext")
            .field("guid_prefix", &self.guid_prefix)
            .finish()
    }
}

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod tests;
