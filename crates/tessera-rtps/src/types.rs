//! Basic RTPS value types: GUIDs, entity ids, sequence numbers, locators, time.
//!
//! These are plain values shared by the codec, discovery and the reliability state machines.
//! They carry no I/O and no allocation beyond what their fields need.

use std::fmt;

/// RTPS protocol version spoken by Tessera (2.4 on the wire; any 2.x is accepted).
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion { major: 2, minor: 4 };

/// Tessera's RTPS vendor id. Chosen outside the range of assigned vendor ids so that no peer
/// interprets our vendor-specific parameters as its own.
pub const VENDOR_TESSERA: VendorId = VendorId([0x01, 0xa7]);

/// Cyclone DDS vendor id (for diagnostics only; never sent by us).
pub const VENDOR_CYCLONE: VendorId = VendorId([0x01, 0x10]);

/// Fast DDS vendor id (for diagnostics only).
pub const VENDOR_FASTDDS: VendorId = VendorId([0x01, 0x0f]);

/// RTPS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProtocolVersion {
    /// Major version (2 for every interoperable RTPS).
    pub major: u8,
    /// Minor version.
    pub minor: u8,
}

/// Two-byte RTPS vendor id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VendorId(pub [u8; 2]);

/// The 12-byte prefix shared by every entity of one participant.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GuidPrefix(pub [u8; 12]);

impl GuidPrefix {
    /// The all-zero prefix ("unknown").
    pub const UNKNOWN: GuidPrefix = GuidPrefix([0; 12]);
}

impl fmt::Debug for GuidPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 && i % 4 == 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Identifies an entity within a participant: a 3-byte key and a 1-byte kind.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EntityId(pub [u8; 4]);

impl fmt::Debug for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", u32::from_be_bytes(self.0))
    }
}

/// Entity kinds (the last byte of an [`EntityId`]).
pub mod entity_kind {
    /// User-defined writer with key.
    pub const USER_WRITER_WITH_KEY: u8 = 0x02;
    /// User-defined writer without key.
    pub const USER_WRITER_NO_KEY: u8 = 0x03;
    /// User-defined reader without key.
    pub const USER_READER_NO_KEY: u8 = 0x04;
    /// User-defined reader with key.
    pub const USER_READER_WITH_KEY: u8 = 0x07;
    /// Built-in participant.
    pub const BUILTIN_PARTICIPANT: u8 = 0xc1;
    /// Built-in writer with key.
    pub const BUILTIN_WRITER_WITH_KEY: u8 = 0xc2;
    /// Built-in writer without key.
    pub const BUILTIN_WRITER_NO_KEY: u8 = 0xc3;
    /// Built-in reader without key.
    pub const BUILTIN_READER_NO_KEY: u8 = 0xc4;
    /// Built-in reader with key.
    pub const BUILTIN_READER_WITH_KEY: u8 = 0xc7;
}

impl EntityId {
    /// Unknown entity (wildcard reader id in DATA submessages).
    pub const UNKNOWN: EntityId = EntityId([0, 0, 0, 0]);
    /// The participant itself.
    pub const PARTICIPANT: EntityId = EntityId([0, 0, 1, 0xc1]);
    /// SPDP built-in participant writer.
    pub const SPDP_WRITER: EntityId = EntityId([0, 1, 0, 0xc2]);
    /// SPDP built-in participant reader.
    pub const SPDP_READER: EntityId = EntityId([0, 1, 0, 0xc7]);
    /// SEDP publications writer.
    pub const SEDP_PUBLICATIONS_WRITER: EntityId = EntityId([0, 0, 3, 0xc2]);
    /// SEDP publications reader.
    pub const SEDP_PUBLICATIONS_READER: EntityId = EntityId([0, 0, 3, 0xc7]);
    /// SEDP subscriptions writer.
    pub const SEDP_SUBSCRIPTIONS_WRITER: EntityId = EntityId([0, 0, 4, 0xc2]);
    /// SEDP subscriptions reader.
    pub const SEDP_SUBSCRIPTIONS_READER: EntityId = EntityId([0, 0, 4, 0xc7]);
    /// Participant message (writer liveliness) writer.
    pub const P2P_MESSAGE_WRITER: EntityId = EntityId([0, 2, 0, 0xc2]);
    /// Participant message (writer liveliness) reader.
    pub const P2P_MESSAGE_READER: EntityId = EntityId([0, 2, 0, 0xc7]);
    /// TypeLookup service request writer (DDS-XTypes 1.3 §7.6.3.3.4).
    pub const TL_SVC_REQUEST_WRITER: EntityId = EntityId([0, 3, 0, 0xc3]);
    /// TypeLookup service request reader.
    pub const TL_SVC_REQUEST_READER: EntityId = EntityId([0, 3, 0, 0xc4]);
    /// TypeLookup service reply writer.
    pub const TL_SVC_REPLY_WRITER: EntityId = EntityId([0, 3, 1, 0xc3]);
    /// TypeLookup service reply reader.
    pub const TL_SVC_REPLY_READER: EntityId = EntityId([0, 3, 1, 0xc4]);

