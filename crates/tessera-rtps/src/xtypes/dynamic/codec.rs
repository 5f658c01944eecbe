//! Encoding and decoding [`DynamicValue`]s by walking their [`TypeDesc`], with the same rules
//! as the derive's generated code (see `cdr` and `cdr::extensible`):
//!
//! - final struct: members in order; appendable: the same inside a DHEADER in XCDR2 (a reader
//!   defaults members missing at the end and skips appended ones); mutable: XCDR2 DHEADER and
//!   an EMHEADER per member (length code as Cyclone writes it), XCDR1 a parameter list;
//! - `@optional` in final/appendable: XCDR2 presence octet, XCDR1 a parameter header; in
//!   mutable: left out when absent;
//! - XCDR2 DHEADER before sequences of non-primitive elements and arrays of non-primitive
//!   elements (enums are not primitive);
//! - enums as their bit bound's holder (1, 2 or 4 bytes);
//! - unions, maps and bitmasks as [`super::codec_ext`] describes.
//!
//! Values are [`validate`]d against the type before [`encode`], which then cannot fail.

use super::codec_ext as ext;
use super::{DynamicValue as V, ValueError};
use crate::cdr::impls::{in_dheader_r, in_dheader_w};
use crate::cdr::{
    read_optional_with, write_optional_with, CdrError, CdrReader, CdrWriter, MutableReader,
    MutableWriter,
};
use crate::xtypes::model::{EnumDesc, Extensibility, Primitive, StructDesc, TypeDesc};
use crate::xtypes::MAX_DEPTH;

/// Deepest nesting of values decoded (types are already limited; this guards hand-built ones).
const MAX_VALUE_DEPTH: usize = 4 * MAX_DEPTH;

/// Whether `ty` is a primitive (sequences of these carry no DHEADER).
pub(super) fn is_primitive(ty: &TypeDesc) -> bool {
    matches!(ty, TypeDesc::Primitive(_))
}

/// Whether `ty` is a primitive or an array of them (arrays of these carry no DHEADER).
pub(super) fn is_flat_primitive(ty: &TypeDesc) -> bool {
    match ty {
        TypeDesc::Primitive(_) => true,
        TypeDesc::Array { element, .. } => is_flat_primitive(element),
        _ => false,
    }
}

pub(super) fn prim_size(p: Primitive) -> usize {
    match p {
        Primitive::Bool
        | Primitive::Byte
        | Primitive::Int8
        | Primitive::UInt8
        | Primitive::Char8 => 1,
        Primitive::Int16 | Primitive::UInt16 => 2,
        Primitive::Int32 | Primitive::UInt32 | Primitive::Float32 => 4,
        Primitive::Int64 | Primitive::UInt64 | Primitive::Float64 => 8,
    }
}

