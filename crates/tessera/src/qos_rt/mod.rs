//! Run-time enforcement of the QoS policies that act per instance or per writer: DEADLINE
//! ([`deadline`]), OWNERSHIP ([`ownership`]), and the reader-side bookkeeping of LIFESPAN,
//! TIME_BASED_FILTER and writer liveliness ([`reader`]).
//!
//! Every piece here is a plain data structure driven with `now`: the endpoints call it under
//! their own locks, and their `on_timeout` (run by the participant's event thread) asks it for
//! the next deadline. Nothing is allocated or armed while a policy keeps its default, so a
//! reader or writer that uses none of them pays one branch per sample.

pub(crate) mod deadline;
pub(crate) mod group;
pub(crate) mod ownership;
pub(crate) mod reader;

use crate::error::{Error, Result};
use tessera_rtps::qos::{DataReaderQos, DataWriterQos};

/// The policies readers and writers share that cannot change once an entity is enabled.
pub(crate) trait ImmutablePolicies {
    /// Each shared immutable policy, rendered comparable, with its name.
    fn immutable(&self) -> [(&'static str, String); 8];
}

macro_rules! immutable_policies {
    ($($t:ty),*) => {$(
        impl ImmutablePolicies for $t {
            fn immutable(&self) -> [(&'static str, String); 8] {
                [
                    ("DURABILITY", format!("{:?}", self.durability)),
                    ("LIVELINESS", format!("{:?}", self.liveliness)),
                    ("RELIABILITY", format!("{:?}", self.reliability)),
                    ("DESTINATION_ORDER", format!("{:?}", self.destination_order)),
                    ("HISTORY", format!("{:?}", self.history)),
                    ("RESOURCE_LIMITS", format!("{:?}", self.resource_limits)),
                    ("OWNERSHIP", format!("{:?}", self.ownership)),
                    ("DATA_REPRESENTATION", format!("{:?}", self.data_representation)),
                ]
            }
        }
    )*};
}
immutable_policies!(DataWriterQos, DataReaderQos);

/// `set_qos`'s check: [`Error::ImmutablePolicy`] naming every immutable policy `new` changes
/// from `fixed` (the shared ones, and `more`: the entity's own, as name and whether changed).
pub(crate) fn check_immutable<Q: ImmutablePolicies>(
    fixed: &Q,
    new: &Q,
    more: &[(&'static str, bool)],
) -> Result<()> {
    let changed: Vec<&str> = fixed
        .immutable()
        .iter()
        .zip(new.immutable().iter())
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, _)| a.0)
        .chain(more.iter().filter(|m| m.1).map(|m| m.0))
        .collect();
    if changed.is_empty() {
        Ok(())
    } else {
        Err(Error::ImmutablePolicy(changed.join(", ")))
    }
}
