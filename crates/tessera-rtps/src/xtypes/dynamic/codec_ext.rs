//! Unions, maps and bitmasks for the dynamic codec (DDS-XTypes 1.3 §7.4.3.5, §7.4.1):
//!
//! - union: the discriminator, then the member it selects (nothing when it selects no case
//!   and there is no `default:`); appendable: the same inside a DHEADER in XCDR2; mutable: a
//!   parameter list (XCDR1) or DHEADER + EMHEADERs (XCDR2) of the discriminator (id 0) and
//!   the selected member (its id), in that order;
//! - map: `uint32` count of entries, then key and value of each; in XCDR2 inside a DHEADER
//!   when the key or the value is not a primitive (as sequences);
//! - bitmask: the smallest unsigned integer holding `bit_bound` bits.
//!
//! A discriminator value is carried as an `i64`: integers as themselves, `boolean` 0/1,
//! `char` its octet, an enum its literal's value.

use super::codec::{decode, default_value, enum_size, is_primitive, read_enum, write_enum};
use super::codec::{length_code, validate_at};
use super::{DynamicValue as V, ValueError};
use crate::cdr::impls::{in_dheader_r, in_dheader_w};
use crate::cdr::{CdrError, CdrReader, CdrWriter, MutableReader, MutableWriter};
use crate::xtypes::model::{BitmaskDesc, Extensibility, Primitive, TypeDesc, UnionDesc};

/// The discriminator value range of a discriminator type (`None`: not a valid one).
pub(super) fn disc_range(ty: &TypeDesc) -> Option<(i64, i64)> {
    Some(match ty {
        TypeDesc::Primitive(p) => match p {
            Primitive::Bool => (0, 1),
            Primitive::Byte | Primitive::UInt8 | Primitive::Char8 => (0, 255),
            Primitive::Int8 => (-128, 127),
            Primitive::Int16 => (i16::MIN.into(), i16::MAX.into()),
            Primitive::UInt16 => (0, u16::MAX.into()),
            Primitive::Int32 => (i32::MIN.into(), i32::MAX.into()),
            Primitive::UInt32 => (0, u32::MAX.into()),
            Primitive::Int64 | Primitive::UInt64 => (i64::MIN, i64::MAX),
            Primitive::Float32 | Primitive::Float64 => return None,
        },
        TypeDesc::Enum(_) => (i32::MIN.into(), i32::MAX.into()),
        _ => return None,
    })
}

/// Bytes of a discriminator (what a final union takes at least).
pub(super) fn disc_size(ty: &TypeDesc) -> usize {
    match ty {
        TypeDesc::Primitive(p) => super::codec::prim_size(*p),
        TypeDesc::Enum(e) => enum_size(e),
        _ => 4,
    }
}

pub(super) fn write_disc(ty: &TypeDesc, d: i64, w: &mut CdrWriter<'_>) {
    match ty {
        TypeDesc::Primitive(p) => match p {
            Primitive::Bool => w.write_bool(d != 0),
            Primitive::Byte | Primitive::UInt8 | Primitive::Char8 => w.write_u8(d as u8),
            Primitive::Int8 => w.write_i8(d as i8),
            Primitive::Int16 => w.write_i16(d as i16),
            Primitive::UInt16 => w.write_u16(d as u16),
            Primitive::Int32 => w.write_i32(d as i32),
            Primitive::UInt32 => w.write_u32(d as u32),
            Primitive::Int64 => w.write_i64(d),
            Primitive::UInt64 => w.write_u64(d as u64),
            Primitive::Float32 | Primitive::Float64 => {}
        },
        TypeDesc::Enum(e) => write_enum(e, d as i32, w),
        _ => {}
    }
}

pub(super) fn read_disc(ty: &TypeDesc, r: &mut CdrReader<'_>) -> Result<i64, CdrError> {
    Ok(match ty {
        TypeDesc::Primitive(p) => match p {
            Primitive::Bool => i64::from(r.read_bool()?),
            Primitive::Byte | Primitive::UInt8 | Primitive::Char8 => i64::from(r.read_u8()?),
            Primitive::Int8 => i64::from(r.read_i8()?),
            Primitive::Int16 => i64::from(r.read_i16()?),
            Primitive::UInt16 => i64::from(r.read_u16()?),
            Primitive::Int32 => i64::from(r.read_i32()?),
            Primitive::UInt32 => i64::from(r.read_u32()?),
            Primitive::Int64 => r.read_i64()?,
            Primitive::UInt64 => r.read_u64()? as i64,
            Primitive::Float32 | Primitive::Float64 => return Err(CdrError::InvalidDiscriminator),
        },
        TypeDesc::Enum(e) => {
            let x = read_enum(e, r)?;
            if !e.literals.iter().any(|l| l.1 == x) {
                return Err(CdrError::InvalidEnum(x));
            }
            i64::from(x)
        }
        _ => return Err(CdrError::InvalidDiscriminator),
    })
}

