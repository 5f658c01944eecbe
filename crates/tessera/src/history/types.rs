//! Value types of the history cache: handles, states, masks, configuration, outcomes and the
//! per-sample information returned by read and take.

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign};
use std::time::Duration;

/// The 16-byte key hash identifying an instance (all zeros for keyless topics).
pub type KeyHash = [u8; 16];

/// The GUID of a remote writer, as its 16 wire bytes.
pub type WriterGuid = [u8; 16];

/// The key hash used for every sample of a keyless topic.
pub const KEYLESS: KeyHash = [0; 16];

/// "No limit" for the `max` argument of the read and take operations (DDS `LENGTH_UNLIMITED`).
pub const UNLIMITED: usize = usize::MAX;

/// Identifies an instance for as long as it lives in one history cache.
///
/// Handles are handed out in increasing order and never reused within a cache, so ordering
/// handles orders instances by their creation; [`InstanceHandle::NIL`] sorts before all of them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct InstanceHandle(u64);

impl InstanceHandle {
    /// The nil handle (DDS `HANDLE_NIL`); never names an instance.
    pub const NIL: InstanceHandle = InstanceHandle(0);

    /// Makes a handle from its raw value.
    pub const fn from_raw(raw: u64) -> InstanceHandle {
        InstanceHandle(raw)
    }

    /// The raw value of the handle.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Whether this is [`InstanceHandle::NIL`].
    pub const fn is_nil(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Debug for InstanceHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InstanceHandle({})", self.0)
    }
}

macro_rules! state_mask {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$cmeta:meta])* $konst:ident = $val:expr; )* }
        any = $any:expr;
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub struct $name(u32);

        impl $name {
            $( $(#[$cmeta])* pub const $konst: $name = $name($val); )*
            /// Every state.
            pub const ANY: $name = $name($any);
            /// No state: a mask that selects nothing.
            pub const NONE: $name = $name(0);

            /// The bits of the mask (the DDS constant values).
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// A mask from DDS bits; bits that name no state are ignored.
            pub const fn from_bits_truncate(bits: u32) -> $name {
                $name(bits & $any)
            }

            /// Whether every state in `other` is also in `self`.
            pub const fn contains(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether `self` and `other` share a state.
            pub const fn intersects(self, other: $name) -> bool {
                self.0 & other.0 != 0
            }

            /// The states in either mask.
            pub const fn union(self, other: $name) -> $name {
                $name(self.0 | other.0)
            }

            /// Whether the mask selects nothing.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::ANY
            }
        }

        impl BitOr for $name {
            type Output = $name;
            fn bitor(self, rhs: $name) -> $name {
                $name(self.0 | rhs.0)
            }
        }

        impl BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: $name) {
                self.0 |= rhs.0;
            }
        }

        impl BitAnd for $name {
            type Output = $name;
            fn bitand(self, rhs: $name) -> $name {
                $name(self.0 & rhs.0)
            }
        }
    };
}

state_mask! {
    /// A set of [`SampleState`]s (values as in the DDS specification).
    SampleStateMask {
        /// Samples already returned by a read.
        READ = 1;
        /// Samples not yet returned by a read.
        NOT_READ = 2;
    }
    any = 3;
}

state_mask! {
    /// A set of [`ViewState`]s (values as in the DDS specification).
    ViewStateMask {
        /// Instances the application has not yet accessed in their current generation.
        NEW = 1;
        /// Instances already accessed.
        NOT_NEW = 2;
    }
    any = 3;
}

state_mask! {
    /// A set of [`InstanceState`]s (values as in the DDS specification).
    InstanceStateMask {
        /// Instances with live writers that have not disposed them.
        ALIVE = 1;
        /// Instances disposed by a writer.
        NOT_ALIVE_DISPOSED = 2;
        /// Instances with no live writer left.
        NOT_ALIVE_NO_WRITERS = 4;
        /// Both not-alive states.
        NOT_ALIVE = 6;
    }
    any = 7;
}