/// The bytes of an enum's holder type.
pub(super) fn enum_size(e: &EnumDesc) -> usize {
    match e.bit_bound {
        0..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}

fn is_octet(ty: &TypeDesc) -> bool {
    matches!(ty, TypeDesc::Primitive(Primitive::Byte | Primitive::UInt8))
}

/// A lower bound of the encoded size in any encoding (to refuse hostile counts early).
pub(super) fn min_size(ty: &TypeDesc) -> usize {
    match ty {
        TypeDesc::Primitive(p) => prim_size(*p),
        TypeDesc::Enum(e) => enum_size(e),
        TypeDesc::Bitmask(b) => b.wire_size(),
        TypeDesc::String { .. } | TypeDesc::Sequence { .. } | TypeDesc::Map { .. } => 4,
        TypeDesc::Union(u) => match u.extensibility {
            Extensibility::Final => ext::disc_size(&u.discriminator),
            // A DHEADER (XCDR2) or a parameter list's end marker (XCDR1) at least.
            _ => 4,
        },
        TypeDesc::Array { element, dims } => {
            let n = dims
                .iter()
                .fold(1usize, |a, d| a.saturating_mul(*d as usize));
            min_size(element).saturating_mul(n)
        }
        TypeDesc::Struct(s) => match s.extensibility {
            // Members may be missing (appendable XCDR2 readers default them) or absent.
            Extensibility::Appendable | Extensibility::Mutable => 0,
            Extensibility::Final => s
                .members
                .iter()
                .filter(|m| !m.optional)
                .fold(0usize, |a, m| a.saturating_add(min_size(&m.ty))),
        },
    }
}

/// The XCDR2 EMHEADER length code of a member of type `ty` in a mutable struct, as Cyclone
/// (and the derive) write it.
pub(super) fn length_code(ty: &TypeDesc) -> u32 {
    match ty {
        TypeDesc::Primitive(p) => prim_size(*p).trailing_zeros(),
        TypeDesc::Enum(e) => enum_size(e).trailing_zeros(),
        TypeDesc::Bitmask(b) => b.wire_size().trailing_zeros(),
        TypeDesc::String { .. } => 5,
        // With a DHEADER the NEXTINT is it; without, the count is the first word anyway.
        TypeDesc::Map { key, value, .. } => {
            if ext::map_dheader(key, value) {
                5
            } else {
                4
            }
        }
        TypeDesc::Union(_) => 4,
        TypeDesc::Sequence { element, .. } => match element.as_ref() {
            TypeDesc::Primitive(p) => match prim_size(*p) {
                1 => 5,
                4 => 6,
                8 => 7,
                _ => 4,
            },
            _ => 5,
        },
        TypeDesc::Array { element, .. } => {
            if is_flat_primitive(element) {
                4
            } else {
                5
            }
        }
        TypeDesc::Struct(_) => 4,
    }
}

// ------------------------------------------------------------------------------- defaults

/// The default value of `ty`.
pub(super) fn default_value(ty: &TypeDesc) -> V {
    match ty {
        TypeDesc::Primitive(p) => default_prim(*p),
        TypeDesc::String { .. } => V::String(String::new()),
        TypeDesc::Sequence { element, .. } => {
            if is_octet(element) {
                V::Bytes(Vec::new())
            } else {
                V::List(Vec::new())
            }
        }
        TypeDesc::Array { element, dims } => default_array(element, dims),
        TypeDesc::Enum(e) => V::Enum(e.literals.first().map_or(0, |l| l.1)),
        TypeDesc::Union(u) => ext::default_union(u),
        TypeDesc::Map { .. } => V::Map(Vec::new()),
        TypeDesc::Bitmask(_) => V::Bitmask(0),
        TypeDesc::Struct(s) => V::Struct(
            s.members
                .iter()
                .map(|m| (!m.optional).then(|| default_value(&m.ty)))
                .collect(),
        ),
    }
}

fn default_array(element: &TypeDesc, dims: &[u32]) -> V {
    match dims {
        [] => default_value(element),
        [n] if is_octet(element) => V::Bytes(vec![0; *n as usize]),
        [n, rest @ ..] => V::List((0..*n).map(|_| default_array(element, rest)).collect()),
    }
}

fn default_prim(p: Primitive) -> V {
    match p {
        Primitive::Bool => V::Bool(false),
        Primitive::Byte | Primitive::UInt8 => V::UInt8(0),
        Primitive::Int8 => V::Int8(0),
        Primitive::Int16 => V::Int16(0),
        Primitive::UInt16 => V::UInt16(0),
        Primitive::Int32 => V::Int32(0),
        Primitive::UInt32 => V::UInt32(0),
        Primitive::Int64 => V::Int64(0),
        Primitive::UInt64 => V::UInt64(0),
        Primitive::Float32 => V::Float32(0.0),
        Primitive::Float64 => V::Float64(0.0),
        Primitive::Char8 => V::Char('\0'),
    }
}

// ------------------------------------------------------------------------------- validation

fn kind_name(v: &V) -> &'static str {
    match v {
        V::Bool(_) => "boolean",
        V::Int8(_) => "int8",
        V::UInt8(_) => "uint8",
        V::Int16(_) => "int16",
        V::UInt16(_) => "uint16",
        V::Int32(_) => "int32",
        V::UInt32(_) => "uint32",
        V::Int64(_) => "int64",
        V::UInt64(_) => "uint64",
        V::Float32(_) => "float",
        V::Float64(_) => "double",
        V::Char(_) => "char",
        V::String(_) => "string",
        V::Enum(_) => "enum",
        V::Bytes(_) => "bytes",
        V::List(_) => "list",
        V::Struct(_) => "struct",
        V::Union { .. } => "union",
        V::Map(_) => "map",
        V::Bitmask(_) => "bitmask",
    }
}

