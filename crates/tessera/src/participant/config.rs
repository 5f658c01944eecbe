//! [`ParticipantConfig`], the non-QoS settings of a participant, and the environment
//! variables that fill in what it leaves unset.

use crate::bounds::ResourceBounds;
use crate::discovery_rt::DiscoveryMode;
use crate::error::{Error, Result};
use crate::transport::{AllowMulticast, InProcessNetwork, ShmConfig, TransportKind, UdpConfig};
use std::sync::Arc;
use std::time::Duration;

/// Configuration of a participant that is not QoS: where it sends and listens.
#[derive(Debug, Clone, Default)]
pub struct ParticipantConfig {
    /// Transport settings (interface, peers, multicast). `None`: defaults for the domain with the
    /// environment applied (`TESSERA_INTERFACE`, `TESSERA_PEERS`, `TESSERA_MULTICAST`).
    pub udp: Option<UdpConfig>,
    /// The transports to open, the preferred UDP one first (`None`: `TESSERA_TRANSPORTS`, e.g.
    /// `udp4,udp6` or `udp4`, or [`crate::transport::DEFAULT_TRANSPORTS`], UDPv4 and shared
    /// memory, when it is unset). Shared memory ([`TransportKind::Shm`]) is preferred wherever
    /// it reaches.
    pub transports: Option<Vec<TransportKind>>,
    /// Settings of the shared-memory transport when it is selected (`None`: the defaults with
    /// `TESSERA_SHM_SPIN_US` and `TESSERA_SHM_SEGMENT_BYTES` applied).
    pub shm: Option<ShmConfig>,
    /// Settings of the TCP transport when it is selected ([`TransportKind::Tcp4`]; `None`: the
    /// defaults with `TESSERA_TCP_PEERS` and `TESSERA_TCP_PORT` applied).
    pub tcp: Option<crate::transport::TcpConfig>,
    /// How the user-data receive threads wait for datagrams (UDP and shared memory): `None`
    /// reads `TESSERA_WAIT` (`block`, the default; `spin:US`, `adaptive:US`, `poll`); see
    /// [`crate::transport::wait`] for what each costs.
    pub wait: Option<crate::transport::WaitStrategy>,
    /// Use this in-process network instead of UDP: no socket is opened, and only participants
    /// of the same network (and domain) are reached. For tests.
    pub in_process: Option<InProcessNetwork>,
    /// Do not match this participant's readers with its own writers (Cyclone's "ignore local
    /// participant"; `ddsperf` relies on it). Off by default: DDS delivers locally.
    pub ignore_local: bool,
    /// Bounds on what peers can make this participant hold (instances per reader, reassembly
    /// and out-of-order bytes, participant-event channels); see [`ResourceBounds`] for the
    /// defaults.
    pub limits: ResourceBounds,
    /// What multicast is used for (Cyclone's `AllowMulticast`): `None` reads
    /// `TESSERA_ALLOW_MULTICAST` (`false`, `spdp` or `true`; default `true`: discovery and
    /// user data). [`AllowMulticast::Off`] also closes the UDP multicast sockets, as
    /// `TESSERA_MULTICAST=false` does.
    pub allow_multicast: Option<AllowMulticast>,
    /// How other participants are found: `None` reads `ROS_DISCOVERY_SERVER` (a client of
    /// those discovery servers when set, standard SPDP/SEDP otherwise); see [`DiscoveryMode`].
    pub discovery: Option<DiscoveryMode>,
    /// The participant lease announced in SPDP: a peer that hears nothing from this participant
    /// for this long drops it and its endpoints (liveliness AUTOMATIC of its writers ends then
    /// too). `None`: `TESSERA_LEASE_DURATION` (seconds, e.g. `2.5`), or 10 s when it is unset.
    /// Announcements go out at least three times per lease.
    pub lease_duration: Option<Duration>,
    /// Whether endpoints announce their type's XTypes TypeInformation in SEDP and the
    /// participant serves the TypeLookup service (what lets Cyclone DDS 11 and its
    /// `cyclonedds typeof`/`subscribe` tools resolve Tessera's types). `None`:
    /// `TESSERA_TYPE_INFORMATION` (`0`/`false` or `1`/`true`), on when it is unset.
    pub type_information: Option<bool>,
    /// The QoS profiles that `*_with_profile` helpers take QoS from (see [`crate::qos_xml`]).
    /// `None`: the files named by `TESSERA_QOS_PROFILES` (`;`-separated), read once per
    /// process at the first use.
    pub qos_profiles: Option<Arc<crate::qos_xml::QosProvider>>,
    /// Attach to the host's node service (`tessera node`, see [`crate::node`]): user data over
    /// shared memory, discovery on the loopback node plane, the network reached through the
    /// node. `None`: `TESSERA_NODE` (off when unset). With no live node on the host the
    /// participant starts decentralized, as if this were off (logged).
    pub node: Option<bool>,
}

/// Environment variable for [`ParticipantConfig::type_information`] when it is `None`.
pub const ENV_TYPE_INFORMATION: &str = "TESSERA_TYPE_INFORMATION";

/// `TESSERA_TYPE_INFORMATION`, on when unset.
pub(super) fn type_information_from_env() -> Result<bool> {
    match std::env::var(ENV_TYPE_INFORMATION) {
        Err(_) => Ok(true),
        Ok(v) => match v.trim() {
            "1" | "true" | "on" => Ok(true),
            "0" | "false" | "off" => Ok(false),
            _ => Err(Error::BadParameter(format!(
                "{ENV_TYPE_INFORMATION}={v:?}: expected 0 or 1"
            ))),
        },
    }
}

/// Environment variable for [`ParticipantConfig::lease_duration`] when it is `None`.
pub const ENV_LEASE_DURATION: &str = "TESSERA_LEASE_DURATION";

/// The shortest participant lease accepted (a shorter one could not be renewed in time).
pub const MIN_LEASE: Duration = Duration::from_millis(100);

/// `TESSERA_LEASE_DURATION` in seconds (0.1 s to a year), or the 10 s default when unset.
pub(super) fn lease_from_env() -> Result<Duration> {
    let Ok(v) = std::env::var(ENV_LEASE_DURATION) else {
        return Ok(tessera_rtps::discovery::SPDP_LEASE);
    };
    match v.trim().parse::<f64>() {
        Ok(s) if (0.1..=365.0 * 86_400.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(Error::BadParameter(format!(
            "{ENV_LEASE_DURATION}={v:?}: expected seconds between 0.1 and 31536000"
        ))),
    }
}

impl ParticipantConfig {
    /// A configuration that uses `network` (an in-process network) instead of UDP.
    pub fn with_in_process(network: InProcessNetwork) -> ParticipantConfig {
        ParticipantConfig {
            in_process: Some(network),
            ..ParticipantConfig::default()
        }
    }
}
