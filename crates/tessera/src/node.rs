//! Attaching to a per-host node service (`tessera node`, the federated architecture).
//!
//! An application participant in node mode ([`ParticipantConfig::node`] or `TESSERA_NODE=1`)
//! stays off the network: it joins the host's *node plane* instead, where it meets the other
//! node-mode participants of the host and the node service's local participant. The node plane
//! is
//! - shared memory for all user data (the `shm` transport, preferred wherever it reaches);
//! - SPDP/SEDP by unicast UDP on loopback only, on ports of their own ([`NODE_PORT_BASE`]
//!   instead of 7400), with multicast off. Today's shm transport has no discovery channel of
//!   its own, so loopback is the smallest step that keeps discovery off the wire; a participant
//!   of the ordinary (decentralized) ports never hears the node plane, nor the other way round,
//!   so an application is reached either directly or through the node, never both.
//!
//! The node announces itself with a presence file (`/dev/shm/tessera-node-<domain>-<netns>`,
//! its pid); an application that finds no live node when it starts falls back to the ordinary
//! decentralized configuration (logged) and stays so. One that attached keeps its node-plane
//! configuration when the node dies: the restarted node discovers it again by SPDP and the
//! flows resume (the application reattaches without doing anything).
//!
//! [`ParticipantConfig::node`]: crate::ParticipantConfig::node

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use crate::transport::{Peer, PortMapping, TransportError, UdpConfig};

/// Environment variable: `1` to attach to the host's node service when one runs.
pub const ENV_NODE: &str = "TESSERA_NODE";

/// The port base of the node plane (the RTPS `PB`, 7400 on the ordinary plane): the node plane
/// of domain `d` uses ports `2400 + 250·d + …`, the ordinary ports of domain `d − 20`; so node
/// planes of domains 0..=19 collide with no ordinary domain.
pub const NODE_PORT_BASE: u32 = 2400;

/// Participant indices of the node plane probed by unicast SPDP (the node and up to 47
/// applications per host and domain).
pub const NODE_PLANE_PARTICIPANTS: u32 = 48;

/// `TESSERA_NODE`: true for `1`/`true`/`on`, false for `0`/`false`/`off` or unset; anything
/// else is a configuration error.
pub fn node_from_env() -> crate::Result<bool> {
    match std::env::var(ENV_NODE) {
        Err(_) => Ok(false),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "" | "0" | "false" | "off" | "no" => Ok(false),
            "1" | "true" | "on" | "yes" => Ok(true),
            other => Err(crate::Error::BadParameter(format!(
                "{ENV_NODE}={other:?}: expected 0 or 1"
            ))),
        },
    }
}

/// The UDP configuration of a node-plane participant of `domain`: loopback, no multicast, the
/// node plane's ports, and unicast SPDP to every node-plane index on 127.0.0.1.
pub fn node_plane_udp(domain: u32) -> Result<UdpConfig, TransportError> {
    let mut c = UdpConfig::without_env(domain);
    c.interface = Some("lo".into());
    c.multicast = false;
    c.ports = PortMapping {
        base: NODE_PORT_BASE,
        ..PortMapping::default()
    };
    c.max_participant_id = NODE_PLANE_PARTICIPANTS - 1;
    c.peers = (0..NODE_PLANE_PARTICIPANTS)
        .filter_map(|i| c.ports.metatraffic_unicast(domain, i))
        .map(|port| Peer {
            addr: Ipv4Addr::LOCALHOST,
            port: Some(port),
        })
        .collect();
    if c.peers.is_empty() {
        return Err(TransportError::InvalidConfig(format!(
            "domain {domain} has no node-plane ports"
        )));
    }
    Ok(c)
}

/// The configuration of a node-plane participant of `domain` (the node service's local side;
/// an application gets it from [`crate::ParticipantConfig::node`] when a node runs): shared
/// memory and loopback UDP, no multicast.
pub fn node_plane_config(domain: u32) -> crate::Result<crate::ParticipantConfig> {
    Ok(crate::ParticipantConfig {
        udp: Some(node_plane_udp(domain)?),
        transports: Some(vec![
            crate::transport::TransportKind::Udp4,
            crate::transport::TransportKind::Shm,
        ]),
        allow_multicast: Some(crate::AllowMulticast::Off),
        node: Some(false),
        ..crate::ParticipantConfig::default()
    })
}

/// The inode of this process's namespace of `kind` (`net`, `pid`), 0 when unknown.
fn ns_inode(kind: &str) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/ns/{kind}"))
        .map(|m| m.ino())
        .unwrap_or(0)
}

