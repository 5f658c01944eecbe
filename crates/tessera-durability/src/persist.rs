//! The PERSISTENT topics' copy on disk: one redb file per service (`DIR/durability.redb`),
//! one write transaction (one fsync, redb's `Durability::Immediate`) per batch of changes.
//!
//! Tables (keys and values are our own byte layouts, big-endian numbers, so that the file
//! does not depend on Rust type layouts):
//! - `topics`: topic name → version, keyed flag, type name, DURABILITY_SERVICE policy;
//! - `samples`: topic, original writer GUID, sequence number → key hash, status, source time,
//!   arrival number, payload;
//! - `high`: topic, writer GUID → the highest sequence number taken from that writer.
//!
//! Everything read back is checked: a file that is not redb, a torn or scribbled one, or
//! values that do not decode give a [`PersistError`] naming the file, never a panic.

use crate::store::{Op, StoredSample};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tessera::qos::{DurabilityService, History, ResourceLimits};
use tessera::rtps::types::Guid;

const TOPICS: TableDefinition<&str, &[u8]> = TableDefinition::new("topics");
const SAMPLES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("samples");
const HIGH: TableDefinition<&[u8], u64> = TableDefinition::new("high");

/// Version of our topic records.
const RECORD_VERSION: u8 = 1;
/// The file in the store directory.
pub const FILE_NAME: &str = "durability.redb";

/// Why the persistent store failed.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// The file could not be opened or created, or is not a redb file of this major version.
    #[error("durability store {path}: cannot open: {message}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What redb or the system said.
        message: String,
    },
    /// Reading or writing failed (I/O error, or a damaged file).
    #[error("durability store {path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The file holds values that are not what this service writes.
    #[error("durability store {path}: corrupt contents: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What did not decode.
        message: String,
    },
}

/// What the store keeps about a topic, beside its samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    /// Topic name.
    pub name: String,
    /// Registered type name.
    pub type_name: String,
    /// Whether the type has a key (decides the replay writer's entity kind).
    pub keyed: bool,
    /// The writers' DURABILITY_SERVICE policy.
    pub policy: DurabilityService,
}

/// A topic as read back at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedTopic {
    /// Its record.
    pub record: TopicRecord,
    /// Its samples, in arrival order.
    pub samples: Vec<StoredSample>,
    /// The highest sequence number taken from each writer.
    pub high: Vec<(Guid, i64)>,
}

/// The redb file of one service.
pub struct PersistentStore {
    db: redb::Database,
    path: PathBuf,
}

impl std::fmt::Debug for PersistentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentStore")
            .field("path", &self.path)
            .finish()
    }
}