/// Whether a sample has been returned by a read before.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum SampleState {
    /// Returned by an earlier read.
    Read,
    /// Never returned by a read.
    NotRead,
}

impl SampleState {
    /// The mask holding only this state.
    pub const fn mask(self) -> SampleStateMask {
        match self {
            SampleState::Read => SampleStateMask::READ,
            SampleState::NotRead => SampleStateMask::NOT_READ,
        }
    }
}

/// Whether the application has accessed the current generation of an instance.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ViewState {
    /// First access to this instance, or first since it became alive again.
    New,
    /// Accessed before in its current generation.
    NotNew,
}

impl ViewState {
    /// The mask holding only this state.
    pub const fn mask(self) -> ViewStateMask {
        match self {
            ViewState::New => ViewStateMask::NEW,
            ViewState::NotNew => ViewStateMask::NOT_NEW,
        }
    }
}

/// The life-cycle state of an instance.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum InstanceState {
    /// Written by at least one live writer and not disposed.
    Alive,
    /// Disposed by a writer.
    NotAliveDisposed,
    /// Not disposed, but every writer that wrote it has unregistered or been lost.
    NotAliveNoWriters,
}

impl InstanceState {
    /// The mask holding only this state.
    pub const fn mask(self) -> InstanceStateMask {
        match self {
            InstanceState::Alive => InstanceStateMask::ALIVE,
            InstanceState::NotAliveDisposed => InstanceStateMask::NOT_ALIVE_DISPOSED,
            InstanceState::NotAliveNoWriters => InstanceStateMask::NOT_ALIVE_NO_WRITERS,
        }
    }

    /// Whether the state is [`InstanceState::Alive`].
    pub const fn is_alive(self) -> bool {
        matches!(self, InstanceState::Alive)
    }
}

/// The three state masks of a read or take; [`StateMasks::ANY`] (the default) selects everything.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct StateMasks {
    /// Selects samples by their sample state.
    pub sample: SampleStateMask,
    /// Selects instances by their view state.
    pub view: ViewStateMask,
    /// Selects instances by their instance state.
    pub instance: InstanceStateMask,
}

impl StateMasks {
    /// Select every sample.
    pub const ANY: StateMasks = StateMasks {
        sample: SampleStateMask::ANY,
        view: ViewStateMask::ANY,
        instance: InstanceStateMask::ANY,
    };

    /// Select only samples not read before, in any instance.
    pub const NOT_READ: StateMasks = StateMasks {
        sample: SampleStateMask::NOT_READ,
        view: ViewStateMask::ANY,
        instance: InstanceStateMask::ANY,
    };

    /// Masks from the three parts.
    pub const fn new(
        sample: SampleStateMask,
        view: ViewStateMask,
        instance: InstanceStateMask,
    ) -> StateMasks {
        StateMasks {
            sample,
            view,
            instance,
        }
    }

    /// Whether an instance in these states is selected.
    pub const fn selects_instance(&self, view: ViewState, instance: InstanceState) -> bool {
        self.view.contains(view.mask()) && self.instance.contains(instance.mask())
    }
}

/// How many samples an instance keeps (the HISTORY QoS).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum HistoryKind {
    /// Keep the latest `depth` valid samples of each instance, dropping the oldest; a depth of 0
    /// is treated as 1.
    KeepLast(u32),
    /// Keep every sample until taken, within the [`ResourceLimits`]; samples beyond them are
    /// rejected.
    KeepAll,
}

impl Default for HistoryKind {
    /// KEEP_LAST 1, the DDS default.
    fn default() -> HistoryKind {
        HistoryKind::KeepLast(1)
    }
}

/// Bounds on the cache (the RESOURCE_LIMITS QoS); `None` means unlimited. Only samples with
/// data count against the sample limits: the invalid samples that announce a dispose or the loss
/// of all writers (at most one per instance) do not.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ResourceLimits {
    /// Most samples with data in the whole cache.
    pub max_samples: Option<usize>,
    /// Most instances in the cache.
    pub max_instances: Option<usize>,
    /// Most samples with data per instance.
    pub max_samples_per_instance: Option<usize>,
}

