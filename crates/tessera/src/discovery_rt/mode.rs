//! [`DiscoveryMode`], how a participant finds the others, and the discovery servers a
//! client uses, read from `ROS_DISCOVERY_SERVER`.

use tessera_rtps::discovery::ds_common::{parse_server_list, ServerHost};

/// How a participant finds the others (`ParticipantConfig::discovery`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DiscoveryMode {
    /// Standard SPDP/SEDP: multicast announcements, every participant talks to every other.
    #[default]
    Simple,
    /// A client of discovery servers (Fast DDS 2.9's protocol; `tessera discovery-server` or
    /// `fastdds discovery`): no multicast, discovery only with the servers, which relay what
    /// this participant needs; user data still goes peer to peer.
    Client(Vec<DiscoveryServer>),
}

/// A discovery server a client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscoveryServer {
    /// Its id (0..=255): the third byte of its well-known GUID prefix, `fastdds discovery -i`.
    pub id: u8,
    /// Where it listens.
    pub address: std::net::SocketAddr,
}

impl DiscoveryMode {
    /// Reads `ROS_DISCOVERY_SERVER` (`;`-separated servers, position = id, port 11811 by
    /// default, e.g. `127.0.0.1:11811` or `;10.0.0.2` for id 1 alone): a client of those servers,
    /// or [`DiscoveryMode::Simple`] when the variable is unset or empty.
    pub fn from_env() -> crate::Result<DiscoveryMode> {
        match std::env::var("ROS_DISCOVERY_SERVER") {
            Ok(v) if !v.trim().is_empty() => Self::parse(&v),
            _ => Ok(DiscoveryMode::Simple),
        }
    }

    /// Parses a `ROS_DISCOVERY_SERVER` value (host names are resolved here).
    pub fn parse(list: &str) -> crate::Result<DiscoveryMode> {
        use std::net::{SocketAddr, ToSocketAddrs};
        let bad = |e: String| crate::Error::BadParameter(format!("ROS_DISCOVERY_SERVER: {e}"));
        let mut out = Vec::new();
        for e in parse_server_list(list).map_err(|e| bad(e.to_string()))? {
            let address = match &e.host {
                ServerHost::Ip(ip) => SocketAddr::new(*ip, e.port),
                ServerHost::Name(n) => (n.as_str(), e.port)
                    .to_socket_addrs()
                    .map_err(|err| bad(format!("{n}: {err}")))?
                    .min_by_key(|a| a.is_ipv6())
                    .ok_or_else(|| bad(format!("{n}: no address")))?,
            };
            out.push(DiscoveryServer { id: e.id, address });
        }
        Ok(DiscoveryMode::Client(out))
    }
}
