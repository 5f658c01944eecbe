//! Rust code from parsed IDL: one `pub mod` per IDL module, a `#[derive(TopicType)]` struct per
//! IDL struct (registered under its scoped IDL name, `Module::Struct`), an enum with its CDR
//! encoding per IDL enum, type aliases for typedefs and constants.

use std::fmt::Write;

use crate::parse::{ConstValue, Def, Label, Member, Prim, TypeSpec, UnionCase};
use crate::IdlError;

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "gen", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// A Rust identifier for an IDL one (raw for keywords; `self` and friends get a `_`).
pub fn ident(name: &str) -> String {
    if matches!(name, "self" | "Self" | "super" | "crate") {
        format!("{name}_")
    } else if RUST_KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

fn prim(p: Prim) -> &'static str {
    match p {
        Prim::Bool => "bool",
        Prim::Octet | Prim::U8 => "u8",
        Prim::Char => "char",
        Prim::I8 => "i8",
        Prim::I16 => "i16",
        Prim::U16 => "u16",
        Prim::I32 => "i32",
        Prim::U32 => "u32",
        Prim::I64 => "i64",
        Prim::U64 => "u64",
        Prim::F32 => "f32",
        Prim::F64 => "f64",
    }
}

/// The Rust type of `t`. The standard library's types are written with their full paths: an
/// IDL type may be named `String` (ROS 2's `std_msgs/msg/String`) or `Vec`.
fn rust_type(t: &TypeSpec) -> String {
    match t {
        TypeSpec::Prim(p) => prim(*p).to_string(),
        TypeSpec::String(_) => "::std::string::String".to_string(),
        TypeSpec::Sequence(inner, _) => format!("::std::vec::Vec<{}>", rust_type(inner)),
        TypeSpec::Map(k, v, _) => format!(
            "::std::collections::BTreeMap<{}, {}>",
            rust_type(k),
            rust_type(v)
        ),
        TypeSpec::Named(path) => path.iter().map(|s| ident(s)).collect::<Vec<_>>().join("::"),
    }
}

/// `int_value` → `IntValue`: a union case's variant name.
fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// What the derive makes of a variant name (its snake case), to know when to give the IDL
/// name explicitly.
fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn label(l: &Label) -> String {
    match l {
        Label::Int(n) => n.to_string(),
        Label::Char(c) => format!("{c:?}"),
        Label::Bool(b) => b.to_string(),
    }
}

fn emit_union(
    out: &mut String,
    p: &str,
    full: &str,
    def: (
        &str,
        &[crate::parse::Annotation],
        &TypeSpec,
        bool,
        &[UnionCase],
    ),
) -> Result<(), IdlError> {
    let (name, annotations, disc, disc_key, cases) = def;
    let ext = extensibility(annotations)?;
    let _ = writeln!(
        out,
        "{p}#[derive(::tessera::TopicType, Debug, Clone, PartialEq)]"
    );
    match ext {
        Some(e) => {
            let _ = writeln!(
                out,
                "{p}#[topic(type_name = \"{full}\", extensibility = \"{e}\")]"
            );
        }
        None => {
            let _ = writeln!(out, "{p}#[topic(type_name = \"{full}\")]");
        }
    }
    let key = if disc_key { ", key" } else { "" };
    let _ = writeln!(out, "{p}#[union(discriminator = {}{key})]", rust_type(disc));
    let _ = writeln!(out, "{p}#[allow(non_camel_case_types)]");
    let _ = writeln!(out, "{p}pub enum {} {{", ident(name));
    for c in cases {
        let (attrs, optional) = member_attrs(&c.member)?;
        if optional {
            return Err(IdlError::Unsupported {
                pos: c.member.pos.clone(),
                what: "@optional on a union member".into(),
            });
        }
        if !c.labels.is_empty() {
            let ls: Vec<String> = c.labels.iter().map(label).collect();
            let _ = writeln!(out, "{p}    #[case({})]", ls.join(", "));
        }
        if c.default {
            let _ = writeln!(out, "{p}    #[default_case]");
        }
        let variant = camel(&c.member.name);
        if snake(&variant) != c.member.name {
            let _ = writeln!(out, "{p}    #[topic(name = {:?})]", c.member.name);
        }
        // `#[id]` goes on the variant, the others on its field.
        let (ids, field): (Vec<_>, Vec<_>) =
            attrs.into_iter().partition(|a| a.starts_with("#[id("));
        if field
            .iter()
            .any(|a| a == "#[key]" || a == "#[must_understand]")
        {
            return Err(IdlError::Unsupported {
                pos: c.member.pos.clone(),
                what: "@key or @must_understand on a union member".into(),
            });
        }
        for a in ids {
            let _ = writeln!(out, "{p}    {a}");
        }
        let ty = with_dims(rust_type(&c.member.ty), &c.member.dims);
        let field: String = field.iter().map(|a| format!("{a} ")).collect();
        let _ = writeln!(out, "{p}    {}({field}{ty}),", ident(&variant));
    }
    let _ = writeln!(out, "{p}}}\n");
    Ok(())
}