    /// Builds an entity id from a 24-bit key and a kind byte.
    pub const fn new(key: u32, kind: u8) -> EntityId {
        let k = key.to_be_bytes();
        EntityId([k[1], k[2], k[3], kind])
    }

    /// The kind byte.
    pub const fn kind(self) -> u8 {
        self.0[3]
    }

    /// Whether this is a writer (user or built-in).
    pub const fn is_writer(self) -> bool {
        matches!(self.0[3] & 0x3f, 0x02 | 0x03)
    }

    /// Whether this is a reader (user or built-in).
    pub const fn is_reader(self) -> bool {
        matches!(self.0[3] & 0x3f, 0x04 | 0x07)
    }

    /// Whether this is a built-in entity.
    pub const fn is_builtin(self) -> bool {
        self.0[3] & 0xc0 == 0xc0
    }

    /// Whether the kind says the topic is keyed.
    pub const fn is_keyed(self) -> bool {
        matches!(self.0[3] & 0x3f, 0x02 | 0x07)
    }
}

/// Globally unique identifier of an RTPS entity.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid {
    /// Participant prefix.
    pub prefix: GuidPrefix,
    /// Entity within the participant.
    pub entity_id: EntityId,
}

impl Guid {
    /// Combines a prefix and an entity id.
    pub const fn new(prefix: GuidPrefix, entity_id: EntityId) -> Guid {
        Guid { prefix, entity_id }
    }

    /// The 16 bytes as sent on the wire.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..12].copy_from_slice(&self.prefix.0);
        b[12..].copy_from_slice(&self.entity_id.0);
        b
    }

    /// Parses 16 wire bytes.
    pub fn from_bytes(b: [u8; 16]) -> Guid {
        let mut p = [0u8; 12];
        p.copy_from_slice(&b[..12]);
        Guid {
            prefix: GuidPrefix(p),
            entity_id: EntityId([b[12], b[13], b[14], b[15]]),
        }
    }

    /// The GUID as ddsperf formats it for partition names: four `%02x` groups of 4 bytes
    /// joined by `_`.
    pub fn to_partition_string(self) -> String {
        let b = self.to_bytes();
        let mut s = String::with_capacity(35);
        for (i, chunk) in b.chunks(4).enumerate() {
            if i > 0 {
                s.push('_');
            }
            for x in chunk {
                s.push_str(&format!("{x:02x}"));
            }
        }
        s
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}:{:?}", self.prefix, self.entity_id)
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// RTPS sequence number (64-bit, first sample is 1).
pub type SequenceNumber = i64;

/// Splits a sequence number into the wire's (high: i32, low: u32) pair.
pub fn seq_to_wire(sn: SequenceNumber) -> (i32, u32) {
    ((sn >> 32) as i32, sn as u32)
}

/// Joins the wire's (high, low) pair into a sequence number.
pub fn seq_from_wire(high: i32, low: u32) -> SequenceNumber {
    ((high as i64) << 32) | low as i64
}

