//! A BACKUP discovery server's persisted state (`tessera discovery-server -b`): every client's
//! DATA(p) and its endpoints' DATA(w)/DATA(r), as received, so that a restarted server serves
//! them at once. Clients do not re-announce to a server that comes back before their lease of
//! it runs out (Fast DDS keeps its EDP state, eProsima/Fast-DDS#2534); without the backup such a
//! server would know nobody.
//!
//! # Format (little-endian; the whole file is untrusted input)
//! ```text
//! "TSDSBK01" | u32 client count
//! per client:   u8 participant type | origin (GUID 16, SN i64) | u32 len + DATA(p) payload
//!               | u32 endpoint count
//! per endpoint: GUID 16 | origin (GUID 16, SN i64) | u32 len + topic (UTF-8)
//!               | u32 len + DATA(w/r) payload
//! MD5 of everything above (16 bytes): a torn or scribbled file is refused whole
//! ```
//! Restoring re-validates every announcement as if it had arrived from the network.

use std::sync::Arc;
use std::time::Instant;

use super::{
    DiscoveredReaderData, DiscoveredWriterData, DiscoveryServerEngine, Endpoint, ParticipantType,
    SpdpParticipantData, MAX_CLIENTS, MAX_ENDPOINTS_PER_CLIENT,
};
use crate::types::{Guid, GuidPrefix, SequenceNumber};

const MAGIC: &[u8; 8] = b"TSDSBK01";
/// Largest payload or topic name accepted from a backup.
const MAX_FIELD: usize = 1 << 20;

/// Why a backup was refused (nothing of it is used).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackupError {
    /// Not a backup file, or a version this server does not read.
    #[error("not a Tessera discovery-server backup")]
    NotABackup,
    /// The checksum does not match: the file was torn or altered.
    #[error("backup checksum mismatch (torn or altered file)")]
    Checksum,
    /// A count, length or value out of range.
    #[error("malformed backup: {0}")]
    Malformed(&'static str),
}

struct Writer(Vec<u8>);

impl Writer {
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(&(b.len() as u32).to_le_bytes());
        self.0.extend_from_slice(b);
    }
    fn origin(&mut self, o: (Guid, SequenceNumber)) {
        self.0.extend_from_slice(&o.0.to_bytes());
        self.0.extend_from_slice(&o.1.to_le_bytes());
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BackupError> {
        if self.0.len() < n {
            return Err(BackupError::Malformed("truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, BackupError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn guid(&mut self) -> Result<Guid, BackupError> {
        let b: [u8; 16] = self
            .take(16)?
            .try_into()
            .map_err(|_| BackupError::Malformed("GUID"))?;
        Ok(Guid::from_bytes(b))
    }
    fn origin(&mut self) -> Result<(Guid, SequenceNumber), BackupError> {
        let g = self.guid()?;
        let b: [u8; 8] = self
            .take(8)?
            .try_into()
            .map_err(|_| BackupError::Malformed("sequence number"))?;
        Ok((g, i64::from_le_bytes(b)))
    }
    fn bytes(&mut self) -> Result<&'a [u8], BackupError> {
        let n = self.u32()? as usize;
        if n > MAX_FIELD {
            return Err(BackupError::Malformed("field too long"));
        }
        self.take(n)
    }
}

fn kind_code(k: ParticipantType) -> u8 {
    match k {
        ParticipantType::Simple => 0,
        ParticipantType::Client => 1,
        ParticipantType::SuperClient => 2,
        ParticipantType::Server => 3,
        ParticipantType::Backup => 4,
    }
}

fn kind_of(c: u8) -> Option<ParticipantType> {
    Some(match c {
        1 => ParticipantType::Client,
        2 => ParticipantType::SuperClient,
        _ => return None,
    })
}

/// One endpoint as read back: GUID, origin, topic, DATA(w/r) payload.
type SavedEndpoint<'a> = (Guid, (Guid, SequenceNumber), &'a str, &'a [u8]);

/// One client as read back from a backup.
struct Saved<'a> {
    kind: ParticipantType,
    origin: (Guid, SequenceNumber),
    payload: &'a [u8],
    endpoints: Vec<SavedEndpoint<'a>>,
}

fn parse(bytes: &[u8]) -> Result<Vec<Saved<'_>>, BackupError> {
    if bytes.len() < MAGIC.len() + 4 + 16 || &bytes[..8] != MAGIC {
        return Err(BackupError::NotABackup);
    }
    let (body, sum) = bytes.split_at(bytes.len() - 16);
    if md5::compute(body).0 != sum {
        return Err(BackupError::Checksum);
    }
    let mut r = Reader(&body[8..]);
    let n = r.u32()? as usize;
    if n > MAX_CLIENTS {
        return Err(BackupError::Malformed("too many clients"));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let kind = kind_of(r.take(1)?[0]).ok_or(BackupError::Malformed("participant type"))?;
        let origin = r.origin()?;
        let payload = r.bytes()?;
        let m = r.u32()? as usize;
        if m > MAX_ENDPOINTS_PER_CLIENT {
            return Err(BackupError::Malformed("too many endpoints"));
        }
        let mut endpoints = Vec::with_capacity(m);
        for _ in 0..m {
            let g = r.guid()?;
            let o = r.origin()?;
            let topic =
                std::str::from_utf8(r.bytes()?).map_err(|_| BackupError::Malformed("topic"))?;
            endpoints.push((g, o, topic, r.bytes()?));
        }
        out.push(Saved {
            kind,
            origin,
            payload,
            endpoints,
        });
    }
    if !r.0.is_empty() {
        return Err(BackupError::Malformed("trailing bytes"));
    }
    Ok(out)
}

