//! QoS from Python: an XML profile (through [`QosProvider`]) as the base, then keyword
//! overrides. The keywords (also the fields of `tessera.Qos`):
//!
//! | keyword | values |
//! |---|---|
//! | `reliability` | `"reliable"`, `"best_effort"` |
//! | `durability` | `"volatile"`, `"transient_local"`, `"transient"`, `"persistent"` |
//! | `history` | `"keep_all"`, `"keep_last"`, or `("keep_last", depth)` |
//! | `depth` | keep-last depth (implies `keep_last`) |
//! | `deadline`, `lifespan` (writers), `liveliness_lease` | seconds (float), `None`: infinite |
//! | `liveliness` | `"automatic"`, `"manual_by_participant"`, `"manual_by_topic"` |
//! | `ownership` | `"shared"`, `"exclusive"`; `ownership_strength` (writers) an int |
//! | `destination_order` | `"by_reception_timestamp"`, `"by_source_timestamp"` |
//! | `max_samples`, `max_instances`, `max_samples_per_instance` | ints |
//! | `data_representation` | `"xcdr1"`, `"xcdr2"` or a list of them (a writer uses the first) |
//!
//! Without a `data_representation` from a profile or keyword, a writer uses XCDR2 for types
//! with appendable or mutable parts or optional members and XCDR1 for the rest (Cyclone DDS's
//! rule, which `tessera pub` follows too), and a reader accepts both.
//! `None` leaves a policy as the profile (or the default) has it, except for durations, where
//! it means infinite.
//!
//! An unknown keyword or value raises `ValueError`: a typo must not silently give defaults.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::Duration;
use tessera::qos::{
    data_representation as repr, DataReaderQos, DataRepresentation, DataWriterQos, Deadline,
    DestinationOrder, Durability, History, Lifespan, LivelinessKind, Ownership, OwnershipStrength,
    ReliabilityKind, INFINITE,
};

fn bad(msg: String) -> PyErr {
    PyValueError::new_err(msg)
}

fn seconds(v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if v.is_none() {
        return Ok(INFINITE);
    }
    let s: f64 = v.extract()?;
    Duration::try_from_secs_f64(s).map_err(|e| bad(format!("duration {s}: {e}")))
}

fn representations(v: &Bound<'_, PyAny>) -> PyResult<DataRepresentation> {
    let names: Vec<String> = match v.extract::<String>() {
        Ok(one) => vec![one],
        Err(_) => v.extract()?,
    };
    let ids = names
        .iter()
        .map(|n| match n.as_str() {
            "xcdr1" | "xcdr" => Ok(repr::XCDR),
            "xcdr2" => Ok(repr::XCDR2),
            o => Err(bad(format!("data_representation {o:?}"))),
        })
        .collect::<PyResult<Vec<_>>>()?;
    if ids.is_empty() {
        return Err(bad("data_representation needs xcdr1 or xcdr2".into()));
    }
    Ok(DataRepresentation(ids))
}

/// The writer QoS `q` with `xcdr2` deciding its representation, unless it has one of its own.
pub fn default_writer_repr(mut q: DataWriterQos, xcdr2: bool) -> DataWriterQos {
    if q.data_representation == DataRepresentation::default() {
        q.data_representation =
            DataRepresentation(vec![if xcdr2 { repr::XCDR2 } else { repr::XCDR }]);
    }
    q
}

/// The reader QoS `q` accepting both representations, unless it names its own: it decodes
/// either, and Cyclone writes appendable and mutable types in XCDR2 only.
pub fn default_reader_repr(mut q: DataReaderQos) -> DataReaderQos {
    if q.data_representation == DataRepresentation::default() {
        q.data_representation = DataRepresentation(vec![repr::XCDR, repr::XCDR2]);
    }
    q
}

fn limit(v: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
    if v.is_none() {
        Ok(None)
    } else {
        Ok(Some(v.extract()?))
    }
}