/// Where the node of `domain` in this network namespace writes its pid (and its pid
/// namespace, so that only processes that can see that pid judge whether it runs).
pub fn presence_path(domain: u32) -> PathBuf {
    PathBuf::from(format!(
        "/dev/shm/tessera-node-{domain}-{}",
        ns_inode("net")
    ))
}

/// The pid in a presence file, if it names one of our pid namespace that runs: `Some(true)`;
/// one of ours that does not: `Some(false)`; unreadable or of another pid namespace: `None`.
fn presence_alive(text: &str) -> Option<(u32, bool)> {
    let mut words = text.split_whitespace();
    let pid: u32 = words.next()?.parse().ok()?;
    match words.next().map(str::parse::<u64>) {
        Some(Ok(ns)) if ns != ns_inode("pid") => None,
        Some(Err(_)) => None,
        _ => Some((pid, std::path::Path::new(&format!("/proc/{pid}")).exists())),
    }
}

/// The pid of the live node service of `domain` in this network namespace, if any. A file
/// left by a dead node (killed with -9) names a pid that no longer runs (or runs something
/// else, which only makes an application attach to a node plane whose node is restarting).
pub fn node_running(domain: u32) -> Option<u32> {
    let text = std::fs::read_to_string(presence_path(domain)).ok()?;
    match presence_alive(&text)? {
        (pid, true) => Some(pid),
        (_, false) => None,
    }
}

/// The node service's presence file, removed when dropped.
#[derive(Debug)]
pub struct NodePresence {
    path: PathBuf,
}

impl NodePresence {
    /// Announces this process as the node of `domain`. Fails with `AlreadyExists` when another
    /// live node holds the domain in this namespace.
    pub fn announce(domain: u32) -> std::io::Result<NodePresence> {
        if let Some(pid) = node_running(domain) {
            if pid != std::process::id() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("node service pid {pid} already serves domain {domain}"),
                ));
            }
        }
        remove_stale_presence();
        let path = presence_path(domain);
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        let mut f = std::fs::File::create(&tmp)?;
        writeln!(f, "{} {}", std::process::id(), ns_inode("pid"))?;
        std::fs::rename(&tmp, &path)?;
        Ok(NodePresence { path })
    }
}

/// Removes the presence files of nodes of our pid namespace that no longer run (killed with
/// -9), of every domain and network namespace: one per killed node would otherwise stay in `/dev/shm` until reboot.
fn remove_stale_presence() {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with("tessera-node-") || name.ends_with(".tmp") {
            continue;
        }
        let dead = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|t| presence_alive(&t))
            .is_some_and(|(_, alive)| !alive);
        if dead {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Drop for NodePresence {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_plane_ports_are_apart_from_the_ordinary_ones() {
        let c = node_plane_udp(0).unwrap();
        let ordinary = PortMapping::default();
        let node_max = c
            .ports
            .user_unicast(0, NODE_PLANE_PARTICIPANTS - 1)
            .unwrap();
        assert!(node_max < ordinary.spdp_multicast(0).unwrap());
        assert_eq!(c.peers.len() as u32, NODE_PLANE_PARTICIPANTS);
        assert!(!c.multicast);
        assert!(c.peers.iter().all(|p| p.addr.is_loopback()));
    }

    #[test]
    fn presence_follows_the_file_and_the_pid() {
        let domain = 200;
        let _ = std::fs::remove_file(presence_path(domain));
        assert_eq!(node_running(domain), None);
        let p = NodePresence::announce(domain).unwrap();
        assert_eq!(node_running(domain), Some(std::process::id()));
        drop(p);
        assert_eq!(node_running(domain), None);
        // A file naming a pid that does not run is no node, and the next node removes it.
        let stale = PathBuf::from("/dev/shm/tessera-node-201-1");
        std::fs::write(&stale, "4000000000\n").unwrap();
        // One of another pid namespace cannot be judged from here: it stays.
        let foreign = PathBuf::from("/dev/shm/tessera-node-201-2");
        std::fs::write(&foreign, "4000000000 1\n").unwrap();
        std::fs::write(presence_path(domain), "4000000000\n").unwrap();
        assert_eq!(node_running(domain), None);
        let p = NodePresence::announce(domain).unwrap();
        assert!(!stale.exists());
        assert!(foreign.exists());
        let _ = std::fs::remove_file(&foreign);
        drop(p);
    }
}