fn mismatch(expected: &str, v: &V) -> ValueError {
    ValueError::new(format!("expected {expected}, got {}", kind_name(v)))
}

/// Checks that `v` fits `ty`.
pub(super) fn validate(ty: &TypeDesc, v: &V) -> Result<(), ValueError> {
    validate_depth(ty, v, 0)
}

/// [`validate`] at nesting `depth`.
pub(super) fn validate_at(ty: &TypeDesc, v: &V, depth: usize) -> Result<(), ValueError> {
    validate_depth(ty, v, depth)
}

fn validate_depth(ty: &TypeDesc, v: &V, depth: usize) -> Result<(), ValueError> {
    if depth > MAX_VALUE_DEPTH {
        return Err(ValueError::new("nested too deeply"));
    }
    match ty {
        TypeDesc::Primitive(p) => {
            let ok = matches!(
                (p, v),
                (Primitive::Bool, V::Bool(_))
                    | (Primitive::Byte | Primitive::UInt8, V::UInt8(_))
                    | (Primitive::Int8, V::Int8(_))
                    | (Primitive::Int16, V::Int16(_))
                    | (Primitive::UInt16, V::UInt16(_))
                    | (Primitive::Int32, V::Int32(_))
                    | (Primitive::UInt32, V::UInt32(_))
                    | (Primitive::Int64, V::Int64(_))
                    | (Primitive::UInt64, V::UInt64(_))
                    | (Primitive::Float32, V::Float32(_))
                    | (Primitive::Float64, V::Float64(_))
                    | (Primitive::Char8, V::Char(_))
            );
            if ok {
                Ok(())
            } else {
                Err(mismatch(p.idl_name(), v))
            }
        }
        TypeDesc::String { bound } => match v {
            V::String(s) => {
                if *bound != 0 && s.len() > *bound as usize {
                    return Err(ValueError::new(format!(
                        "string of {} bytes exceeds its bound {bound}",
                        s.len()
                    )));
                }
                if s.contains('\0') {
                    return Err(ValueError::new("string contains a NUL"));
                }
                Ok(())
            }
            _ => Err(mismatch("string", v)),
        },
        TypeDesc::Enum(e) => match v {
            V::Enum(x) if e.literals.iter().any(|l| l.1 == *x) => Ok(()),
            V::Enum(x) => Err(ValueError::new(format!("{x} is no literal of {}", e.name))),
            _ => Err(mismatch("enum", v)),
        },
        TypeDesc::Sequence { element, bound } => {
            let n = list_len(element, v)?;
            if *bound != 0 && n > *bound as usize {
                return Err(ValueError::new(format!(
                    "sequence of {n} elements exceeds its bound {bound}"
                )));
            }
            validate_items(element, v, depth)
        }
        TypeDesc::Array { element, dims } => validate_array(element, dims, v, depth),
        TypeDesc::Struct(s) => validate_struct(s, v, depth),
        TypeDesc::Union(u) => ext::validate_union(u, v, depth),
        TypeDesc::Map { key, value, bound } => ext::validate_map(key, value, *bound, v, depth),
        TypeDesc::Bitmask(b) => ext::validate_bitmask(b, v),
    }
}

fn list_len(element: &TypeDesc, v: &V) -> Result<usize, ValueError> {
    match v {
        V::Bytes(b) if is_octet(element) => Ok(b.len()),
        V::List(l) => Ok(l.len()),
        _ => Err(mismatch("a list", v)),
    }
}

