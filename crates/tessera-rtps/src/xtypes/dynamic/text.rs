//! Dynamic values as text (the way `cyclonedds subscribe` prints samples:
//! `ShapeType(color='BLUE', x=10, ...)`) and as JSON (objects by member name, enums by
//! literal name, 64-bit integers as JSON numbers).

use serde_json::{Map, Number, Value as Json};

use super::text_ext as ext;
use super::{DynamicType, DynamicValue as V};
use crate::xtypes::model::{Primitive, TypeDesc};

/// Why JSON does not fit a dynamic type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSON does not fit the type at {path}: {reason}")]
pub struct JsonError {
    /// Where (member names and indexes).
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

pub(super) fn err(reason: impl Into<String>) -> JsonError {
    JsonError {
        path: String::new(),
        reason: reason.into(),
    }
}

pub(super) fn at(mut e: JsonError, step: &str) -> JsonError {
    e.path = if e.path.is_empty() || e.path.starts_with('[') {
        format!("{step}{}", e.path)
    } else {
        format!("{step}.{}", e.path)
    };
    e
}

impl V {
    /// The value as text, with member names and enum literals from `ty`.
    pub fn to_text(&self, ty: &DynamicType) -> String {
        let mut out = String::new();
        write_text(ty.desc(), self, &mut out);
        out
    }

    /// The value as JSON: structs as objects (absent optional members as `null`), enums as
    /// their literal's name, sequences and arrays as arrays.
    pub fn to_json(&self, ty: &DynamicType) -> Json {
        to_json(ty.desc(), self)
    }

    /// A value of `ty` from JSON as [`to_json`](Self::to_json) writes it; members left out
    /// take their defaults (optional ones are absent), enums may be given by name or value.
    pub fn from_json(ty: &DynamicType, json: &Json) -> Result<V, JsonError> {
        let v = from_json(ty.desc(), json, 0)?;
        ty.validate(&v).map_err(|e| JsonError {
            path: e.path,
            reason: e.reason,
        })?;
        Ok(v)
    }
}

pub(super) fn write_text(ty: &TypeDesc, v: &V, out: &mut String) {
    use std::fmt::Write;
    match (ty, v) {
        (TypeDesc::Struct(s), V::Struct(fields)) => {
            let _ = write!(out, "{}(", s.name.rsplit("::").next().unwrap_or(&s.name));
            for (i, (m, f)) in s.members.iter().zip(fields).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{}=", m.name);
                match f {
                    Some(x) => write_text(&m.ty, x, out),
                    None => out.push_str("None"),
                }
            }
            out.push(')');
        }
        (TypeDesc::Enum(e), V::Enum(x)) => {
            let short = e.name.rsplit("::").next().unwrap_or(&e.name);
            match e.literals.iter().find(|l| l.1 == *x) {
                Some(l) => {
                    let _ = write!(out, "{short}.{}", l.0);
                }
                None => {
                    let _ = write!(out, "{short}({x})");
                }
            }
        }
        (TypeDesc::Sequence { element, .. }, V::List(items))
        | (TypeDesc::Array { element, .. }, V::List(items)) => {
            out.push('[');
            // A multi-dimensional array's rows are lists of the same element type.
            let inner = match ty {
                TypeDesc::Array { dims, .. } if dims.len() > 1 => TypeDesc::Array {
                    element: element.clone(),
                    dims: dims[1..].to_vec(),
                },
                _ => (**element).clone(),
            };
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_text(&inner, x, out);
            }
            out.push(']');
        }
        (
            TypeDesc::Union(u),
            V::Union {
                discriminator,
                value,
            },
        ) => ext::union_text(u, *discriminator, value.as_deref(), out),
        (TypeDesc::Map { key, value, .. }, V::Map(entries)) => {
            ext::map_text(key, value, entries, out)
        }
        (TypeDesc::Bitmask(b), V::Bitmask(x)) => ext::bitmask_text(b, *x, out),
        (_, V::Bytes(b)) => {
            out.push('[');
            for (i, x) in b.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{x}");
            }
            out.push(']');
        }
        (_, V::String(s)) => {
            let _ = write!(out, "'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
        }
        (_, V::Char(c)) => {
            let _ = write!(out, "'{c}'");
        }
        (_, V::Bool(b)) => out.push_str(if *b { "True" } else { "False" }),
        (_, other) => {
            let _ = match other {
                V::Int8(x) => write!(out, "{x}"),
                V::UInt8(x) => write!(out, "{x}"),
                V::Int16(x) => write!(out, "{x}"),
                V::UInt16(x) => write!(out, "{x}"),
                V::Int32(x) => write!(out, "{x}"),
                V::UInt32(x) => write!(out, "{x}"),
                V::Int64(x) => write!(out, "{x}"),
                V::UInt64(x) => write!(out, "{x}"),
                V::Float32(x) => write!(out, "{x:?}"),
                V::Float64(x) => write!(out, "{x:?}"),
                V::Enum(x) => write!(out, "{x}"),
                _ => write!(out, "?"),
            };
        }
    }
}