/// The policies readers and writers share; `$q` is either QoS.
macro_rules! common {
    ($q:expr, $key:expr, $v:expr) => {{
        let (q, key, v) = ($q, $key, $v);
        match key {
            "reliability" => {
                q.reliability.kind = match v.extract::<String>()?.as_str() {
                    "reliable" => ReliabilityKind::Reliable,
                    "best_effort" => ReliabilityKind::BestEffort,
                    o => return Err(bad(format!("reliability {o:?}"))),
                }
            }
            "durability" => {
                q.durability = match v.extract::<String>()?.as_str() {
                    "volatile" => Durability::Volatile,
                    "transient_local" => Durability::TransientLocal,
                    "transient" => Durability::Transient,
                    "persistent" => Durability::Persistent,
                    o => return Err(bad(format!("durability {o:?}"))),
                }
            }
            "history" => {
                q.history = if let Ok((kind, depth)) = v.extract::<(String, u32)>() {
                    if kind != "keep_last" {
                        return Err(bad(format!("history ({kind:?}, {depth})")));
                    }
                    History::KeepLast(depth)
                } else {
                    match v.extract::<String>()?.as_str() {
                        "keep_all" => History::KeepAll,
                        "keep_last" => match q.history {
                            History::KeepLast(d) => History::KeepLast(d),
                            History::KeepAll => History::KeepLast(1),
                        },
                        o => return Err(bad(format!("history {o:?}"))),
                    }
                }
            }
            "depth" => q.history = History::KeepLast(v.extract()?),
            "deadline" => {
                q.deadline = Deadline {
                    period: seconds(v)?,
                }
            }
            "liveliness" => {
                q.liveliness.kind = match v.extract::<String>()?.as_str() {
                    "automatic" => LivelinessKind::Automatic,
                    "manual_by_participant" => LivelinessKind::ManualByParticipant,
                    "manual_by_topic" => LivelinessKind::ManualByTopic,
                    o => return Err(bad(format!("liveliness {o:?}"))),
                }
            }
            "liveliness_lease" => q.liveliness.lease_duration = seconds(v)?,
            "ownership" => {
                q.ownership = match v.extract::<String>()?.as_str() {
                    "shared" => Ownership::Shared,
                    "exclusive" => Ownership::Exclusive,
                    o => return Err(bad(format!("ownership {o:?}"))),
                }
            }
            "destination_order" => {
                q.destination_order = match v.extract::<String>()?.as_str() {
                    "by_reception_timestamp" => DestinationOrder::ByReceptionTimestamp,
                    "by_source_timestamp" => DestinationOrder::BySourceTimestamp,
                    o => return Err(bad(format!("destination_order {o:?}"))),
                }
            }
            "max_samples" => q.resource_limits.max_samples = limit(v)?,
            "max_instances" => q.resource_limits.max_instances = limit(v)?,
            "max_samples_per_instance" => q.resource_limits.max_samples_per_instance = limit(v)?,
            "data_representation" => q.data_representation = representations(v)?,
            _ => {}
        }
        true
    }};
}

/// Applies `kw` to a writer QoS.
pub fn writer(mut q: DataWriterQos, kw: Option<&Bound<'_, PyDict>>) -> PyResult<DataWriterQos> {
    for (k, v) in kw.into_iter().flat_map(|d| d.iter()) {
        let k: String = k.extract()?;
        if v.is_none() && !matches!(k.as_str(), "deadline" | "lifespan" | "liveliness_lease") {
            continue;
        }
        let done = match k.as_str() {
            "lifespan" => {
                q.lifespan = Lifespan {
                    duration: seconds(&v)?,
                };
                true
            }
            "ownership_strength" => {
                q.ownership_strength = OwnershipStrength(v.extract()?);
                true
            }
            key => common_writer(&mut q, key, &v)?,
        };
        if !done {
            return Err(bad(format!("unknown writer QoS keyword {k:?}")));
        }
    }
    Ok(q)
}

fn common_writer(q: &mut DataWriterQos, key: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !known(key) {
        return Ok(false);
    }
    Ok(common!(q, key, v))
}

fn common_reader(q: &mut DataReaderQos, key: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !known(key) {
        return Ok(false);
    }
    Ok(common!(q, key, v))
}

fn known(key: &str) -> bool {
    matches!(
        key,
        "reliability"
            | "durability"
            | "history"
            | "depth"
            | "deadline"
            | "liveliness"
            | "liveliness_lease"
            | "ownership"
            | "destination_order"
            | "max_samples"
            | "max_instances"
            | "max_samples_per_instance"
            | "data_representation"
    )
}

/// Applies `kw` to a reader QoS.
pub fn reader(mut q: DataReaderQos, kw: Option<&Bound<'_, PyDict>>) -> PyResult<DataReaderQos> {
    for (k, v) in kw.into_iter().flat_map(|d| d.iter()) {
        let k: String = k.extract()?;
        if v.is_none() && !matches!(k.as_str(), "deadline" | "liveliness_lease") {
            continue;
        }
        if !common_reader(&mut q, &k, &v)? {
            return Err(bad(format!("unknown reader QoS keyword {k:?}")));
        }
    }
    Ok(q)
}