fn validate_items(element: &TypeDesc, v: &V, depth: usize) -> Result<(), ValueError> {
    if let V::List(items) = v {
        for (i, x) in items.iter().enumerate() {
            validate_depth(element, x, depth + 1).map_err(|e| e.at(&format!("[{i}]")))?;
        }
    }
    Ok(())
}

fn validate_array(element: &TypeDesc, dims: &[u32], v: &V, depth: usize) -> Result<(), ValueError> {
    let Some((n, rest)) = dims.split_first() else {
        return validate_depth(element, v, depth + 1);
    };
    if rest.is_empty() {
        let len = list_len(element, v)?;
        if len != *n as usize {
            return Err(ValueError::new(format!(
                "array of {n} elements given {len}"
            )));
        }
        return validate_items(element, v, depth);
    }
    let V::List(items) = v else {
        return Err(mismatch("a list", v));
    };
    if items.len() != *n as usize {
        return Err(ValueError::new(format!(
            "array of {n} elements given {}",
            items.len()
        )));
    }
    for (i, x) in items.iter().enumerate() {
        validate_array(element, rest, x, depth + 1).map_err(|e| e.at(&format!("[{i}]")))?;
    }
    Ok(())
}

fn validate_struct(s: &StructDesc, v: &V, depth: usize) -> Result<(), ValueError> {
    let V::Struct(fields) = v else {
        return Err(mismatch(&s.name, v));
    };
    if fields.len() != s.members.len() {
        return Err(ValueError::new(format!(
            "{} has {} members, value has {}",
            s.name,
            s.members.len(),
            fields.len()
        )));
    }
    for (m, f) in s.members.iter().zip(fields) {
        match f {
            Some(x) => validate_depth(&m.ty, x, depth + 1).map_err(|e| e.at(&m.name))?,
            None if m.optional => {}
            None => return Err(ValueError::new("non-optional member absent").at(&m.name)),
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------- encoding

/// Appends `v` (validated against `ty`).
pub(super) fn encode(ty: &TypeDesc, v: &V, w: &mut CdrWriter<'_>) {
    match ty {
        TypeDesc::Primitive(_) => encode_prim(v, w),
        TypeDesc::String { .. } => {
            if let V::String(s) = v {
                w.write_str(s);
            }
        }
        TypeDesc::Enum(e) => {
            let x = if let V::Enum(x) = v { *x } else { 0 };
            write_enum(e, x, w);
        }
        TypeDesc::Sequence { element, .. } => {
            in_dheader_w(w, !is_primitive(element), |w| match v {
                V::Bytes(b) => w.write_byte_seq(b),
                V::List(items) => {
                    w.write_len(items.len());
                    for x in items {
                        encode(element, x, w);
                    }
                }
                _ => w.write_u32(0),
            })
        }
        TypeDesc::Array { element, dims } => in_dheader_w(w, !is_flat_primitive(element), |w| {
            encode_array(element, dims, v, w)
        }),
        TypeDesc::Struct(s) => encode_struct(s, v, w),
        TypeDesc::Union(u) => ext::encode_union(u, v, w),
        TypeDesc::Map { key, value, .. } => ext::encode_map(key, value, v, w),
        TypeDesc::Bitmask(b) => {
            let x = if let V::Bitmask(x) = v { *x } else { 0 };
            ext::write_bitmask(b, x, w);
        }
    }
}

pub(super) fn write_enum(e: &EnumDesc, x: i32, w: &mut CdrWriter<'_>) {
    match enum_size(e) {
        1 => w.write_i8(x as i8),
        2 => w.write_i16(x as i16),
        _ => w.write_i32(x),
    }
}

fn encode_array(element: &TypeDesc, dims: &[u32], v: &V, w: &mut CdrWriter<'_>) {
    match (dims.split_first(), v) {
        (None, v) => encode(element, v, w),
        (Some(_), V::Bytes(b)) => w.write_bytes(b),
        (Some((_, rest)), V::List(items)) => {
            for x in items {
                encode_array(element, rest, x, w);
            }
        }
        _ => {}
    }
}

pub(super) fn encode_prim(v: &V, w: &mut CdrWriter<'_>) {
    match v {
        V::Bool(x) => w.write_bool(*x),
        V::Int8(x) => w.write_i8(*x),
        V::UInt8(x) => w.write_u8(*x),
        V::Int16(x) => w.write_i16(*x),
        V::UInt16(x) => w.write_u16(*x),
        V::Int32(x) => w.write_i32(*x),
        V::UInt32(x) => w.write_u32(*x),
        V::Int64(x) => w.write_i64(*x),
        V::UInt64(x) => w.write_u64(*x),
        V::Float32(x) => w.write_f32(*x),
        V::Float64(x) => w.write_f64(*x),
        V::Char(x) => w.write_char(*x),
        _ => {}
    }
}

fn encode_struct(s: &StructDesc, v: &V, w: &mut CdrWriter<'_>) {
    let V::Struct(fields) = v else { return };
    if s.extensibility == Extensibility::Mutable {
        let m = MutableWriter::begin(w);
        for (d, f) in s.members.iter().zip(fields) {
            if let Some(x) = f {
                m.member_with_lc(w, d.id, d.must_understand, length_code(&d.ty), |w| {
                    encode(&d.ty, x, w)
                });
            }
        }
        m.end(w);
        return;
    }
    in_dheader_w(w, s.extensibility == Extensibility::Appendable, |w| {
        for (d, f) in s.members.iter().zip(fields) {
            if d.optional {
                write_optional_with(
                    w,
                    d.id,
                    f.as_ref()
                        .map(|x| |w: &mut CdrWriter<'_>| encode(&d.ty, x, w)),
                );
            } else if let Some(x) = f {
                encode(&d.ty, x, w);
            }
        }
    })
}

// ------------------------------------------------------------------------------- decoding

/// Reads a value of type `ty`.
pub(super) fn decode(ty: &TypeDesc, r: &mut CdrReader<'_>, depth: usize) -> Result<V, CdrError> {
    if depth > MAX_VALUE_DEPTH {
        return Err(CdrError::TooDeep);
    }
    match ty {
        TypeDesc::Primitive(p) => decode_prim(*p, r),
        TypeDesc::String { bound } => {
            let s = r.read_str()?;
            // A NUL inside would end the string for C peers: not a value this type holds.
            if s.contains('\0') {
                return Err(CdrError::UnterminatedString);
            }
            if *bound != 0 && s.len() > *bound as usize {
                return Err(CdrError::LengthTooLarge(s.len() as u32));
            }
            Ok(V::String(s.to_owned()))
        }
        TypeDesc::Enum(e) => {
            let x = read_enum(e, r)?;
            if !e.literals.iter().any(|l| l.1 == x) {
                return Err(CdrError::InvalidEnum(x));
            }
            Ok(V::Enum(x))
        }
        TypeDesc::Sequence { element, bound } => in_dheader_r(r, !is_primitive(element), |r| {
            let n = r.read_len(min_size(element))?;
            if *bound != 0 && n > *bound as usize {
                return Err(CdrError::LengthTooLarge(n as u32));
            }
            if is_octet(element) {
                return Ok(V::Bytes(r.read_bytes(n)?.to_vec()));
            }
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(decode(element, r, depth + 1)?);
            }
            Ok(V::List(items))
        }),
        TypeDesc::Array { element, dims } => in_dheader_r(r, !is_flat_primitive(element), |r| {
            decode_array(element, dims, r, depth)
        }),
        TypeDesc::Struct(s) => decode_struct(s, r, depth),
        TypeDesc::Union(u) => ext::decode_union(u, r, depth),
        TypeDesc::Map { key, value, bound } => ext::decode_map(key, value, *bound, r, depth),
        TypeDesc::Bitmask(b) => ext::decode_bitmask(b, r),
    }
}

pub(super) fn read_enum(e: &EnumDesc, r: &mut CdrReader<'_>) -> Result<i32, CdrError> {
    Ok(match enum_size(e) {
        1 => i32::from(r.read_i8()?),
        2 => i32::from(r.read_i16()?),
        _ => r.read_i32()?,
    })
}

fn decode_array(
    element: &TypeDesc,
    dims: &[u32],
    r: &mut CdrReader<'_>,
    depth: usize,
) -> Result<V, CdrError> {
    let Some((n, rest)) = dims.split_first() else {
        return decode(element, r, depth + 1);
    };
    let n = *n as usize;
    // Every element takes at least a byte, or this many elements could not be here.
    let total = dims
        .iter()
        .fold(1usize, |a, d| a.saturating_mul(*d as usize));
    if total.saturating_mul(min_size(element).max(1)) > r.remaining() {
        return Err(CdrError::LengthTooLarge(total.min(u32::MAX as usize) as u32));
    }
    if rest.is_empty() && is_octet(element) {
        return Ok(V::Bytes(r.read_bytes(n)?.to_vec()));
    }
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        items.push(decode_array(element, rest, r, depth + 1)?);
    }
    Ok(V::List(items))
}

pub(super) fn decode_prim(p: Primitive, r: &mut CdrReader<'_>) -> Result<V, CdrError> {
    Ok(match p {
        Primitive::Bool => V::Bool(r.read_bool()?),
        Primitive::Byte | Primitive::UInt8 => V::UInt8(r.read_u8()?),
        Primitive::Int8 => V::Int8(r.read_i8()?),
        Primitive::Int16 => V::Int16(r.read_i16()?),
        Primitive::UInt16 => V::UInt16(r.read_u16()?),
        Primitive::Int32 => V::Int32(r.read_i32()?),
        Primitive::UInt32 => V::UInt32(r.read_u32()?),
        Primitive::Int64 => V::Int64(r.read_i64()?),
        Primitive::UInt64 => V::UInt64(r.read_u64()?),
        Primitive::Float32 => V::Float32(r.read_f32()?),
        Primitive::Float64 => V::Float64(r.read_f64()?),
        Primitive::Char8 => V::Char(r.read_char()?),
    })
}

fn decode_struct(s: &StructDesc, r: &mut CdrReader<'_>, depth: usize) -> Result<V, CdrError> {
    if s.extensibility == Extensibility::Mutable {
        let mut fields: Vec<Option<V>> = vec![None; s.members.len()];
        let mut mr = MutableReader::begin(r)?;
        while let Some(mut mem) = mr.next(r)? {
            match s.members.iter().position(|m| m.id == mem.id) {
                Some(i) => fields[i] = Some(decode(&s.members[i].ty, &mut mem.reader, depth + 1)?),
                None if mem.must_understand => return Err(CdrError::MustUnderstand(mem.id)),
                None => {}
            }
        }
        mr.end(r)?;
        // Missing members: keys are required; others take their default (XTypes 7.4.3.5).
        for (m, f) in s.members.iter().zip(fields.iter_mut()) {
            if f.is_none() && !m.optional {
                if m.key {
                    return Err(CdrError::MissingMember(m.id));
                }
                *f = Some(default_value(&m.ty));
            }
        }
        return Ok(V::Struct(fields));
    }
    let end = if s.extensibility == Extensibility::Appendable && r.is_xcdr2() {
        Some(r.read_dheader()?)
    } else {
        None
    };
    let mut fields = Vec::with_capacity(s.members.len());
    for m in &s.members {
        if end.is_some_and(|e| r.position() >= e) {
            // An older writer's sample: the members it does not know take their defaults.
            fields.push((!m.optional).then(|| default_value(&m.ty)));
            continue;
        }
        fields.push(if m.optional {
            read_optional_with(r, |r| decode(&m.ty, r, depth + 1))?
        } else {
            Some(decode(&m.ty, r, depth + 1)?)
        });
    }
    if let Some(e) = end {
        r.finish_dheader(e)?;
    }
    Ok(V::Struct(fields))
}
