//! What the discovery-server client and server share: Fast DDS 2.9's well-known server
//! prefixes, the `ROS_DISCOVERY_SERVER` syntax, the participant properties that say who is a
//! client or a server, and the schedule constants.
//!
//! Facts follow `shared/docs/discovery-server.md` (Fast DDS 2.9.1 on the wire).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use super::{DiscoveryDecodeError as E, SpdpParticipantData};
use crate::types::{GuidPrefix, Locator};
use crate::wire::{pid, ParameterList, ParameterListBuilder};

/// The port a server listens on when `ROS_DISCOVERY_SERVER` names none.
pub const DEFAULT_SERVER_PORT: u16 = 11811;
/// Client pings right after start: this many, this far apart ...
pub const FAST_PINGS: u32 = 5;
/// ... see [`FAST_PINGS`].
pub const FAST_PING_PERIOD: Duration = Duration::from_millis(100);
/// Then this period until the server's DATA(p) is heard (Fast DDS's
/// `clientAnnouncementPeriod`).
pub const PING_PERIOD: Duration = Duration::from_millis(450);
/// Then the participant announcement is re-sent this often (Fast DDS's `leaseAnnouncement`).
pub const ANNOUNCE_PERIOD: Duration = Duration::from_secs(3);
/// The lease announced (Fast DDS's `leaseDuration`): a server forgets a client it has not
/// heard from for this long.
pub const DS_LEASE: Duration = Duration::from_secs(20);
/// The `DS_VERSION` property value Fast DDS 2.9 sends.
pub const DS_VERSION: &str = "2.0";
/// Property naming the participant's role.
pub const PROP_PARTICIPANT_TYPE: &str = "PARTICIPANT_TYPE";
/// Property with the discovery-server protocol version.
pub const PROP_DS_VERSION: &str = "DS_VERSION";
/// Property a server sends with its persistence GUID (alone it also marks a server).
pub const PROP_PERSISTENCE_GUID: &str = "PID_PERSISTENCE_GUID";
/// At most this many properties are read from one announcement.
pub const MAX_PROPERTIES: usize = 64;

const PREFIX_TAIL: [u8; 9] = [0x5f, 0x45, 0x50, 0x52, 0x4f, 0x53, 0x49, 0x4d, 0x41];

/// The well-known prefix of server `id`: "DS", the id, "_EPROSIMA". A 2.9 client recognises a
/// server only by it.
pub fn server_prefix(id: u8) -> GuidPrefix {
    let mut p = [0u8; 12];
    p[0] = 0x44;
    p[1] = 0x53;
    p[2] = id;
    p[3..].copy_from_slice(&PREFIX_TAIL);
    GuidPrefix(p)
}

/// The server id of a well-known server prefix, or None for any other prefix.
pub fn server_id(prefix: GuidPrefix) -> Option<u8> {
    let p = prefix.0;
    (p[0] == 0x44 && p[1] == 0x53 && p[3..] == PREFIX_TAIL).then_some(p[2])
}

/// A participant's role in the discovery-server protocol (property `PARTICIPANT_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParticipantType {
    /// Standard SPDP/SEDP participant (a server ignores its announcements).
    Simple,
    /// A client: gets only what it needs (topic-filtered).
    Client,
    /// A client that gets everything.
    SuperClient,
    /// A server.
    Server,
    /// A server with persistent state.
    Backup,
}

impl ParticipantType {
    /// The property value.
    pub fn as_str(self) -> &'static str {
        match self {
            ParticipantType::Simple => "SIMPLE",
            ParticipantType::Client => "CLIENT",
            ParticipantType::SuperClient => "SUPER_CLIENT",
            ParticipantType::Server => "SERVER",
            ParticipantType::Backup => "BACKUP",
        }
    }

    fn parse(s: &str) -> Option<ParticipantType> {
        Some(match s {
            "SIMPLE" => ParticipantType::Simple,
            "CLIENT" => ParticipantType::Client,
            "SUPER_CLIENT" => ParticipantType::SuperClient,
            "SERVER" => ParticipantType::Server,
            "BACKUP" => ParticipantType::Backup,
            _ => return None,
        })
    }

    /// Whether it is a server (relays, is pinged).
    pub fn is_server(self) -> bool {
        matches!(self, ParticipantType::Server | ParticipantType::Backup)
    }
}