fn emit_bitmask(
    out: &mut String,
    p: &str,
    full: &str,
    name: &str,
    bit_bound: u16,
    flags: &[(String, u16)],
) {
    let holder = match bit_bound {
        1..=8 => "u8",
        9..=16 => "u16",
        17..=32 => "u32",
        _ => "u64",
    };
    let fl: Vec<String> = flags
        .iter()
        .map(|(f, n)| format!("{} = {n}", ident(f)))
        .collect();
    let _ = writeln!(
        out,
        "{p}#[derive(::tessera::TopicBitmask, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]"
    );
    let _ = writeln!(out, "{p}#[topic(type_name = \"{full}\")]");
    let _ = writeln!(
        out,
        "{p}#[bitmask(bit_bound = {bit_bound}, {})]",
        fl.join(", ")
    );
    let _ = writeln!(out, "{p}#[allow(non_camel_case_types)]");
    let _ = writeln!(out, "{p}pub struct {}(pub {holder});\n", ident(name));
}

fn with_dims(base: String, dims: &[u64]) -> String {
    dims.iter()
        .rev()
        .fold(base, |acc, n| format!("[{acc}; {n}]"))
}

/// What a member's annotations ask for: the derive attributes to write, and whether the
/// member is optional. Anything not understood is refused, so that a type is never generated
/// with another wire form than its IDL says.
fn member_attrs(m: &Member) -> Result<(Vec<String>, bool), IdlError> {
    let mut attrs = Vec::new();
    let mut optional = false;
    let mut key = false;
    let flag = |a: &crate::parse::Annotation| {
        !matches!(a.params.first().map(String::as_str), Some("FALSE"))
    };
    for a in &m.annotations {
        match a.name.as_str() {
            "key" | "Key" => key = flag(a),
            "optional" => optional = flag(a),
            "must_understand" if flag(a) => attrs.push("#[must_understand]".to_string()),
            "must_understand" => {}
            "id" => {
                let n: u32 = a
                    .params
                    .first()
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| IdlError::Syntax {
                        pos: a.pos.clone(),
                        msg: "@id needs an unsigned integer".into(),
                    })?;
                attrs.push(format!("#[id({n})]"));
            }
            "default" | "range" | "min" | "max" | "unit" | "verbatim" | "hashid" | "external" => {}
            other => {
                return Err(IdlError::Unsupported {
                    pos: a.pos.clone(),
                    what: format!("@{other} on a member"),
                })
            }
        }
    }
    if key && optional {
        return Err(IdlError::Syntax {
            pos: m.pos.clone(),
            msg: "a key member cannot be @optional".into(),
        });
    }
    if key {
        attrs.insert(0, "#[key]".to_string());
    }
    if optional {
        attrs.push("#[optional]".to_string());
    }
    match &m.ty {
        TypeSpec::String(Some(n))
        | TypeSpec::Sequence(_, Some(n))
        | TypeSpec::Map(_, _, Some(n))
            if m.dims.is_empty() =>
        {
            attrs.push(format!("#[bound({n})]"));
        }
        _ => {}
    }
    // IDL's `uint8` and `octet` are both a Rust `u8`; only their XTypes kinds differ.
    let mut elem = &m.ty;
    while let TypeSpec::Sequence(inner, _) = elem {
        elem = inner;
    }
    if *elem == TypeSpec::Prim(Prim::U8) {
        attrs.push("#[uint8]".to_string());
    }
    Ok((attrs, optional))
}

