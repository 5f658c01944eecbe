//! Content filters and query expressions: the SQL subset of DDS 1.4 Annex B, sans-IO.
//!
//! An expression such as `x > %0 AND color = 'RED' AND name LIKE 'sensor_%'` is lexed and
//! parsed with columns, then checked against the type it filters (its XTypes
//! description, [`crate::xtypes::TypeDesc`]): every member path must exist and end on a
//! primitive, string or enum, and each literal must suit the member it meets. The result, a
//! [`Filter`], evaluates samples through [`FilterSubject`] (member path → [`Value`]), which
//! `#[derive(TopicType)]` implements for derived types ([`crate::cdr::CdrType::filter_value`]).
//!
//! What the language has: comparisons `= <> != < <= > >=` between a member and a literal, a
//! parameter or another member; `[NOT] BETWEEN lo AND hi`; `[NOT] LIKE pattern` (`%` any
//! run of characters, `_` one character) on strings and chars; `AND`, `OR`, `NOT`,
//! parentheses; integer (decimal, `0x` hex), float, `'string'` (a one-character string is a
//! char), `TRUE`/`FALSE` and enum-label literals (`color = RED` or `color = 'RED'`); member
//! paths `a.b.c` and `arr[2]`; parameters `%0` to `%99`. Keywords are case-insensitive.
//!
//! Parameters are strings (as DDS passes them): each is read as a literal of the type of the
//! member it meets (`'text'` or plain text for strings, labels for enums), when the filter is
//! made and again on [`Filter::set_parameters`].
//!
//! A predicate on an absent optional member, or on an index past the end of a sequence, is
//! false (`NOT` of it true), as SQL treats NULL.

mod check;
mod eval;
mod lex;
mod parse;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::sync::Arc;

pub use parse::CmpOp;

/// The filter class name announced for this language (RTPS 2.5 §9.6.3.1).
pub const DDSSQL: &str = "DDSSQL";

/// Most parameters an expression may name (`%0` to `%99`).
pub const MAX_PARAMETERS: usize = 100;

/// What went wrong, where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not in the grammar.
    Syntax,
    /// A member path names no member of the type (or goes into one that has none).
    UnknownMember,
    /// A literal, parameter or member does not suit what it is compared with.
    TypeMismatch,
    /// A parameter is missing or does not read as the type it meets.
    Parameter,
}

/// An expression that does not parse or does not fit the type; `column` counts characters
/// from 1 (0 for a parameter's own text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct FilterError {
    /// What kind of error.
    pub kind: ErrorKind,
    /// Where in the expression.
    pub column: u32,
    /// What is wrong.
    pub message: String,
}

impl FilterError {
    pub(crate) fn new(kind: ErrorKind, column: u32, message: impl Into<String>) -> Self {
        FilterError {
            kind,
            column,
            message: message.into(),
        }
    }
}

/// The subject cannot give member values (a hand-written `TopicType` without the accessor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the type gives no member values to filters")]
pub struct NotFilterable;

/// A member's value as the filter sees it. Strings borrow from the sample.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// An absent optional member, or an index past a sequence's end.
    Absent,
    /// `boolean`.
    Bool(bool),
    /// Any integer type (and `octet`).
    Int(i128),
    /// `float`, `double`.
    Float(f64),
    /// `char`.
    Char(char),
    /// `string`.
    Str(Cow<'a, str>),
    /// An enum's value.
    Enum(i32),
}

impl Value<'_> {
    /// The same value borrowing what it owns (no allocation).
    pub fn borrowed(&self) -> Value<'_> {
        match self {
            Value::Str(s) => Value::Str(Cow::Borrowed(s)),
            Value::Absent => Value::Absent,
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
            Value::Char(c) => Value::Char(*c),
            Value::Enum(e) => Value::Enum(*e),
        }
    }
}

macro_rules! value_from {
    ($($t:ty => $v:ident $(as $c:ty)?;)*) => {$(
        impl From<$t> for Value<'_> {
            fn from(x: $t) -> Self {
                Value::$v(x $(as $c)?)
            }
        }
    )*};
}

value_from! {
    bool => Bool;
    u8 => Int as i128;
    i8 => Int as i128;
    i16 => Int as i128;
    u16 => Int as i128;
    i32 => Int as i128;
    u32 => Int as i128;
    i64 => Int as i128;
    u64 => Int as i128;
    f32 => Float as f64;
    f64 => Float;
    char => Char;
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::Str(Cow::Borrowed(s))
    }
}

/// One step of a resolved member path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The member at `index` in declaration order (`name` for subjects that look up names).
    Member {
        /// Position among the struct's members, in declaration order.
        index: u32,
        /// The member's name.
        name: Arc<str>,
    },
    /// An element of a sequence or array.
    Index(u32),
}