/// Serializes `data` as an SPDP payload with a PID_PROPERTY_LIST of `props` appended (the
/// property list is not part of [`SpdpParticipantData`]: only this protocol needs it).
pub fn encode_participant_with_properties(
    data: &SpdpParticipantData,
    props: &[(&str, &str)],
) -> Vec<u8> {
    let mut out = data.to_payload();
    // Drop the sentinel, append the property list, end the list again.
    out.truncate(out.len().saturating_sub(4));
    let mut b = ParameterListBuilder::new(&mut out);
    b.param_with(pid::PROPERTY_LIST, |o| {
        o.extend_from_slice(&(props.len() as u32).to_le_bytes());
        for (k, v) in props {
            for s in [k, v] {
                // Strings inside the value are 4-aligned relative to the value's start.
                let start = o.len();
                o.extend_from_slice(&(s.len() as u32 + 1).to_le_bytes());
                o.extend_from_slice(s.as_bytes());
                o.push(0);
                while (o.len() - start) % 4 != 0 {
                    o.push(0);
                }
            }
        }
    });
    b.finish();
    out
}

fn open_payload(payload: &[u8]) -> Result<ParameterList<'_>, E> {
    let head = payload.get(..4).ok_or(E::Truncated)?;
    let le = match u16::from_be_bytes([head[0], head[1]]) {
        0x0003 => true,
        0x0002 => false,
        other => return Err(E::UnsupportedEncapsulation(other)),
    };
    Ok(ParameterList::parse(&payload[4..], le)?)
}

/// The properties (PID_PROPERTY_LIST, name/value strings) of an SPDP payload; empty when it
/// has none. At most [`MAX_PROPERTIES`] are read; binary properties that may follow are
/// ignored.
pub fn decode_properties(payload: &[u8]) -> Result<Vec<(String, String)>, E> {
    let pl = open_payload(payload)?;
    let le = pl.little_endian();
    let Some(value) = pl.get(pid::PROPERTY_LIST) else {
        return Ok(Vec::new());
    };
    let mut v = super::plist::Value::new(value, le, pid::PROPERTY_LIST);
    let n = v.u32()? as usize;
    if n > MAX_PROPERTIES {
        return Err(E::TooLarge(pid::PROPERTY_LIST));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let k = v.string()?;
        let val = v.string()?;
        out.push((k, val));
    }
    Ok(out)
}

/// A participant's role from its properties, as a 2.9.1 server decides it: `PARTICIPANT_TYPE`
/// if present (an unknown value is None: rejected), else a server if it has a persistence GUID
/// (DS 1.0), else a client. A `DS_VERSION` below 1.0 is rejected too.
pub fn participant_type(props: &[(String, String)]) -> Option<ParticipantType> {
    let get = |name: &str| {
        props
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    if let Some(v) = get(PROP_DS_VERSION) {
        let major: u32 = v.split('.').next()?.parse().ok()?;
        if major < 1 {
            return None;
        }
    }
    match get(PROP_PARTICIPANT_TYPE) {
        Some(t) => ParticipantType::parse(t),
        None if get(PROP_PERSISTENCE_GUID).is_some() => Some(ParticipantType::Server),
        None => Some(ParticipantType::Client),
    }
}

/// The host of one `ROS_DISCOVERY_SERVER` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerHost {
    /// An address (`0.0.0.0` already replaced by 127.0.0.1).
    Ip(IpAddr),
    /// A DNS name, for the runtime to resolve.
    Name(String),
}

/// One server of a `ROS_DISCOVERY_SERVER` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// Its id: the entry's position in the list (the prefix's third byte).
    pub id: u8,
    /// Its host.
    pub host: ServerHost,
    /// Its UDP port.
    pub port: u16,
}

impl ServerEntry {
    /// Its locator when the host is an address.
    pub fn locator(&self) -> Option<Locator> {
        match &self.host {
            ServerHost::Ip(IpAddr::V4(a)) => Some(Locator::udpv4(*a, self.port)),
            ServerHost::Ip(IpAddr::V6(a)) => Some(Locator::udpv6(*a, self.port)),
            ServerHost::Name(_) => None,
        }
    }
}

/// Why a `ROS_DISCOVERY_SERVER` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerListError {
    /// More than 256 entries (ids are one byte).
    #[error("more than 256 discovery servers")]
    TooMany,
    /// An entry could not be read.
    #[error("bad discovery server entry {0:?}")]
    BadEntry(String),
    /// No entry names a server.
    #[error("no discovery server given")]
    Empty,
}