/// How the samples of an instance are ordered (the DESTINATION_ORDER QoS).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum DestinationOrder {
    /// In order of reception.
    #[default]
    ByReceptionTimestamp,
    /// By source timestamp: an update of an instance whose source timestamp is older than the
    /// newest update the instance has accepted is dropped ([`InsertOutcome::Outdated`]), so
    /// reception order is also source-timestamp order.
    BySourceTimestamp,
}

/// How long a not-alive instance is kept (the READER_DATA_LIFECYCLE QoS); `None` is the DDS
/// default, infinite. Delays count from the local time at which the cache learned of the state
/// change (the `reception_ts` of the dispose or unregister, the `now` of
/// [`History::writer_lost`](super::History::writer_lost)), or from its purge clock's time then
/// when it has one ([`History::set_purge_clock`](super::History::set_purge_clock)).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Lifecycle {
    /// After an instance became NOT_ALIVE_NO_WRITERS, it is purged with all its samples once
    /// this much time has passed (unless it became alive again).
    pub autopurge_nowriter_samples_delay: Option<Duration>,
    /// After an instance became NOT_ALIVE_DISPOSED, its samples are purged once this much time
    /// has passed, and with them the instance (an empty not-alive instance is not kept).
    pub autopurge_disposed_samples_delay: Option<Duration>,
}

/// The configuration of a history cache, derived from the reader's QoS.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct HistoryConfig {
    /// Keep-last depth or keep-all.
    pub history: HistoryKind,
    /// Resource limits.
    pub limits: ResourceLimits,
    /// Destination order.
    pub destination_order: DestinationOrder,
    /// Automatic purging of not-alive instances.
    pub lifecycle: Lifecycle,
}

/// Which resource limit refused a sample.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
pub enum RejectReason {
    /// `max_samples` reached.
    #[error("max_samples reached")]
    SamplesLimit,
    /// `max_instances` reached.
    #[error("max_instances reached")]
    InstancesLimit,
    /// `max_samples_per_instance` reached.
    #[error("max_samples_per_instance reached")]
    SamplesPerInstanceLimit,
}

/// What [`History::insert`](super::History::insert) did with a sample.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum InsertOutcome {
    /// Stored.
    Accepted(InstanceHandle),
    /// Stored, and the oldest sample of the instance was dropped to make room (keep-last).
    Replaced(InstanceHandle),
    /// Not stored because a resource limit was reached; nothing changed. A reliable reader must
    /// not acknowledge the sample, so that the writer offers it again.
    Rejected(RejectReason),
    /// Dropped because the instance already holds a newer update (by-source-timestamp order);
    /// the sample is consumed and may be acknowledged.
    Outdated(InstanceHandle),
}

impl InsertOutcome {
    /// Whether the sample was stored.
    pub const fn is_stored(self) -> bool {
        matches!(
            self,
            InsertOutcome::Accepted(_) | InsertOutcome::Replaced(_)
        )
    }

    /// Whether a reliable reader may acknowledge the sample (everything but a rejection).
    pub const fn may_acknowledge(self) -> bool {
        !matches!(self, InsertOutcome::Rejected(_))
    }

    /// The instance the sample belongs to, unless the sample was rejected.
    pub const fn handle(self) -> Option<InstanceHandle> {
        match self {
            InsertOutcome::Accepted(h)
            | InsertOutcome::Replaced(h)
            | InsertOutcome::Outdated(h) => Some(h),
            InsertOutcome::Rejected(_) => None,
        }
    }
}

