//! Text and JSON of unions, maps and bitmasks.
//!
//! Text as `cyclonedds subscribe` (Python's reprs) prints them: a union
//! `U[Union](3, 'x')` (discriminator, then the selected value or `None`; an enum
//! discriminator as `<Color.RED: 0>`), a map `{'a': 1}`, a bitmask
//! `Perm(read=True, write=False, exec=True)`.
//!
//! JSON: a union is an object with `"discriminator"` and the selected member by name
//! (`{"discriminator": 3, "b": "x"}`; reading, either may be left out when the other decides
//! it); a map an object whose keys are the map keys as strings; a bitmask its integer (read
//! also as an array of flag names).

use std::fmt::Write;

use serde_json::{Map, Value as Json};

use super::text::{at, err, from_json, int, to_json, write_text, JsonError};
use super::DynamicValue as V;
use crate::xtypes::model::{BitmaskDesc, Primitive, TypeDesc, UnionDesc};

fn short(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

fn write_disc_text(u: &UnionDesc, d: i64, out: &mut String) {
    match &u.discriminator {
        TypeDesc::Enum(e) => match e.literals.iter().find(|l| i64::from(l.1) == d) {
            Some(l) => {
                let _ = write!(out, "<{}.{}: {d}>", short(&e.name), l.0);
            }
            None => {
                let _ = write!(out, "{d}");
            }
        },
        TypeDesc::Primitive(Primitive::Bool) => out.push_str(if d != 0 { "True" } else { "False" }),
        TypeDesc::Primitive(Primitive::Char8) => {
            let _ = write!(out, "'{}'", char::from(d as u8));
        }
        _ => {
            let _ = write!(out, "{d}");
        }
    }
}

pub(super) fn union_text(u: &UnionDesc, d: i64, value: Option<&V>, out: &mut String) {
    let _ = write!(out, "{}[Union](", short(&u.name));
    write_disc_text(u, d, out);
    out.push_str(", ");
    match (u.case_for(d), value) {
        (Some(c), Some(x)) => write_text(&c.ty, x, out),
        _ => out.push_str("None"),
    }
    out.push(')');
}

pub(super) fn map_text(key: &TypeDesc, value: &TypeDesc, entries: &[(V, V)], out: &mut String) {
    out.push('{');
    for (i, (k, x)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_text(key, k, out);
        out.push_str(": ");
        write_text(value, x, out);
    }
    out.push('}');
}

pub(super) fn bitmask_text(b: &BitmaskDesc, x: u64, out: &mut String) {
    let _ = write!(out, "{}(", short(&b.name));
    for (i, (name, p)) in b.flags.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let set = x >> p & 1 == 1;
        let _ = write!(out, "{name}={}", if set { "True" } else { "False" });
    }
    out.push(')');
}

fn disc_json(u: &UnionDesc, d: i64) -> Json {
    match &u.discriminator {
        TypeDesc::Enum(e) => match e.literals.iter().find(|l| i64::from(l.1) == d) {
            Some(l) => Json::String(l.0.clone()),
            None => Json::from(d),
        },
        TypeDesc::Primitive(Primitive::Bool) => Json::Bool(d != 0),
        TypeDesc::Primitive(Primitive::Char8) => Json::String(char::from(d as u8).to_string()),
        TypeDesc::Primitive(Primitive::UInt64) => Json::from(d as u64),
        _ => Json::from(d),
    }
}

pub(super) fn union_json(u: &UnionDesc, d: i64, value: Option<&V>) -> Json {
    let mut m = Map::new();
    m.insert("discriminator".into(), disc_json(u, d));
    if let (Some(c), Some(x)) = (u.case_for(d), value) {
        m.insert(c.name.clone(), to_json(&c.ty, x));
    }
    Json::Object(m)
}

fn disc_from_json(u: &UnionDesc, j: &Json) -> Result<i64, JsonError> {
    match (&u.discriminator, j) {
        (TypeDesc::Enum(e), Json::String(name)) => e
            .literals
            .iter()
            .find(|l| l.0 == *name)
            .map(|l| i64::from(l.1))
            .ok_or_else(|| err(format!("{name} is no literal of {}", e.name))),
        (TypeDesc::Primitive(Primitive::Bool), Json::Bool(b)) => Ok(i64::from(*b)),
        (TypeDesc::Primitive(Primitive::Char8), Json::String(s)) if s.len() == 1 => {
            Ok(i64::from(s.as_bytes()[0]))
        }
        (TypeDesc::Primitive(Primitive::UInt64), _) => Ok(int::<u64>(j)? as i64),
        _ => int::<i64>(j),
    }
}