/// Parses `ROS_DISCOVERY_SERVER`: `;`-separated entries, entry k being server id k; each
/// `IPv4[:port]`, `[IPv6][:port]`, `name[:port]` or `UDPv4:[addr]:port` / `UDPv6:[addr]:port`;
/// the port defaults to [`DEFAULT_SERVER_PORT`]; an empty entry skips its id; `0.0.0.0` means
/// 127.0.0.1.
pub fn parse_server_list(s: &str) -> Result<Vec<ServerEntry>, ServerListError> {
    let mut out = Vec::new();
    for (i, raw) in s.split(';').enumerate() {
        let id = u8::try_from(i).map_err(|_| ServerListError::TooMany)?;
        let e = raw.trim();
        if e.is_empty() {
            continue;
        }
        let bad = || ServerListError::BadEntry(e.to_owned());
        let rest = e
            .strip_prefix("UDPv4:")
            .or_else(|| e.strip_prefix("UDPv6:"))
            .unwrap_or(e);
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            let (h, tail) = r.split_once(']').ok_or_else(bad)?;
            let port = match tail.strip_prefix(':') {
                Some(p) => Some(p),
                None if tail.is_empty() => None,
                None => return Err(bad()),
            };
            (h, port)
        } else if rest.matches(':').count() > 1 {
            // A bare IPv6 address (no brackets, no port).
            (rest, None)
        } else {
            match rest.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| bad())?,
            None => DEFAULT_SERVER_PORT,
        };
        if host.is_empty() || port == 0 {
            return Err(bad());
        }
        let host = match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(a)) if a.is_unspecified() => ServerHost::Ip(Ipv4Addr::LOCALHOST.into()),
            Ok(a) => ServerHost::Ip(a),
            Err(_)
                if host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-') =>
            {
                ServerHost::Name(host.to_owned())
            }
            Err(_) => return Err(bad()),
        };
        out.push(ServerEntry { id, host, port });
    }
    if out.is_empty() {
        return Err(ServerListError::Empty);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_list_syntax() {
        let l = parse_server_list("127.0.0.1:11811").unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].id, 0);
        assert_eq!(l[0].port, 11811);
        let l = parse_server_list(";10.1.2.3").unwrap();
        assert_eq!((l[0].id, l[0].port), (1, DEFAULT_SERVER_PORT));
        assert_eq!(l[0].host, ServerHost::Ip("10.1.2.3".parse().unwrap()));
        let l = parse_server_list("0.0.0.0:7000;;[::1]:7001;UDPv4:[host-a]:7002").unwrap();
        assert_eq!(l[0].host, ServerHost::Ip("127.0.0.1".parse().unwrap()));
        assert_eq!((l[1].id, l[1].port), (2, 7001));
        assert_eq!(l[1].host, ServerHost::Ip("::1".parse().unwrap()));
        assert_eq!(l[2].id, 3);
        assert_eq!(l[2].host, ServerHost::Name("host-a".into()));
        assert!(parse_server_list("").is_err());
        assert!(parse_server_list(";;").is_err());
        assert!(parse_server_list("1.2.3.4:x").is_err());
        assert!(parse_server_list("1.2.3.4:0").is_err());
        assert!(parse_server_list(&"1.1.1.1;".repeat(257)).is_err());
    }

    #[test]
    fn server_prefixes() {
        let p = server_prefix(3);
        assert_eq!(
            p.0,
            [0x44, 0x53, 3, 0x5f, 0x45, 0x50, 0x52, 0x4f, 0x53, 0x49, 0x4d, 0x41]
        );
        assert_eq!(server_id(p), Some(3));
        assert_eq!(server_id(GuidPrefix([1; 12])), None);
    }

    #[test]
    fn properties_round_trip_and_classify() {
        let d = SpdpParticipantData::new(GuidPrefix([1; 12]));
        let payload = encode_participant_with_properties(
            &d,
            &[(PROP_PARTICIPANT_TYPE, "CLIENT"), (PROP_DS_VERSION, "2.0")],
        );
        // Still a valid SPDP payload.
        assert_eq!(SpdpParticipantData::decode(&payload).unwrap(), d);
        let props = decode_properties(&payload).unwrap();
        assert_eq!(props.len(), 2);
        assert_eq!(participant_type(&props), Some(ParticipantType::Client));
        let s = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(participant_type(&[]), Some(ParticipantType::Client));
        assert_eq!(
            participant_type(&[s(PROP_PERSISTENCE_GUID, "x")]),
            Some(ParticipantType::Server)
        );
        assert_eq!(participant_type(&[s(PROP_PARTICIPANT_TYPE, "BOSS")]), None);
        assert_eq!(
            participant_type(&[
                s(PROP_PARTICIPANT_TYPE, "SERVER"),
                s(PROP_DS_VERSION, "0.9")
            ]),
            None
        );
        // A lying count is refused, not allocated.
        let mut bad = d.to_payload();
        bad.truncate(bad.len() - 4);
        let mut b = ParameterListBuilder::new(&mut bad);
        b.param(pid::PROPERTY_LIST, &u32::MAX.to_le_bytes());
        b.finish();
        assert!(decode_properties(&bad).is_err());
    }
}
