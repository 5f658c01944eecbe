//! The behaviour suite: what DDS promises, written once against [`harness`] and run over every
//! transport by [`per_transport!`](crate::per_transport): `inproc` (plain `cargo test`),
//! `inproc_lossy` (10 % loss, delay and reordering: reliable promises must still hold), and
//! `udp4` / `udp6` / `shm` (shared memory beside UDPv4 for discovery; ignored outside a network
//! namespace; `scripts/test` runs them).
//!
//! Every test makes its own participants (an in-process network of its own, or a fresh set of
//! UDP participants), so the tests of one instance run in parallel.

#[path = "../support/mod.rs"]
mod support;

mod durability;
mod fragments;
mod harness;
mod instances;
mod listeners;
mod liveliness;
mod matching;
mod qos_policies;
mod refusal;
mod reliability;
