//! TypeObject → OMG IDL text: what `tessera typeof` prints for a type fetched over TypeLookup.
//!
//! Complete objects carry every name and print as the IDL they came from (up to formatting):
//! the types a type depends on first, each inside the modules of its qualified name, with
//! `@final`/`@appendable`/`@mutable`, `@key`, `@optional`, `@id` (when not the declaration
//! position) and enum `@value`s. Minimal objects carry only name hashes: members then print as
//! `_<hash>` and types as `T_<hash>`, which says what is missing rather than inventing names.
//! An identifier the resolver does not know prints as a comment beside `octet`.

use std::collections::HashSet;
use std::fmt::Write;

use super::{
    flags, tk, BitmaskType, EnumType, MemberName, StructType, TypeIdentifier, TypeObject,
    TypeObjectBody, UnionType,
};

/// Prints `root` and every type it depends on that `resolve` knows, dependencies first.
pub fn to_idl(
    root: &TypeObject,
    resolve: &dyn Fn(&TypeIdentifier) -> Option<TypeObject>,
) -> String {
    let mut p = Printer {
        resolve,
        done: HashSet::new(),
        out: String::new(),
    };
    p.object(root, 0);
    p.out
}

struct Printer<'a> {
    resolve: &'a dyn Fn(&TypeIdentifier) -> Option<TypeObject>,
    /// Types printed (their identifiers), so shared dependencies print once.
    done: HashSet<TypeIdentifier>,
    out: String,
}

/// Depth beyond which dependencies are not followed (a forged object could loop).
const MAX_DEPTH: usize = super::MAX_DEPTH;

