//! Checks a syntax tree against the filtered type and turns it into the evaluated form:
//! member paths resolved to member indices, literals converted to the member's kind once,
//! enum labels to their values, parameters to slots bound later.

use super::parse::{Ast, CmpOp, Lit, Operand, PathStep};
use super::{ErrorKind, FilterError, Kind, MemberPath, Step, Value};
use crate::xtypes::{Primitive, StructDesc, TypeDesc};
use std::borrow::Cow;
use std::sync::Arc;

/// An operand ready to evaluate.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Member(MemberPath),
    Const(Value<'static>),
    /// The value bound to parameter use `slot`.
    Param(usize),
}

/// The evaluated form of an expression.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Cmp(CmpOp, Arg, Arg),
    Between {
        x: Arg,
        lo: Arg,
        hi: Arg,
        negated: bool,
    },
    Like {
        x: Arg,
        pattern: Arg,
        negated: bool,
    },
}

/// An operand after name resolution, before conversion.
enum Resolved<'a> {
    Member(MemberPath, Kind, u32),
    /// One name that no member has: an enum label, if the other side is an enum.
    Label(&'a str, u32),
    Lit(&'a Lit, u32),
    Param(u8, u32),
}

type Uses = Vec<(u8, Kind, u32)>;

pub(crate) fn check(ast: &Ast, ty: &Arc<StructDesc>, uses: &mut Uses) -> Result<Node, FilterError> {
    Ok(match ast {
        Ast::And(terms) => Node::And(
            terms
                .iter()
                .map(|t| check(t, ty, uses))
                .collect::<Result<_, _>>()?,
        ),
        Ast::Or(terms) => Node::Or(
            terms
                .iter()
                .map(|t| check(t, ty, uses))
                .collect::<Result<_, _>>()?,
        ),
        Ast::Not(a) => Node::Not(Box::new(check(a, ty, uses)?)),
        Ast::Cmp(op, l, r) => {
            let (l, r) = (resolve(l, ty)?, resolve(r, ty)?);
            let kind = match (&l, &r) {
                (Resolved::Member(_, k, _), _) | (_, Resolved::Member(_, k, _)) => k.clone(),
                (Resolved::Label(name, column), _) | (_, Resolved::Label(name, column)) => {
                    return Err(FilterError::new(
                        ErrorKind::UnknownMember,
                        *column,
                        format!("unknown member `{name}`"),
                    ))
                }
                _ => {
                    return Err(FilterError::new(
                        ErrorKind::Syntax,
                        column_of(&l),
                        "a comparison needs a member on one side",
                    ))
                }
            };
            if let (Resolved::Member(a, ka, _), Resolved::Member(b, kb, _)) = (&l, &r) {
                if !comparable(ka, kb) {
                    return Err(FilterError::new(
                        ErrorKind::TypeMismatch,
                        column_of(&r),
                        format!(
                            "`{}` ({}) and `{}` ({}) cannot be compared",
                            a.as_str(),
                            kind_name(ka),
                            b.as_str(),
                            kind_name(kb)
                        ),
                    ));
                }
            }
            Node::Cmp(*op, arg(l, &kind, uses)?, arg(r, &kind, uses)?)
        }
        Ast::Between { x, lo, hi, negated } => {
            let x = resolve(x, ty)?;
            let Resolved::Member(_, kind, _) = &x else {
                return Err(FilterError::new(
                    ErrorKind::Syntax,
                    column_of(&x),
                    "BETWEEN needs a member on its left",
                ));
            };
            let kind = kind.clone();
            Node::Between {
                lo: arg(resolve(lo, ty)?, &kind, uses)?,
                hi: arg(resolve(hi, ty)?, &kind, uses)?,
                x: arg(x, &kind, uses)?,
                negated: *negated,
            }
        }
        Ast::Like {
            x,
            pattern,
            negated,
        } => {
            let x = resolve(x, ty)?;
            let column = column_of(&x);
            match &x {
                Resolved::Member(_, Kind::Str | Kind::Char, _) => {}
                Resolved::Member(p, k, _) => {
                    return Err(FilterError::new(
                        ErrorKind::TypeMismatch,
                        column,
                        format!("LIKE needs a string, `{}` is {}", p.as_str(), kind_name(k)),
                    ))
                }
                _ => {
                    return Err(FilterError::new(
                        ErrorKind::Syntax,
                        column,
                        "LIKE needs a member on its left",
                    ))
                }
            }
            Node::Like {
                x: arg(x, &Kind::Str, uses)?,
                pattern: arg(resolve(pattern, ty)?, &Kind::Str, uses)?,
                negated: *negated,
            }
        }
    })
}

fn column_of(r: &Resolved<'_>) -> u32 {
    match r {
        Resolved::Member(_, _, c)
        | Resolved::Label(_, c)
        | Resolved::Lit(_, c)
        | Resolved::Param(_, c) => *c,
    }
}

fn kind_name(k: &Kind) -> String {
    match k {
        Kind::Bool => "boolean".into(),
        Kind::Int => "an integer".into(),
        Kind::Float => "a float".into(),
        Kind::Char => "a char".into(),
        Kind::Str => "a string".into(),
        Kind::Enum(e) => format!("enum {}", e.name),
    }
}

fn comparable(a: &Kind, b: &Kind) -> bool {
    use Kind::*;
    match (a, b) {
        (Int | Float, Int | Float) | (Bool, Bool) | (Char | Str, Char | Str) => true,
        (Enum(x), Enum(y)) => x.name == y.name,
        _ => false,
    }
}

/// Resolves names; a path that names no member is an error unless it is one name (then
/// perhaps an enum label).
fn resolve<'a>(op: &'a Operand, ty: &Arc<StructDesc>) -> Result<Resolved<'a>, FilterError> {
    Ok(match op {
        Operand::Lit(l, c) => Resolved::Lit(l, *c),
        Operand::Param(n, c) => Resolved::Param(*n, *c),
        Operand::Path(steps, column) => {
            let column = *column;
            let text = path_text(steps);
            let unknown = |what: String| FilterError::new(ErrorKind::UnknownMember, column, what);
            let mut cur = TypeDesc::Struct(ty.clone());
            let mut out = Vec::with_capacity(steps.len());
            for (i, s) in steps.iter().enumerate() {
                match (s, &cur) {
                    (PathStep::Name(n), TypeDesc::Struct(sd)) => {
                        let Some((idx, m)) =
                            sd.members.iter().enumerate().find(|(_, m)| &m.name == n)
                        else {
                            if i == 0 && steps.len() == 1 {
                                let PathStep::Name(n) = &steps[0] else {
                                    unreachable!()
                                };
                                return Ok(Resolved::Label(n, column));
                            }
                            return Err(unknown(format!(
                                "unknown member `{text}`: {} has no member `{n}`",
                                sd.name
                            )));
                        };
                        out.push(Step::Member {
                            index: u32::try_from(idx).unwrap_or(u32::MAX),
                            name: Arc::from(n.as_str()),
                        });
                        cur = m.ty.clone();
                    }
                    (PathStep::Index(k), TypeDesc::Sequence { element, .. }) => {
                        out.push(Step::Index(*k));
                        cur = (**element).clone();
                    }
                    (PathStep::Index(k), TypeDesc::Array { element, dims }) => {
                        // Rust's nested arrays keep one dimension per level.
                        if dims.first().is_some_and(|d| k >= d) {
                            return Err(unknown(format!(
                                "index {k} of `{text}` is past the array's {} elements",
                                dims[0]
                            )));
                        }
                        out.push(Step::Index(*k));
                        cur = if dims.len() > 1 {
                            TypeDesc::Array {
                                element: element.clone(),
                                dims: dims[1..].to_vec(),
                            }
                        } else {
                            (**element).clone()
                        };
                    }
                    (PathStep::Name(n), _) => {
                        return Err(unknown(format!(
                            "unknown member `{text}`: `{n}` is not inside a struct"
                        )))
                    }
                    (PathStep::Index(_), _) => {
                        return Err(unknown(format!(
                            "`{text}` indexes something that is not a sequence or array"
                        )))
                    }
                }
            }
            let kind = match cur {
                TypeDesc::Primitive(Primitive::Bool) => Kind::Bool,
                TypeDesc::Primitive(Primitive::Float32 | Primitive::Float64) => Kind::Float,
                TypeDesc::Primitive(Primitive::Char8) => Kind::Char,
                TypeDesc::Primitive(_) => Kind::Int,
                TypeDesc::String { .. } => Kind::Str,
                TypeDesc::Enum(e) => Kind::Enum(e),
                TypeDesc::Struct(_)
                | TypeDesc::Sequence { .. }
                | TypeDesc::Array { .. }
                | TypeDesc::Union(_)
                | TypeDesc::Map { .. }
                | TypeDesc::Bitmask(_) => {
                    return Err(FilterError::new(
                        ErrorKind::TypeMismatch,
                        column,
                        format!("`{text}` is not a primitive, string or enum"),
                    ))
                }
            };
            Resolved::Member(MemberPath { steps: out, text }, kind, column)
        }
    })
}

