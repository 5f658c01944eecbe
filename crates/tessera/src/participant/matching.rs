//! Applying what discovery decided (matches, unmatches, incompatibilities, liveliness) to
//! the participant's local endpoints and routes.

use super::ParticipantShared;
use std::time::Instant;

impl ParticipantShared {
    /// Applies what discovery decided (matches, unmatches, incompatibilities) to endpoints.
    pub fn apply_discovery_events(
        &self,
        events: Vec<crate::discovery_rt::MatchAction>,
        now: Instant,
    ) {
        use crate::discovery_rt::MatchAction;
        if events.is_empty() {
            // The event thread calls this on every pass: a kick here would make it kick itself
            // with a deadline already past and spin.
            return;
        }
        for ev in events {
            match ev {
                MatchAction::MatchWriter { local, remote } => {
                    self.atomic.matched(local, &remote);
                    let (w, local_reader) = {
                        let eps = self.endpoints.read();
                        let r = if remote.guid.prefix == self.guid_prefix {
                            eps.readers.get(&remote.guid.entity_id).cloned()
                        } else {
                            None
                        };
                        (eps.writers.get(&local.entity_id).cloned(), r)
                    };
                    if let Some(w) = w {
                        w.matched(&self.ctx, &remote, local_reader, now);
                    }
                }
                MatchAction::UnmatchWriter { local, remote } => {
                    self.atomic.unmatched(local, remote);
                    let w = self.endpoints.read().writers.get(&local.entity_id).cloned();
                    if let Some(w) = w {
                        w.unmatched(remote);
                    }
                }
                MatchAction::MatchReader { local, remote } => {
                    self.atomic.matched(local, &remote);
                    let r = self.endpoints.read().readers.get(&local.entity_id).cloned();
                    if let Some(r) = r {
                        r.matched(&self.ctx, &remote, now);
                        // A local writer delivers directly; nothing of it comes by the network.
                        if remote.guid.prefix != self.guid_prefix {
                            self.endpoints.write().add_reader_of(remote.guid, r);
                        }
                    }
                }
                MatchAction::UnmatchReader {
                    local,
                    remote,
                    lost,
                } => {
                    self.atomic.unmatched(local, remote);
                    let r = self.endpoints.read().readers.get(&local.entity_id).cloned();
                    if let Some(r) = r {
                        let old = self.endpoints.write().remove_reader_of(&remote, local);
                        drop(old);
                        r.unmatched(remote, lost);
                    }
                }
                MatchAction::WriterIncompatible { local, policies } => {
                    let w = self.endpoints.read().writers.get(&local.entity_id).cloned();
                    if let Some(w) = w {
                        w.incompatible(&policies);
                    }
                }
                MatchAction::ReaderIncompatible { local, policies } => {
                    let r = self.endpoints.read().readers.get(&local.entity_id).cloned();
                    if let Some(r) = r {
                        r.incompatible(&policies);
                    }
                }
                MatchAction::Builtin(n) => n.run(&self.ctx),
                MatchAction::LivelinessAsserted { prefix, manual } => {
                    let readers: Vec<_> = self.endpoints.read().readers.values().cloned().collect();
                    for r in readers {
                        r.participant_asserted(prefix, manual, now);
                    }
                }
            }
        }
        // A match may have queued transmissions (e.g. history for a late joiner).
        self.kick.ensure_by(Some(now));
    }
}