impl Printer<'_> {
    fn object(&mut self, o: &TypeObject, depth: usize) {
        if !self.done.insert(o.identifier()) || depth > MAX_DEPTH {
            return;
        }
        // Dependencies first, so that every name is declared before use.
        for id in dependencies(o) {
            if let Some(d) = (self.resolve)(&id) {
                self.object(&d, depth + 1);
            }
        }
        let name = self.name_of(o);
        let parts: Vec<&str> = name.split("::").filter(|s| !s.is_empty()).collect();
        let (modules, local) = parts.split_at(parts.len().saturating_sub(1));
        let local = local.first().copied().unwrap_or("Unnamed");
        let mut indent = String::new();
        for m in modules {
            let _ = writeln!(self.out, "{indent}module {m} {{");
            indent.push_str("  ");
        }
        match &o.body {
            TypeObjectBody::Struct(s) => self.struct_body(s, local, &indent),
            TypeObjectBody::Enum(e) => enum_body(&mut self.out, e, local, &indent),
            TypeObjectBody::Union(u) => self.union_body(u, local, &indent),
            TypeObjectBody::Bitmask(b) => bitmask_body(&mut self.out, b, local, &indent),
        }
        for _ in modules {
            indent.truncate(indent.len() - 2);
            let _ = writeln!(self.out, "{indent}}};");
        }
    }

    fn name_of(&self, o: &TypeObject) -> String {
        let given = match &o.body {
            TypeObjectBody::Struct(s) => s.type_name.clone(),
            TypeObjectBody::Enum(e) => e.type_name.clone(),
            TypeObjectBody::Union(u) => u.type_name.clone(),
            TypeObjectBody::Bitmask(b) => b.type_name.clone(),
        };
        given.unwrap_or_else(|| hash_name(&o.identifier()))
    }

    fn struct_body(&mut self, s: &StructType, name: &str, indent: &str) {
        let ext = if s.flags & flags::IS_MUTABLE != 0 {
            "@mutable"
        } else if s.flags & flags::IS_APPENDABLE != 0 {
            "@appendable"
        } else {
            "@final"
        };
        let _ = write!(self.out, "{indent}{ext}\n{indent}struct {name}");
        if s.base_type != TypeIdentifier::None {
            let base = self.type_name(&s.base_type);
            let _ = write!(self.out, " : {base}");
        }
        let _ = writeln!(self.out, " {{");
        for (pos, m) in s.members.iter().enumerate() {
            let mut notes = String::new();
            if m.flags & flags::KEY != 0 {
                notes.push_str("@key ");
            }
            if m.flags & flags::OPTIONAL != 0 {
                notes.push_str("@optional ");
            }
            if m.flags & flags::MUST_UNDERSTAND != 0 && m.flags & flags::KEY == 0 {
                notes.push_str("@must_understand ");
            }
            if u32::try_from(pos).ok() != Some(m.id) {
                let _ = write!(notes, "@id({}) ", m.id);
            }
            let (ty, dims) = match &m.type_id {
                TypeIdentifier::PlainArray { dims, element, .. } => (
                    self.type_name(element),
                    dims.iter().map(|d| format!("[{d}]")).collect::<String>(),
                ),
                other => (self.type_name(other), String::new()),
            };
            let member = match &m.name {
                MemberName::Name(n) => n.clone(),
                MemberName::Hash(h) => format!("_{}", hex(h)),
            };
            let _ = writeln!(self.out, "{indent}  {notes}{ty} {member}{dims};");
        }
        let _ = writeln!(self.out, "{indent}}};");
    }

    fn union_body(&mut self, u: &UnionType, name: &str, indent: &str) {
        let _ = writeln!(self.out, "{indent}{}", extensibility(u.flags));
        let disc = self.type_name(&u.discriminator);
        let key = if u.discriminator_flags & flags::KEY != 0 {
            "@key "
        } else {
            ""
        };
        let _ = writeln!(self.out, "{indent}union {name} switch ({key}{disc}) {{");
        // Enum discriminators label by literal name when the enum is known.
        let literals = match (self.resolve)(&u.discriminator).map(|o| o.body) {
            Some(TypeObjectBody::Enum(e)) => Some(e),
            _ => None,
        };
        for (pos, m) in u.members.iter().enumerate() {
            for l in &m.labels {
                let label = match &literals {
                    Some(e) => match e.literals.iter().find(|x| x.value == *l) {
                        Some(x) => member_name(&x.name),
                        None => l.to_string(),
                    },
                    None if u.discriminator == TypeIdentifier::Primitive(tk::BOOLEAN) => {
                        (if *l != 0 { "TRUE" } else { "FALSE" }).into()
                    }
                    None => l.to_string(),
                };
                let _ = writeln!(self.out, "{indent}  case {label}:");
            }
            if m.flags & flags::IS_DEFAULT != 0 {
                let _ = writeln!(self.out, "{indent}  default:");
            }
            let id = if u32::try_from(pos).ok() != Some(m.id) {
                format!("@id({}) ", m.id)
            } else {
                String::new()
            };
            let (ty, dims) = self.member_type(&m.type_id);
            let _ = writeln!(
                self.out,
                "{indent}    {id}{ty} {}{dims};",
                member_name(&m.name)
            );
        }
        let _ = writeln!(self.out, "{indent}}};");
    }

    /// A member's type and the array dimensions that follow its name.
    fn member_type(&self, id: &TypeIdentifier) -> (String, String) {
        match id {
            TypeIdentifier::PlainArray { dims, element, .. } => (
                self.type_name(element),
                dims.iter().map(|d| format!("[{d}]")).collect::<String>(),
            ),
            other => (self.type_name(other), String::new()),
        }
    }

    /// The IDL spelling of a member's (or element's) type.
    fn type_name(&self, id: &TypeIdentifier) -> String {
        match id {
            TypeIdentifier::None => "void".into(),
            TypeIdentifier::Primitive(k) => primitive(*k).into(),
            TypeIdentifier::String8 { bound: 0 } => "string".into(),
            TypeIdentifier::String8 { bound } => format!("string<{bound}>"),
            TypeIdentifier::PlainSequence { element, bound, .. } => {
                let e = self.type_name(element);
                if *bound == 0 {
                    format!("sequence<{e}>")
                } else {
                    format!("sequence<{e}, {bound}>")
                }
            }
            // An array as an element (of a sequence): IDL needs a typedef; print it inline.
            TypeIdentifier::PlainArray { element, dims, .. } => {
                let d: String = dims.iter().map(|d| format!("[{d}]")).collect();
                format!("{}{d}", self.type_name(element))
            }
            TypeIdentifier::PlainMap {
                element,
                key,
                bound,
                ..
            } => {
                let (k, v) = (self.type_name(key), self.type_name(element));
                if *bound == 0 {
                    format!("map<{k}, {v}>")
                } else {
                    format!("map<{k}, {v}, {bound}>")
                }
            }
            TypeIdentifier::Minimal(_) | TypeIdentifier::Complete(_) => match (self.resolve)(id) {
                Some(o) => self.name_of(&o),
                None => format!("octet /* unresolved {} */", hash_name(id)),
            },
        }
    }
}

