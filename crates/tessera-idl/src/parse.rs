//! The IDL parser: tokens to [`Def`]s, a recursive descent over the IDL 4.2 subset users write
//! for DDS types. Constant expressions are evaluated here, so array bounds may use constants.

use std::collections::HashMap;

use crate::lex::{Tok, Token};
use crate::{IdlError, Pos};

/// A primitive IDL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    /// `boolean`
    Bool,
    /// `octet`
    Octet,
    /// `uint8` (a Rust `u8` too, described as `uint8` to XTypes)
    U8,
    /// `char`
    Char,
    /// `int8`
    I8,
    /// `short`, `int16`
    I16,
    /// `unsigned short`, `uint16`
    U16,
    /// `long`, `int32`
    I32,
    /// `unsigned long`, `uint32`
    U32,
    /// `long long`, `int64`
    I64,
    /// `unsigned long long`, `uint64`
    U64,
    /// `float`
    F32,
    /// `double`
    F64,
}

/// A type as written in a declaration.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeSpec {
    /// A primitive.
    Prim(Prim),
    /// `string` or `string<N>`.
    String(Option<u64>),
    /// `sequence<T>` or `sequence<T, N>`.
    Sequence(Box<TypeSpec>, Option<u64>),
    /// `map<K, V>` or `map<K, V, N>`.
    Map(Box<TypeSpec>, Box<TypeSpec>, Option<u64>),
    /// A named type (struct, enum, typedef), as written (`A::B` or `B`).
    Named(Vec<String>),
}

/// A union case label's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Label {
    /// An integer (enum literals are their values).
    Int(i128),
    /// A character.
    Char(char),
    /// TRUE or FALSE.
    Bool(bool),
}

/// One branch of a union.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionCase {
    /// Its labels (`case 1: case 2:`).
    pub labels: Vec<Label>,
    /// Whether `default:` selects it too.
    pub default: bool,
    /// The member.
    pub member: Member,
}

/// An annotation such as `@key` or `@id(3)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    /// Its name (`key`, `id`, `appendable`, ...).
    pub name: String,
    /// Its parameters, as text (`3`, `"x"`, `TRUE`).
    pub params: Vec<String>,
    /// Where it is.
    pub pos: Pos,
}

/// A struct member (one per declarator).
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Its annotations.
    pub annotations: Vec<Annotation>,
    /// Its type.
    pub ty: TypeSpec,
    /// Its name.
    pub name: String,
    /// Array dimensions, outermost first.
    pub dims: Vec<u64>,
    /// Where it is.
    pub pos: Pos,
}

/// One enumerator.
#[derive(Debug, Clone, PartialEq)]
pub struct Enumerator {
    /// Its name.
    pub name: String,
    /// Its value (`@value` or its position).
    pub value: u32,
}

/// A constant's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    /// An integer.
    Int(i128),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A character.
    Char(char),
    /// TRUE or FALSE.
    Bool(bool),
}

/// A definition.
#[derive(Debug, Clone, PartialEq)]
pub enum Def {
    /// `module name { ... };`
    Module {
        /// The module name.
        name: String,
        /// Its definitions.
        defs: Vec<Def>,
    },
    /// `struct name { ... };`
    Struct {
        /// The struct name.
        name: String,
        /// Its annotations.
        annotations: Vec<Annotation>,
        /// The members, inherited ones first.
        members: Vec<Member>,
        /// Where it is.
        pos: Pos,
    },
    /// `enum name { ... };`
    Enum {
        /// The enum name.
        name: String,
        /// The enumerators.
        enumerators: Vec<Enumerator>,
    },
    /// `union name switch (T) { case ...: ...; };`
    Union {
        /// The union name.
        name: String,
        /// Its annotations.
        annotations: Vec<Annotation>,
        /// The discriminator type.
        discriminator: TypeSpec,
        /// `@key` on the discriminator.
        discriminator_key: bool,
        /// The cases in declaration order.
        cases: Vec<UnionCase>,
        /// Where it is.
        pos: Pos,
    },
    /// `bitmask name { ... };`
    Bitmask {
        /// The bitmask name.
        name: String,
        /// `@bit_bound` (32 by default).
        bit_bound: u16,
        /// Flags with their positions.
        flags: Vec<(String, u16)>,
        /// Where it is.
        pos: Pos,
    },
    /// `typedef T name[dims];`
    Typedef {
        /// The alias.
        name: String,
        /// The aliased type.
        ty: TypeSpec,
        /// Array dimensions.
        dims: Vec<u64>,
    },
    /// `const T name = value;`
    Const {
        /// The constant's name.
        name: String,
        /// Its type.
        ty: TypeSpec,
        /// Its value.
        value: ConstValue,
    },
}

