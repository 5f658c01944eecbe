//! Shared by the discovery-server tests: scripted clients of one server.

use std::net::Ipv4Addr;
use std::time::Instant;
use tessera_rtps::discovery::{
    DiscoveryServerClient, DsClientConfig, RemoteServer, SpdpParticipantData,
};
use tessera_rtps::types::{Locator, Locators};

/// Where the scripted clients look for their server (id 0).
pub fn server_locator() -> Locator {
    Locator::udpv4(Ipv4Addr::LOCALHOST, 11811)
}

/// A discovery-server client announcing `participant`, with one server (id 0) at
/// [`server_locator`].
pub fn ds_client(participant: SpdpParticipantData, now: Instant) -> DiscoveryServerClient {
    let mut l = Locators::new();
    l.push(server_locator());
    DiscoveryServerClient::new(
        DsClientConfig {
            participant,
            servers: vec![RemoteServer { id: 0, locators: l }],
            shared_reassembly: None,
            shared_buffered: None,
            wall_clock_nanos: 0,
        },
        now,
    )
}
