//! Transports: how RTPS messages get from one participant to another.
//!
//! [`udp`] is the UDP/IPv4 transport that interoperates with other RTPS implementations:
//! well-known ports ([`ports`]), interface selection ([`iface`]), and receive threads that
//! deliver datagrams straight to a handler on the thread that read them ([`recv`]).
//!
//! A participant opens a [`UdpTransport`], advertises its [`UdpTransport::locators`], sends
//! SPDP to [`UdpTransport::spdp_destinations`], calls [`UdpTransport::send_to`] /
//! [`UdpTransport::send_to_many`] from any thread, and starts the receive threads with
//! [`UdpTransport::start`]; dropping the returned [`Receivers`] joins them.

pub mod iface;
pub mod ports;
pub mod recv;
pub mod udp;

pub use iface::{Interface, InterfaceError};
pub use ports::{PortMapping, DEFAULT_MULTICAST_GROUP};
pub use recv::{Channel, DatagramHandler, ReceiveStats, Receivers};
pub use udp::{
    parse_peers, Peer, SendStats, TransportError, TransportLocators, TransportStats, UdpConfig,
    UdpTransport,
};

/// Helpers for tests that open sockets.
#[cfg(test)]
pub(crate) mod test_support {
    /// True when running inside a private network namespace prepared by `scripts/netns-run`
    /// (`TESSERA_IN_NETNS=1`). Otherwise prints a note and returns false: the caller skips, so
    /// that no test ever sends discovery traffic on the machine's real interfaces.
    pub(crate) fn in_netns(test: &str) -> bool {
        if std::env::var("TESSERA_IN_NETNS").as_deref() == Ok("1") {
            true
        } else {
            eprintln!("SKIP {test}: not in a network namespace (run via scripts/netns-run)");
            false
        }
    }
}
