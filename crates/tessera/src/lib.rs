//! # Tessera — DDS over RTPS (to be written)

pub use tessera_derive::TopicType;
pub use tessera_rtps as rtps;
pub use tessera_rtps::cdr::TopicType;

pub mod history;
pub mod transport;
