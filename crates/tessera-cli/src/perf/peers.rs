//! Peer bookkeeping: which ddsperf participants exist, which of their endpoints have matched
//! ours, and the 5 s matching deadline. Pure state driven by discovery events from the DCPS layer
//! (built-in participant reader, publication/subscription-matched listeners).

use std::collections::BTreeMap;

use super::protocol::{guid_partition, parse_user_data, MatchMask};
use super::report::{PeerLabel, ReportLine};

/// How long after discovery all expected endpoints of a peer must have matched.
pub const MATCH_DEADLINE_NS: i64 = 5_000_000_000;

/// A known ddsperf participant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Participant instance handle.
    pub handle: u64,
    /// Participant GUID.
    pub guid: [u8; 16],
    /// Host name from its user data.
    pub hostname: String,
    /// Process id from its user data.
    pub pid: u32,
    /// Discovery time (ns).
    pub discovered: i64,
    /// Matching deadline (ns); `None` once checked.
    pub deadline: Option<i64>,
    /// Remote endpoints not matched yet.
    pub unmatched: MatchMask,
}

/// What to do about a newly discovered ddsperf participant.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPeer {
    /// The `participant ...: new` line to print.
    pub line: ReportLine,
    /// Create a pong writer for it in a publisher with this partition (the peer's GUID string),
    /// and count one more expected pong per ping. `None` for our own participant (unless `-L`).
    pub pong_partition: Option<String>,
}

/// What to do about a participant that went away.
#[derive(Debug, Clone, PartialEq)]
pub struct GonePeer {
    /// The `participant ...: gone` line to print.
    pub line: ReportLine,
    /// Delete its pong writer and expect one pong less per ping.
    pub had_pong_writer: bool,
}

/// All known ddsperf peers, by participant handle.
#[derive(Debug, Clone)]
pub struct PeerTable {
    pid: u32,
    own_handle: u64,
    ignore_local: bool,
    local_has_data_reader: bool,
    peers: BTreeMap<u64, Peer>,
    match_count: u32,
    match_timeouts: u32,
}

impl PeerTable {
    /// A table for our participant `own_handle`; `pid` labels printed lines.
    pub fn new(pid: u32, own_handle: u64, ignore_local: bool, local_has_data_reader: bool) -> Self {
        PeerTable {
            pid,
            own_handle,
            ignore_local,
            local_has_data_reader,
            peers: BTreeMap::new(),
            match_count: 0,
            match_timeouts: 0,
        }
    }

    fn counts(&self, handle: u64) -> bool {
        handle != self.own_handle || !self.ignore_local
    }

    /// An alive participant sample (`DCPSParticipant`) with its user data. Participants without
    /// ddsperf user data, and ones already known, give `None`.
    pub fn on_participant(
        &mut self,
        handle: u64,
        guid: [u8; 16],
        user_data: &[u8],
        now: i64,
    ) -> Option<NewPeer> {
        if self.peers.contains_key(&handle) {
            return None;
        }
        let ud = parse_user_data(user_data)?;
        let counts = self.counts(handle);
        let unmatched = if counts {
            MatchMask::expected(ud.has_data_reader, self.local_has_data_reader)
        } else {
            MatchMask(0)
        };
        let line = ReportLine::ParticipantNew {
            pid: self.pid,
            host: ud.hostname.clone(),
            peer_pid: ud.pid,
            is_self: handle == self.own_handle,
        };
        self.peers.insert(
            handle,
            Peer {
                handle,
                guid,
                hostname: ud.hostname,
                pid: ud.pid,
                discovered: now,
                deadline: Some(now + MATCH_DEADLINE_NS),
                unmatched,
            },
        );
        Some(NewPeer {
            line,
            pong_partition: counts.then(|| guid_partition(&guid)),
        })
    }

    /// A participant was disposed or lost its liveliness.
    pub fn on_participant_gone(&mut self, handle: u64) -> Option<GonePeer> {
        let p = self.peers.remove(&handle)?;
        Some(GonePeer {
            line: ReportLine::ParticipantGone {
                pid: self.pid,
                host: p.hostname,
                peer_pid: p.pid,
            },
            had_pong_writer: self.counts(handle),
        })
    }

    /// One of our endpoints matched a remote endpoint of participant `participant` (looked up
    /// from the matched endpoint's built-in topic sample). `mask` names the remote endpoint kind.
    /// Returns false if the participant is unknown.
    ///
    /// As in ddsperf, the match count goes up every time a match leaves the participant with
    /// nothing outstanding (normally exactly once per peer).
    pub fn on_endpoint_matched(&mut self, participant: u64, mask: MatchMask) -> bool {
        let Some(p) = self.peers.get_mut(&participant) else {
            return false;
        };
        p.unmatched.clear(mask);
        if p.unmatched.is_empty() {
            self.match_count += 1;
        }
        true
    }

