//! IDL text to [`TypeDesc`]s, with `tessera-idl`'s parser: what `tessera.idl_types()` gives
//! Python, which makes dataclasses of them. The same subset as `tessera idl` (modules,
//! structs with `@key`/`@id`/`@optional` and extensibility, enums, unions, bitmasks, typedefs,
//! strings, sequences, maps, arrays); what that compiler refuses is refused here with its
//! position.

use std::collections::HashMap;
use std::sync::Arc;
use tessera::rtps::xtypes::model::{
    BitmaskDesc, EnumDesc, Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc, UnionCase,
    UnionDesc,
};
use tessera_idl::parse::{Annotation, Def, Label, Member, Prim, TypeSpec};

/// A named definition, by its scoped name (`A::B`).
enum Named<'a> {
    Struct(&'a Def),
    Enum(&'a Def),
    Union(&'a Def),
    Bitmask(&'a Def),
    Typedef(&'a TypeSpec, &'a [u64], Vec<String>),
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
                names.insert(scoped(name), Named::Union(d));
            }
            Def::Bitmask { name, .. } => {
                names.insert(scoped(name), Named::Bitmask(d));
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
    let ext = extensibility(annotations);
    let mut out = Vec::new();
    let mut next_id = 0u32;
    for m in members {
        let md = member_desc(m, next_id, scope, names, cache)?;
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

fn extensibility(annotations: &[Annotation]) -> Extensibility {
    let mut ext = Extensibility::Final;
    for a in annotations {
        ext = match (a.name.as_str(), a.params.first().map(String::as_str)) {
            ("final", _) | ("extensibility", Some("FINAL")) => Extensibility::Final,
            ("appendable", _) | ("extensibility", Some("APPENDABLE")) => Extensibility::Appendable,
            ("mutable", _) | ("extensibility", Some("MUTABLE")) => Extensibility::Mutable,
            _ => ext,
        };
    }
    ext
}

/// A struct member or union case: its type and annotations, id `next_id` unless `@id`.
fn member_desc(
    m: &Member,
    next_id: u32,
    scope: &[String],
    names: &HashMap<String, Named<'_>>,
    cache: &mut HashMap<String, TypeDesc>,
) -> Result<MemberDesc, String> {
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
    Ok(md)
}

/// The scope a definition named `scoped` (`A::B::C`) is declared in (`[A, B]`).
fn parent_scope(scoped: &str) -> Vec<String> {
    let mut v: Vec<String> = scoped.split("::").map(str::to_string).collect();
    v.pop();
    v
}

fn union_desc(
    scoped: &str,
    names: &HashMap<String, Named<'_>>,
    cache: &mut HashMap<String, TypeDesc>,
) -> Result<TypeDesc, String> {
    if let Some(t) = cache.get(scoped) {
        return Ok(t.clone());
    }
    let Some(Named::Union(Def::Union {
        annotations,
        discriminator,
        discriminator_key,
        cases,
        pos,
        ..
    })) = names.get(scoped)
    else {
        return Err(format!("{scoped} is not a union"));
    };
    let scope = parent_scope(scoped);
    let disc = spec_desc(discriminator, &scope, names, cache)?;
    let disc_ok = matches!(disc, TypeDesc::Enum(_))
        || matches!(disc, TypeDesc::Primitive(p) if !matches!(p, Primitive::Float32 | Primitive::Float64));
    if !disc_ok {
        return Err(format!(
            "{pos}: a union discriminator is an integer, char, boolean, octet or enum type"
        ));
    }
    let mut out = Vec::new();
    let mut next_id = 0u32;
    for c in cases {
        let md = member_desc(&c.member, next_id, &scope, names, cache)?;
        if md.key || md.optional || md.must_understand {
            return Err(format!(
                "{}: @key, @optional or @must_understand on a union member",
                c.member.pos
            ));
        }
        let labels = c
            .labels
            .iter()
            .map(|l| match l {
                Label::Int(n) => i32::try_from(*n)
                    .map_err(|_| format!("{}: case label {n} too large", c.member.pos)),
                Label::Char(ch) => Ok(*ch as i32),
                Label::Bool(b) => Ok(i32::from(*b)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        next_id = md.id + 1;
        out.push(UnionCase {
            name: md.name,
            id: md.id,
            labels,
            default: c.default,
            ty: md.ty,
        });
    }
    let t = TypeDesc::Union(Arc::new(UnionDesc {
        name: scoped.to_string(),
        extensibility: extensibility(annotations),
        discriminator: disc,
        discriminator_key: *discriminator_key,
        cases: out,
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
        TypeSpec::Map(k, v, b) => TypeDesc::Map {
            key: Box::new(spec_desc(k, scope, names, cache)?),
            value: Box::new(spec_desc(v, scope, names, cache)?),
            bound: bound(*b)?,
        },
        TypeSpec::Named(path) => {
            let (scoped, named) = resolve(path, scope, names)
                .ok_or_else(|| format!("unknown type {}", path.join("::")))?;
            match named {
                Named::Struct(_) => struct_desc(&scoped, &parent_scope(&scoped), names, cache)?,
                Named::Union(_) => union_desc(&scoped, names, cache)?,
                Named::Bitmask(d) => {
                    let Def::Bitmask {
                        bit_bound, flags, ..
                    } = d
                    else {
                        return Err(format!("{scoped} is not a bitmask"));
                    };
                    TypeDesc::Bitmask(Arc::new(BitmaskDesc {
                        name: scoped.clone(),
                        bit_bound: *bit_bound,
                        flags: flags.clone(),
                    }))
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
            }
        }
    })
}