/// Parses one file's tokens (after `#include`s were resolved by the caller).
pub struct Parser<'a> {
    toks: &'a [Token],
    i: usize,
    eof: Pos,
    consts: HashMap<String, ConstValue>,
    /// Member lists of structs seen so far, by name, for inheritance.
    structs: HashMap<String, Vec<Member>>,
    scope: Vec<String>,
    /// The second `>` of a `>>` already consumed by a nested template's closing.
    half_gt: bool,
}

type R<T> = Result<T, IdlError>;

impl<'a> Parser<'a> {
    /// A parser of `toks`; `eof` is the position reported for an unexpected end.
    pub fn new(toks: &'a [Token], eof: Pos) -> Self {
        Parser {
            toks,
            i: 0,
            eof,
            consts: HashMap::new(),
            structs: HashMap::new(),
            scope: Vec::new(),
            half_gt: false,
        }
    }

    fn pos(&self) -> Pos {
        self.toks
            .get(self.i)
            .map_or_else(|| self.eof.clone(), |t| t.pos.clone())
    }

    fn err<T>(&self, msg: impl Into<String>) -> R<T> {
        Err(IdlError::Syntax {
            pos: self.pos(),
            msg: msg.into(),
        })
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.tok)
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn is_ident(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(q)) if q == w)
    }

    fn expect(&mut self, p: &str) -> R<()> {
        if self.is_punct(p) {
            self.i += 1;
            Ok(())
        } else {
            self.err(format!("expected '{p}'{}", self.found()))
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            None => ", found the end of the file".into(),
            Some(Tok::Ident(s)) => format!(", found '{s}'"),
            Some(Tok::Punct(p)) => format!(", found '{p}'"),
            Some(t) => format!(", found {t:?}"),
        }
    }

    fn ident(&mut self) -> R<String> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.i += 1;
                Ok(s)
            }
            _ => self.err(format!("expected an identifier{}", self.found())),
        }
    }

    fn scoped_name(&mut self) -> R<Vec<String>> {
        if self.is_punct("::") {
            self.i += 1;
        }
        let mut v = vec![self.ident()?];
        while self.is_punct("::") {
            self.i += 1;
            v.push(self.ident()?);
        }
        Ok(v)
    }

    /// Fails unless every token was used (a stray `}` stops [`Parser::definitions`]).
    pub fn expect_end(&self) -> R<()> {
        if self.i < self.toks.len() {
            return self.err(format!("unbalanced '}}' or extra input{}", self.found()));
        }
        Ok(())
    }

    /// All definitions up to the end (or a closing brace at depth > 0).
    pub fn definitions(&mut self) -> R<Vec<Def>> {
        let mut defs = Vec::new();
        while self.i < self.toks.len() && !self.is_punct("}") {
            if let Some(Tok::Directive(_)) = self.peek() {
                self.i += 1; // #pragma, include guards: nothing to do.
                continue;
            }
            let annotations = self.annotations()?;
            let pos = self.pos();
            let kw = self.ident()?;
            match kw.as_str() {
                "module" => {
                    let name = self.ident()?;
                    self.expect("{")?;
                    self.scope.push(name.clone());
                    let inner = self.definitions()?;
                    self.scope.pop();
                    self.expect("}")?;
                    self.expect(";")?;
                    defs.push(Def::Module { name, defs: inner });
                }
                "struct" => {
                    if let Some(d) = self.struct_def(annotations, pos)? {
                        defs.push(d);
                    }
                }
                "enum" => defs.push(self.enum_def()?),
                "union" => {
                    if let Some(d) = self.union_def(annotations, pos)? {
                        defs.push(d);
                    }
                }
                "bitmask" => defs.push(self.bitmask_def(&annotations, pos)?),
                "typedef" => defs.extend(self.typedef()?),
                "const" => defs.push(self.const_def()?),
                "bitset" | "interface" | "valuetype" | "exception" => {
                    self.i -= 1;
                    return self.err(format!("'{kw}' is not supported yet"));
                }
                _ => {
                    self.i -= 1;
                    return self.err(format!("expected a definition, found '{kw}'"));
                }
            }
        }
        Ok(defs)
    }

    fn annotations(&mut self) -> R<Vec<Annotation>> {
        let mut v = Vec::new();
        while self.is_punct("@") {
            let pos = self.pos();
            self.i += 1;
            let name = self.scoped_name()?.join("::");
            let mut params = Vec::new();
            if self.is_punct("(") {
                self.i += 1;
                let mut depth = 1;
                let mut cur = String::new();
                while depth > 0 {
                    let Some(t) = self.peek().cloned() else {
                        return self.err("unterminated annotation");
                    };
                    self.i += 1;
                    match t {
                        Tok::Punct("(") => depth += 1,
                        Tok::Punct(")") => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 || (depth == 1 && t == Tok::Punct(",")) {
                        if !cur.trim().is_empty() {
                            params.push(cur.trim().to_string());
                        }
                        cur.clear();
                        continue;
                    }
                    cur.push_str(&match t {
                        Tok::Ident(s) => s,
                        Tok::Int(n) => n.to_string(),
                        Tok::Float(f) => f.to_string(),
                        Tok::Str(s) => format!("{s:?}"),
                        Tok::Char(c) => format!("{c:?}"),
                        Tok::Punct(p) => p.to_string(),
                        Tok::Directive(_) => String::new(),
                    });
                }
            }
            v.push(Annotation { name, params, pos });
        }
        Ok(v)
    }

    fn struct_def(&mut self, annotations: Vec<Annotation>, pos: Pos) -> R<Option<Def>> {
        let name = self.ident()?;
        if self.is_punct(";") {
            self.i += 1; // Forward declaration.
            return Ok(None);
        }
        let mut members = Vec::new();
        if self.is_punct(":") {
            self.i += 1;
            let at = self.pos();
            let base = self.scoped_name()?;
            let key = base.last().cloned().unwrap_or_default();
            match self.structs.get(&key) {
                Some(m) => members.extend(m.iter().cloned()),
                None => {
                    return Err(IdlError::Syntax {
                        pos: at,
                        msg: format!("unknown base struct '{}'", base.join("::")),
                    })
                }
            }
        }
        self.expect("{")?;
        while !self.is_punct("}") {
            let ann = self.annotations()?;
            let ty = self.type_spec()?;
            loop {
                let pos = self.pos();
                let name = self.ident()?;
                let dims = self.dims()?;
                members.push(Member {
                    annotations: ann.clone(),
                    ty: ty.clone(),
                    name,
                    dims,
                    pos,
                });
                if self.is_punct(",") {
                    self.i += 1;
                    continue;
                }
                break;
            }
            self.expect(";")?;
        }
        self.expect("}")?;
        self.expect(";")?;
        self.structs.insert(name.clone(), members.clone());
        Ok(Some(Def::Struct {
            name,
            annotations,
            members,
            pos,
        }))
    }

    fn union_def(&mut self, annotations: Vec<Annotation>, pos: Pos) -> R<Option<Def>> {
        let name = self.ident()?;
        if self.is_punct(";") {
            self.i += 1; // Forward declaration.
            return Ok(None);
        }
        if !self.is_ident("switch") {
            return self.err(format!("expected 'switch'{}", self.found()));
        }
        self.i += 1;
        self.expect("(")?;
        let disc_ann = self.annotations()?;
        let discriminator_key = disc_ann.iter().any(|a| a.name == "key");
        let discriminator = self.type_spec()?;
        self.expect(")")?;
        self.expect("{")?;
        let mut cases = Vec::new();
        while !self.is_punct("}") {
            let mut labels = Vec::new();
            let mut default = false;
            loop {
                if self.is_ident("case") {
                    self.i += 1;
                    let at = self.pos();
                    labels.push(match self.expr()? {
                        ConstValue::Int(n) => Label::Int(n),
                        ConstValue::Char(c) => Label::Char(c),
                        ConstValue::Bool(b) => Label::Bool(b),
                        _ => {
                            return Err(IdlError::Syntax {
                                pos: at,
                                msg:
                                    "a case label is an integer, character, boolean or enum literal"
                                        .into(),
                            })
                        }
                    });
                    self.expect(":")?;
                } else if self.is_ident("default") {
                    self.i += 1;
                    self.expect(":")?;
                    default = true;
                } else {
                    break;
                }
            }
            if labels.is_empty() && !default {
                return self.err(format!("expected 'case' or 'default'{}", self.found()));
            }
            let ann = self.annotations()?;
            let ty = self.type_spec()?;
            let mpos = self.pos();
            let mname = self.ident()?;
            let dims = self.dims()?;
            self.expect(";")?;
            cases.push(UnionCase {
                labels,
                default,
                member: Member {
                    annotations: ann,
                    ty,
                    name: mname,
                    dims,
                    pos: mpos,
                },
            });
        }
        self.expect("}")?;
        self.expect(";")?;
        Ok(Some(Def::Union {
            name,
            annotations,
            discriminator,
            discriminator_key,
            cases,
            pos,
        }))
    }

    fn bitmask_def(&mut self, annotations: &[Annotation], pos: Pos) -> R<Def> {
        let mut bit_bound = 32u16;
        for a in annotations {
            if a.name == "bit_bound" {
                bit_bound = a
                    .params
                    .first()
                    .and_then(|p| p.parse().ok())
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| IdlError::Syntax {
                        pos: a.pos.clone(),
                        msg: "@bit_bound takes 1 to 64".into(),
                    })?;
            }
        }
        let name = self.ident()?;
        self.expect("{")?;
        let mut flags: Vec<(String, u16)> = Vec::new();
        loop {
            let ann = self.annotations()?;
            let at = self.pos();
            let f = self.ident()?;
            // IDL 4.2 §7.4.13.4.3.2: a flag without @position follows the previous one.
            let mut position = flags.last().map_or(0, |p| p.1 + 1);
            for a in &ann {
                if a.name == "position" {
                    position = a
                        .params
                        .first()
                        .and_then(|p| p.parse().ok())
                        .ok_or_else(|| IdlError::Syntax {
                            pos: a.pos.clone(),
                            msg: "@position needs an unsigned integer".into(),
                        })?;
                }
            }
            if position >= bit_bound || flags.iter().any(|p| p.1 == position) {
                return Err(IdlError::Syntax {
                    pos: at,
                    msg: format!("flag '{f}' at position {position}: outside the bit bound {bit_bound} or taken"),
                });
            }
            flags.push((f, position));
            if self.is_punct(",") {
                self.i += 1;
                if self.is_punct("}") {
                    break;
                }
                continue;
            }
            break;
        }
        self.expect("}")?;
        self.expect(";")?;
        Ok(Def::Bitmask {
            name,
            bit_bound,
            flags,
            pos,
        })
    }

    fn enum_def(&mut self) -> R<Def> {
        let name = self.ident()?;
        self.expect("{")?;
        let mut enumerators = Vec::new();
        let mut next = 0u32;
        loop {
            let ann = self.annotations()?;
            let e = self.ident()?;
            let mut value = next;
            for a in &ann {
                if a.name == "value" {
                    value = a
                        .params
                        .first()
                        .and_then(|p| p.parse().ok())
                        .ok_or_else(|| IdlError::Syntax {
                            pos: a.pos.clone(),
                            msg: "@value needs an unsigned integer".into(),
                        })?;
                }
            }
            next = value.wrapping_add(1);
            self.consts.insert(e.clone(), ConstValue::Int(value.into()));
            enumerators.push(Enumerator { name: e, value });
            if self.is_punct(",") {
                self.i += 1;
                if self.is_punct("}") {
                    break;
                }
                continue;
            }
            break;
        }
        self.expect("}")?;
        self.expect(";")?;
        Ok(Def::Enum { name, enumerators })
    }

    fn typedef(&mut self) -> R<Vec<Def>> {
        let ty = self.type_spec()?;
        let mut out = Vec::new();
        loop {
            let name = self.ident()?;
            let dims = self.dims()?;
            out.push(Def::Typedef {
                name,
                ty: ty.clone(),
                dims,
            });
            if self.is_punct(",") {
                self.i += 1;
                continue;
            }
            break;
        }
        self.expect(";")?;
        Ok(out)
    }

    fn const_def(&mut self) -> R<Def> {
        let ty = self.type_spec()?;
        let name = self.ident()?;
        self.expect("=")?;
        let value = self.expr()?;
        self.expect(";")?;
        self.consts.insert(name.clone(), value.clone());
        if !self.scope.is_empty() {
            let full = format!("{}::{name}", self.scope.join("::"));
            self.consts.insert(full, value.clone());
        }
        Ok(Def::Const { name, ty, value })
    }

    fn dims(&mut self) -> R<Vec<u64>> {
        let mut dims = Vec::new();
        while self.is_punct("[") {
            self.i += 1;
            dims.push(self.positive()?);
            self.expect("]")?;
        }
        Ok(dims)
    }

    fn positive(&mut self) -> R<u64> {
        let pos = self.pos();
        match self.expr()? {
            ConstValue::Int(n) if n > 0 && n <= u32::MAX as i128 => Ok(n as u64),
            _ => Err(IdlError::Syntax {
                pos,
                msg: "expected a positive integer bound".into(),
            }),
        }
    }

    fn type_spec(&mut self) -> R<TypeSpec> {
        let w = match self.peek() {
            Some(Tok::Ident(s)) => s.clone(),
            Some(Tok::Punct("::")) => return Ok(TypeSpec::Named(self.scoped_name()?)),
            _ => return self.err(format!("expected a type{}", self.found())),
        };
        let prim = |p| Ok(TypeSpec::Prim(p));
        self.i += 1;
        match w.as_str() {
            "boolean" => prim(Prim::Bool),
            "octet" => prim(Prim::Octet),
            "uint8" => prim(Prim::U8),
            "char" => prim(Prim::Char),
            "int8" => prim(Prim::I8),
            "short" | "int16" => prim(Prim::I16),
            "int32" => prim(Prim::I32),
            "int64" => prim(Prim::I64),
            "uint16" => prim(Prim::U16),
            "uint32" => prim(Prim::U32),
            "uint64" => prim(Prim::U64),
            "float" => prim(Prim::F32),
            "double" => prim(Prim::F64),
            "long" => {
                if self.is_ident("long") {
                    self.i += 1;
                    prim(Prim::I64)
                } else if self.is_ident("double") {
                    self.i -= 1;
                    self.err("'long double' is not supported")
                } else {
                    prim(Prim::I32)
                }
            }
            "unsigned" => {
                let w2 = self.ident()?;
                match w2.as_str() {
                    "short" => prim(Prim::U16),
                    "long" if self.is_ident("long") => {
                        self.i += 1;
                        prim(Prim::U64)
                    }
                    "long" => prim(Prim::U32),
                    _ => {
                        self.i -= 1;
                        self.err(format!("'unsigned {w2}' is not a type"))
                    }
                }
            }
            "string" => Ok(TypeSpec::String(self.opt_bound()?)),
            "map" => {
                self.expect("<")?;
                let k = self.type_spec()?;
                self.expect(",")?;
                let v = self.type_spec()?;
                let bound = if self.is_punct(",") {
                    self.i += 1;
                    Some(self.positive()?)
                } else {
                    None
                };
                self.expect_close_angle()?;
                Ok(TypeSpec::Map(Box::new(k), Box::new(v), bound))
            }
            "wstring" | "wchar" | "fixed" | "any" => {
                self.i -= 1;
                self.err(format!("'{w}' is not supported yet"))
            }
            "sequence" => {
                self.expect("<")?;
                let inner = self.type_spec()?;
                let bound = if self.is_punct(",") {
                    self.i += 1;
                    Some(self.positive()?)
                } else {
                    None
                };
                self.expect_close_angle()?;
                Ok(TypeSpec::Sequence(Box::new(inner), bound))
            }
            _ => {
                self.i -= 1;
                Ok(TypeSpec::Named(self.scoped_name()?))
            }
        }
    }

    fn opt_bound(&mut self) -> R<Option<u64>> {
        if !self.is_punct("<") {
            return Ok(None);
        }
        self.i += 1;
        let n = self.positive()?;
        self.expect_close_angle()?;
        Ok(Some(n))
    }

    /// `>`, or one half of a `>>` closing two nested templates.
    fn expect_close_angle(&mut self) -> R<()> {
        if self.half_gt {
            self.half_gt = false;
            return Ok(());
        }
        if self.is_punct(">>") {
            self.i += 1;
            self.half_gt = true;
            return Ok(());
        }
        self.expect(">")
    }

    // Constant expressions: | ^ & << >> + - * / % unary - ~, literals, constants.
    fn expr(&mut self) -> R<ConstValue> {
        self.binary(0)
    }

    fn binary(&mut self, level: usize) -> R<ConstValue> {
        const LEVELS: [&[&str]; 6] = [
            &["|"],
            &["^"],
            &["&"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct(p)) if LEVELS[level].contains(p) => *p,
                _ => return Ok(lhs),
            };
            let pos = self.pos();
            self.i += 1;
            let rhs = self.binary(level + 1)?;
            lhs = apply(op, lhs, rhs).ok_or(IdlError::Syntax {
                pos,
                msg: format!("cannot apply '{op}' to these operands"),
            })?;
        }
    }

    fn unary(&mut self) -> R<ConstValue> {
        if self.is_punct("-") {
            self.i += 1;
            return match self.unary()? {
                ConstValue::Int(n) => Ok(ConstValue::Int(-n)),
                ConstValue::Float(f) => Ok(ConstValue::Float(-f)),
                _ => self.err("'-' needs a number"),
            };
        }
        if self.is_punct("~") {
            self.i += 1;
            return match self.unary()? {
                ConstValue::Int(n) => Ok(ConstValue::Int(!n)),
                _ => self.err("'~' needs an integer"),
            };
        }
        if self.is_punct("(") {
            self.i += 1;
            let v = self.expr()?;
            self.expect(")")?;
            return Ok(v);
        }
        let t = self.peek().cloned();
        match t {
            Some(Tok::Int(n)) => {
                self.i += 1;
                Ok(ConstValue::Int(n))
            }
            Some(Tok::Float(f)) => {
                self.i += 1;
                Ok(ConstValue::Float(f))
            }
            Some(Tok::Str(s)) => {
                self.i += 1;
                Ok(ConstValue::Str(s))
            }
            Some(Tok::Char(c)) => {
                self.i += 1;
                Ok(ConstValue::Char(c))
            }
            Some(Tok::Ident(w)) if w == "TRUE" || w == "FALSE" => {
                self.i += 1;
                Ok(ConstValue::Bool(w == "TRUE"))
            }
            Some(Tok::Ident(_)) | Some(Tok::Punct("::")) => {
                let pos = self.pos();
                let name = self.scoped_name()?;
                let full = name.join("::");
                self.consts
                    .get(&full)
                    .or_else(|| name.last().and_then(|n| self.consts.get(n)))
                    .cloned()
                    .ok_or(IdlError::Syntax {
                        pos,
                        msg: format!("unknown constant '{full}'"),
                    })
            }
            _ => self.err(format!("expected a value{}", self.found())),
        }
    }
}

fn apply(op: &str, a: ConstValue, b: ConstValue) -> Option<ConstValue> {
    use ConstValue::{Float, Int};
    Some(match (a, b) {
        (Int(x), Int(y)) => Int(match op {
            "|" => x | y,
            "^" => x ^ y,
            "&" => x & y,
            "<<" => x.checked_shl(u32::try_from(y).ok()?)?,
            ">>" => x.checked_shr(u32::try_from(y).ok()?)?,
            "+" => x.checked_add(y)?,
            "-" => x.checked_sub(y)?,
            "*" => x.checked_mul(y)?,
            "/" => x.checked_div(y)?,
            "%" => x.checked_rem(y)?,
            _ => return None,
        }),
        (Float(x), Float(y)) => Float(match op {
            "+" => x + y,
            "-" => x - y,
            "*" => x * y,
            "/" => x / y,
            _ => return None,
        }),
        _ => return None,
    })
}