/// The struct's extensibility from its annotations (`None`: final, the default).
fn extensibility(
    annotations: &[crate::parse::Annotation],
) -> Result<Option<&'static str>, IdlError> {
    let mut ext = None;
    for a in annotations {
        let kind = match a.name.as_str() {
            "final" => Some("final"),
            "appendable" => Some("appendable"),
            "mutable" => Some("mutable"),
            "extensibility" => match a.params.first().map(String::as_str) {
                Some("FINAL") => Some("final"),
                Some("APPENDABLE") => Some("appendable"),
                Some("MUTABLE") => Some("mutable"),
                _ => {
                    return Err(IdlError::Syntax {
                        pos: a.pos.clone(),
                        msg: "@extensibility takes FINAL, APPENDABLE or MUTABLE".into(),
                    })
                }
            },
            "topic" | "nested" | "autoid" | "verbatim" => None,
            other => {
                return Err(IdlError::Unsupported {
                    pos: a.pos.clone(),
                    what: format!("@{other} on a struct"),
                })
            }
        };
        if kind.is_some() {
            ext = kind;
        }
    }
    Ok(ext.filter(|e| *e != "final"))
}

/// How the generated code names its types.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Register each struct under the name ROS 2's DDS type support gives it on the wire
    /// (`std_msgs::msg::dds_::Header_` for IDL's `std_msgs::msg::Header`), so that the types
    /// match ROS 2 nodes over rmw_cyclonedds or rmw_fastrtps. The Rust names do not change.
    pub ros2_names: bool,
}

/// The name a type is registered under: its scoped IDL name, or ROS 2's form of it (a `dds_`
/// module before the type and a trailing underscore, what rosidl_typesupport's DDS back ends
/// generate from `std_msgs/msg/Header.idl`).
fn registered_name(scope: &[String], name: &str, opts: Options) -> String {
    let mut full = scope.to_vec();
    if opts.ros2_names {
        full.push("dds_".to_string());
        full.push(format!("{name}_"));
    } else {
        full.push(name.to_string());
    }
    full.join("::")
}

/// Writes the Rust code for `defs`.
pub fn generate(defs: &[Def], source: &str) -> Result<String, IdlError> {
    generate_with(defs, source, Options::default())
}

/// Writes the Rust code for `defs` with `opts`.
pub fn generate_with(defs: &[Def], source: &str, opts: Options) -> Result<String, IdlError> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Generated by `tessera idl` from {source}: do not edit.\n"
    );
    emit(&merge_modules(defs), &mut Vec::new(), &mut out, 0, opts)?;
    Ok(out)
}

/// IDL reopens modules (every ROS 2 message file opens `module std_msgs { module msg {`), Rust
/// does not: the definitions of same-named modules at one level are gathered into the first.
/// A typedef or constant defined again identically (ROS 2's `double__36` in each file that
/// uses it) is kept once.
fn merge_modules(defs: &[Def]) -> Vec<Def> {
    let mut out: Vec<Def> = Vec::new();
    for d in defs {
        match d {
            Def::Module { name, defs: inner } => {
                let open = out
                    .iter_mut()
                    .find(|o| matches!(o, Def::Module { name: n, .. } if n == name));
                match open {
                    Some(Def::Module { defs: acc, .. }) => acc.extend(inner.iter().cloned()),
                    _ => out.push(d.clone()),
                }
            }
            Def::Typedef { .. } | Def::Const { .. } if out.contains(d) => {}
            _ => out.push(d.clone()),
        }
    }
    for d in &mut out {
        if let Def::Module { defs: inner, .. } = d {
            *inner = merge_modules(inner);
        }
    }
    out
}

fn pad(depth: usize) -> String {
    "    ".repeat(depth)
}

