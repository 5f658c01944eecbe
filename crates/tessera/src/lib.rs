//! # Tessera — DDS over RTPS (to be written)

pub use tessera_rtps as rtps;

pub mod history;
pub mod transport;
