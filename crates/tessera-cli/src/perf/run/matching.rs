//! `tessera perf`'s discovery thread: pong writers for peers as they come and go, and every
//! match of our endpoints attributed to its peer.

use super::*;

/// Our local endpoints whose matches the discovery thread attributes to peers.
pub(super) struct MatchSources<T: PerfIo> {
    pub(super) data_writer: DataWriter<T>,
    pub(super) data_reader: Option<DataReader<T>>,
    pub(super) ping_reader: DataReader<T>,
    pub(super) pong_reader: DataReader<T>,
}

/// Everything the discovery thread needs that depends on the sample type: creating and
/// removing pong writers, and listing the matches of our endpoints.
pub(super) struct DiscoveryTyped<T: PerfIo> {
    pub(super) ctx: Arc<Ctx<T>>,
    pub(super) participant: DomainParticipant,
    pub(super) pong_topic: Topic<T>,
    pub(super) pong_qos: DataWriterQos,
    pub(super) sources: MatchSources<T>,
    pub(super) matched_tx: Sender<()>,
}

/// The typed operations of the discovery thread, so that its loop ([`Discovery`]) is compiled
/// once rather than once per sample type.
pub(super) trait DiscoveryOps: Send {
    fn shared(&self) -> &Shared;
    /// Creates the pong writer in `partition` for the peer `prefix`.
    fn add_pong_writer(&self, prefix: [u8; 12], partition: String) -> tessera::Result<()>;
    /// Removes (and deletes) the pong writer of the peer `prefix`.
    fn remove_pong_writer(&self, prefix: &[u8; 12]);
    /// Every (remote endpoint, kind) our endpoints are matched with now.
    fn current_matches(&self) -> Vec<(Guid, MatchMask)>;
}

impl<T: PerfIo> DiscoveryOps for DiscoveryTyped<T> {
    fn shared(&self) -> &Shared {
        &self.ctx
    }

    fn add_pong_writer(&self, prefix: [u8; 12], partition: String) -> tessera::Result<()> {
        let publisher = self
            .participant
            .create_publisher(PublisherQos::default().with_partition(Partition(vec![partition])))?;
        let w = publisher.create_datawriter(&self.pong_topic, self.pong_qos.clone())?;
        w.set_batching(batches_pings(&self.pong_qos));
        w.set_listener(Some(Arc::new(WriterListener {
            matched: self.matched_tx.clone(),
        })));
        self.ctx.add_pong_writer(prefix, w);
        Ok(())
    }

    fn remove_pong_writer(&self, prefix: &[u8; 12]) {
        drop(self.ctx.remove_pong_writers(Some(prefix)));
    }

    fn current_matches(&self) -> Vec<(Guid, MatchMask)> {
        let s = &self.sources;
        let mut current: Vec<(Guid, MatchMask)> = Vec::new();
        let mut add =
            |list: Vec<Guid>, m: MatchMask| current.extend(list.into_iter().map(|g| (g, m)));
        add(s.data_writer.matched_subscriptions(), MatchMask::RD_DATA);
        add(
            self.ctx.ping_writer.matched_subscriptions(),
            MatchMask::RD_PING,
        );
        add(s.ping_reader.matched_publications(), MatchMask::WR_PING);
        add(s.pong_reader.matched_publications(), MatchMask::WR_PONG);
        if let Some(r) = &s.data_reader {
            add(r.matched_publications(), MatchMask::WR_DATA);
        }
        let pong_writers: Vec<DataWriter<T>> = self
            .ctx
            .pong_writers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for w in &pong_writers {
            add(w.matched_subscriptions(), MatchMask::RD_PONG);
        }
        current
    }
}

/// The discovery thread: peers coming and going, pong writers for them, and attributing every
/// match to its peer.
pub(super) struct Discovery {
    pub(super) ops: Box<dyn DiscoveryOps>,
    /// (remote endpoint GUID, mask) pairs already attributed to their peer.
    pub(super) seen: HashSet<([u8; 16], u32)>,
}

impl Discovery {
    fn on_event(&mut self, ev: ParticipantEvent) {
        let now = now_ns();
        let ctx = self.ops.shared();
        match ev {
            ParticipantEvent::Discovered(info) => {
                let g = info.guid.to_bytes();
                let new = lock(&ctx.peers).on_participant(handle_of(&g), g, &info.user_data, now);
                let Some(new) = new else { return };
                ctx.emit(&new.line);
                if let Some(partition) = new.pong_partition {
                    match self.ops.add_pong_writer(prefix_of(&g), partition) {
                        Ok(()) => lock(&ctx.ping).peers_changed(1, now),
                        Err(e) => {
                            println!("dds_create_writer(pong): {e}");
                            let _ = std::io::stdout().flush();
                            std::process::exit(EXIT_DDS_ERROR);
                        }
                    }
                }
            }
            ParticipantEvent::Lost(guid) => {
                let g = guid.to_bytes();
                let gone = lock(&ctx.peers).on_participant_gone(handle_of(&g));
                let Some(gone) = gone else { return };
                ctx.emit(&gone.line);
                if gone.had_pong_writer {
                    self.ops.remove_pong_writer(&prefix_of(&g));
                    lock(&ctx.ping).peers_changed(-1, now);
                }
            }
        }
    }

    /// Attributes every new (remote endpoint, kind) match to the remote's participant.
    fn rescan(&mut self) {
        let current = self.ops.current_matches();
        let mut still = HashSet::with_capacity(current.len());
        let mut peers = lock(&self.ops.shared().peers);
        for (g, m) in current {
            let key = (g.to_bytes(), m.0);
            still.insert(key);
            if self.seen.contains(&key) {
                continue;
            }
            if peers.on_endpoint_matched(participant_handle_of(&key.0), m) {
                self.seen.insert(key);
            }
        }
        drop(peers);
        // A remote endpoint that unmatched counts again when it matches again.
        self.seen.retain(|k| still.contains(k));
    }

    pub(super) fn run(mut self, events: Receiver<ParticipantEvent>, matched_rx: Receiver<()>) {
        while !self.ops.shared().stopping() {
            crossbeam_channel::select! {
                recv(events) -> ev => match ev {
                    Ok(ev) => self.on_event(ev),
                    Err(_) => break,
                },
                recv(matched_rx) -> _ => {},
                default(MATCH_RESCAN) => {},
            }
            while let Ok(ev) = events.try_recv() {
                self.on_event(ev);
            }
            while matched_rx.try_recv().is_ok() {}
            self.rescan();
        }
    }
}