fn float(x: f64) -> Json {
    Number::from_f64(x).map_or(Json::Null, Json::Number)
}

pub(super) fn to_json(ty: &TypeDesc, v: &V) -> Json {
    match (ty, v) {
        (TypeDesc::Struct(s), V::Struct(fields)) => {
            let mut m = Map::new();
            for (d, f) in s.members.iter().zip(fields) {
                m.insert(
                    d.name.clone(),
                    f.as_ref().map_or(Json::Null, |x| to_json(&d.ty, x)),
                );
            }
            Json::Object(m)
        }
        (TypeDesc::Enum(e), V::Enum(x)) => match e.literals.iter().find(|l| l.1 == *x) {
            Some(l) => Json::String(l.0.clone()),
            None => Json::from(*x),
        },
        (TypeDesc::Sequence { element, .. }, V::List(items)) => {
            Json::Array(items.iter().map(|x| to_json(element, x)).collect())
        }
        (TypeDesc::Array { element, dims }, V::List(items)) => {
            let inner = if dims.len() > 1 {
                TypeDesc::Array {
                    element: element.clone(),
                    dims: dims[1..].to_vec(),
                }
            } else {
                (**element).clone()
            };
            Json::Array(items.iter().map(|x| to_json(&inner, x)).collect())
        }
        (
            TypeDesc::Union(u),
            V::Union {
                discriminator,
                value,
            },
        ) => ext::union_json(u, *discriminator, value.as_deref()),
        (TypeDesc::Map { value, .. }, V::Map(entries)) => ext::map_json(value, entries),
        (_, V::Bitmask(x)) => Json::from(*x),
        (_, V::Bytes(b)) => Json::Array(b.iter().map(|x| Json::from(*x)).collect()),
        (_, V::String(s)) => Json::String(s.clone()),
        (_, V::Char(c)) => Json::String(c.to_string()),
        (_, V::Bool(b)) => Json::Bool(*b),
        (_, V::Int8(x)) => Json::from(*x),
        (_, V::UInt8(x)) => Json::from(*x),
        (_, V::Int16(x)) => Json::from(*x),
        (_, V::UInt16(x)) => Json::from(*x),
        (_, V::Int32(x)) => Json::from(*x),
        (_, V::UInt32(x)) => Json::from(*x),
        (_, V::Int64(x)) => Json::from(*x),
        (_, V::UInt64(x)) => Json::from(*x),
        (_, V::Float32(x)) => float(f64::from(*x)),
        (_, V::Float64(x)) => float(*x),
        (_, V::Enum(x)) => Json::from(*x),
        _ => Json::Null,
    }
}

pub(super) fn int<T: TryFrom<i64> + TryFrom<u64>>(j: &Json) -> Result<T, JsonError> {
    let out = if let Some(i) = j.as_i64() {
        T::try_from(i).ok()
    } else if let Some(u) = j.as_u64() {
        T::try_from(u).ok()
    } else {
        return Err(err(format!("expected an integer, got {j}")));
    };
    out.ok_or_else(|| err(format!("{j} out of range")))
}

