//! Keys of dynamic samples, as the derive computes them (DDS-XTypes 1.3 §7.6.8): the key form
//! of a struct is its key members in member-id order (all non-optional members for a keyless
//! struct used as a key), each in its own key form, without struct headers; sequences and
//! arrays keep their XCDR2 DHEADER. The key hash is that form in big-endian XCDR2. A union
//! is keyed by its discriminator and the member it selects (no DHEADER), a map like a
//! sequence of its entries, a bitmask as its integer.

use super::codec::{
    decode_prim, encode, encode_prim, enum_size, is_flat_primitive, is_primitive, length_code,
    read_enum, write_enum,
};
use super::codec_ext::{map_dheader, read_disc, write_disc};
use super::{DynamicType, DynamicValue as V};
use crate::cdr::impls::in_dheader_w;
use crate::cdr::{
    extent_max, extent_primitive, extent_repeat, extent_then, CdrError, CdrReader, CdrWriter,
    KeyExtent, MutableReader, MutableWriter, EXTENT_EMPTY,
};
use crate::xtypes::model::{Extensibility, MemberDesc, StructDesc, TypeDesc};

/// The members forming `s`'s key form, with their index, in id order.
fn key_members(s: &StructDesc) -> Vec<(usize, &MemberDesc)> {
    let keyed = s.members.iter().any(|m| m.key);
    let mut out: Vec<_> = s
        .members
        .iter()
        .enumerate()
        .filter(|(_, m)| m.key || (!keyed && !m.optional))
        .collect();
    out.sort_by_key(|(_, m)| m.id);
    out
}

/// The extent of `s`'s key form (see `cdr::KeyExtent`), as the derive computes it.
pub(super) fn key_extent_struct(s: &StructDesc) -> KeyExtent {
    key_members(s)
        .iter()
        .fold(EXTENT_EMPTY, |e, (_, m)| extent_then(e, key_extent(&m.ty)))
}

fn key_extent(ty: &TypeDesc) -> KeyExtent {
    match ty {
        TypeDesc::Primitive(p) => extent_primitive(super::codec::prim_size(*p)),
        TypeDesc::Enum(e) => extent_primitive(enum_size(e)),
        TypeDesc::Bitmask(b) => extent_primitive(b.wire_size()),
        // Strings, sequences and maps count as unbounded, as the derive has them.
        TypeDesc::String { .. } | TypeDesc::Sequence { .. } | TypeDesc::Map { .. } => None,
        TypeDesc::Union(u) => {
            // The discriminator, then the largest member (nothing if a value selects none).
            let none = u.cases.iter().all(|c| !c.default);
            let cases = u
                .cases
                .iter()
                .map(|c| key_extent(&c.ty))
                .chain(none.then_some(EXTENT_EMPTY))
                .fold(EXTENT_EMPTY, extent_max);
            extent_then(key_extent(&u.discriminator), cases)
        }
        TypeDesc::Array { element, dims } => {
            let inner = key_extent(element);
            if is_flat_primitive(element) {
                dims.iter()
                    .rev()
                    .fold(inner, |e, d| extent_repeat(e, *d as usize))
            } else {
                let n = dims
                    .iter()
                    .fold(1usize, |a, d| a.saturating_mul(*d as usize));
                extent_then(extent_primitive(4), extent_repeat(inner, n))
            }
        }
        TypeDesc::Struct(s) => key_extent_struct(s),
    }
}

/// Appends the key form of `v` (validated against `ty`).
pub(super) fn write_key_form(ty: &TypeDesc, v: &V, w: &mut CdrWriter<'_>) {
    match (ty, v) {
        (TypeDesc::Struct(s), V::Struct(fields)) => {
            for (i, m) in key_members(s) {
                if let Some(Some(x)) = fields.get(i) {
                    write_key_form(&m.ty, x, w);
                }
            }
        }
        (TypeDesc::Sequence { element, .. }, V::List(items)) => {
            in_dheader_w(w, !is_primitive(element), |w| {
                w.write_len(items.len());
                for x in items {
                    write_key_form(element, x, w);
                }
            })
        }
        (
            TypeDesc::Union(u),
            V::Union {
                discriminator,
                value,
            },
        ) => {
            write_disc(&u.discriminator, *discriminator, w);
            if let (Some(c), Some(x)) = (u.case_for(*discriminator), value) {
                write_key_form(&c.ty, x, w);
            }
        }
        (TypeDesc::Map { key, value, .. }, V::Map(entries)) => {
            in_dheader_w(w, map_dheader(key, value), |w| {
                w.write_len(entries.len());
                for (k, x) in entries {
                    write_key_form(key, k, w);
                    write_key_form(value, x, w);
                }
            })
        }
        (TypeDesc::Array { element, dims }, V::List(_)) if !is_flat_primitive(element) => {
            in_dheader_w(w, true, |w| write_array_key(element, dims, v, w))
        }
        _ => encode(ty, v, w),
    }
}

fn write_array_key(element: &TypeDesc, dims: &[u32], v: &V, w: &mut CdrWriter<'_>) {
    match (dims.split_first(), v) {
        (None, v) => write_key_form(element, v, w),
        (Some((_, rest)), V::List(items)) => {
            for x in items {
                write_array_key(element, rest, x, w);
            }
        }
        _ => {}
    }
}

