//! Python types ↔ Tessera's dynamic types.
//!
//! Both directions go through one plain description, a tree of tuples that Python code builds
//! from a dataclass (`tessera/types.py`) and that [`desc_to_tree`] builds from IDL:
//!
//! ```text
//! "int32" | "float64" | ... | "bool" | "char"     a primitive (Primitive::idl-like names below)
//! ("string", bound)                               bound 0: unbounded
//! ("sequence", element, bound)
//! ("array", element, [dims...])
//! ("struct", cls, name, extensibility, [(member, id, type, key, optional), ...])
//! ("enum", cls, name, [(literal, value), ...])
//! ("union", cls, name, extensibility, discriminator, discriminator_key,
//!     [(member, id, [label, ...], is_default, type), ...])   labels as ints (chars: ord)
//! ("map", key, value, bound)
//! ("bitmask", cls, name, bit_bound, [(flag, position), ...])
//! ```
//!
//! `cls` is the Python class a decoded struct (or enum, union, bitmask) becomes (`None` in trees built from
//! IDL, before Python made the classes). [`Node`] is the compiled form used per sample: the
//! conversions walk it, not the [`TypeDesc`], so that member names are interned once.

use crate::kinds;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::sync::Arc;
use tessera::rtps::xtypes::model::{
    EnumDesc, Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc,
};
use tessera::DynamicValue;

const PRIMS: &[(&str, Primitive)] = &[
    ("bool", Primitive::Bool),
    ("octet", Primitive::Byte),
    ("int8", Primitive::Int8),
    ("uint8", Primitive::UInt8),
    ("int16", Primitive::Int16),
    ("uint16", Primitive::UInt16),
    ("int32", Primitive::Int32),
    ("uint32", Primitive::UInt32),
    ("int64", Primitive::Int64),
    ("uint64", Primitive::UInt64),
    ("float32", Primitive::Float32),
    ("float64", Primitive::Float64),
    ("char", Primitive::Char8),
];

fn prim_name(p: Primitive) -> &'static str {
    PRIMS.iter().find(|(_, q)| *q == p).map_or("?", |x| x.0)
}

pub(crate) fn ext_from(s: &str) -> PyResult<Extensibility> {
    Ok(match s {
        "final" => Extensibility::Final,
        "appendable" => Extensibility::Appendable,
        "mutable" => Extensibility::Mutable,
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown extensibility {s:?}"
            )))
        }
    })
}

pub(crate) fn ext_name(e: Extensibility) -> &'static str {
    match e {
        Extensibility::Final => "final",
        Extensibility::Appendable => "appendable",
        Extensibility::Mutable => "mutable",
    }
}

/// The compiled form of a type, for converting samples.
#[derive(Debug)]
pub enum Node {
    /// A primitive.
    Prim(Primitive),
    /// A string (any bound).
    Str,
    /// A sequence or one-dimensional array of octet/uint8: Python `bytes`.
    Bytes,
    /// A sequence or array (one dimension of it): a Python list.
    List(Box<Node>),
    /// A struct: built by calling `cls` with the members in order.
    Struct {
        /// The dataclass.
        cls: Py<PyAny>,
        /// Member names (interned), their nodes and whether optional.
        members: Vec<(Py<PyString>, Node, bool)>,
    },
    /// An enum: `cls(value)`.
    Enum(Py<PyAny>),
    /// A union: `cls(discriminator=..., value=...)`.
    Union(Box<kinds::UnionNode>),
    /// A map: a dict.
    Map {
        /// Key and value nodes.
        key: Box<Node>,
        value: Box<Node>,
        /// Maximum entries, 0 for unbounded.
        bound: u32,
    },
    /// A bitmask: `cls(bits)` (an `enum.IntFlag`), a plain int when `cls` is `None`.
    Bitmask {
        cls: Py<PyAny>,
        /// Its name and bit bound, for error messages and the range check.
        name: String,
        bit_bound: u16,
    },
}