fn emit(
    defs: &[Def],
    scope: &mut Vec<String>,
    out: &mut String,
    depth: usize,
    opts: Options,
) -> Result<(), IdlError> {
    let p = pad(depth);
    for d in defs {
        match d {
            Def::Module { name, defs } => {
                let _ = writeln!(
                    out,
                    "{p}#[allow(non_snake_case, non_camel_case_types, clippy::all)]"
                );
                let _ = writeln!(out, "{p}pub mod {} {{", ident(name));
                let _ = writeln!(out, "{p}    #[allow(unused_imports)]\n{p}    use super::*;");
                scope.push(name.clone());
                emit(defs, scope, out, depth + 1, opts)?;
                scope.pop();
                let _ = writeln!(out, "{p}}}");
            }
            Def::Struct {
                name,
                annotations,
                members,
                ..
            } => {
                let ext = extensibility(annotations)?;
                let full = registered_name(scope, name, opts);
                let _ = writeln!(
                    out,
                    "{p}#[derive(::tessera::TopicType, Debug, Clone, PartialEq)]"
                );
                match ext {
                    Some(e) => {
                        let _ = writeln!(
                            out,
                            "{p}#[topic(type_name = \"{full}\", extensibility = \"{e}\")]"
                        );
                    }
                    None => {
                        let _ = writeln!(out, "{p}#[topic(type_name = \"{full}\")]");
                    }
                }
                let _ = writeln!(out, "{p}#[allow(non_snake_case, non_camel_case_types)]");
                let _ = writeln!(out, "{p}pub struct {} {{", ident(name));
                for m in members {
                    let (attrs, optional) = member_attrs(m)?;
                    for a in attrs {
                        let _ = writeln!(out, "{p}    {a}");
                    }
                    let ty = with_dims(rust_type(&m.ty), &m.dims);
                    let ty = if optional {
                        format!("::std::option::Option<{ty}>")
                    } else {
                        ty
                    };
                    let _ = writeln!(out, "{p}    pub {}: {ty},", ident(&m.name));
                }
                let _ = writeln!(out, "{p}}}\n");
            }
            Def::Union {
                name,
                annotations,
                discriminator,
                discriminator_key,
                cases,
                ..
            } => {
                let full = registered_name(scope, name, opts);
                emit_union(
                    out,
                    &p,
                    &full,
                    (name, annotations, discriminator, *discriminator_key, cases),
                )?;
            }
            Def::Bitmask {
                name,
                bit_bound,
                flags,
                ..
            } => {
                let full = registered_name(scope, name, opts);
                emit_bitmask(out, &p, &full, name, *bit_bound, flags);
            }
            Def::Enum { name, enumerators } => {
                let full = registered_name(scope, name, opts);
                let _ = writeln!(
                    out,
                    "{p}#[derive(::tessera::TopicEnum, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]"
                );
                let _ = writeln!(out, "{p}#[topic(type_name = \"{full}\")]");
                let _ = writeln!(out, "{p}#[allow(non_camel_case_types)]");
                let _ = writeln!(out, "{p}pub enum {} {{", ident(name));
                for (i, e) in enumerators.iter().enumerate() {
                    if i == 0 {
                        let _ = writeln!(out, "{p}    #[default]");
                    }
                    let _ = writeln!(out, "{p}    {} = {},", ident(&e.name), e.value);
                }
                let _ = writeln!(out, "{p}}}\n");
            }
            Def::Typedef { name, ty, dims } => {
                let _ = writeln!(
                    out,
                    "{p}#[allow(non_camel_case_types)]\n{p}pub type {} = {};\n",
                    ident(name),
                    with_dims(rust_type(ty), dims)
                );
            }
            Def::Const { name, ty, value } => {
                let (t, v) = match (ty, value) {
                    (TypeSpec::String(_), ConstValue::Str(s)) => {
                        ("&str".to_string(), format!("{s:?}"))
                    }
                    (TypeSpec::Prim(Prim::Bool), ConstValue::Bool(b)) => {
                        ("bool".into(), b.to_string())
                    }
                    (TypeSpec::Prim(Prim::Char), ConstValue::Char(c)) => {
                        ("char".into(), format!("{c:?}"))
                    }
                    (TypeSpec::Prim(pr @ (Prim::F32 | Prim::F64)), ConstValue::Float(f)) => {
                        (prim(*pr).into(), format!("{f:?}"))
                    }
                    (TypeSpec::Prim(pr @ (Prim::F32 | Prim::F64)), ConstValue::Int(i)) => {
                        (prim(*pr).into(), format!("{i}.0"))
                    }
                    (TypeSpec::Prim(pr), ConstValue::Int(i)) => (prim(*pr).into(), i.to_string()),
                    _ => {
                        return Err(IdlError::Unsupported {
                            pos: crate::Pos::default(),
                            what: format!("constant {name}: value does not fit its type"),
                        })
                    }
                };
                let _ = writeln!(
                    out,
                    "{p}#[allow(non_upper_case_globals)]\n{p}pub const {}: {t} = {v};\n",
                    ident(name)
                );
            }
        }
    }
    Ok(())
}
