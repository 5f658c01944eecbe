//! Derive macro for Tessera topic types (to be written).