fn extensibility(f: u16) -> &'static str {
    if f & flags::IS_MUTABLE != 0 {
        "@mutable"
    } else if f & flags::IS_APPENDABLE != 0 {
        "@appendable"
    } else {
        "@final"
    }
}

fn member_name(n: &MemberName) -> String {
    match n {
        MemberName::Name(n) => n.clone(),
        MemberName::Hash(h) => format!("_{}", hex(h)),
    }
}

fn bitmask_body(out: &mut String, b: &BitmaskType, name: &str, indent: &str) {
    if b.bit_bound != 32 {
        let _ = writeln!(out, "{indent}@bit_bound({})", b.bit_bound);
    }
    let _ = writeln!(out, "{indent}bitmask {name} {{");
    let n = b.bit_flags.len();
    // Flags at consecutive positions from 0 need no @position.
    for (pos, f) in b.bit_flags.iter().enumerate() {
        let at = if usize::from(f.position) != pos {
            format!("@position({}) ", f.position)
        } else {
            String::new()
        };
        let sep = if pos + 1 < n { "," } else { "" };
        let _ = writeln!(out, "{indent}  {at}{}{sep}", member_name(&f.name));
    }
    let _ = writeln!(out, "{indent}}};");
}

fn enum_body(out: &mut String, e: &EnumType, name: &str, indent: &str) {
    if e.bit_bound != 32 {
        let _ = writeln!(out, "{indent}@bit_bound({})", e.bit_bound);
    }
    let _ = writeln!(out, "{indent}enum {name} {{");
    let n = e.literals.len();
    for (pos, l) in e.literals.iter().enumerate() {
        let lit = match &l.name {
            MemberName::Name(n) => n.clone(),
            MemberName::Hash(h) => format!("_{}", hex(h)),
        };
        let value = if i64::from(l.value) != pos as i64 {
            format!("@value({}) ", l.value)
        } else {
            String::new()
        };
        let sep = if pos + 1 < n { "," } else { "" };
        let _ = writeln!(out, "{indent}  {value}{lit}{sep}");
    }
    let _ = writeln!(out, "{indent}}};");
}

/// The hashed identifiers a TypeObject refers to (its base type, its members' types and
/// their elements), in declaration order, each once.
pub fn dependencies(o: &TypeObject) -> Vec<TypeIdentifier> {
    let mut out = Vec::new();
    match &o.body {
        TypeObjectBody::Struct(s) => {
            hashes(&s.base_type, &mut out);
            for m in &s.members {
                hashes(&m.type_id, &mut out);
            }
        }
        TypeObjectBody::Union(u) => {
            hashes(&u.discriminator, &mut out);
            for m in &u.members {
                hashes(&m.type_id, &mut out);
            }
        }
        TypeObjectBody::Enum(_) | TypeObjectBody::Bitmask(_) => {}
    }
    out
}

fn hashes(id: &TypeIdentifier, out: &mut Vec<TypeIdentifier>) {
    match id {
        TypeIdentifier::Minimal(_) | TypeIdentifier::Complete(_) if !out.contains(id) => {
            out.push(id.clone())
        }
        TypeIdentifier::PlainSequence { element, .. }
        | TypeIdentifier::PlainArray { element, .. } => hashes(element, out),
        TypeIdentifier::PlainMap { element, key, .. } => {
            hashes(key, out);
            hashes(element, out);
        }
        _ => {}
    }
}