/// Appends the body of `v`'s key-only payload (a dispose or unregister): the key form, inside
/// the top-level type's headers.
pub(super) fn encode_key_payload(t: &DynamicType, v: &V, w: &mut CdrWriter<'_>) {
    if !t.is_keyed() {
        return;
    }
    let s = t.struct_desc();
    match s.extensibility {
        Extensibility::Final => write_key_form(t.desc(), v, w),
        Extensibility::Appendable => in_dheader_w(w, true, |w| write_key_form(t.desc(), v, w)),
        Extensibility::Mutable => {
            let V::Struct(fields) = v else { return };
            let m = MutableWriter::begin(w);
            for (i, d) in key_members(s) {
                if let Some(Some(x)) = fields.get(i) {
                    m.member_with_lc(w, d.id, false, length_code(&d.ty), |w| {
                        write_key_form(&d.ty, x, w)
                    });
                }
            }
            m.end(w);
        }
    }
}

/// Reads a key-only payload body and writes its key form (the key-hash input) to `w`.
pub(super) fn transcode_key_payload(
    t: &DynamicType,
    r: &mut CdrReader<'_>,
    w: &mut CdrWriter<'_>,
) -> Result<(), CdrError> {
    let s = t.struct_desc();
    match s.extensibility {
        Extensibility::Final => transcode(t.desc(), r, w, 0),
        Extensibility::Appendable if r.is_xcdr2() => {
            let end = r.read_dheader()?;
            transcode(t.desc(), r, w, 0)?;
            r.finish_dheader(end)
        }
        Extensibility::Appendable => transcode(t.desc(), r, w, 0),
        Extensibility::Mutable => {
            let keys = key_members(s);
            let mut slots: Vec<Option<CdrReader<'_>>> = vec![None; keys.len()];
            let mut mr = MutableReader::begin(r)?;
            while let Some(mem) = mr.next(r)? {
                match keys.iter().position(|(_, m)| m.id == mem.id) {
                    Some(k) => slots[k] = Some(mem.reader),
                    None if mem.must_understand => return Err(CdrError::MustUnderstand(mem.id)),
                    None => {}
                }
            }
            mr.end(r)?;
            for ((_, m), slot) in keys.iter().zip(slots) {
                let mut sub = slot.ok_or(CdrError::MissingMember(m.id))?;
                transcode(&m.ty, &mut sub, w, 1)?;
            }
            Ok(())
        }
    }
}

/// Reads a key form of `ty` and writes it again (in `w`'s encoding).
fn transcode(
    ty: &TypeDesc,
    r: &mut CdrReader<'_>,
    w: &mut CdrWriter<'_>,
    depth: usize,
) -> Result<(), CdrError> {
    if depth > 4 * crate::xtypes::MAX_DEPTH {
        return Err(CdrError::TooDeep);
    }
    match ty {
        TypeDesc::Primitive(p) => {
            encode_prim(&decode_prim(*p, r)?, w);
            Ok(())
        }
        TypeDesc::Enum(e) => {
            let x = read_enum(e, r)?;
            write_enum(e, x, w);
            Ok(())
        }
        TypeDesc::String { .. } => {
            w.write_str(r.read_str()?);
            Ok(())
        }
        TypeDesc::Bitmask(b) => {
            let x = super::codec_ext::read_bitmask(b, r)?;
            super::codec_ext::write_bitmask(b, x, w);
            Ok(())
        }
        TypeDesc::Union(u) => {
            let d = read_disc(&u.discriminator, r)?;
            write_disc(&u.discriminator, d, w);
            match u.case_for(d) {
                Some(c) => transcode(&c.ty, r, w, depth + 1),
                None => Ok(()),
            }
        }
        TypeDesc::Map { key, value, .. } => {
            transcode_framed(r, w, map_dheader(key, value), |r, w| {
                let n = r.read_len(1)?;
                w.write_len(n);
                for _ in 0..n {
                    transcode(key, r, w, depth + 1)?;
                    transcode(value, r, w, depth + 1)?;
                }
                Ok(())
            })
        }
        TypeDesc::Struct(s) => {
            for (_, m) in key_members(s) {
                transcode(&m.ty, r, w, depth + 1)?;
            }
            Ok(())
        }
        TypeDesc::Sequence { element, .. } => {
            let dh = !is_primitive(element);
            transcode_framed(r, w, dh, |r, w| {
                let n = r.read_len(1)?;
                w.write_len(n);
                for _ in 0..n {
                    transcode(element, r, w, depth + 1)?;
                }
                Ok(())
            })
        }
        TypeDesc::Array { element, dims } => {
            let dh = !is_flat_primitive(element);
            let n = dims
                .iter()
                .fold(1usize, |a, d| a.saturating_mul(*d as usize));
            if n > r.remaining() {
                return Err(CdrError::Truncated);
            }
            transcode_framed(r, w, dh, |r, w| {
                for _ in 0..n {
                    transcode(element, r, w, depth + 1)?;
                }
                Ok(())
            })
        }
    }
}

/// Runs `f` inside a DHEADER on both sides when `needed` (and XCDR2 on that side).
fn transcode_framed<'a>(
    r: &mut CdrReader<'a>,
    w: &mut CdrWriter<'_>,
    needed: bool,
    f: impl FnOnce(&mut CdrReader<'a>, &mut CdrWriter<'_>) -> Result<(), CdrError>,
) -> Result<(), CdrError> {
    let end = if needed && r.is_xcdr2() {
        Some(r.read_dheader()?)
    } else {
        None
    };
    let start = (needed && w.is_xcdr2()).then(|| w.begin_dheader());
    f(r, w)?;
    if let Some(s) = start {
        w.end_dheader(s);
    }
    if let Some(e) = end {
        r.finish_dheader(e)?;
    }
    Ok(())
}
