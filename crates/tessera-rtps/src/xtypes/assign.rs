//! Type assignability (DDS-XTypes 1.3 §7.2.4) under a TypeConsistencyEnforcement policy:
//! whether a reader of one type may receive a writer's samples of another, decided on their
//! minimal TypeObjects.
//!
//! The rules, as Cyclone DDS applies them (facts sheet §2):
//! - DISALLOW_TYPE_COERCION: the minimal identifiers are equal.
//! - ALLOW_TYPE_COERCION: primitives equal; strings, sequences and arrays with assignable
//!   elements (bounds: reader ≥ writer unless ignored; arrays: equal dimensions); structs of
//!   the same extensibility whose members match by id — final: the same members in the same
//!   order; appendable: a common prefix by position, either side may append; mutable: any
//!   order, a member on one side only is allowed unless it is a key or a non-optional
//!   must-understand one (and, with `prevent_type_widening`, unless it is non-optional) —,
//!   the same key members on both sides, at least one member in common, and (unless
//!   `ignore_member_names`) equal name hashes for equal ids; enums of the same extensibility
//!   whose common values have equal names (final: the same literals); maps with assignable
//!   keys and values (bounds as sequences); unions of the same extensibility with the same
//!   discriminator type (and key flag) whose cases sharing a label have equal ids, assignable
//!   types and (unless ignored) equal name hashes, at least one label in common, and — when
//!   final — the same label sets; bitmasks with the same bit bound whose flags at the same
//!   position have equal names (§7.2.4.4.4).
//!
//! Types are looked up through a resolver; a type it does not know makes the answer
//! [`Assignability::Unresolved`] with the identifiers to ask a TypeLookup service for.

use super::identifier::TypeIdentifier;
use super::object::{BitmaskType, StructMember, TypeObject, TypeObjectBody, UnionType};
use super::{flags, MAX_DEPTH};
use crate::qos::{TypeConsistencyEnforcement, TypeConsistencyKind};

/// The verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assignability {
    /// The reader may receive the writer's samples.
    Assignable,
    /// It may not.
    NotAssignable,
    /// These hashed types are needed to decide.
    Unresolved(Vec<TypeIdentifier>),
}

/// Whether a reader of type `reader` may receive samples of type `writer` (both minimal
/// identifiers), with `resolve` giving the minimal TypeObjects of hashed identifiers.
pub fn assignable(
    reader: &TypeIdentifier,
    writer: &TypeIdentifier,
    policy: &TypeConsistencyEnforcement,
    resolve: &dyn Fn(&TypeIdentifier) -> Option<TypeObject>,
) -> Assignability {
    if reader == writer {
        return Assignability::Assignable;
    }
    if policy.kind == TypeConsistencyKind::DisallowTypeCoercion {
        return Assignability::NotAssignable;
    }
    let mut ctx = Ctx {
        policy,
        resolve,
        missing: Vec::new(),
    };
    let ok = ctx.ids(reader, writer, 0);
    if !ctx.missing.is_empty() {
        return Assignability::Unresolved(ctx.missing);
    }
    if ok {
        Assignability::Assignable
    } else {
        Assignability::NotAssignable
    }
}

struct Ctx<'a> {
    policy: &'a TypeConsistencyEnforcement,
    resolve: &'a dyn Fn(&TypeIdentifier) -> Option<TypeObject>,
    missing: Vec<TypeIdentifier>,
}

/// Reader bound ≥ writer bound, 0 meaning unbounded.
fn bound_ok(reader: u32, writer: u32) -> bool {
    reader == 0 || (writer != 0 && reader >= writer)
}

