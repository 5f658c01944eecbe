//! Transports (to be written).