/// Builds the [`TypeDesc`] and the [`Node`] of a description tree.
pub fn from_tree(t: &Bound<'_, PyAny>) -> PyResult<(TypeDesc, Node)> {
    let py = t.py();
    if let Ok(s) = t.cast::<PyString>() {
        let s = s.to_cow()?;
        let s = s.as_ref();
        let p = PRIMS
            .iter()
            .find(|(n, _)| *n == s)
            .map(|x| x.1)
            .ok_or_else(|| PyValueError::new_err(format!("unknown primitive type {s:?}")))?;
        return Ok((TypeDesc::Primitive(p), Node::Prim(p)));
    }
    let t = t
        .cast::<PyTuple>()
        .map_err(|_| PyTypeError::new_err("a type description is a str or a tuple"))?;
    let kind: String = t.get_item(0)?.extract()?;
    match kind.as_str() {
        "string" => Ok((
            TypeDesc::String {
                bound: t.get_item(1)?.extract()?,
            },
            Node::Str,
        )),
        "sequence" => {
            let (el, node) = from_tree(&t.get_item(1)?)?;
            let bound: u32 = t.get_item(2)?.extract()?;
            let node = if is_octet(&el) {
                Node::Bytes
            } else {
                Node::List(Box::new(node))
            };
            Ok((
                TypeDesc::Sequence {
                    element: Box::new(el),
                    bound,
                },
                node,
            ))
        }
        "array" => {
            let (el, mut node) = from_tree(&t.get_item(1)?)?;
            let dims: Vec<u32> = t.get_item(2)?.extract()?;
            if dims.is_empty() || dims.contains(&0) {
                return Err(PyValueError::new_err("array dimensions must be ≥ 1"));
            }
            // Innermost dimension first: octets become bytes there, lists above.
            for (i, _) in dims.iter().enumerate().rev() {
                node = if i == dims.len() - 1 && is_octet(&el) {
                    Node::Bytes
                } else {
                    Node::List(Box::new(node))
                };
            }
            Ok((
                TypeDesc::Array {
                    element: Box::new(el),
                    dims,
                },
                node,
            ))
        }
        "struct" => {
            let cls = t.get_item(1)?.unbind();
            let name: String = t.get_item(2)?.extract()?;
            let ext = ext_from(&t.get_item(3)?.extract::<String>()?)?;
            let mut members = Vec::new();
            let mut nodes = Vec::new();
            for m in t.get_item(4)?.try_iter()? {
                let m = m?;
                let m = m.cast::<PyTuple>()?;
                let mname: String = m.get_item(0)?.extract()?;
                let id: u32 = m.get_item(1)?.extract()?;
                let (ty, node) = from_tree(&m.get_item(2)?)?;
                let mut md = MemberDesc::new(mname.clone(), id, ty);
                md.key = m.get_item(3)?.extract()?;
                md.optional = m.get_item(4)?.extract()?;
                nodes.push((PyString::intern(py, &mname).unbind(), node, md.optional));
                members.push(md);
            }
            Ok((
                TypeDesc::Struct(Arc::new(StructDesc {
                    name,
                    extensibility: ext,
                    members,
                })),
                Node::Struct {
                    cls,
                    members: nodes,
                },
            ))
        }
        "enum" => {
            let cls = t.get_item(1)?.unbind();
            let name: String = t.get_item(2)?.extract()?;
            let literals: Vec<(String, i32)> = t.get_item(3)?.extract()?;
            Ok((
                TypeDesc::Enum(Arc::new(EnumDesc {
                    name,
                    extensibility: Extensibility::Final,
                    bit_bound: 32,
                    literals,
                })),
                Node::Enum(cls),
            ))
        }
        "union" => kinds::union_from_tree(t),
        "map" => kinds::map_from_tree(t),
        "bitmask" => kinds::bitmask_from_tree(t),
        other => Err(PyValueError::new_err(format!(
            "unknown type description kind {other:?}"
        ))),
    }
}

fn is_octet(t: &TypeDesc) -> bool {
    matches!(
        t,
        TypeDesc::Primitive(Primitive::Byte) | TypeDesc::Primitive(Primitive::UInt8)
    )
}

/// The description tree of `t` (classes `None`), for Python to make dataclasses from.
pub fn desc_to_tree<'py>(py: Python<'py>, t: &TypeDesc) -> PyResult<Bound<'py, PyAny>> {
    let none = py.None().into_bound(py);
    Ok(match t {
        TypeDesc::Primitive(p) => PyString::new(py, prim_name(*p)).into_any(),
        TypeDesc::String { bound } => ("string", *bound).into_pyobject(py)?.into_any(),
        TypeDesc::Sequence { element, bound } => ("sequence", desc_to_tree(py, element)?, *bound)
            .into_pyobject(py)?
            .into_any(),
        TypeDesc::Array { element, dims } => ("array", desc_to_tree(py, element)?, dims.clone())
            .into_pyobject(py)?
            .into_any(),
        TypeDesc::Struct(s) => {
            let members = PyList::empty(py);
            for m in &s.members {
                members.append((&m.name, m.id, desc_to_tree(py, &m.ty)?, m.key, m.optional))?;
            }
            ("struct", none, &s.name, ext_name(s.extensibility), members)
                .into_pyobject(py)?
                .into_any()
        }
        TypeDesc::Enum(e) => ("enum", none, &e.name, e.literals.clone())
            .into_pyobject(py)?
            .into_any(),
        TypeDesc::Union(_) | TypeDesc::Map { .. } | TypeDesc::Bitmask(_) => {
            kinds::kind_to_tree(py, t)?
        }
    })
}