/// The default union value: its default discriminator and the member it selects.
pub(super) fn default_union(u: &UnionDesc) -> V {
    let d = u.default_discriminator();
    V::Union {
        discriminator: d,
        value: u.case_for(d).map(|c| Box::new(default_value(&c.ty))),
    }
}

// ------------------------------------------------------------------------------- validation

pub(super) fn validate_union(u: &UnionDesc, v: &V, depth: usize) -> Result<(), ValueError> {
    let V::Union {
        discriminator,
        value,
    } = v
    else {
        return Err(ValueError::new(format!("expected union {}", u.name)));
    };
    let (lo, hi) = disc_range(&u.discriminator).unwrap_or((0, -1));
    if !(lo..=hi).contains(discriminator) {
        return Err(ValueError::new(format!(
            "discriminator {discriminator} out of range"
        )));
    }
    if let TypeDesc::Enum(e) = &u.discriminator {
        if !e.literals.iter().any(|l| i64::from(l.1) == *discriminator) {
            return Err(ValueError::new(format!(
                "discriminator {discriminator} is no literal of {}",
                e.name
            )));
        }
    }
    match (u.case_for(*discriminator), value) {
        (Some(c), Some(x)) => validate_at(&c.ty, x, depth + 1).map_err(|e| e.at(&c.name)),
        (None, None) => Ok(()),
        (Some(c), None) => Err(ValueError::new(format!(
            "discriminator {discriminator} selects {} but no value is given",
            c.name
        ))),
        (None, Some(_)) => Err(ValueError::new(format!(
            "discriminator {discriminator} selects no member but a value is given"
        ))),
    }
}

pub(super) fn validate_map(
    key: &TypeDesc,
    value: &TypeDesc,
    bound: u32,
    v: &V,
    depth: usize,
) -> Result<(), ValueError> {
    let V::Map(entries) = v else {
        return Err(ValueError::new("expected a map"));
    };
    if bound != 0 && entries.len() > bound as usize {
        return Err(ValueError::new(format!(
            "map of {} entries exceeds its bound {bound}",
            entries.len()
        )));
    }
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    for (i, (k, x)) in entries.iter().enumerate() {
        validate_at(key, k, depth + 1).map_err(|e| e.at(&format!("[{i}].key")))?;
        validate_at(value, x, depth + 1).map_err(|e| e.at(&format!("[{i}].value")))?;
        if !seen.insert(key_repr(k)) {
            return Err(ValueError::new("duplicate map key").at(&format!("[{i}]")));
        }
    }
    Ok(())
}

/// A hashable stand-in for a map key (keys are integers, strings, enums or chars; values
/// hold floats, so `DynamicValue` itself is not `Hash`).
fn key_repr(k: &V) -> String {
    format!("{k:?}")
}

pub(super) fn validate_bitmask(b: &BitmaskDesc, v: &V) -> Result<(), ValueError> {
    match v {
        V::Bitmask(x) if b.bit_bound >= 64 || *x >> b.bit_bound == 0 => Ok(()),
        V::Bitmask(x) => Err(ValueError::new(format!(
            "{x:#x} has bits beyond the bit bound {} of {}",
            b.bit_bound, b.name
        ))),
        _ => Err(ValueError::new(format!("expected bitmask {}", b.name))),
    }
}

// ------------------------------------------------------------------------------- encoding

pub(super) fn encode_union(u: &UnionDesc, v: &V, w: &mut CdrWriter<'_>) {
    let V::Union {
        discriminator,
        value,
    } = v
    else {
        return;
    };
    let case = u.case_for(*discriminator);
    if u.extensibility == Extensibility::Mutable {
        let m = MutableWriter::begin(w);
        let lc = length_code(&u.discriminator);
        m.member_with_lc(w, 0, true, lc, |w| {
            write_disc(&u.discriminator, *discriminator, w)
        });
        if let (Some(c), Some(x)) = (case, value) {
            m.member_with_lc(w, c.id, false, length_code(&c.ty), |w| {
                super::codec::encode(&c.ty, x, w)
            });
        }
        m.end(w);
        return;
    }
    in_dheader_w(w, u.extensibility == Extensibility::Appendable, |w| {
        write_disc(&u.discriminator, *discriminator, w);
        if let (Some(c), Some(x)) = (case, value) {
            super::codec::encode(&c.ty, x, w);
        }
    })
}

