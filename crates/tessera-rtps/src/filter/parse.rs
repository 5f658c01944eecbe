//! The recursive-descent parser: tokens into a syntax tree with columns (DDS 1.4 Annex B).
//!
//! ```text
//! condition  := or
//! or         := and { OR and }
//! and        := not { AND not }
//! not        := NOT not | '(' condition ')' | predicate
//! predicate  := operand relop operand
//!             | operand [NOT] BETWEEN operand AND operand
//!             | operand [NOT] LIKE operand
//! operand    := path | literal | %n
//! path       := ident { '.' ident | '[' integer ']' }
//! ```
//! Which operands may meet (a member on at least one side, compatible types) is checked
//! against the type afterwards ([`super::check`]).

use super::lex::{Tok, Token};
use super::{ErrorKind, FilterError};

/// Nesting deeper than this (parentheses, NOT) is refused: the parser and evaluator recurse.
pub(crate) const MAX_DEPTH: u32 = 64;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `<>` or `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// One step of a member path as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PathStep {
    Name(String),
    Index(u32),
}

/// A literal as written; its type is decided by what it is compared with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lit {
    Int(i128),
    Float(f64),
    Str(String),
    Bool(bool),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    /// A member path (or, when it is one name that no member has, an enum label).
    Path(Vec<PathStep>, u32),
    Lit(Lit, u32),
    Param(u8, u32),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ast {
    /// Two or more conditions (kept flat: a long chain adds no depth).
    And(Vec<Ast>),
    Or(Vec<Ast>),
    Not(Box<Ast>),
    Cmp(CmpOp, Operand, Operand),
    Between {
        x: Operand,
        lo: Operand,
        hi: Operand,
        negated: bool,
    },
    Like {
        x: Operand,
        pattern: Operand,
        negated: bool,
    },
}

struct Parser {
    toks: Vec<Token>,
    at: usize,
    /// The column just past the end (for "unexpected end" errors).
    end: u32,
    depth: u32,
}

/// Parses a whole expression.
pub(crate) fn parse(src: &str) -> Result<Ast, FilterError> {
    let toks = super::lex::lex(src)?;
    let end = u32::try_from(src.chars().count() + 1).unwrap_or(u32::MAX);
    let mut p = Parser {
        toks,
        at: 0,
        end,
        depth: 0,
    };
    if p.toks.is_empty() {
        return Err(FilterError::new(ErrorKind::Syntax, 1, "empty expression"));
    }
    let ast = p.or()?;
    if let Some(t) = p.peek() {
        return Err(FilterError::new(
            ErrorKind::Syntax,
            t.column,
            "expected AND, OR or the end",
        ));
    }
    Ok(ast)
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.at)
    }

    fn column(&self) -> u32 {
        self.peek().map_or(self.end, |t| t.column)
    }

    fn eat(&mut self, kind: &Tok) -> bool {
        if self.peek().is_some_and(|t| &t.kind == kind) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, kind: &Tok, what: &str) -> Result<(), FilterError> {
        if self.eat(kind) {
            Ok(())
        } else {
            Err(FilterError::new(
                ErrorKind::Syntax,
                self.column(),
                format!("expected {what}"),
            ))
        }
    }

    fn or(&mut self) -> Result<Ast, FilterError> {
        self.chain(&Tok::Or, Self::and, Ast::Or)
    }

    fn and(&mut self) -> Result<Ast, FilterError> {
        self.chain(&Tok::And, Self::not, Ast::And)
    }

    /// `term { sep term }`, one term as itself, several flat under `build`.
    fn chain(
        &mut self,
        sep: &Tok,
        term: fn(&mut Self) -> Result<Ast, FilterError>,
        build: fn(Vec<Ast>) -> Ast,
    ) -> Result<Ast, FilterError> {
        let mut terms = vec![term(self)?];
        while self.eat(sep) {
            terms.push(term(self)?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            build(terms)
        })
    }

    fn not(&mut self) -> Result<Ast, FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(FilterError::new(
                ErrorKind::Syntax,
                self.column(),
                "expression nested too deeply",
            ));
        }
        let out = if self.eat(&Tok::Not) {
            self.not().map(|a| Ast::Not(Box::new(a)))
        } else if self.eat(&Tok::LParen) {
            let inner = self.or()?;
            self.expect(&Tok::RParen, "`)`")?;
            Ok(inner)
        } else {
            self.predicate()
        };
        self.depth -= 1;
        out
    }

    fn predicate(&mut self) -> Result<Ast, FilterError> {
        let x = self.operand()?;
        let negated = self.eat(&Tok::Not);
        let column = self.column();
        let Some(t) = self.peek().cloned() else {
            return Err(FilterError::new(
                ErrorKind::Syntax,
                column,
                "expected a comparison operator, BETWEEN or LIKE",
            ));
        };
        self.at += 1;
        let op = match t.kind {
            Tok::Between => {
                let lo = self.operand()?;
                self.expect(&Tok::And, "AND in BETWEEN")?;
                let hi = self.operand()?;
                return Ok(Ast::Between { x, lo, hi, negated });
            }
            Tok::Like => {
                let pattern = self.operand()?;
                return Ok(Ast::Like {
                    x,
                    pattern,
                    negated,
                });
            }
            _ if negated => {
                return Err(FilterError::new(
                    ErrorKind::Syntax,
                    column,
                    "expected BETWEEN or LIKE after NOT",
                ))
            }
            Tok::Eq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            _ => {
                return Err(FilterError::new(
                    ErrorKind::Syntax,
                    column,
                    "expected a comparison operator, BETWEEN or LIKE",
                ))
            }
        };
        let rhs = self.operand()?;
        Ok(Ast::Cmp(op, x, rhs))
    }

    fn operand(&mut self) -> Result<Operand, FilterError> {
        let column = self.column();
        let Some(t) = self.peek().cloned() else {
            return Err(FilterError::new(
                ErrorKind::Syntax,
                column,
                "expected a member, a literal or a parameter",
            ));
        };
        self.at += 1;
        Ok(match t.kind {
            Tok::Int(v) => Operand::Lit(Lit::Int(v), column),
            Tok::Float(v) => Operand::Lit(Lit::Float(v), column),
            Tok::Str(s) => Operand::Lit(Lit::Str(s), column),
            Tok::Bool(b) => Operand::Lit(Lit::Bool(b), column),
            Tok::Param(n) => Operand::Param(n, column),
            Tok::Ident(name) => {
                let mut path = vec![PathStep::Name(name)];
                loop {
                    if self.eat(&Tok::Dot) {
                        match self.peek().cloned() {
                            Some(Token {
                                kind: Tok::Ident(n),
                                ..
                            }) => {
                                self.at += 1;
                                path.push(PathStep::Name(n));
                            }
                            _ => {
                                return Err(FilterError::new(
                                    ErrorKind::Syntax,
                                    self.column(),
                                    "expected a member name after `.`",
                                ))
                            }
                        }
                    } else if self.eat(&Tok::LBracket) {
                        let c = self.column();
                        match self.peek().cloned() {
                            Some(Token {
                                kind: Tok::Int(i), ..
                            }) => {
                                self.at += 1;
                                let i = u32::try_from(i).map_err(|_| {
                                    FilterError::new(ErrorKind::Syntax, c, "index out of range")
                                })?;
                                path.push(PathStep::Index(i));
                            }
                            _ => {
                                return Err(FilterError::new(
                                    ErrorKind::Syntax,
                                    c,
                                    "expected an index",
                                ))
                            }
                        }
                        self.expect(&Tok::RBracket, "`]`")?;
                    } else {
                        break;
                    }
                }
                Operand::Path(path, column)
            }
            _ => {
                return Err(FilterError::new(
                    ErrorKind::Syntax,
                    column,
                    "expected a member, a literal or a parameter",
                ))
            }
        })
    }
}