fn path_text(steps: &[PathStep]) -> String {
    let mut s = String::new();
    for (i, st) in steps.iter().enumerate() {
        match st {
            PathStep::Name(n) => {
                if i > 0 {
                    s.push('.');
                }
                s.push_str(n);
            }
            PathStep::Index(k) => s.push_str(&format!("[{k}]")),
        }
    }
    s
}

/// Converts a resolved operand for a comparison with a value of `kind`.
fn arg(r: Resolved<'_>, kind: &Kind, uses: &mut Uses) -> Result<Arg, FilterError> {
    Ok(match r {
        Resolved::Member(p, k, column) => {
            if !comparable(&k, kind) {
                return Err(FilterError::new(
                    ErrorKind::TypeMismatch,
                    column,
                    format!(
                        "`{}` is {}, not {}",
                        p.as_str(),
                        kind_name(&k),
                        kind_name(kind)
                    ),
                ));
            }
            Arg::Member(p)
        }
        Resolved::Label(name, column) => match kind {
            Kind::Enum(e) => match e.literals.iter().find(|(l, _)| l == name) {
                Some((_, v)) => Arg::Const(Value::Enum(*v)),
                None => {
                    return Err(FilterError::new(
                        ErrorKind::UnknownMember,
                        column,
                        format!(
                            "`{name}` is neither a member nor a label of enum {}",
                            e.name
                        ),
                    ))
                }
            },
            _ => {
                return Err(FilterError::new(
                    ErrorKind::UnknownMember,
                    column,
                    format!("unknown member `{name}`"),
                ))
            }
        },
        Resolved::Lit(l, column) => Arg::Const(
            convert(l, kind).map_err(|m| FilterError::new(ErrorKind::TypeMismatch, column, m))?,
        ),
        Resolved::Param(n, column) => {
            uses.push((n, kind.clone(), column));
            Arg::Param(uses.len() - 1)
        }
    })
}