/// A member path resolved against a type (`a.b[2].c`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberPath {
    steps: Vec<Step>,
    text: String,
}

impl MemberPath {
    /// The steps, outermost first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Something a filter can evaluate: gives the value at a member path. Derived types do it
/// through [`crate::cdr::CdrType::filter_value`] ([`Filter::matches_sample`]); dynamic values
/// implement it themselves.
pub trait FilterSubject {
    /// The value at `path` (already checked against the type): [`Value::Absent`] for an
    /// absent optional member or an index past the end.
    fn member_value(&self, path: &[Step]) -> Result<Value<'_>, NotFilterable>;
}

/// Adapts a derived type to [`FilterSubject`].
struct Sample<'a, T>(&'a T);

impl<T: crate::cdr::CdrType> FilterSubject for Sample<'_, T> {
    fn member_value(&self, path: &[Step]) -> Result<Value<'_>, NotFilterable> {
        self.0.filter_value(path)
    }
}

/// The kinds of values the checker tells apart.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Bool,
    Int,
    Float,
    Char,
    Str,
    Enum(Arc<crate::xtypes::EnumDesc>),
}

/// A checked expression with its parameters bound: evaluates samples.
#[derive(Debug, Clone)]
pub struct Filter {
    expression: String,
    root: check::Node,
    /// Each place a parameter is used: its number, the kind it must read as, its column.
    uses: Vec<(u8, Kind, u32)>,
    /// The value of each use, from `params`.
    bound: Vec<Value<'static>>,
    params: Vec<String>,
}

impl Filter {
    /// Parses `expression`, checks it against `ty` (a struct) and binds `params`.
    pub fn new(
        expression: &str,
        ty: &crate::xtypes::TypeDesc,
        params: &[String],
    ) -> Result<Filter, FilterError> {
        let ast = parse::parse(expression)?;
        let crate::xtypes::TypeDesc::Struct(root_ty) = ty else {
            return Err(FilterError::new(
                ErrorKind::TypeMismatch,
                1,
                "only struct types can be filtered",
            ));
        };
        let mut uses = Vec::new();
        let root = check::check(&ast, root_ty, &mut uses)?;
        let mut f = Filter {
            expression: expression.to_owned(),
            root,
            uses,
            bound: Vec::new(),
            params: Vec::new(),
        };
        f.set_parameters(params)?;
        Ok(f)
    }

    /// Checks only the syntax of `expression` (no type).
    pub fn check_syntax(expression: &str) -> Result<(), FilterError> {
        parse::parse(expression).map(drop)
    }

    /// Replaces the parameters; on an error the filter keeps its previous ones.
    pub fn set_parameters(&mut self, params: &[String]) -> Result<(), FilterError> {
        if params.len() > MAX_PARAMETERS {
            return Err(FilterError::new(
                ErrorKind::Parameter,
                0,
                format!("at most {MAX_PARAMETERS} parameters"),
            ));
        }
        let mut bound = Vec::with_capacity(self.uses.len());
        for (n, kind, column) in &self.uses {
            let Some(text) = params.get(usize::from(*n)) else {
                return Err(FilterError::new(
                    ErrorKind::Parameter,
                    *column,
                    format!("parameter %{n} is not given ({} given)", params.len()),
                ));
            };
            let v = check::read_parameter(text, kind).map_err(|m| {
                FilterError::new(
                    ErrorKind::Parameter,
                    *column,
                    format!("%{n} = {text:?}: {m}"),
                )
            })?;
            bound.push(v);
        }
        self.bound = bound;
        self.params = params.to_vec();
        Ok(())
    }

    /// The expression as given.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The parameters now bound.
    pub fn parameters(&self) -> &[String] {
        &self.params
    }

    /// Whether `subject` passes.
    pub fn matches(&self, subject: &dyn FilterSubject) -> Result<bool, NotFilterable> {
        eval::eval(&self.root, subject, &self.bound)
    }

    /// Whether a sample of a derived type passes.
    pub fn matches_sample<T: crate::cdr::CdrType>(
        &self,
        sample: &T,
    ) -> Result<bool, NotFilterable> {
        self.matches(&Sample(sample))
    }

    /// A 16-byte signature of the expression and its parameters: equal filters have equal
    /// signatures (the MD5 of the class name, the expression and each parameter, each
    /// followed by a NUL).
    pub fn signature(&self) -> [u8; 16] {
        signature(&self.expression, &self.params)
    }
}

/// The signature [`Filter::signature`] computes, from the text alone.
pub fn signature(expression: &str, params: &[String]) -> [u8; 16] {
    let mut ctx = md5::Context::new();
    for part in std::iter::once(DDSSQL)
        .chain(std::iter::once(expression))
        .chain(params.iter().map(String::as_str))
    {
        ctx.consume(part.as_bytes());
        ctx.consume([0u8]);
    }
    ctx.compute().0
}
