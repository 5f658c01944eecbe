//! Unions, maps and bitmasks between Python and dynamic values (the tree kinds `"union"`,
//! `"map"` and `"bitmask"` of [`crate::types`]).
//!
//! A union is an instance of a `tessera.types.IdlUnion` subclass, read through its
//! `discriminator` and `value` attributes and built as `cls(discriminator=..., value=...)`; a
//! map is a dict (any mapping when writing); a bitmask an int (an `enum.IntFlag` when its tree
//! names a class). Mistakes raise `TypeError` (wrong kind of object) or `ValueError` (right
//! kind, wrong value); the runtime checks the rest (discriminator ranges, enum literals,
//! string and sequence bounds) when a sample is written and names where it failed.

use crate::types::{desc_to_tree, ext_from, ext_name, from_tree, to_py, to_value, within, Node};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList, PyMapping, PyString, PyTuple};
use std::sync::Arc;
use tessera::rtps::xtypes::model::{BitmaskDesc, Primitive, TypeDesc, UnionCase, UnionDesc};
use tessera::DynamicValue;

/// A union's compiled form.
#[derive(Debug)]
pub struct UnionNode {
    /// The `IdlUnion` subclass.
    pub cls: Py<PyAny>,
    /// Its description: which case a discriminator selects.
    pub desc: Arc<UnionDesc>,
    /// The discriminator's node: what Python form it takes (bool, str, an enum member, int).
    pub disc: Node,
    /// Each case's node, in the order of `desc.cases`.
    pub cases: Vec<Node>,
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string())
}

pub fn union_from_tree(t: &Bound<'_, PyTuple>) -> PyResult<(TypeDesc, Node)> {
    let cls = t.get_item(1)?.unbind();
    let name: String = t.get_item(2)?.extract()?;
    let extensibility = ext_from(&t.get_item(3)?.extract::<String>()?)?;
    let (discriminator, disc) = from_tree(&t.get_item(4)?)?;
    let disc_ok = match &discriminator {
        TypeDesc::Primitive(p) => !matches!(p, Primitive::Float32 | Primitive::Float64),
        TypeDesc::Enum(_) => true,
        _ => false,
    };
    if !disc_ok {
        return Err(PyValueError::new_err(format!(
            "union {name}: the discriminator is an integer, char, bool, octet or enum type"
        )));
    }
    let discriminator_key: bool = t.get_item(5)?.extract()?;
    let mut cases: Vec<UnionCase> = Vec::new();
    let mut nodes = Vec::new();
    for c in t.get_item(6)?.try_iter()? {
        let c = c?;
        let c = c.cast::<PyTuple>()?;
        let mname: String = c.get_item(0)?.extract()?;
        let labels: Vec<i32> = c.get_item(2)?.extract()?;
        let default: bool = c.get_item(3)?.extract()?;
        // Two cases for one label, or two defaults, would make decoding ambiguous.
        if let Some(l) = labels
            .iter()
            .find(|l| cases.iter().any(|o| o.labels.contains(l)))
        {
            return Err(PyValueError::new_err(format!(
                "union {name}: label {l} selects two members"
            )));
        }
        if default && cases.iter().any(|o| o.default) {
            return Err(PyValueError::new_err(format!(
                "union {name}: two default members"
            )));
        }
        let (ty, node) = from_tree(&c.get_item(4)?)?;
        cases.push(UnionCase {
            name: mname,
            id: c.get_item(1)?.extract()?,
            labels,
            default,
            ty,
        });
        nodes.push(node);
    }
    let desc = Arc::new(UnionDesc {
        name,
        extensibility,
        discriminator,
        discriminator_key,
        cases,
    });
    Ok((
        TypeDesc::Union(desc.clone()),
        Node::Union(Box::new(UnionNode {
            cls,
            desc,
            disc,
            cases: nodes,
        })),
    ))
}