/// What a dispose or unregister did to an instance.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UpdateOutcome {
    /// The instance state changed (readers have something new to see). The handle may already
    /// be gone if the instance was purged as a result.
    Changed(InstanceHandle),
    /// The instance state stayed as it was (already disposed, other writers remain, or the
    /// writer was not registered with the instance).
    Unchanged(InstanceHandle),
    /// No instance has this key (unregister of an unknown instance).
    UnknownInstance,
    /// Ignored: older than the newest update of the instance (by-source-timestamp order).
    Outdated(InstanceHandle),
    /// The instance would have to be created (dispose of an unknown key) but `max_instances`
    /// is reached.
    Rejected(RejectReason),
}

impl UpdateOutcome {
    /// Whether the instance state changed.
    pub const fn is_changed(self) -> bool {
        matches!(self, UpdateOutcome::Changed(_))
    }

    /// Whether a reliable reader may acknowledge the message (everything but a rejection).
    pub const fn may_acknowledge(self) -> bool {
        !matches!(self, UpdateOutcome::Rejected(_))
    }
}

/// Errors of the read and take operations (caller errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
pub enum HistoryError {
    /// The handle names no instance of this cache (never did, or the instance was purged).
    #[error("unknown instance handle {0:?}")]
    UnknownInstance(InstanceHandle),
}

/// Information about a sample, computed when it is read or taken (DDS `SampleInfo`).
///
/// The states describe the sample and its instance *before* the read or take that returned them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SampleInfo {
    /// Whether the sample was read before.
    pub sample_state: SampleState,
    /// Whether the instance was accessed before in its current generation.
    pub view_state: ViewState,
    /// The current state of the instance.
    pub instance_state: InstanceState,
    /// The writer's timestamp of the update (ns since the epoch).
    pub source_timestamp: i64,
    /// When the update was received (ns), as given to the cache.
    pub reception_timestamp: i64,
    /// The instance.
    pub instance_handle: InstanceHandle,
    /// The writer of the update.
    pub publication_handle: WriterGuid,
    /// How often the instance had gone from disposed to alive when the sample was received.
    pub disposed_generation_count: u32,
    /// How often the instance had gone from no-writers to alive when the sample was received.
    pub no_writers_generation_count: u32,
    /// Number of samples of the same instance that follow this one in the returned collection.
    pub sample_rank: u32,
    /// Generations between this sample and the most recent sample of the same instance in the
    /// returned collection.
    pub generation_rank: u32,
    /// Generations between this sample and the most recent sample of the instance in the cache.
    pub absolute_generation_rank: u32,
    /// Whether the sample carries data; `false` for samples that only announce an instance
    /// state change (dispose, or loss of all writers).
    pub valid_data: bool,
}

/// A sample returned by read or take: the data (`None` when `info.valid_data` is false) and its
/// information.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Sample<T> {
    /// The data, present exactly when `info.valid_data`.
    pub data: Option<T>,
    /// The sample information.
    pub info: SampleInfo,
}

/// Which instances a read or take looks at.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Selection {
    /// Every instance (DDS `read`/`take`).
    All,
    /// Only this instance (DDS `read_instance`/`take_instance`).
    Instance(InstanceHandle),
    /// The instance with the smallest handle greater than this one that has a matching sample
    /// (DDS `read_next_instance`/`take_next_instance`); the handle need not exist any more, and
    /// [`InstanceHandle::NIL`] starts from the first instance.
    NextInstance(InstanceHandle),
}

/// A snapshot of an instance's state (for status queries and tests).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct InstanceStatus {
    /// The instance's handle.
    pub handle: InstanceHandle,
    /// Its key hash.
    pub key_hash: KeyHash,
    /// Instance state.
    pub instance_state: InstanceState,
    /// View state.
    pub view_state: ViewState,
    /// Disposed generation count.
    pub disposed_generation_count: u32,
    /// No-writers generation count.
    pub no_writers_generation_count: u32,
    /// Samples held, including an invalid (state-change) sample.
    pub samples: usize,
    /// Samples held that were not read yet.
    pub not_read: usize,
    /// Writers currently registered with the instance.
    pub writers: usize,
}
