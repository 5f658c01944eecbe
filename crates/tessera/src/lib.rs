//! # Tessera — DDS over RTPS (to be written)

pub use tessera_rtps as rtps;

pub mod condition;
pub mod error;
pub mod history;
pub mod status;
pub mod transport;