impl PersistentStore {
    /// Opens (or creates) `dir/durability.redb`, creating `dir` if needed.
    pub fn open(dir: &Path) -> Result<Self, PersistError> {
        let path = dir.join(FILE_NAME);
        let open_err = |message: String| PersistError::Open {
            path: path.clone(),
            message,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        // The file may have been damaged outside redb (a full disk, a stray write): redb
        // trusts a plain open and may panic on it later, so every page is checked once here
        // (a torn last commit is rolled back; a damaged file is an error).
        let db = redb::Builder::new()
            .set_check_integrity_on_open(true)
            .create(&path)
            .map_err(|e| open_err(e.to_string()))?;
        let store = PersistentStore { db, path };
        // Creates the tables, so that a read of a new file finds them.
        store.write(|_| Ok(()))?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, e: impl std::fmt::Display) -> PersistError {
        PersistError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn corrupt(&self, message: impl Into<String>) -> PersistError {
        PersistError::Corrupt {
            path: self.path.clone(),
            message: message.into(),
        }
    }

    fn write(
        &self,
        f: impl FnOnce(&mut Tables<'_>) -> Result<(), redb::Error>,
    ) -> Result<(), PersistError> {
        let run = || -> Result<(), redb::Error> {
            let txn = self.db.begin_write()?;
            {
                let mut t = Tables {
                    topics: txn.open_table(TOPICS)?,
                    samples: txn.open_table(SAMPLES)?,
                    high: txn.open_table(HIGH)?,
                };
                f(&mut t)?;
            }
            txn.commit()?;
            Ok(())
        };
        run().map_err(|e| self.io(e))
    }

    /// Records a topic (its type and policy).
    pub fn save_topic(&self, r: &TopicRecord) -> Result<(), PersistError> {
        let value = encode_record(r);
        self.write(|t| {
            t.topics.insert(r.name.as_str(), value.as_slice())?;
            Ok(())
        })
    }

    /// Applies a batch of changes, each for its topic, in one transaction.
    pub fn apply(&self, batch: &[(String, Op)]) -> Result<(), PersistError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.write(|t| {
            for (topic, op) in batch {
                match op {
                    Op::Put(s) => {
                        let k = sample_key(topic, &s.writer, s.sequence_number);
                        t.samples
                            .insert(k.as_slice(), encode_sample(s).as_slice())?;
                    }
                    Op::Delete(w, seq) => {
                        t.samples.remove(sample_key(topic, w, *seq).as_slice())?;
                    }
                    Op::High(w, seq) => {
                        let k = writer_key(topic, w);
                        t.high.insert(k.as_slice(), *seq as u64)?;
                    }
                }
            }
            Ok(())
        })
    }

    /// Reads every topic back, with its samples in arrival order.
    pub fn load(&self) -> Result<Vec<LoadedTopic>, PersistError> {
        let txn = self.db.begin_read().map_err(|e| self.io(e))?;
        let open = |e: redb::TableError| self.io(e);
        let topics = txn.open_table(TOPICS).map_err(open)?;
        let samples = txn.open_table(SAMPLES).map_err(open)?;
        let high = txn.open_table(HIGH).map_err(open)?;
        let mut out: Vec<LoadedTopic> = Vec::new();
        for entry in topics.iter().map_err(|e| self.io(e))? {
            let (k, v) = entry.map_err(|e| self.io(e))?;
            let record = decode_record(k.value(), v.value())
                .ok_or_else(|| self.corrupt(format!("topic record {:?}", k.value())))?;
            out.push(LoadedTopic {
                record,
                samples: Vec::new(),
                high: Vec::new(),
            });
        }
        let find = |out: &mut Vec<LoadedTopic>, topic: &str| {
            out.iter().position(|t| t.record.name == topic)
        };
        for entry in samples.iter().map_err(|e| self.io(e))? {
            let (k, v) = entry.map_err(|e| self.io(e))?;
            let (topic, writer, seq) =
                split_sample_key(k.value()).ok_or_else(|| self.corrupt("sample key"))?;
            let i = find(&mut out, &topic)
                .ok_or_else(|| self.corrupt(format!("sample of unknown topic {topic:?}")))?;
            let s = decode_sample(writer, seq, v.value())
                .ok_or_else(|| self.corrupt(format!("sample {seq} of topic {topic:?}")))?;
            out[i].samples.push(s);
        }
        for entry in high.iter().map_err(|e| self.io(e))? {
            let (k, v) = entry.map_err(|e| self.io(e))?;
            let (topic, writer) =
                split_writer_key(k.value()).ok_or_else(|| self.corrupt("writer key"))?;
            if let Some(i) = find(&mut out, &topic) {
                out[i]
                    .high
                    .push((writer, v.value().min(i64::MAX as u64) as i64));
            }
        }
        for t in &mut out {
            t.samples.sort_by_key(|s| s.arrival);
        }
        Ok(out)
    }
}

struct Tables<'t> {
    topics: redb::Table<'t, &'static str, &'static [u8]>,
    samples: redb::Table<'t, &'static [u8], &'static [u8]>,
    high: redb::Table<'t, &'static [u8], u64>,
}

fn writer_key(topic: &str, w: &Guid) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + topic.len() + 16 + 8);
    k.extend_from_slice(&(topic.len().min(u16::MAX as usize) as u16).to_be_bytes());
    k.extend_from_slice(topic.as_bytes());
    k.extend_from_slice(&w.to_bytes());
    k
}