fn primitive(k: u8) -> &'static str {
    match k {
        tk::BOOLEAN => "boolean",
        tk::BYTE => "octet",
        tk::INT8 => "int8",
        tk::UINT8 => "uint8",
        tk::INT16 => "short",
        tk::UINT16 => "unsigned short",
        tk::INT32 => "long",
        tk::UINT32 => "unsigned long",
        tk::INT64 => "long long",
        tk::UINT64 => "unsigned long long",
        tk::FLOAT32 => "float",
        tk::FLOAT64 => "double",
        tk::FLOAT128 => "long double",
        tk::CHAR8 => "char",
        tk::CHAR16 => "wchar",
        _ => "octet /* unknown primitive */",
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A name for a type known only by its hash.
fn hash_name(id: &TypeIdentifier) -> String {
    match id {
        TypeIdentifier::Minimal(h) | TypeIdentifier::Complete(h) => format!("T_{}", hex(h)),
        _ => "T".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xtypes::{
        EnumDesc, EquivalenceKind, Extensibility, MemberDesc, Primitive, StructDesc, TypeBundle,
        TypeDesc,
    };
    use std::sync::Arc;

    /// Prints a bundle's complete object with the bundle as the resolver.
    fn print(bundle: &TypeBundle) -> String {
        let resolve = |id: &TypeIdentifier| {
            bundle
                .object(id)
                .and_then(|b| TypeObject::from_bytes(b).ok())
        };
        let root = resolve(&bundle.complete).expect("root object");
        assert_eq!(root.kind, EquivalenceKind::Complete);
        to_idl(&root, &resolve)
    }

    #[test]
    fn shape_type_prints_as_its_idl() {
        let idl = print(&TypeBundle::new(&crate::xtypes::shape_type()));
        assert_eq!(
            idl,
            "@appendable\nstruct ShapeType {\n  @key string<128> color;\n  long x;\n  long y;\n  \
             long shapesize;\n  sequence<uint8> additional_payload_size;\n};\n"
        );
    }

    #[test]
    fn nested_types_print_first_inside_their_modules() {
        let color = TypeDesc::Enum(Arc::new(EnumDesc {
            name: "M::Color".into(),
            extensibility: Extensibility::Final,
            bit_bound: 32,
            literals: vec![("RED".into(), 0), ("BLUE".into(), 5)],
        }));
        let inner = TypeDesc::Struct(Arc::new(StructDesc {
            name: "M::Inner".into(),
            extensibility: Extensibility::Final,
            members: vec![MemberDesc::new("c", 0, color)],
        }));
        let outer = TypeDesc::Struct(Arc::new(StructDesc {
            name: "M::Outer".into(),
            extensibility: Extensibility::Mutable,
            members: vec![
                MemberDesc::new("id", 7, TypeDesc::Primitive(Primitive::Int64)).key(),
                MemberDesc::new(
                    "items",
                    8,
                    TypeDesc::Sequence {
                        element: Box::new(inner),
                        bound: 4,
                    },
                ),
                MemberDesc::new(
                    "grid",
                    9,
                    TypeDesc::Array {
                        element: Box::new(TypeDesc::Primitive(Primitive::Float32)),
                        dims: vec![2, 3],
                    },
                ),
                MemberDesc {
                    optional: true,
                    ..MemberDesc::new("note", 10, TypeDesc::String { bound: 0 })
                },
            ],
        }));
        let idl = print(&TypeBundle::new(&outer));
        let expect = "module M {\n  enum Color {\n    RED,\n    @value(5) BLUE\n  };\n};\n\
                      module M {\n  @final\n  struct Inner {\n    M::Color c;\n  };\n};\n\
                      module M {\n  @mutable\n  struct Outer {\n    @key @id(7) long long id;\n    \
                      @id(8) sequence<M::Inner, 4> items;\n    @id(9) float grid[2][3];\n    \
                      @optional @id(10) string note;\n  };\n};\n";
        assert_eq!(idl, expect, "\n{idl}");
    }
}