/// Locator kinds.
pub mod locator_kind {
    /// Invalid locator.
    pub const INVALID: i32 = -1;
    /// Reserved by the specification (never a usable address).
    pub const RESERVED: i32 = 0;
    /// UDP over IPv4.
    pub const UDPV4: i32 = 1;
    /// UDP over IPv6.
    pub const UDPV6: i32 = 2;
    /// Fast DDS shared memory (ignored by us).
    pub const FASTDDS_SHM: i32 = 16;
    /// Tessera's in-process transport (vendor-specific range, above every kind assigned by the
    /// specification or used by Cyclone DDS and Fast DDS): only meaningful inside one process,
    /// so a peer that sees it in an announcement keeps it and never sends to it.
    pub const TESSERA_INPROC: i32 = 0x01a7_0001;
    /// Tessera's shared-memory transport (vendor-specific range): address bytes 0..8 are the
    /// host identity (host, user, network namespace), 8..12 the domain id; the port is the
    /// segment id. Other implementations keep it and never send to it.
    pub const TESSERA_SHM: i32 = 0x01a7_0002;
    /// Tessera's TCP/IPv4 transport (vendor-specific range: its framing is Tessera's own, so
    /// other implementations must not mistake it for theirs): IPv4 address in bytes 12..16,
    /// the listening port as the port.
    pub const TESSERA_TCP4: i32 = 0x01a7_0003;
}

/// A transport address: kind, port and a 16-byte address (IPv4 in the last 4 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Locator {
    /// One of [`locator_kind`]; unknown kinds are kept and ignored by transports.
    pub kind: i32,
    /// UDP port.
    pub port: u32,
    /// Address bytes.
    pub address: [u8; 16],
}

impl Locator {
    /// A UDPv4 locator.
    pub fn udpv4(ip: std::net::Ipv4Addr, port: u16) -> Locator {
        let mut address = [0u8; 16];
        address[12..].copy_from_slice(&ip.octets());
        Locator {
            kind: locator_kind::UDPV4,
            port: port as u32,
            address,
        }
    }

    /// A UDPv6 locator.
    pub fn udpv6(ip: std::net::Ipv6Addr, port: u16) -> Locator {
        Locator {
            kind: locator_kind::UDPV6,
            port: port as u32,
            address: ip.octets(),
        }
    }

    /// A Tessera TCP/IPv4 locator (a listening address).
    pub fn tcpv4(ip: std::net::Ipv4Addr, port: u16) -> Locator {
        Locator {
            kind: locator_kind::TESSERA_TCP4,
            ..Locator::udpv4(ip, port)
        }
    }

    /// The listening address if this is a usable Tessera TCP/IPv4 locator.
    pub fn to_tcp_addr_v4(&self) -> Option<std::net::SocketAddrV4> {
        if self.kind != locator_kind::TESSERA_TCP4 {
            return None;
        }
        Locator {
            kind: locator_kind::UDPV4,
            ..*self
        }
        .to_socket_addr_v4()
    }

    /// The UDP port, if the locator's port fits one and is not 0.
    fn udp_port(&self) -> Option<u16> {
        u16::try_from(self.port).ok().filter(|p| *p != 0)
    }

    /// The socket address if this is a usable UDPv4 locator.
    pub fn to_socket_addr_v4(&self) -> Option<std::net::SocketAddrV4> {
        if self.kind != locator_kind::UDPV4 {
            return None;
        }
        let a = &self.address;
        Some(std::net::SocketAddrV4::new(
            std::net::Ipv4Addr::new(a[12], a[13], a[14], a[15]),
            self.udp_port()?,
        ))
    }

    /// The socket address if this is a usable UDPv4 or UDPv6 locator.
    pub fn to_socket_addr(&self) -> Option<std::net::SocketAddr> {
        match self.kind {
            locator_kind::UDPV4 => self.to_socket_addr_v4().map(std::net::SocketAddr::V4),
            locator_kind::UDPV6 => Some(std::net::SocketAddr::V6(std::net::SocketAddrV6::new(
                std::net::Ipv6Addr::from(self.address),
                self.udp_port()?,
                0,
                0,
            ))),
            _ => None,
        }
    }

    /// Whether the address is an IPv4 or IPv6 multicast address.
    pub fn is_multicast(&self) -> bool {
        match self.kind {
            locator_kind::UDPV4 => (224..=239).contains(&self.address[12]),
            locator_kind::UDPV6 => self.address[0] == 0xff,
            _ => false,
        }
    }
}