/// Whether a map's entries are framed by a DHEADER in XCDR2.
pub(super) fn map_dheader(key: &TypeDesc, value: &TypeDesc) -> bool {
    !is_primitive(key) || !is_primitive(value)
}

pub(super) fn encode_map(key: &TypeDesc, value: &TypeDesc, v: &V, w: &mut CdrWriter<'_>) {
    let V::Map(entries) = v else { return };
    in_dheader_w(w, map_dheader(key, value), |w| {
        w.write_len(entries.len());
        for (k, x) in entries {
            super::codec::encode(key, k, w);
            super::codec::encode(value, x, w);
        }
    })
}

pub(super) fn write_bitmask(b: &BitmaskDesc, x: u64, w: &mut CdrWriter<'_>) {
    match b.wire_size() {
        1 => w.write_u8(x as u8),
        2 => w.write_u16(x as u16),
        4 => w.write_u32(x as u32),
        _ => w.write_u64(x),
    }
}

pub(super) fn read_bitmask(b: &BitmaskDesc, r: &mut CdrReader<'_>) -> Result<u64, CdrError> {
    Ok(match b.wire_size() {
        1 => u64::from(r.read_u8()?),
        2 => u64::from(r.read_u16()?),
        4 => u64::from(r.read_u32()?),
        _ => r.read_u64()?,
    })
}

// ------------------------------------------------------------------------------- decoding

pub(super) fn decode_union(
    u: &UnionDesc,
    r: &mut CdrReader<'_>,
    depth: usize,
) -> Result<V, CdrError> {
    if u.extensibility == Extensibility::Mutable {
        let mut mr = MutableReader::begin(r)?;
        // The discriminator comes first; the member after it is the selected one.
        let Some(mut first) = mr.next(r)? else {
            return Err(CdrError::MissingMember(0));
        };
        let discriminator = read_disc(&u.discriminator, &mut first.reader)?;
        let mut value = None;
        let case = u.case_for(discriminator);
        while let Some(mut mem) = mr.next(r)? {
            match case {
                Some(c) if mem.id == c.id && value.is_none() => {
                    value = Some(Box::new(decode(&c.ty, &mut mem.reader, depth + 1)?));
                }
                _ if mem.must_understand => return Err(CdrError::MustUnderstand(mem.id)),
                _ => {}
            }
        }
        mr.end(r)?;
        // A selected member left out takes its default, as a mutable struct's would.
        let value = match (case, value) {
            (Some(c), None) => Some(Box::new(default_value(&c.ty))),
            (_, v) => v,
        };
        return Ok(V::Union {
            discriminator,
            value,
        });
    }
    in_dheader_r(r, u.extensibility == Extensibility::Appendable, |r| {
        let discriminator = read_disc(&u.discriminator, r)?;
        // A value no case names and no default: the union holds no member (§7.4.3.5.3).
        let value = match u.case_for(discriminator) {
            Some(c) => Some(Box::new(decode(&c.ty, r, depth + 1)?)),
            None => None,
        };
        Ok(V::Union {
            discriminator,
            value,
        })
    })
}

pub(super) fn decode_map(
    key: &TypeDesc,
    value: &TypeDesc,
    bound: u32,
    r: &mut CdrReader<'_>,
    depth: usize,
) -> Result<V, CdrError> {
    in_dheader_r(r, map_dheader(key, value), |r| {
        let min = super::codec::min_size(key).saturating_add(super::codec::min_size(value));
        let n = r.read_len(min)?;
        if bound != 0 && n > bound as usize {
            return Err(CdrError::LengthTooLarge(n as u32));
        }
        let mut entries: Vec<(V, V)> = Vec::with_capacity(n);
        let mut seen = std::collections::HashSet::with_capacity(n);
        for _ in 0..n {
            let k = decode(key, r, depth + 1)?;
            let x = decode(value, r, depth + 1)?;
            // A repeated key is not a map value: refuse rather than pick one.
            if !seen.insert(key_repr(&k)) {
                return Err(CdrError::DuplicateMapKey);
            }
            entries.push((k, x));
        }
        Ok(V::Map(entries))
    })
}

pub(super) fn decode_bitmask(b: &BitmaskDesc, r: &mut CdrReader<'_>) -> Result<V, CdrError> {
    let x = read_bitmask(b, r)?;
    // Bits beyond the bound are reserved; a writer setting them sent a value of no type
    // Tessera knows, so the sample is refused rather than silently changed.
    if b.bit_bound < 64 && x >> b.bit_bound != 0 {
        return Err(CdrError::InvalidBitmask(x));
    }
    Ok(V::Bitmask(x))
}
