//! Datagram size under loss: large datagrams while the path is clean, unfragmented ones while it
//! loses.
//!
//! Datagrams larger than the path MTU (14,720 B by default on Ethernet, like Cyclone's) cost a
//! fraction of the system calls and wake-ups of MTU-sized ones, but the IP layer splits them into
//! fragments and a datagram is lost when any of its fragments is: at 1 % frame loss a 14,720 B
//! datagram (10 fragments) is lost 10 % of the time. Worse, Linux keeps the fragments of every
//! incomplete datagram for `ipfrag_time` (30 s) and, once they fill `ipfrag_high_thresh` (4 MiB
//! per network namespace), drops every new fragment: a fast writer on a lossy path fills that
//! in well under a second and then nothing fragmented arrives for up to 30 s. Unfragmented
//! datagrams never enter reassembly, so they are immune.
//!
//! So the writer watches what its readers ask to have repaired. When, over a 100 ms window, the
//! repair requests reach 2 % of the samples it sent (and at least [`MIN_REQUESTS`]), it drops to
//! datagrams of [`WriterConfig::repair_message_size`](super::WriterConfig) (the path MTU) until
//! the path has been clean for a quiet period; then it tries large datagrams again. A relapse
//! soon after that doubles the quiet period (up to [`MAX_QUIET`], beyond the kernel's 30 s
//! reassembly timeout), so a lossy path costs one short burst of large datagrams per period.

use std::time::{Duration, Instant};

/// Length of one observation window.
const WINDOW: Duration = Duration::from_millis(100);
/// Fewest repair requests in a window that count as loss (a single lost datagram of small
/// samples is not a lossy path).
pub(super) const MIN_REQUESTS: u64 = 4;
/// Loss threshold: requests × this ≥ samples sent in the window.
const RATIO: u64 = 50;
/// Shortest quiet period before large datagrams are tried again.
pub(super) const MIN_QUIET: Duration = Duration::from_secs(1);
/// Longest quiet period.
pub(super) const MAX_QUIET: Duration = Duration::from_secs(32);
/// Loss this soon after large datagrams came back is a relapse.
const RELAPSE: Duration = Duration::from_secs(2);

/// Loss watch of one writer (see the module docs).
#[derive(Debug)]
pub(super) struct DatagramSizer {
    window_start: Option<Instant>,
    /// Samples and fragments sent (first transmissions and repairs) at the window start.
    sent_at_start: u64,
    requests: u64,
    /// Small datagrams in use since the last lossy window ended (`clean_since`).
    reduced: bool,
    clean_since: Option<Instant>,
    quiet: Duration,
    restored_at: Option<Instant>,
    /// Times the writer went to small datagrams.
    pub(super) reductions: u64,
}

impl Default for DatagramSizer {
    fn default() -> Self {
        DatagramSizer {
            window_start: None,
            sent_at_start: 0,
            requests: 0,
            reduced: false,
            clean_since: None,
            quiet: MIN_QUIET,
            restored_at: None,
            reductions: 0,
        }
    }
}

impl DatagramSizer {
    /// Whether small datagrams are in use.
    pub(super) fn reduced(&self) -> bool {
        self.reduced
    }

    /// Counts `n` samples (or fragment runs) a reader asked to have repaired.
    pub(super) fn note_requests(&mut self, n: u64) {
        self.requests += n;
    }

    /// Closes the window when it is over; `sent` is the writer's running count of samples and
    /// fragment runs sent. Returns true when the datagram size changed.
    pub(super) fn tick(&mut self, now: Instant, sent: u64) -> bool {
        let Some(start) = self.window_start else {
            self.window_start = Some(now);
            self.sent_at_start = sent;
            return false;
        };
        if now.saturating_duration_since(start) < WINDOW {
            return false;
        }
        let sent_in_window = sent.saturating_sub(self.sent_at_start);
        let lossy = self.requests >= MIN_REQUESTS && self.requests * RATIO >= sent_in_window;
        self.window_start = Some(now);
        self.sent_at_start = sent;
        self.requests = 0;
        if lossy {
            self.clean_since = Some(now);
            if !self.reduced {
                self.reduced = true;
                self.reductions += 1;
                let relapse = self
                    .restored_at
                    .is_some_and(|t| now.saturating_duration_since(t) < RELAPSE);
                self.quiet = if relapse {
                    (self.quiet * 2).min(MAX_QUIET)
                } else {
                    MIN_QUIET
                };
                return true;
            }
            return false;
        }
        if self.reduced
            && self
                .clean_since
                .is_none_or(|t| now.saturating_duration_since(t) >= self.quiet)
        {
            self.reduced = false;
            self.restored_at = Some(now);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn loss_reduces_and_a_clean_quiet_period_restores() {
        let t0 = Instant::now();
        let mut s = DatagramSizer::default();
        assert!(!s.tick(t0, 0));
        // 1000 samples, 30 requests (3 %) in the first window.
        s.note_requests(30);
        assert!(s.tick(t0 + ms(100), 1000));
        assert!(s.reduced());
        assert_eq!(s.reductions, 1);
        // Clean windows: restored only after the quiet period.
        let mut t = t0 + ms(100);
        let mut sent = 1000;
        let mut restored_at = None;
        for _ in 0..20 {
            t += ms(100);
            sent += 1000;
            if s.tick(t, sent) {
                restored_at = Some(t);
                break;
            }
        }
        let r = restored_at.expect("restored");
        assert!(r - (t0 + ms(100)) >= MIN_QUIET);
        assert!(!s.reduced());
    }

    #[test]
    fn little_loss_does_not_reduce() {
        let t0 = Instant::now();
        let mut s = DatagramSizer::default();
        s.tick(t0, 0);
        // 3 requests: below MIN_REQUESTS.
        s.note_requests(3);
        assert!(!s.tick(t0 + ms(100), 10));
        // 10 requests of 1000 samples (1 %): below 2 %.
        s.note_requests(10);
        assert!(!s.tick(t0 + ms(200), 1010));
        assert!(!s.reduced());
        // Still in the window: nothing decided.
        s.note_requests(100);
        assert!(!s.tick(t0 + ms(250), 1020));
    }

    #[test]
    fn relapse_doubles_the_quiet_period_up_to_the_cap() {
        let t0 = Instant::now();
        let mut s = DatagramSizer::default();
        s.tick(t0, 0);
        let mut t = t0;
        let mut quiet_seen = Vec::new();
        for _ in 0..8 {
            // A lossy window: reduce.
            t += ms(100);
            s.note_requests(100);
            assert!(s.tick(t, 0));
            quiet_seen.push(s.quiet);
            // Clean until restored.
            loop {
                t += ms(100);
                if s.tick(t, 0) {
                    break;
                }
            }
        }
        assert_eq!(quiet_seen[0], MIN_QUIET);
        assert_eq!(quiet_seen[1], MIN_QUIET * 2);
        assert_eq!(*quiet_seen.last().unwrap(), MAX_QUIET);
        // A long clean stretch resets it.
        t += RELAPSE * 2;
        s.tick(t, 0);
        t += ms(100);
        s.note_requests(100);
        assert!(s.tick(t, 0));
        assert_eq!(s.quiet, MIN_QUIET);
    }
}