impl Ctx<'_> {
    fn lookup(&mut self, id: &TypeIdentifier) -> Option<TypeObject> {
        let o = (self.resolve)(id);
        if o.is_none() && !self.missing.contains(id) {
            self.missing.push(id.clone());
        }
        o
    }

    fn ids(&mut self, r: &TypeIdentifier, w: &TypeIdentifier, depth: usize) -> bool {
        use TypeIdentifier as T;
        if r == w {
            return true;
        }
        if depth > MAX_DEPTH {
            return false;
        }
        match (r, w) {
            (T::String8 { bound: rb }, T::String8 { bound: wb }) => {
                self.policy.ignore_string_bounds || bound_ok(*rb, *wb)
            }
            (
                T::PlainSequence {
                    bound: rb,
                    element: re,
                    ..
                },
                T::PlainSequence {
                    bound: wb,
                    element: we,
                    ..
                },
            ) => {
                (self.policy.ignore_sequence_bounds || bound_ok(*rb, *wb))
                    && self.ids(re, we, depth + 1)
            }
            (
                T::PlainArray {
                    dims: rd,
                    element: re,
                    ..
                },
                T::PlainArray {
                    dims: wd,
                    element: we,
                    ..
                },
            ) => rd == wd && self.ids(re, we, depth + 1),
            (
                T::PlainMap {
                    bound: rb,
                    element: re,
                    key: rk,
                    ..
                },
                T::PlainMap {
                    bound: wb,
                    element: we,
                    key: wk,
                    ..
                },
            ) => {
                (self.policy.ignore_sequence_bounds || bound_ok(*rb, *wb))
                    && self.ids(rk, wk, depth + 1)
                    && self.ids(re, we, depth + 1)
            }
            (T::Minimal(_), T::Minimal(_)) => {
                let (Some(ro), Some(wo)) = (self.lookup(r), self.lookup(w)) else {
                    return false;
                };
                self.objects(&ro, &wo, depth + 1)
            }
            _ => false,
        }
    }

    fn objects(&mut self, r: &TypeObject, w: &TypeObject, depth: usize) -> bool {
        let names = !self.policy.ignore_member_names;
        match (&r.body, &w.body) {
            (TypeObjectBody::Struct(rs), TypeObjectBody::Struct(ws)) => {
                let ext = flags::IS_FINAL | flags::IS_APPENDABLE | flags::IS_MUTABLE;
                if rs.flags & ext != ws.flags & ext
                    || rs.base_type != ws.base_type
                    || rs.members.is_empty()
                    || ws.members.is_empty()
                {
                    return false;
                }
                let member_ok = |c: &mut Self, a: &StructMember, b: &StructMember| {
                    a.id == b.id
                        && (a.flags & flags::KEY) == (b.flags & flags::KEY)
                        && (!names || a.name.hash() == b.name.hash())
                        && c.ids(&a.type_id, &b.type_id, depth)
                };
                if rs.flags & flags::IS_MUTABLE != 0 {
                    let mut common = 0;
                    for a in &rs.members {
                        match ws.members.iter().find(|b| b.id == a.id) {
                            Some(b) => {
                                if !member_ok(self, a, b) {
                                    return false;
                                }
                                common += 1;
                            }
                            None if !self.one_sided_ok(a) => return false,
                            None => {}
                        }
                    }
                    let writer_only_ok = ws
                        .members
                        .iter()
                        .filter(|b| !rs.members.iter().any(|a| a.id == b.id))
                        .all(|b| self.one_sided_ok(b));
                    common > 0 && writer_only_ok
                } else {
                    let n = rs.members.len().min(ws.members.len());
                    let same_count = rs.members.len() == ws.members.len();
                    let final_ok = rs.flags & flags::IS_FINAL == 0 || same_count;
                    // Members one side appended may not be keys.
                    let tail_ok = rs.members[n..]
                        .iter()
                        .chain(&ws.members[n..])
                        .all(|m| m.flags & flags::KEY == 0 && self.one_sided_ok(m));
                    final_ok
                        && tail_ok
                        && rs.members[..n].iter().zip(&ws.members[..n]).all(|(a, b)| {
                            (a.flags & flags::OPTIONAL) == (b.flags & flags::OPTIONAL)
                                && member_ok(self, a, b)
                        })
                }
            }
            (TypeObjectBody::Enum(re), TypeObjectBody::Enum(we)) => {
                let ext = flags::IS_FINAL | flags::IS_APPENDABLE;
                if re.flags & ext != we.flags & ext {
                    return false;
                }
                if re.flags & flags::IS_FINAL != 0 && re.literals.len() != we.literals.len() {
                    return false;
                }
                we.literals.iter().all(|wl| {
                    match re.literals.iter().find(|rl| rl.value == wl.value) {
                        Some(rl) => !names || rl.name.hash() == wl.name.hash(),
                        // A value the reader lacks is fine only in an appendable enum.
                        None => re.flags & flags::IS_FINAL == 0,
                    }
                })
            }
            (TypeObjectBody::Union(ru), TypeObjectBody::Union(wu)) => self.unions(ru, wu, depth),
            (TypeObjectBody::Bitmask(rb), TypeObjectBody::Bitmask(wb)) => bitmasks(rb, wb, names),
            _ => false,
        }
    }

    fn unions(&mut self, r: &UnionType, w: &UnionType, depth: usize) -> bool {
        let ext = flags::IS_FINAL | flags::IS_APPENDABLE | flags::IS_MUTABLE;
        if r.flags & ext != w.flags & ext
            || r.discriminator_flags & flags::KEY != w.discriminator_flags & flags::KEY
            || !self.ids(&r.discriminator, &w.discriminator, depth)
        {
            return false;
        }
        let names = !self.policy.ignore_member_names;
        let labels = |u: &UnionType| {
            let mut l: Vec<i32> = u.members.iter().flat_map(|m| m.labels.clone()).collect();
            l.sort_unstable();
            l
        };
        let (rl, wl) = (labels(r), labels(w));
        if r.flags & flags::IS_FINAL != 0 && rl != wl {
            return false;
        }
        if !rl.iter().any(|l| wl.binary_search(l).is_ok()) {
            return false;
        }
        // Every case both sides select by one label must agree.
        for a in &r.members {
            for b in w
                .members
                .iter()
                .filter(|b| b.labels.iter().any(|l| a.labels.contains(l)))
            {
                if a.id != b.id
                    || (names && a.name.hash() != b.name.hash())
                    || !self.ids(&a.type_id, &b.type_id, depth)
                {
                    return false;
                }
            }
        }
        let default = |u: &UnionType| {
            u.members
                .iter()
                .find(|m| m.flags & flags::IS_DEFAULT != 0)
                .cloned()
        };
        match (default(r), default(w)) {
            (Some(a), Some(b)) => self.ids(&a.type_id, &b.type_id, depth),
            _ => true,
        }
    }

    /// Whether a member present on one side only is acceptable.
    fn one_sided_ok(&self, m: &StructMember) -> bool {
        let optional = m.flags & flags::OPTIONAL != 0;
        m.flags & flags::KEY == 0
            && (optional || m.flags & flags::MUST_UNDERSTAND == 0)
            && (optional || !self.policy.prevent_type_widening)
    }
}

fn bitmasks(r: &BitmaskType, w: &BitmaskType, names: bool) -> bool {
    r.bit_bound == w.bit_bound
        && (!names
            || r.bit_flags.iter().all(|a| {
                w.bit_flags
                    .iter()
                    .filter(|b| b.position == a.position)
                    .all(|b| a.name.hash() == b.name.hash())
            }))
}
