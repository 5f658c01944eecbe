//! UDP traffic counters read inside a point's namespaces: the datagrams and bytes every host
//! sent so far, read before and after the discovery experiment to tell what discovery cost.

use crate::hosts::Topology;

/// UDP datagrams and bytes sent by every host of a topology so far (`/proc/net/snmp`'s
/// `OutDatagrams`, `/proc/net/dev`'s transmitted bytes, read inside each namespace).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Traffic {
    pub(super) datagrams: u64,
    pub(super) bytes: u64,
}

pub(super) fn discovery_traffic(topo: &Topology) -> Option<Traffic> {
    let mut total = Traffic::default();
    for h in 0..topo.hosts().len() {
        let out = topo
            .command(h, "cat")
            .args(["/proc/net/snmp", "/proc/net/dev"])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let t = parse_traffic(&text)?;
        total.datagrams += t.datagrams;
        total.bytes += t.bytes;
    }
    Some(total)
}

/// Parses the concatenation of `/proc/net/snmp` and `/proc/net/dev`.
fn parse_traffic(text: &str) -> Option<Traffic> {
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = udp.next()?.split_whitespace().collect();
    let values: Vec<&str> = udp.next()?.split_whitespace().collect();
    let col = names.iter().position(|&n| n == "OutDatagrams")?;
    let datagrams = values.get(col)?.parse().ok()?;
    // /proc/net/dev: "iface: rx_bytes rx_packets ... (8 rx fields) tx_bytes ...".
    let bytes = text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(iface, _)| !iface.trim().is_empty() && !iface.contains('|'))
        .filter(|(iface, _)| {
            !matches!(
                iface.trim(),
                "Udp" | "UdpLite" | "Ip" | "Icmp" | "IcmpMsg" | "Tcp"
            )
        })
        .filter_map(|(_, rest)| rest.split_whitespace().nth(8)?.parse::<u64>().ok())
        .sum();
    Some(Traffic { datagrams, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_counters_parse() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n\
                    Udp: 10 0 0 42 0\n\
                    UdpLite: InDatagrams NoPorts InErrors OutDatagrams\n\
                    UdpLite: 0 0 0 0\n\
                    Inter-|   Receive                            |  Transmit\n \
                    face |bytes    packets errs drop fifo frame compressed multicast|bytes\n\
                    \x20   lo:    500      5    0    0    0     0          0         0      700\n\
                    veth0:    1      1    0    0    0     0          0         0       30\n";
        let t = parse_traffic(text).unwrap();
        assert_eq!((t.datagrams, t.bytes), (42, 730));
        assert!(parse_traffic("nothing here").is_none());
    }
}
