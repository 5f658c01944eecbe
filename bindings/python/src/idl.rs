//! IDL text to [`TypeDesc`]s, with `tessera-idl`'s parser: what `tessera.idl_types()` gives
//! Python, which makes dataclasses of them. The same subset as `tessera idl` (modules,
//! structs with `@key`/`@id`/`@optional` and extensibility, enums, typedefs, strings,
//! sequences, arrays); what that compiler refuses is refused here with its position.

use std::collections::HashMap;
use std::sync::Arc;
use tessera::rtps::xtypes::model::{
    EnumDesc, Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc,
};
use tessera_idl::parse::{Def, Prim, TypeSpec};

/// A named definition, by its scoped name (`A::B`).
enum Named<'a> {
    Struct(&'a Def),
    Enum(&'a Def),
    Typedef(&'a TypeSpec, &'a [u64], Vec<String>),
    /// A union or bitmask: the binding has no Python form for them yet.
    Unsupported(&'static str),
}

/// Every struct of `src`, by scoped name, in declaration order.
pub fn structs(src: &str, file: &str) -> Result<Vec<(String, TypeDesc)>, String> {
    let toks = tessera_idl::lex::lex(src, file).map_err(|e| e.to_string())?;
    let eof = toks.last().map(|t| t.pos.clone()).unwrap_or_default();
    let mut p = tessera_idl::parse::Parser::new(&toks, eof);
    let defs = p.definitions().map_err(|e| e.to_string())?;
    p.expect_end().map_err(|e| e.to_string())?;
    let mut names = HashMap::new();
    let mut order = Vec::new();
    collect(&defs, &[], &mut names, &mut order);
    let mut cache = HashMap::new();
    let mut out = Vec::new();
    for (scoped, scope) in order {
        let t = struct_desc(&scoped, &scope, &names, &mut cache)?;
        out.push((scoped, t));
    }
    Ok(out)
}

fn collect<'a>(
    defs: &'a [Def],
    scope: &[String],
    names: &mut HashMap<String, Named<'a>>,
    order: &mut Vec<(String, Vec<String>)>,
) {
    for d in defs {
        let scoped = |n: &str| {
            let mut v = scope.to_vec();
            v.push(n.to_string());
            v.join("::")
        };
        match d {
            Def::Module { name, defs } => {
                let mut inner = scope.to_vec();
                inner.push(name.clone());
                collect(defs, &inner, names, order);
            }
            Def::Struct { name, .. } => {
                names.insert(scoped(name), Named::Struct(d));
                order.push((scoped(name), scope.to_vec()));
            }
            Def::Enum { name, .. } => {
                names.insert(scoped(name), Named::Enum(d));
            }
            Def::Typedef { name, ty, dims } => {
                names.insert(scoped(name), Named::Typedef(ty, dims, scope.to_vec()));
            }
            Def::Union { name, .. } => {
                names.insert(scoped(name), Named::Unsupported("a union"));
            }
            Def::Bitmask { name, .. } => {
                names.insert(scoped(name), Named::Unsupported("a bitmask"));
            }
            Def::Const { .. } => {}
        }
    }
}

/// Resolves `path` as IDL does: in the current scope, then in each enclosing one.
fn resolve<'n, 'a>(
    path: &[String],
    scope: &[String],
    names: &'n HashMap<String, Named<'a>>,
) -> Option<(String, &'n Named<'a>)> {
    let rel = path.join("::");
    (0..=scope.len()).rev().find_map(|i| {
        let mut v = scope[..i].to_vec();
        v.push(rel.clone());
        let k = v.join("::");
        names.get(&k).map(|n| (k, n))
    })
}

fn struct_desc(
    scoped: &str,
    scope: &[String],
    names: &HashMap<String, Named<'_>>,
    cache: &mut HashMap<String, TypeDesc>,
) -> Result<TypeDesc, String> {
    if let Some(t) = cache.get(scoped) {
        return Ok(t.clone());
    }
    let Some(Named::Struct(Def::Struct {
        annotations,
        members,
        ..
    })) = names.get(scoped)
    else {
        return Err(format!("{scoped} is not a struct"));
    };
    let mut ext = Extensibility::Final;
    for a in annotations {
        ext = match (a.name.as_str(), a.params.first().map(String::as_str)) {
            ("final", _) | ("extensibility", Some("FINAL")) => Extensibility::Final,
            ("appendable", _) | ("extensibility", Some("APPENDABLE")) => Extensibility::Appendable,
            ("mutable", _) | ("extensibility", Some("MUTABLE")) => Extensibility::Mutable,
            _ => ext,
        };
    }
    let mut out = Vec::new();
    let mut next_id = 0u32;
    for m in members {
        let mut ty = spec_desc(&m.ty, scope, names, cache)?;
        if !m.dims.is_empty() {
            ty = array(ty, &m.dims)?;
        }
        let mut md = MemberDesc::new(m.name.clone(), next_id, ty);
        for a in &m.annotations {
            let on = !matches!(a.params.first().map(String::as_str), Some("FALSE"));
            match a.name.as_str() {
                "key" | "Key" => md.key = on,
                "optional" => md.optional = on,
                "must_understand" => md.must_understand = on,
                "id" => {
                    md.id = a
                        .params
                        .first()
                        .and_then(|p| p.parse().ok())
                        .ok_or_else(|| format!("{}: @id needs an unsigned integer", a.pos))?;
                }
                _ => {}
            }
        }
        if md.key && md.optional {
            return Err(format!("{}: a key member cannot be @optional", m.pos));
        }
        next_id = md.id + 1;
        out.push(md);
    }
    let t = TypeDesc::Struct(Arc::new(StructDesc {
        name: scoped.to_string(),
        extensibility: ext,
        members: out,
    }));
    cache.insert(scoped.to_string(), t.clone());
    Ok(t)
}

fn array(el: TypeDesc, dims: &[u64]) -> Result<TypeDesc, String> {
    let dims = dims
        .iter()
        .map(|d| u32::try_from(*d).map_err(|_| format!("array dimension {d} too large")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TypeDesc::Array {
        element: Box::new(el),
        dims,
    })
}

fn bound(b: Option<u64>) -> Result<u32, String> {
    u32::try_from(b.unwrap_or(0)).map_err(|_| "bound too large".to_string())
}

fn spec_desc(
    t: &TypeSpec,
    scope: &[String],
    names: &HashMap<String, Named<'_>>,
    cache: &mut HashMap<String, TypeDesc>,
) -> Result<TypeDesc, String> {
    Ok(match t {
        TypeSpec::Prim(p) => TypeDesc::Primitive(match p {
            Prim::Bool => Primitive::Bool,
            Prim::Octet => Primitive::Byte,
            Prim::U8 => Primitive::UInt8,
            Prim::Char => Primitive::Char8,
            Prim::I8 => Primitive::Int8,
            Prim::I16 => Primitive::Int16,
            Prim::U16 => Primitive::UInt16,
            Prim::I32 => Primitive::Int32,
            Prim::U32 => Primitive::UInt32,
            Prim::I64 => Primitive::Int64,
            Prim::U64 => Primitive::UInt64,
            Prim::F32 => Primitive::Float32,
            Prim::F64 => Primitive::Float64,
        }),
        TypeSpec::String(b) => TypeDesc::String { bound: bound(*b)? },
        TypeSpec::Sequence(el, b) => TypeDesc::Sequence {
            element: Box::new(spec_desc(el, scope, names, cache)?),
            bound: bound(*b)?,
        },
        TypeSpec::Map(..) => return Err("maps are not supported by the Python binding yet".into()),
        TypeSpec::Named(path) => {
            let (scoped, named) = resolve(path, scope, names)
                .ok_or_else(|| format!("unknown type {}", path.join("::")))?;
            match named {
                Named::Struct(_) => {
                    let inner_scope: Vec<String> = scoped
                        .split("::")
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                        .split_last()
                        .map(|x| x.1.to_vec())
                        .unwrap_or_default();
                    struct_desc(&scoped, &inner_scope, names, cache)?
                }
                Named::Enum(d) => {
                    let Def::Enum { enumerators, .. } = d else {
                        return Err(format!("{scoped} is not an enum"));
                    };
                    let literals = enumerators
                        .iter()
                        .map(|e| {
                            i32::try_from(e.value)
                                .map(|v| (e.name.clone(), v))
                                .map_err(|_| format!("enum value {} too large", e.value))
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    TypeDesc::Enum(Arc::new(EnumDesc {
                        name: scoped.clone(),
                        extensibility: Extensibility::Final,
                        bit_bound: 32,
                        literals,
                    }))
                }
                Named::Typedef(ty, dims, tscope) => {
                    let base = spec_desc(ty, tscope, names, cache)?;
                    if dims.is_empty() {
                        base
                    } else {
                        array(base, dims)?
                    }
                }
                Named::Unsupported(what) => {
                    return Err(format!(
                        "{scoped} is {what}: not supported by the Python binding yet"
                    ))
                }
            }
        }
    })
}