fn sample_key(topic: &str, w: &Guid, seq: i64) -> Vec<u8> {
    let mut k = writer_key(topic, w);
    k.extend_from_slice(&(seq as u64).to_be_bytes());
    k
}

fn split_writer_key(k: &[u8]) -> Option<(String, Guid)> {
    let n = u16::from_be_bytes(k.get(..2)?.try_into().ok()?) as usize;
    let topic = std::str::from_utf8(k.get(2..2 + n)?).ok()?.to_owned();
    let g: [u8; 16] = k.get(2 + n..2 + n + 16)?.try_into().ok()?;
    Some((topic, Guid::from_bytes(g)))
}

fn split_sample_key(k: &[u8]) -> Option<(String, Guid, i64)> {
    let (topic, writer) = split_writer_key(k.get(..k.len().checked_sub(8)?)?)?;
    let seq = u64::from_be_bytes(k.get(k.len() - 8..)?.try_into().ok()?);
    (k.len() == 2 + topic.len() + 16 + 8 && (1..1u64 << 62).contains(&seq))
        .then_some((topic, writer, seq as i64))
}

fn encode_sample(s: &StoredSample) -> Vec<u8> {
    let mut v = Vec::with_capacity(36 + s.payload.len());
    v.extend_from_slice(&s.key_hash);
    v.extend_from_slice(&s.status_info.to_be_bytes());
    v.extend_from_slice(&s.source_timestamp.to_be_bytes());
    v.extend_from_slice(&s.arrival.to_be_bytes());
    v.extend_from_slice(&s.payload);
    v
}

fn decode_sample(writer: Guid, seq: i64, v: &[u8]) -> Option<StoredSample> {
    Some(StoredSample {
        writer,
        sequence_number: seq,
        key_hash: v.get(..16)?.try_into().ok()?,
        status_info: u32::from_be_bytes(v.get(16..20)?.try_into().ok()?),
        source_timestamp: i64::from_be_bytes(v.get(20..28)?.try_into().ok()?),
        arrival: u64::from_be_bytes(v.get(28..36)?.try_into().ok()?),
        payload: v.get(36..)?.to_vec(),
    })
}

/// `None` limits are stored as `u32::MAX`.
fn limit(v: Option<u32>) -> [u8; 4] {
    v.unwrap_or(u32::MAX).to_be_bytes()
}

fn unlimit(b: &[u8]) -> Option<Option<u32>> {
    let v = u32::from_be_bytes(b.try_into().ok()?);
    Some((v != u32::MAX).then_some(v))
}

fn encode_record(r: &TopicRecord) -> Vec<u8> {
    let p = &r.policy;
    let mut v = vec![RECORD_VERSION, u8::from(r.keyed)];
    v.extend_from_slice(
        &(p.service_cleanup_delay.as_nanos().min(u64::MAX as u128) as u64).to_be_bytes(),
    );
    let depth = match p.history {
        History::KeepLast(d) => d,
        History::KeepAll => 0,
    };
    v.extend_from_slice(&depth.to_be_bytes());
    v.extend_from_slice(&limit(p.resource_limits.max_samples));
    v.extend_from_slice(&limit(p.resource_limits.max_instances));
    v.extend_from_slice(&limit(p.resource_limits.max_samples_per_instance));
    v.extend_from_slice(r.type_name.as_bytes());
    v
}

