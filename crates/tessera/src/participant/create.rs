//! Creating a participant: checking its configuration, opening its transports, starting
//! discovery and its threads, and choosing its GUID prefix.

use super::config::{lease_from_env, type_information_from_env, MIN_LEASE};
use super::routing::Endpoints;
use super::{DomainParticipant, ParticipantConfig, ParticipantOwner, ParticipantShared};
use crate::discovery_rt::{DiscoveryMode, DiscoveryOptions, DiscoveryRuntime};
use crate::error::{Error, Result};
use crate::qos::DomainParticipantQos;
use crate::runtime::RuntimeContext;
use crate::transport::{AllowMulticast, Channel, Transports, UdpConfig};
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tessera_rtps::types::{GuidPrefix, Locator};

impl DomainParticipant {
    /// Creates a participant in `domain_id` with default QoS and configuration.
    pub fn new(domain_id: u32) -> Result<DomainParticipant> {
        Self::with_qos(
            domain_id,
            DomainParticipantQos::default(),
            ParticipantConfig::default(),
        )
    }

    /// Creates a participant with the given QoS and configuration.
    pub fn with_qos(
        domain_id: u32,
        qos: DomainParticipantQos,
        config: ParticipantConfig,
    ) -> Result<DomainParticipant> {
        if domain_id > 232 {
            return Err(Error::BadParameter(format!(
                "domain id {domain_id} is above 232 (port mapping limit)"
            )));
        }
        if config
            .udp
            .as_ref()
            .is_some_and(|u| u.domain_id != domain_id)
        {
            return Err(Error::BadParameter(
                "transport configuration is for another domain".into(),
            ));
        }
        let mut config = config;
        let attach = match config.node {
            Some(on) => on,
            None => crate::node::node_from_env()?,
        } && config.in_process.is_none();
        let node_attached = attach && crate::node::node_running(domain_id).is_some();
        if node_attached {
            let plane = crate::node::node_plane_config(domain_id)?;
            config.udp = plane.udp;
            config.transports = plane.transports;
            config.allow_multicast = plane.allow_multicast;
        } else if attach {
            tracing::warn!(
                domain_id,
                "{}: no node service runs on this host; starting decentralized",
                crate::node::ENV_NODE
            );
        }
        let discovery_mode = match config.discovery {
            Some(m) => m,
            None => DiscoveryMode::from_env()?,
        };
        let allow_multicast = match config.allow_multicast {
            Some(a) => a,
            None => AllowMulticast::from_env()?,
        };
        let mut udp = config.udp;
        if allow_multicast == AllowMulticast::Off && config.in_process.is_none() {
            let mut c = match udp {
                Some(c) => c,
                None => UdpConfig::new(domain_id)?,
            };
            c.multicast = false;
            udp = Some(c);
        }
        let mut shm = config.shm;
        if let (Some(w), None) = (config.wait, &config.in_process) {
            let mut c = match udp {
                Some(c) => c,
                None => UdpConfig::new(domain_id)?,
            };
            c.wait = w;
            udp = Some(c);
            let mut s = match shm {
                Some(s) => s,
                None => crate::transport::ShmConfig::from_env()?,
            };
            s.wait = Some(w);
            shm = Some(s);
        }
        let transport = Transports::open(
            domain_id,
            udp,
            config.transports.as_deref(),
            config.in_process.as_ref(),
            shm,
            config.tcp,
        )?;
        let guid_prefix = new_guid_prefix();
        let now = Instant::now();
        let ctx = RuntimeContext::new(guid_prefix, transport, config.limits, allow_multicast);
        let discovery = DiscoveryRuntime::new(
            guid_prefix,
            domain_id,
            &qos,
            &ctx.transport,
            DiscoveryOptions {
                ignore_local: config.ignore_local,
                allow_multicast,
                lease: match config.lease_duration {
                    Some(d) if d < MIN_LEASE => {
                        return Err(Error::BadParameter(format!(
                            "lease_duration {d:?} is shorter than {MIN_LEASE:?}"
                        )))
                    }
                    Some(d) => d,
                    None => lease_from_env()?,
                },
                type_information: match config.type_information {
                    Some(on) => on,
                    None => type_information_from_env()?,
                },
            },
            &discovery_mode,
            &ctx.budgets,
            now,
        );
        let endpoints = Endpoints::default();
        let routes_generation = endpoints.routes_generation.clone();
        let shared = Arc::new(ParticipantShared {
            domain_id,
            qos,
            ctx: Arc::new(ctx),
            endpoints: RwLock::new(endpoints),
            routes_generation,
            discovery: Mutex::new(discovery),
            atomic: crate::atomic::AtomicService::new(guid_prefix),
            next_entity_key: AtomicU32::new(1),
            qos_profiles: config.qos_profiles,
            node_attached,
        });
        // The receive threads hold the participant weakly so that dropping it stops them.
        let weak = Arc::downgrade(&shared);
        let handler = move |buf: &[u8], _from: Locator, channel: Channel| {
            if let Some(s) = weak.upgrade() {
                s.handle_datagram(buf, channel);
            }
        };
        let receivers = shared.transport.start(Arc::new(handler))?;
        let s = shared.clone();
        let events = std::thread::Builder::new()
            .name("tessera-events".into())
            .spawn(move || s.event_loop())
            .map_err(Error::Io)?;
        // First announcement right away so peers discover us without waiting a period.
        let actions = shared.discovery.lock().on_timeout(&shared, now);
        shared.apply_discovery_events(actions, now);
        Ok(DomainParticipant {
            owner: Arc::new(ParticipantOwner {
                shared,
                receivers: Mutex::new(Some(receivers)),
                events: Mutex::new(Some(events)),
            }),
        })
    }
}

/// A GUID prefix unique to this process and participant: vendor id, host hash, process id,
/// a per-process counter and a time-derived salt.
fn new_guid_prefix() -> GuidPrefix {
    use std::sync::atomic::AtomicU32;
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host_hash = host.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    });
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut p = [0u8; 12];
    p[0..2].copy_from_slice(&tessera_rtps::types::VENDOR_TESSERA.0);
    p[2..4].copy_from_slice(&(host_hash as u16 ^ (salt >> 16) as u16).to_be_bytes());
    p[4..8].copy_from_slice(&pid.to_be_bytes());
    p[8..12].copy_from_slice(&(n ^ (salt & 0xffff) << 16).to_be_bytes());
    GuidPrefix(p)
}