impl fmt::Debug for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.to_socket_addr()) {
            (locator_kind::UDPV4, Some(a)) => write!(f, "udp/{a}"),
            (locator_kind::UDPV6, Some(a)) => write!(f, "udp6/{a}"),
            (locator_kind::TESSERA_INPROC, _) => {
                let id = u64::from_be_bytes(self.address[8..].try_into().unwrap_or([0; 8]));
                write!(f, "inproc/{id}:{}", self.port)
            }
            (locator_kind::TESSERA_SHM, _) => write!(f, "shm/{:08x}", self.port),
            (locator_kind::TESSERA_TCP4, _) => match self.to_tcp_addr_v4() {
                Some(a) => write!(f, "tcp/{a}"),
                None => write!(f, "tcp/invalid:{}", self.port),
            },
            _ => write!(f, "locator(kind {}, port {})", self.kind, self.port),
        }
    }
}

/// A small set of locators held inline (no allocation, `Copy`); used for transmit destinations.
/// Holds at most [`Locators::CAPACITY`] entries; further pushes are ignored and reported.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Locators {
    len: u8,
    items: [Locator; Locators::CAPACITY],
}

impl Locators {
    /// Maximum number of locators held: room for unicast and multicast of a few transports
    /// (UDPv4 and UDPv6 of a dual-stack peer, plus a vendor's shared memory) per endpoint.
    pub const CAPACITY: usize = 8;

    /// The empty set.
    pub const fn new() -> Self {
        const NONE: Locator = Locator {
            kind: locator_kind::INVALID,
            port: 0,
            address: [0; 16],
        };
        Locators {
            len: 0,
            items: [NONE; Locators::CAPACITY],
        }
    }

    /// Adds a locator unless present; returns false when full.
    pub fn push(&mut self, l: Locator) -> bool {
        if self.as_slice().contains(&l) {
            return true;
        }
        if (self.len as usize) < Self::CAPACITY {
            self.items[self.len as usize] = l;
            self.len += 1;
            true
        } else {
            false
        }
    }

    /// The locators.
    pub fn as_slice(&self) -> &[Locator] {
        &self.items[..self.len as usize]
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of locators held.
    pub fn len(&self) -> usize {
        self.len as usize
    }
}

impl Default for Locators {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Locators {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl FromIterator<Locator> for Locators {
    fn from_iter<I: IntoIterator<Item = Locator>>(iter: I) -> Self {
        let mut s = Locators::new();
        for l in iter {
            s.push(l);
        }
        s
    }
}

/// RTPS time: seconds and 2^-32 fractions since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Timestamp {
    /// Seconds.
    pub seconds: i32,
    /// Fractions of a second in units of 2^-32 s.
    pub fraction: u32,
}

impl Timestamp {
    /// "Time invalid" as defined by RTPS.
    pub const INVALID: Timestamp = Timestamp {
        seconds: -1,
        fraction: 0xffff_ffff,
    };

    /// Converts nanoseconds since the epoch to RTPS time, rounding the fraction up so that the
    /// conversion back gives the same nanoseconds (ddsperf relies on the lowest bit surviving).
    pub fn from_nanos(ns: i64) -> Timestamp {
        let seconds = ns.div_euclid(1_000_000_000);
        let rem = ns.rem_euclid(1_000_000_000) as u64;
        let fraction = (rem << 32).div_ceil(1_000_000_000);
        Timestamp {
            seconds: seconds as i32,
            fraction: fraction as u32,
        }
    }

    /// Converts to nanoseconds since the epoch.
    pub fn to_nanos(self) -> i64 {
        let frac_ns = ((self.fraction as u64) * 1_000_000_000) >> 32;
        self.seconds as i64 * 1_000_000_000 + frac_ns as i64
    }
}

/// RTPS duration (seconds and 2^-32 fractions), as used by QoS on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct DurationT {
    /// Seconds.
    pub seconds: i32,
    /// Fractions of a second in units of 2^-32 s.
    pub fraction: u32,
}

impl DurationT {
    /// The "infinite" duration.
    pub const INFINITE: DurationT = DurationT {
        seconds: 0x7fff_ffff,
        fraction: 0xffff_ffff,
    };
    /// Zero.
    pub const ZERO: DurationT = DurationT {
        seconds: 0,
        fraction: 0,
    };