fn decode_record(name: &str, v: &[u8]) -> Option<TopicRecord> {
    if *v.first()? != RECORD_VERSION || *v.get(1)? > 1 {
        return None;
    }
    let depth = u32::from_be_bytes(v.get(10..14)?.try_into().ok()?);
    Some(TopicRecord {
        name: name.to_owned(),
        keyed: v[1] == 1,
        policy: DurabilityService {
            service_cleanup_delay: Duration::from_nanos(u64::from_be_bytes(
                v.get(2..10)?.try_into().ok()?,
            )),
            history: if depth == 0 {
                History::KeepAll
            } else {
                History::KeepLast(depth)
            },
            resource_limits: ResourceLimits {
                max_samples: unlimit(v.get(14..18)?)?,
                max_instances: unlimit(v.get(18..22)?)?,
                max_samples_per_instance: unlimit(v.get(22..26)?)?,
            },
        },
        type_name: std::str::from_utf8(v.get(26..)?).ok()?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> TopicRecord {
        TopicRecord {
            name: "T".into(),
            type_name: "M::Type".into(),
            keyed: true,
            policy: DurabilityService {
                service_cleanup_delay: Duration::from_secs(3),
                history: History::KeepLast(4),
                resource_limits: ResourceLimits {
                    max_samples: Some(100),
                    max_instances: None,
                    max_samples_per_instance: Some(4),
                },
            },
        }
    }

    fn sample(seq: i64) -> StoredSample {
        StoredSample {
            writer: Guid::from_bytes([7; 16]),
            sequence_number: seq,
            key_hash: [1; 16],
            status_info: 0,
            source_timestamp: 5,
            arrival: 1000 - seq as u64,
            payload: vec![0, 1, 0, 0, seq as u8],
        }
    }

    #[test]
    fn round_trip_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = PersistentStore::open(dir.path()).unwrap();
            s.save_topic(&record()).unwrap();
            let t = "T".to_string();
            s.apply(&[
                (t.clone(), Op::Put(sample(1))),
                (t.clone(), Op::Put(sample(2))),
                (t.clone(), Op::Put(sample(3))),
                (t.clone(), Op::Delete(sample(1).writer, 1)),
                (t.clone(), Op::High(sample(1).writer, 3)),
            ])
            .unwrap();
        }
        let s = PersistentStore::open(dir.path()).unwrap();
        let loaded = s.load().unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].record, record());
        assert_eq!(
            loaded[0].samples,
            vec![sample(3), sample(2)],
            "arrival order"
        );
        assert_eq!(loaded[0].high, vec![(sample(1).writer, 3)]);
    }

    /// A store of 199 samples in `dir`.
    fn fill(dir: &Path) {
        let s = PersistentStore::open(dir).unwrap();
        s.save_topic(&record()).unwrap();
        let batch: Vec<_> = (1..200)
            .map(|i| ("T".to_string(), Op::Put(sample(i))))
            .collect();
        s.apply(&batch).unwrap();
    }

    #[test]
    fn hostile_files_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        // Not a redb file at all.
        std::fs::write(
            &path,
            b"definitely not a database, just some bytes".repeat(100),
        )
        .unwrap();
        let e = PersistentStore::open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("durability.redb"), "{e}");
        // A real store, truncated.
        std::fs::remove_file(&path).unwrap();
        fill(dir.path());
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len / 3).unwrap();
        drop(f);
        let e = PersistentStore::open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("durability.redb"), "{e}");
        // Scribbled bytes in the middle of a valid file.
        std::fs::remove_file(&path).unwrap();
        fill(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        for b in &mut bytes[n / 4..n / 2] {
            *b ^= 0x5a;
        }
        std::fs::write(&path, &bytes).unwrap();
        let e = PersistentStore::open(dir.path()).unwrap_err();
        assert!(matches!(e, PersistError::Open { .. }), "{e}");
    }

    #[test]
    fn values_that_do_not_decode_are_reported() {
        assert_eq!(decode_record("T", &[9, 1]), None);
        assert_eq!(decode_record("T", &[]), None);
        assert!(decode_sample(Guid::from_bytes([0; 16]), 1, &[0; 35]).is_none());
        assert!(split_sample_key(&[0, 200, 1, 2]).is_none());
        assert!(split_sample_key(&[]).is_none());
        let dir = tempfile::tempdir().unwrap();
        let s = PersistentStore::open(dir.path()).unwrap();
        s.write(|t| {
            t.topics.insert("Bad", [1u8, 7].as_slice())?;
            Ok(())
        })
        .unwrap();
        let e = s.load().unwrap_err();
        assert!(matches!(e, PersistError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("corrupt"), "{e}");
    }
}