/// A Python value to a [`DynamicValue`] of `node`'s type; errors name the member.
pub fn to_value(node: &Node, v: &Bound<'_, PyAny>) -> PyResult<DynamicValue> {
    Ok(match node {
        Node::Prim(p) => match p {
            Primitive::Bool => DynamicValue::Bool(v.extract()?),
            Primitive::Byte | Primitive::UInt8 => DynamicValue::UInt8(v.extract()?),
            Primitive::Int8 => DynamicValue::Int8(v.extract()?),
            Primitive::Int16 => DynamicValue::Int16(v.extract()?),
            Primitive::UInt16 => DynamicValue::UInt16(v.extract()?),
            Primitive::Int32 => DynamicValue::Int32(v.extract()?),
            Primitive::UInt32 => DynamicValue::UInt32(v.extract()?),
            Primitive::Int64 => DynamicValue::Int64(v.extract()?),
            Primitive::UInt64 => DynamicValue::UInt64(v.extract()?),
            Primitive::Float32 => DynamicValue::Float32(v.extract()?),
            Primitive::Float64 => DynamicValue::Float64(v.extract()?),
            Primitive::Char8 => DynamicValue::Char(v.extract()?),
        },
        Node::Str => DynamicValue::String(v.extract()?),
        Node::Bytes => match v.cast::<PyBytes>() {
            Ok(b) => DynamicValue::Bytes(b.as_bytes().to_vec()),
            // bytearray, a list of ints
            Err(_) => DynamicValue::Bytes(v.extract()?),
        },
        Node::List(el) => {
            let mut out = Vec::new();
            for x in v.try_iter()? {
                out.push(to_value(el, &x?)?);
            }
            DynamicValue::List(out)
        }
        Node::Struct { members, .. } => {
            let mut out = Vec::with_capacity(members.len());
            for (name, node, optional) in members {
                let x = v.getattr(name.bind(v.py()))?;
                if *optional && x.is_none() {
                    out.push(None);
                    continue;
                }
                let val = to_value(node, &x)
                    .map_err(|e| within(v.py(), &format!("member {}", name.bind(v.py())), e))?;
                out.push(Some(val));
            }
            DynamicValue::Struct(out)
        }
        Node::Enum(_) => DynamicValue::Enum(v.extract()?),
        Node::Union(u) => kinds::union_to_value(u, v)?,
        Node::Map { key, value, bound } => kinds::map_to_value(key, value, *bound, v)?,
        Node::Bitmask {
            name, bit_bound, ..
        } => kinds::bitmask_to_value(name, *bit_bound, v)?,
    })
}

/// `e` with its message prefixed by `place` (outermost first), of the same exception type.
pub(crate) fn within(py: Python<'_>, place: &str, e: PyErr) -> PyErr {
    PyErr::from_type(e.get_type(py), format!("{place}: {}", e.value(py)))
}

/// A [`DynamicValue`] of `node`'s type to a Python value.
pub fn to_py<'py>(py: Python<'py>, node: &Node, v: DynamicValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match (node, v) {
        (_, DynamicValue::Bool(b)) => b.into_pyobject(py)?.to_owned().into_any(),
        (_, DynamicValue::Int8(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::UInt8(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::Int16(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::UInt16(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::Int32(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::UInt32(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::Int64(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::UInt64(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::Float32(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::Float64(x)) => x.into_pyobject(py)?.into_any(),
        (_, DynamicValue::Char(c)) => c.into_pyobject(py)?.into_any(),
        (_, DynamicValue::String(s)) => PyString::new(py, &s).into_any(),
        (_, DynamicValue::Bytes(b)) => PyBytes::new(py, &b).into_any(),
        (Node::Enum(cls), DynamicValue::Enum(x)) => cls.bind(py).call1((x,))?,
        (_, DynamicValue::Enum(x)) => x.into_pyobject(py)?.into_any(),
        (
            Node::Union(u),
            DynamicValue::Union {
                discriminator,
                value,
            },
        ) => kinds::union_to_py(py, u, discriminator, value.map(|b| *b))?,
        (Node::Map { key, value, .. }, DynamicValue::Map(entries)) => {
            let d = PyDict::new(py);
            for (k, x) in entries {
                d.set_item(to_py(py, key, k)?, to_py(py, value, x)?)?;
            }
            d.into_any()
        }
        (Node::Bitmask { cls, .. }, DynamicValue::Bitmask(x)) if !cls.is_none(py) => {
            cls.bind(py).call1((x,))?
        }
        (_, DynamicValue::Bitmask(x)) => x.into_pyobject(py)?.into_any(),
        (Node::List(el), DynamicValue::List(xs)) => {
            let l = PyList::empty(py);
            for x in xs {
                l.append(to_py(py, el, x)?)?;
            }
            l.into_any()
        }
        (Node::Struct { cls, members }, DynamicValue::Struct(xs)) => {
            let mut args = Vec::with_capacity(xs.len());
            for ((_, node, _), x) in members.iter().zip(xs) {
                args.push(match x {
                    Some(x) => to_py(py, node, x)?,
                    None => py.None().into_bound(py),
                });
            }
            cls.bind(py).call1(PyTuple::new(py, args)?)?
        }
        (_, v) => {
            return Err(PyValueError::new_err(format!(
                "decoded value does not fit its type: {v:?}"
            )))
        }
    })
}