pub fn map_from_tree(t: &Bound<'_, PyTuple>) -> PyResult<(TypeDesc, Node)> {
    let (key, key_node) = from_tree(&t.get_item(1)?)?;
    let (value, value_node) = from_tree(&t.get_item(2)?)?;
    let bound: u32 = t.get_item(3)?.extract()?;
    // XTypes map keys are integers or strings.
    let key_ok = match &key {
        TypeDesc::Primitive(p) => !matches!(
            p,
            Primitive::Float32 | Primitive::Float64 | Primitive::Bool | Primitive::Char8
        ),
        TypeDesc::String { .. } => true,
        _ => false,
    };
    if !key_ok {
        return Err(PyValueError::new_err(
            "a map's key type is an integer or a string",
        ));
    }
    Ok((
        TypeDesc::Map {
            key: Box::new(key),
            value: Box::new(value),
            bound,
        },
        Node::Map {
            key: Box::new(key_node),
            value: Box::new(value_node),
            bound,
        },
    ))
}

pub fn bitmask_from_tree(t: &Bound<'_, PyTuple>) -> PyResult<(TypeDesc, Node)> {
    let cls = t.get_item(1)?.unbind();
    let name: String = t.get_item(2)?.extract()?;
    let bit_bound: u16 = t.get_item(3)?.extract()?;
    let flags: Vec<(String, u16)> = t.get_item(4)?.extract()?;
    if !(1..=64).contains(&bit_bound) {
        return Err(PyValueError::new_err(format!(
            "bitmask {name}: bit_bound {bit_bound} is not within 1 to 64"
        )));
    }
    if let Some((f, p)) = flags.iter().find(|(_, p)| *p >= bit_bound) {
        return Err(PyValueError::new_err(format!(
            "bitmask {name}: flag {f} at position {p} is outside the bit bound {bit_bound}"
        )));
    }
    Ok((
        TypeDesc::Bitmask(Arc::new(BitmaskDesc {
            name: name.clone(),
            bit_bound,
            flags,
        })),
        Node::Bitmask {
            cls,
            name,
            bit_bound,
        },
    ))
}

/// The trees of IDL unions, maps and bitmasks (classes `None`).
pub fn kind_to_tree<'py>(py: Python<'py>, t: &TypeDesc) -> PyResult<Bound<'py, PyAny>> {
    let none = py.None().into_bound(py);
    Ok(match t {
        TypeDesc::Union(u) => {
            let cases = PyList::empty(py);
            for c in &u.cases {
                let ty = desc_to_tree(py, &c.ty)?;
                cases.append((&c.name, c.id, c.labels.clone(), c.default, ty))?;
            }
            let disc = desc_to_tree(py, &u.discriminator)?;
            let ext = ext_name(u.extensibility);
            (
                "union",
                none,
                &u.name,
                ext,
                disc,
                u.discriminator_key,
                cases,
            )
                .into_pyobject(py)?
                .into_any()
        }
        TypeDesc::Map { key, value, bound } => {
            let k = desc_to_tree(py, key)?;
            ("map", k, desc_to_tree(py, value)?, *bound)
                .into_pyobject(py)?
                .into_any()
        }
        TypeDesc::Bitmask(b) => ("bitmask", none, &b.name, b.bit_bound, b.flags.clone())
            .into_pyobject(py)?
            .into_any(),
        _ => return Err(PyValueError::new_err("not a union, map or bitmask")),
    })
}

/// A discriminator as the runtime holds it: integers as themselves (`uint64` as its bits),
/// `bool` 0/1, a `char` (a one-character str) its code, an enum member its value.
fn disc_value(u: &UnionNode, d: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(s) = d.cast::<PyString>() {
        let s = s.to_cow()?;
        let mut chars = s.chars();
        return match (chars.next(), chars.next()) {
            (Some(c), None) if u32::from(c) <= 0xff => Ok(i64::from(u32::from(c))),
            _ => Err(PyValueError::new_err(format!(
                "discriminator {s:?} is not one ISO 8859-1 character"
            ))),
        };
    }
    if !d.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "the discriminator of {} is an int, not {}",
            u.desc.name,
            type_name(d)
        )));
    }
    if let Ok(x) = d.extract::<i64>() {
        return Ok(x);
    }
    match (&u.desc.discriminator, d.extract::<u64>()) {
        (TypeDesc::Primitive(Primitive::UInt64), Ok(x)) => Ok(x as i64),
        _ => Err(PyValueError::new_err(format!(
            "discriminator {d} out of range"
        ))),
    }
}

