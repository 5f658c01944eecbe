//! RTPS well-known UDP port numbers (RTPS 2.x §9.6.1.1).
//!
//! A port is `PB + DG * domain + offset`, where the offset is `d0` for SPDP multicast,
//! `d2` for user multicast, and `d1 + PG * participant_id` / `d3 + PG * participant_id` for the
//! metatraffic and user unicast ports of one participant. Every implementation that interoperates
//! by default (Cyclone DDS, Fast DDS, OpenDDS, RTI) uses the spec's default parameters.

use std::net::Ipv4Addr;

/// The default SPDP multicast group (RTPS 2.x §9.6.1.4.1).
pub const DEFAULT_MULTICAST_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 0, 1);

/// The default IPv6 SPDP multicast group: Cyclone DDS's, the IPv4 group mapped into the
/// link-local scope (`ff02::ffff:239.255.0.1`). Chosen over Fast DDS's `ff1e::ffff:efff:1`
/// because Cyclone is the peer we interoperate with by default, and because link-local scope
/// keeps discovery on the link, as TTL 1 does for IPv4 (ff1e is global scope).
pub const DEFAULT_MULTICAST_GROUP_V6: std::net::Ipv6Addr =
    std::net::Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0xffff, 0xefff, 0x0001);

/// The highest domain id whose ports fit in 16 bits with the default parameters.
pub const MAX_DOMAIN_ID: u32 = 232;

/// Port mapping parameters. [`PortMapping::default`] gives the spec's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortMapping {
    /// Port base (`PB`), 7400.
    pub base: u32,
    /// Domain id gain (`DG`), 250.
    pub domain_gain: u32,
    /// Participant id gain (`PG`), 2.
    pub participant_gain: u32,
    /// SPDP (metatraffic) multicast offset (`d0`), 0.
    pub d0: u32,
    /// Metatraffic unicast offset (`d1`), 10.
    pub d1: u32,
    /// User traffic multicast offset (`d2`), 1.
    pub d2: u32,
    /// User traffic unicast offset (`d3`), 11.
    pub d3: u32,
}

impl Default for PortMapping {
    fn default() -> Self {
        PortMapping {
            base: 7400,
            domain_gain: 250,
            participant_gain: 2,
            d0: 0,
            d1: 10,
            d2: 1,
            d3: 11,
        }
    }
}

impl PortMapping {
    fn port(&self, domain: u32, offset: u32) -> Option<u16> {
        let p = u64::from(self.base)
            + u64::from(self.domain_gain) * u64::from(domain)
            + u64::from(offset);
        u16::try_from(p).ok().filter(|&p| p != 0)
    }

    /// SPDP multicast port (7400 + 250·domain). `None` if it does not fit in 16 bits.
    pub fn spdp_multicast(&self, domain: u32) -> Option<u16> {
        self.port(domain, self.d0)
    }

    /// User traffic multicast port (7401 + 250·domain).
    pub fn user_multicast(&self, domain: u32) -> Option<u16> {
        self.port(domain, self.d2)
    }

    /// Metatraffic (discovery) unicast port of a participant (7410 + 250·domain + 2·pid).
    pub fn metatraffic_unicast(&self, domain: u32, participant_id: u32) -> Option<u16> {
        let off = u64::from(self.d1) + u64::from(self.participant_gain) * u64::from(participant_id);
        self.port(domain, u32::try_from(off).ok()?)
    }

    /// User traffic unicast port of a participant (7411 + 250·domain + 2·pid).
    pub fn user_unicast(&self, domain: u32, participant_id: u32) -> Option<u16> {
        let off = u64::from(self.d3) + u64::from(self.participant_gain) * u64::from(participant_id);
        self.port(domain, u32::try_from(off).ok()?)
    }

    /// The largest participant id whose ports stay within the domain's port range (below the
    /// next domain's SPDP port): 119 with the default parameters.
    pub fn max_participant_id(&self) -> u32 {
        let span = self.domain_gain.saturating_sub(self.d3.max(self.d1) + 1);
        span / self.participant_gain.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_ports() {
        let m = PortMapping::default();
        assert_eq!(m.spdp_multicast(0), Some(7400));
        assert_eq!(m.user_multicast(0), Some(7401));
        assert_eq!(m.metatraffic_unicast(0, 0), Some(7410));
        assert_eq!(m.user_unicast(0, 0), Some(7411));
        assert_eq!(m.metatraffic_unicast(0, 1), Some(7412));
        assert_eq!(m.user_unicast(0, 1), Some(7413));
        assert_eq!(m.spdp_multicast(1), Some(7650));
        assert_eq!(m.user_multicast(1), Some(7651));
        assert_eq!(m.metatraffic_unicast(1, 3), Some(7666));
        assert_eq!(m.user_unicast(2, 4), Some(7400 + 500 + 11 + 8));
    }

    #[test]
    fn out_of_range() {
        let m = PortMapping::default();
        assert!(m.spdp_multicast(MAX_DOMAIN_ID).is_some());
        assert!(m.user_unicast(MAX_DOMAIN_ID, 0).is_some());
        assert_eq!(m.spdp_multicast(MAX_DOMAIN_ID + 1), None);
        assert_eq!(m.user_unicast(0, u32::MAX), None);
        assert_eq!(m.spdp_multicast(u32::MAX), None);
    }

    #[test]
    fn participant_ids_stay_in_domain() {
        let m = PortMapping::default();
        let max = m.max_participant_id();
        assert_eq!(max, 119);
        assert!(m.user_unicast(0, max).unwrap() < m.spdp_multicast(1).unwrap());
        assert!(m.user_unicast(0, max + 1).unwrap() >= m.spdp_multicast(1).unwrap());
    }
}