/// A literal as a value of `kind`.
fn convert(l: &Lit, kind: &Kind) -> Result<Value<'static>, String> {
    let mismatch = || format!("{} where {} is expected", lit_name(l), kind_name(kind));
    Ok(match (kind, l) {
        (Kind::Int, Lit::Int(i)) => Value::Int(*i),
        (Kind::Int | Kind::Float, Lit::Float(f)) => Value::Float(*f),
        #[allow(clippy::cast_precision_loss)]
        (Kind::Float, Lit::Int(i)) => Value::Float(*i as f64),
        (Kind::Bool, Lit::Bool(b)) => Value::Bool(*b),
        (Kind::Bool, Lit::Int(i @ (0 | 1))) => Value::Bool(*i == 1),
        (Kind::Str, Lit::Str(s)) => Value::Str(Cow::Owned(s.clone())),
        (Kind::Char, Lit::Str(s)) => {
            let mut cs = s.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) => Value::Char(c),
                _ => return Err(format!("'{s}' is not one character")),
            }
        }
        (Kind::Enum(e), Lit::Str(s)) => match e.literals.iter().find(|(n, _)| n == s) {
            Some((_, v)) => Value::Enum(*v),
            None => return Err(format!("'{s}' is not a label of enum {}", e.name)),
        },
        (Kind::Enum(e), Lit::Int(i)) => match i32::try_from(*i) {
            Ok(v) => Value::Enum(v),
            Err(_) => return Err(format!("{i} is out of range for enum {}", e.name)),
        },
        _ => return Err(mismatch()),
    })
}

fn lit_name(l: &Lit) -> &'static str {
    match l {
        Lit::Int(_) => "an integer",
        Lit::Float(_) => "a float",
        Lit::Str(_) => "a string",
        Lit::Bool(_) => "a boolean",
    }
}

/// A parameter's text as a value of `kind`: one literal token (an enum label unquoted),
/// or for strings and chars the text itself.
pub(crate) fn read_parameter(text: &str, kind: &Kind) -> Result<Value<'static>, String> {
    use super::lex::Tok;
    let toks = super::lex::lex(text).ok();
    let lit = match toks.as_deref() {
        Some([t]) => match &t.kind {
            Tok::Int(i) => Some(Lit::Int(*i)),
            Tok::Float(f) => Some(Lit::Float(*f)),
            Tok::Str(s) => Some(Lit::Str(s.clone())),
            Tok::Bool(b) => Some(Lit::Bool(*b)),
            Tok::Ident(n) if matches!(kind, Kind::Enum(_)) => Some(Lit::Str(n.clone())),
            _ => None,
        },
        _ => None,
    };
    match (lit, kind) {
        (Some(l @ Lit::Str(_)), _)
        | (Some(l), Kind::Int | Kind::Float | Kind::Bool | Kind::Enum(_)) => convert(&l, kind),
        // Unquoted text for a string or char member is the text itself.
        (_, Kind::Str | Kind::Char) => convert(&Lit::Str(text.to_owned()), kind),
        (None, _) => Err(format!("not a literal for {}", kind_name(kind))),
    }
}