pub fn union_to_value(u: &UnionNode, v: &Bound<'_, PyAny>) -> PyResult<DynamicValue> {
    let py = v.py();
    let (Ok(d), Ok(x)) = (v.getattr("discriminator"), v.getattr("value")) else {
        return Err(PyTypeError::new_err(format!(
            "expected a union {} (with discriminator and value), not {}",
            u.desc.name,
            type_name(v)
        )));
    };
    let discriminator = disc_value(u, &d)?;
    let case = u
        .desc
        .case_for(discriminator)
        .and_then(|c| u.desc.cases.iter().position(|o| std::ptr::eq(o, c)));
    let value = match case {
        Some(i) => {
            let x = to_value(&u.cases[i], &x)
                .map_err(|e| within(py, &format!("case {}", u.desc.cases[i].name), e))?;
            Some(Box::new(x))
        }
        None if x.is_none() => None,
        None => {
            return Err(PyValueError::new_err(format!(
                "discriminator {d} selects no member of {}, but a value is given",
                u.desc.name
            )))
        }
    };
    Ok(DynamicValue::Union {
        discriminator,
        value,
    })
}

pub fn union_to_py<'py>(
    py: Python<'py>,
    u: &UnionNode,
    d: i64,
    value: Option<DynamicValue>,
) -> PyResult<Bound<'py, PyAny>> {
    let disc = match &u.disc {
        Node::Prim(Primitive::Bool) => PyBool::new(py, d != 0).to_owned().into_any(),
        Node::Prim(Primitive::Char8) => {
            PyString::new(py, &char::from(d as u8).to_string()).into_any()
        }
        Node::Prim(Primitive::UInt64) => (d as u64).into_pyobject(py)?.into_any(),
        Node::Enum(cls) => cls.bind(py).call1((d,))?,
        _ => d.into_pyobject(py)?.into_any(),
    };
    let case = u
        .desc
        .case_for(d)
        .and_then(|c| u.desc.cases.iter().position(|o| std::ptr::eq(o, c)));
    let value = match (case, value) {
        (Some(i), Some(x)) => to_py(py, &u.cases[i], x)?,
        _ => py.None().into_bound(py),
    };
    let kw = PyDict::new(py);
    kw.set_item("discriminator", disc)?;
    kw.set_item("value", value)?;
    u.cls.bind(py).call((), Some(&kw))
}

pub fn map_to_value(
    key: &Node,
    value: &Node,
    bound: u32,
    v: &Bound<'_, PyAny>,
) -> PyResult<DynamicValue> {
    let py = v.py();
    let m = v
        .cast::<PyMapping>()
        .map_err(|_| PyTypeError::new_err(format!("expected a dict, not {}", type_name(v))))?;
    let n = m.len()?;
    if bound != 0 && n > bound as usize {
        return Err(PyValueError::new_err(format!(
            "{n} entries exceed the map's bound {bound}"
        )));
    }
    let mut out = Vec::with_capacity(n);
    for item in m.items()?.iter() {
        let (k, x): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let kv = to_value(key, &k).map_err(|e| within(py, &format!("key {k:?}"), e))?;
        let xv = to_value(value, &x).map_err(|e| within(py, &format!("[{k:?}]"), e))?;
        out.push((kv, xv));
    }
    Ok(DynamicValue::Map(out))
}

pub fn bitmask_to_value(
    name: &str,
    bit_bound: u16,
    v: &Bound<'_, PyAny>,
) -> PyResult<DynamicValue> {
    if !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "bitmask {name} is an int, not {}",
            type_name(v)
        )));
    }
    let x: u64 = v.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "{v} is not a bitmask value of {name} (negative or over 64 bits)"
        ))
    })?;
    if bit_bound < 64 && x >> bit_bound != 0 {
        return Err(PyValueError::new_err(format!(
            "{x:#x} has bits beyond the bit bound {bit_bound} of {name}"
        )));
    }
    Ok(DynamicValue::Bitmask(x))
}
