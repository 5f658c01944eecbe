//! The nftables rules a host applies for the network faults active on it.
//!
//! Every host has at most one table, `inet jepsen`, rebuilt whole (delete and re-add in one
//! `nft -f` transaction) whenever a fault on that host starts or heals, so overlapping faults
//! compose and healing never leaves a rule behind.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// What one host drops on input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostRules {
    /// Drop every packet from these addresses (partitions, one-way cuts).
    pub drop_from: BTreeSet<Ipv4Addr>,
    /// Drop this percentage of every other packet from the LAN (loss bursts), 0 = none.
    pub loss_pct: u8,
}

impl HostRules {
    /// No rule at all.
    pub fn is_empty(&self) -> bool {
        self.drop_from.is_empty() && self.loss_pct == 0
    }
}

/// The `nft -f -` script that replaces the host's table with `rules` (or only removes it).
/// Input only: a cut between A and B drops at both ends' input, a one-way cut at one end.
pub fn script(rules: &HostRules) -> String {
    // Declaring the table first makes the delete succeed when it does not exist yet.
    let mut s = String::from("table inet jepsen\ndelete table inet jepsen\n");
    if rules.is_empty() {
        return s;
    }
    s.push_str("table inet jepsen {\n\tchain input {\n");
    s.push_str("\t\ttype filter hook input priority 0; policy accept;\n");
    if !rules.drop_from.is_empty() {
        let set: Vec<String> = rules.drop_from.iter().map(|a| a.to_string()).collect();
        s.push_str(&format!("\t\tip saddr {{ {} }} drop\n", set.join(", ")));
    }
    if rules.loss_pct > 0 {
        s.push_str(&format!(
            "\t\tiifname != \"lo\" numgen random mod 100 < {} drop\n",
            rules.loss_pct.min(100)
        ));
    }
    s.push_str("\t}\n}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_rules_only_remove_the_table() {
        assert_eq!(
            script(&HostRules::default()),
            "table inet jepsen\ndelete table inet jepsen\n"
        );
    }

    #[test]
    fn drops_and_loss_are_rendered() {
        let r = HostRules {
            drop_from: [Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 0, 0, 1)].into(),
            loss_pct: 30,
        };
        let s = script(&r);
        assert!(s.contains("ip saddr { 10.0.0.1, 10.0.0.2 } drop"), "{s}");
        assert!(s.contains("numgen random mod 100 < 30 drop"), "{s}");
    }
}