    /// Checks the matching deadlines at `now`: a `failed to match` line for every peer whose
    /// deadline passed with endpoints outstanding. Each peer is checked once.
    pub fn check_deadlines(&mut self, now: i64) -> Vec<ReportLine> {
        let mut out = Vec::new();
        for p in self.peers.values_mut() {
            let Some(d) = p.deadline else { continue };
            if d < now {
                if !p.unmatched.is_empty() {
                    out.push(ReportLine::MatchTimeout {
                        pid: self.pid,
                        host: p.hostname.clone(),
                        peer_pid: p.pid,
                        secs: (d - p.discovered) as f64 / 1e9,
                    });
                    self.match_timeouts += 1;
                }
                p.deadline = None;
            }
        }
        out
    }

    /// Earliest pending matching deadline (for the main loop's wake-up time).
    pub fn next_deadline(&self) -> Option<i64> {
        self.peers.values().filter_map(|p| p.deadline).min()
    }

    /// Peers that matched everything (the `-Q minmatch` count).
    pub fn match_count(&self) -> u32 {
        self.match_count
    }

    /// Number of "failed to match" lines printed so far.
    pub fn match_timeouts(&self) -> u32 {
        self.match_timeouts
    }

    /// Peers still known with endpoints outstanding: (host, pid, missing), for the exit check.
    pub fn unmatched(&self) -> Vec<(String, u32, MatchMask)> {
        self.peers
            .values()
            .filter(|p| !p.unmatched.is_empty())
            .map(|p| (p.hostname.clone(), p.pid, p.unmatched))
            .collect()
    }

    /// The peer with this participant handle.
    pub fn get(&self, handle: u64) -> Option<&Peer> {
        self.peers.get(&handle)
    }

    /// How a latency line names a source: `host:pid` while its participant is known, else the
    /// publication handle in hex.
    pub fn label(&self, participant: Option<u64>, publication: u64) -> PeerLabel {
        match participant.and_then(|h| self.peers.get(&h)) {
            Some(p) => PeerLabel::HostPid {
                host: p.hostname.clone(),
                pid: p.pid,
            },
            None => PeerLabel::Handle(publication),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: [u8; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 1, 0xc1];

    #[test]
    fn self_and_peer() {
        let mut t = PeerTable::new(100, 1, true, false);
        let me = t.on_participant(1, G, b"DDSPerf:0:100:vm", 0).unwrap();
        assert_eq!(
            me.line.to_text().unwrap(),
            "[100] participant vm:100: new (self)"
        );
        assert_eq!(me.pong_partition, None);
        assert!(t.on_participant(1, G, b"DDSPerf:0:100:vm", 0).is_none());
        assert!(t.on_participant(3, G, b"not ddsperf", 0).is_none());

        let p = t.on_participant(2, G, b"DDSPerf:1:200:vm", 10).unwrap();
        assert_eq!(p.line.to_text().unwrap(), "[100] participant vm:200: new");
        assert_eq!(
            p.pong_partition.as_deref(),
            Some("01020304_05060708_090a0b0c_000001c1")
        );
        // The peer has a data reader; we have none: 5 endpoints expected.
        assert_eq!(t.get(2).unwrap().unmatched, MatchMask(1 | 2 | 4 | 16 | 32));
        assert_eq!(t.next_deadline(), Some(MATCH_DEADLINE_NS));
        for m in [1, 2, 4, 16] {
            assert!(t.on_endpoint_matched(2, MatchMask(m)));
            assert_eq!(t.match_count(), 0);
        }
        assert!(t.on_endpoint_matched(2, MatchMask(32)));
        assert_eq!(t.match_count(), 1);
        assert!(!t.on_endpoint_matched(9, MatchMask(32)));
        assert!(t.check_deadlines(MATCH_DEADLINE_NS + 11).is_empty());
        assert_eq!(t.next_deadline(), None);
        assert!(t.unmatched().is_empty());

        assert_eq!(t.label(Some(2), 0xabc).to_string(), "vm:200");
        let gone = t.on_participant_gone(2).unwrap();
        assert_eq!(
            gone.line.to_text().unwrap(),
            "[100] participant vm:200: gone"
        );
        assert!(gone.had_pong_writer);
        assert_eq!(t.label(Some(2), 0xabc).to_string(), "abc");
        assert!(!t.on_participant_gone(1).unwrap().had_pong_writer);
    }

    #[test]
    fn deadline_and_unmatched() {
        let mut t = PeerTable::new(10273, 1, true, false);
        t.on_participant(2, G, b"DDSPerf:1:10262:vm", 1_000)
            .unwrap();
        assert!(t.check_deadlines(1_000 + MATCH_DEADLINE_NS).is_empty());
        let lines = t.check_deadlines(1_001 + MATCH_DEADLINE_NS);
        assert_eq!(
            lines[0].to_text().unwrap(),
            "[10273] participant vm:10262: failed to match in 5.000s"
        );
        assert!(t.check_deadlines(i64::MAX).is_empty());
        assert_eq!(t.match_timeouts(), 1);
        assert_eq!(
            t.unmatched()[0].2.to_string(),
            "data reader, ping reader, pong reader, ping writer, pong writer"
        );
    }

    #[test]
    fn local_matching_with_minus_l() {
        let mut t = PeerTable::new(1, 1, false, true);
        let me = t.on_participant(1, G, b"DDSPerf:1:1:vm", 0).unwrap();
        assert!(me.pong_partition.is_some());
        assert_eq!(t.get(1).unwrap().unmatched, MatchMask::ALL);
    }
}
