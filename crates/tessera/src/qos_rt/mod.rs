//! Run-time enforcement of the QoS policies that act per instance or per writer: DEADLINE
//! ([`deadline`]), OWNERSHIP ([`ownership`]), and the reader-side bookkeeping of LIFESPAN,
//! TIME_BASED_FILTER and writer liveliness ([`reader`]).
//!
//! Every piece here is a plain data structure driven with `now`: the endpoints call it under
//! their own locks, and their `on_timeout` (run by the participant's event thread) asks it for
//! the next deadline. Nothing is allocated or armed while a policy keeps its default, so a
//! reader or writer that uses none of them pays one branch per sample.

pub(crate) mod deadline;
pub(crate) mod ownership;
pub(crate) mod reader;