pub(super) fn from_json(ty: &TypeDesc, j: &Json, depth: usize) -> Result<V, JsonError> {
    if depth > 4 * crate::xtypes::MAX_DEPTH {
        return Err(err("nested too deeply"));
    }
    Ok(match ty {
        TypeDesc::Primitive(p) => match p {
            Primitive::Bool => V::Bool(j.as_bool().ok_or_else(|| err("expected a boolean"))?),
            Primitive::Byte | Primitive::UInt8 => V::UInt8(int(j)?),
            Primitive::Int8 => V::Int8(int(j)?),
            Primitive::Int16 => V::Int16(int(j)?),
            Primitive::UInt16 => V::UInt16(int(j)?),
            Primitive::Int32 => V::Int32(int(j)?),
            Primitive::UInt32 => V::UInt32(int(j)?),
            Primitive::Int64 => V::Int64(int(j)?),
            Primitive::UInt64 => V::UInt64(int(j)?),
            Primitive::Float32 => {
                V::Float32(j.as_f64().ok_or_else(|| err("expected a number"))? as f32)
            }
            Primitive::Float64 => V::Float64(j.as_f64().ok_or_else(|| err("expected a number"))?),
            Primitive::Char8 => {
                let s = j
                    .as_str()
                    .ok_or_else(|| err("expected a one-character string"))?;
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => V::Char(c),
                    _ => return Err(err("expected a one-character string")),
                }
            }
        },
        TypeDesc::String { .. } => V::String(
            j.as_str()
                .ok_or_else(|| err("expected a string"))?
                .to_owned(),
        ),
        TypeDesc::Enum(e) => match j {
            Json::String(name) => V::Enum(
                e.literals
                    .iter()
                    .find(|l| l.0 == *name)
                    .map(|l| l.1)
                    .ok_or_else(|| err(format!("{name} is no literal of {}", e.name)))?,
            ),
            _ => V::Enum(int(j)?),
        },
        TypeDesc::Sequence { element, .. } => list(element, j, depth)?,
        TypeDesc::Array { element, dims } => {
            if dims.len() > 1 {
                let inner = TypeDesc::Array {
                    element: element.clone(),
                    dims: dims[1..].to_vec(),
                };
                let items = j.as_array().ok_or_else(|| err("expected an array"))?;
                V::List(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, x)| {
                            from_json(&inner, x, depth + 1).map_err(|e| at(e, &format!("[{i}]")))
                        })
                        .collect::<Result<_, _>>()?,
                )
            } else {
                list(element, j, depth)?
            }
        }
        TypeDesc::Union(u) => ext::union_from_json(u, j, depth)?,
        TypeDesc::Map { key, value, .. } => ext::map_from_json(key, value, j, depth)?,
        TypeDesc::Bitmask(b) => ext::bitmask_from_json(b, j)?,
        TypeDesc::Struct(s) => {
            let obj = j.as_object().ok_or_else(|| err("expected an object"))?;
            if let Some(k) = obj
                .keys()
                .find(|k| !s.members.iter().any(|m| m.name == **k))
            {
                return Err(err(format!("{} has no member {k}", s.name)));
            }
            let mut fields = Vec::with_capacity(s.members.len());
            for m in &s.members {
                fields.push(match obj.get(&m.name) {
                    None | Some(Json::Null) if m.optional => None,
                    None => Some(super::codec::default_value(&m.ty)),
                    Some(x) => Some(from_json(&m.ty, x, depth + 1).map_err(|e| at(e, &m.name))?),
                });
            }
            V::Struct(fields)
        }
    })
}

fn list(element: &TypeDesc, j: &Json, depth: usize) -> Result<V, JsonError> {
    let items = j.as_array().ok_or_else(|| err("expected an array"))?;
    if matches!(
        element,
        TypeDesc::Primitive(Primitive::Byte | Primitive::UInt8)
    ) {
        return Ok(V::Bytes(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| int::<u8>(x).map_err(|e| at(e, &format!("[{i}]"))))
                .collect::<Result<_, _>>()?,
        ));
    }
    Ok(V::List(
        items
            .iter()
            .enumerate()
            .map(|(i, x)| from_json(element, x, depth + 1).map_err(|e| at(e, &format!("[{i}]"))))
            .collect::<Result<_, _>>()?,
    ))
}