    /// From a `std::time::Duration` (saturating to infinite).
    pub fn from_std(d: std::time::Duration) -> DurationT {
        if d.as_secs() >= 0x7fff_ffff {
            return DurationT::INFINITE;
        }
        // Rounded up: see `qos::duration_to_wire`.
        let fraction = ((d.subsec_nanos() as u64) << 32).div_ceil(1_000_000_000);
        DurationT {
            seconds: d.as_secs() as i32,
            fraction: fraction as u32,
        }
    }

    /// To a `std::time::Duration`; `None` for infinite or negative.
    pub fn to_std(self) -> Option<std::time::Duration> {
        if self == DurationT::INFINITE || self.seconds < 0 {
            return None;
        }
        let ns = ((self.fraction as u64) * 1_000_000_000) >> 32;
        Some(std::time::Duration::new(self.seconds as u64, ns as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locators_hold_eight_and_report_overflow() {
        let mut s = Locators::new();
        for p in 1..=8u16 {
            assert!(s.push(Locator::udpv4(std::net::Ipv4Addr::LOCALHOST, p)));
        }
        assert!(
            s.push(Locator::udpv4(std::net::Ipv4Addr::LOCALHOST, 1)),
            "duplicate"
        );
        assert!(!s.push(Locator::udpv4(std::net::Ipv4Addr::LOCALHOST, 9)));
        assert_eq!(s.len(), 8);
    }

    #[test]
    fn udpv6_locators_convert_and_detect_multicast() {
        let group: std::net::Ipv6Addr = "ff02::ffff:239.255.0.1".parse().unwrap();
        let m = Locator::udpv6(group, 7400);
        assert!(m.is_multicast());
        assert_eq!(
            m.to_socket_addr(),
            Some(std::net::SocketAddr::new(group.into(), 7400))
        );
        assert_eq!(m.to_socket_addr_v4(), None);
        let u = Locator::udpv6(std::net::Ipv6Addr::LOCALHOST, 7410);
        assert!(!u.is_multicast());
        assert_eq!(format!("{u:?}"), "udp6/[::1]:7410");
        let v4 = Locator::udpv4(std::net::Ipv4Addr::new(239, 255, 0, 1), 7400);
        assert!(v4.is_multicast());
        assert_eq!(
            v4.to_socket_addr(),
            Some("239.255.0.1:7400".parse().unwrap())
        );
        let bad_port = Locator { port: 70000, ..u };
        assert_eq!(bad_port.to_socket_addr(), None);
        let other = Locator {
            kind: locator_kind::FASTDDS_SHM,
            ..u
        };
        assert!(!other.is_multicast());
        assert_eq!(other.to_socket_addr(), None);
    }

    #[test]
    fn timestamp_round_trips_every_nanosecond_parity() {
        for ns in [
            0i64,
            1,
            3,
            999_999_999,
            1_700_000_000_123_456_789,
            1_700_000_000_123_456_781,
        ] {
            assert_eq!(Timestamp::from_nanos(ns).to_nanos(), ns, "{ns}");
        }
    }

    #[test]
    fn guid_partition_string_matches_ddsperf_format() {
        let g = Guid::from_bytes([
            0x01, 0x10, 0x07, 0xb8, 0xd4, 0x46, 0x09, 0x24, 0x80, 0x8f, 0x73, 0xf4, 0, 0, 1, 0xc1,
        ]);
        assert_eq!(
            g.to_partition_string(),
            "011007b8_d4460924_808f73f4_000001c1"
        );
    }

    #[test]
    fn sequence_numbers_split_and_join() {
        for sn in [1i64, 0xffff_ffff, 0x1_0000_0000, i64::MAX] {
            let (h, l) = seq_to_wire(sn);
            assert_eq!(seq_from_wire(h, l), sn);
        }
    }

    #[test]
    fn entity_kinds() {
        assert!(EntityId::SEDP_PUBLICATIONS_WRITER.is_writer());
        assert!(EntityId::SEDP_PUBLICATIONS_WRITER.is_builtin());
        assert!(EntityId::new(7, entity_kind::USER_READER_WITH_KEY).is_reader());
        assert!(EntityId::new(7, entity_kind::USER_READER_WITH_KEY).is_keyed());
        assert!(!EntityId::new(7, entity_kind::USER_WRITER_NO_KEY).is_keyed());
    }
}
