//! # tessera-rtps — the sans-IO RTPS protocol core
//!
//! Everything Tessera knows about the RTPS wire protocol lives here, with no sockets, threads or
//! clocks: callers pass bytes and the current time in, and get datagrams, delivered samples and
//! the next deadline out. That makes every protocol behaviour a fast, deterministic test
//! (see the simulated-network tests in [`sim`]).
//!
//! Layers, bottom up:
//! - [`types`]: GUIDs, entity ids, sequence numbers, locators, RTPS time.
//! - [`wire`]: the message codec (checked views over received bytes, builders for sent ones).
//! - [`cdr`]: CDR / XCDR1 / XCDR2 serialization of user types, key hashes.
//! - [`qos`]: the DDS QoS policies, their consistency rules and request/offered matching.
//! - [`discovery`]: SPDP/SEDP data and their parameter-list encoding.
//! - [`xtypes`]: TypeObjects, TypeIdentifiers, TypeInformation and TypeLookup samples.
//! - [`writer`], [`reader`], [`frag`]: the reliability state machines (HEARTBEAT/ACKNACK/GAP/
//!   NACK_FRAG), fragmentation and reassembly.

pub mod budget;
pub mod cdr;
pub mod copy;
pub mod discovery;
pub mod fasthash;
pub mod filter;
pub mod frag;
mod now;
pub mod qos;
pub mod reader;
pub mod sim;
pub mod types;
pub mod wire;
pub mod writer;
pub mod xtypes;

pub use now::Now;