pub(super) fn union_from_json(u: &UnionDesc, j: &Json, depth: usize) -> Result<V, JsonError> {
    let obj = j.as_object().ok_or_else(|| err("expected an object"))?;
    let mut named = None;
    for k in obj.keys().filter(|k| *k != "discriminator") {
        let c = u
            .cases
            .iter()
            .find(|c| c.name == *k)
            .ok_or_else(|| err(format!("{} has no member {k}", u.name)))?;
        if named.replace(c).is_some() {
            return Err(err("a union holds one member"));
        }
    }
    let d = match (obj.get("discriminator"), named) {
        (Some(d), _) => disc_from_json(u, d).map_err(|e| at(e, "discriminator"))?,
        (None, Some(c)) => match c.labels.first() {
            Some(l) => i64::from(*l),
            None => u.unused_discriminator(),
        },
        (None, None) => u.default_discriminator(),
    };
    let value = match (u.case_for(d), named) {
        (Some(c), Some(n)) if c.name == n.name => Some(Box::new(
            from_json(&c.ty, &obj[&c.name], depth + 1).map_err(|e| at(e, &c.name))?,
        )),
        (Some(_), Some(n)) => {
            return Err(err(format!("the discriminator does not select {}", n.name)))
        }
        (Some(c), None) => Some(Box::new(super::codec::default_value(&c.ty))),
        (None, Some(n)) => {
            return Err(err(format!("the discriminator does not select {}", n.name)))
        }
        (None, None) => None,
    };
    Ok(V::Union {
        discriminator: d,
        value,
    })
}

fn key_string(k: &V) -> String {
    match k {
        V::String(s) => s.clone(),
        V::Char(c) => c.to_string(),
        V::Int8(x) => x.to_string(),
        V::UInt8(x) => x.to_string(),
        V::Int16(x) => x.to_string(),
        V::UInt16(x) => x.to_string(),
        V::Int32(x) => x.to_string(),
        V::UInt32(x) => x.to_string(),
        V::Int64(x) => x.to_string(),
        V::UInt64(x) => x.to_string(),
        other => format!("{other:?}"),
    }
}

pub(super) fn map_json(value: &TypeDesc, entries: &[(V, V)]) -> Json {
    Json::Object(
        entries
            .iter()
            .map(|(k, x)| (key_string(k), to_json(value, x)))
            .collect(),
    )
}

pub(super) fn map_from_json(
    key: &TypeDesc,
    value: &TypeDesc,
    j: &Json,
    depth: usize,
) -> Result<V, JsonError> {
    let obj = j.as_object().ok_or_else(|| err("expected an object"))?;
    let mut entries = Vec::with_capacity(obj.len());
    for (k, x) in obj {
        // Integer keys are written as strings; parse them back as JSON numbers.
        let kj = match key {
            TypeDesc::String { .. } | TypeDesc::Primitive(Primitive::Char8) => {
                Json::String(k.clone())
            }
            _ => serde_json::from_str::<Json>(k)
                .ok()
                .filter(Json::is_number)
                .ok_or_else(|| err(format!("map key {k:?} is not an integer")))?,
        };
        let kv = from_json(key, &kj, depth + 1).map_err(|e| at(e, k))?;
        let xv = from_json(value, x, depth + 1).map_err(|e| at(e, k))?;
        entries.push((kv, xv));
    }
    Ok(V::Map(entries))
}

pub(super) fn bitmask_from_json(b: &BitmaskDesc, j: &Json) -> Result<V, JsonError> {
    if let Some(names) = j.as_array() {
        let mut x = 0u64;
        for n in names {
            let n = n.as_str().ok_or_else(|| err("expected flag names"))?;
            let p = b
                .flags
                .iter()
                .find(|f| f.0 == n)
                .ok_or_else(|| err(format!("{n} is no flag of {}", b.name)))?
                .1;
            x |= 1 << p;
        }
        return Ok(V::Bitmask(x));
    }
    Ok(V::Bitmask(int::<u64>(j)?))
}