impl DiscoveryServerEngine {
    /// Increases whenever what a backup holds changed (a driver saves when it differs from
    /// the generation it saved last).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The state to persist (see the module docs for the format).
    pub fn backup(&self) -> Vec<u8> {
        let mut w = Writer(MAGIC.to_vec());
        let mut clients: Vec<(&GuidPrefix, &super::Client)> = self.clients.iter().collect();
        clients.sort_by_key(|(p, _)| **p);
        w.0.extend_from_slice(&(clients.len() as u32).to_le_bytes());
        for (_, c) in clients {
            w.0.push(kind_code(c.kind));
            w.origin(c.origin);
            w.bytes(&c.payload);
            w.0.extend_from_slice(&(c.endpoints.len() as u32).to_le_bytes());
            for (g, e) in &c.endpoints {
                w.0.extend_from_slice(&g.to_bytes());
                w.origin(e.origin);
                w.bytes(e.topic.as_bytes());
                w.bytes(&e.payload);
            }
        }
        let sum = md5::compute(&w.0).0;
        w.0.extend_from_slice(&sum);
        w.0
    }

    /// Loads a backup made by [`DiscoveryServerEngine::backup`] into a server that has no
    /// clients yet. Each client gets a fresh lease (one that is gone expires after it, and
    /// its departure is relayed as usual); announcements that no longer validate are skipped
    /// and counted as undecodable. Returns the number of clients restored.
    pub fn restore(&mut self, bytes: &[u8], now: Instant) -> Result<usize, BackupError> {
        let saved = parse(bytes)?;
        let mut restored = 0;
        for s in saved {
            let data = match SpdpParticipantData::decode(s.payload) {
                Ok(d) if d.guid_prefix == s.origin.0.prefix => d,
                _ => {
                    self.counters.undecodable += 1;
                    continue;
                }
            };
            let p = data.guid_prefix;
            if self.clients.contains_key(&p) || p == self.prefix {
                continue;
            }
            let locators = self.selector.select(&data.metatraffic_unicast_locators);
            self.add_client(
                p,
                s.kind,
                Arc::new(s.payload.to_vec()),
                s.origin,
                locators,
                data.builtin_endpoints,
                now,
            );
            restored += 1;
            for (g, origin, topic, payload) in s.endpoints {
                let partitions = if g.entity_id.is_writer() {
                    DiscoveredWriterData::decode(payload)
                        .ok()
                        .filter(|w| w.guid == g && w.topic_name == topic)
                        .map(|w| w.qos.partition.0)
                } else {
                    DiscoveredReaderData::decode(payload)
                        .ok()
                        .filter(|r| r.guid == g && r.topic_name == topic)
                        .map(|r| r.qos.partition.0)
                };
                let Some(partitions) = partitions.filter(|_| g.prefix == p) else {
                    self.counters.undecodable += 1;
                    continue;
                };
                if let Some(c) = self.clients.get_mut(&p) {
                    let indexed = partitions.clone();
                    c.endpoints.insert(
                        g,
                        Endpoint {
                            topic: topic.to_string(),
                            partitions,
                            payload: Arc::new(payload.to_vec()),
                            origin,
                        },
                    );
                    self.index_add(g, topic, &indexed);
                }
            }
        }
        self.generation += 1;
        self.sync_all(now);
        Ok(restored)
    }
}
