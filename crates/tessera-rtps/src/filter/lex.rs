//! The lexer: the expression's characters into tokens, each with the column it starts at.

use super::{ErrorKind, FilterError};

/// A token and the (1-based, in characters) column where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub column: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// An identifier: a member name or an enum label (`RED`).
    Ident(String),
    /// An integer literal (decimal or `0x` hexadecimal, optionally signed).
    Int(i128),
    /// A floating-point literal.
    Float(f64),
    /// A quoted literal (`'text'`; `''` inside stands for one quote).
    Str(String),
    /// `TRUE` / `FALSE`.
    Bool(bool),
    /// `%n`, `n` in 0..=99.
    Param(u8),
    And,
    Or,
    Not,
    Between,
    Like,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Dot,
}

/// Splits `src` into tokens.
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, FilterError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = col(i);
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let one = |kind| Token { kind, column };
        let (kind, len) = match c {
            '(' => (Tok::LParen, 1),
            ')' => (Tok::RParen, 1),
            '[' => (Tok::LBracket, 1),
            ']' => (Tok::RBracket, 1),
            '=' => (Tok::Eq, 1),
            '!' if chars.get(i + 1) == Some(&'=') => (Tok::Ne, 2),
            '<' => match chars.get(i + 1) {
                Some('=') => (Tok::Le, 2),
                Some('>') => (Tok::Ne, 2),
                _ => (Tok::Lt, 1),
            },
            '>' => match chars.get(i + 1) {
                Some('=') => (Tok::Ge, 2),
                _ => (Tok::Gt, 1),
            },
            '%' => {
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j].is_ascii_digit() {
                    j += 1;
                }
                let digits: String = chars[start..j].iter().collect();
                match digits.parse::<u8>() {
                    Ok(n) if n <= 99 && !digits.is_empty() && digits.len() <= 2 => {
                        (Tok::Param(n), j - i)
                    }
                    _ => {
                        return Err(FilterError::new(
                            ErrorKind::Syntax,
                            column,
                            "a parameter is %0 to %99",
                        ))
                    }
                }
            }
            '\'' => {
                let mut s = String::new();
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        None => {
                            return Err(FilterError::new(
                                ErrorKind::Syntax,
                                column,
                                "unterminated string",
                            ))
                        }
                        Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                            s.push('\'');
                            j += 2;
                        }
                        Some('\'') => break,
                        Some(&ch) => {
                            s.push(ch);
                            j += 1;
                        }
                    }
                }
                (Tok::Str(s), j + 1 - i)
            }
            '.' if !chars.get(i + 1).is_some_and(char::is_ascii_digit) => (Tok::Dot, 1),
            c if c.is_ascii_digit() || c == '.' || c == '-' || c == '+' => number(&chars, i)?,
            c if c.is_alphabetic() || c == '_' => {
                let mut j = i;
                while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                let word: String = chars[i..j].iter().collect();
                let kind = match word.to_ascii_uppercase().as_str() {
                    "AND" => Tok::And,
                    "OR" => Tok::Or,
                    "NOT" => Tok::Not,
                    "BETWEEN" => Tok::Between,
                    "LIKE" => Tok::Like,
                    "TRUE" => Tok::Bool(true),
                    "FALSE" => Tok::Bool(false),
                    _ => Tok::Ident(word),
                };
                (kind, j - i)
            }
            other => {
                return Err(FilterError::new(
                    ErrorKind::Syntax,
                    column,
                    format!("unexpected character `{other}`"),
                ))
            }
        };
        out.push(one(kind));
        i += len;
    }
    Ok(out)
}

/// The 1-based column of character index `i`.
fn col(i: usize) -> u32 {
    u32::try_from(i + 1).unwrap_or(u32::MAX)
}

/// A numeric literal at `i`: `[+-]digits`, `0x` hex, or a float with `.` and/or an exponent.
fn number(chars: &[char], i: usize) -> Result<(Tok, usize), FilterError> {
    let column = col(i);
    let bad = |what: &str| FilterError::new(ErrorKind::Syntax, column, what.to_owned());
    let mut j = i;
    if matches!(chars[j], '+' | '-') {
        j += 1;
    }
    let body = j;
    if chars.get(j) == Some(&'0') && matches!(chars.get(j + 1), Some('x' | 'X')) {
        j += 2;
        let start = j;
        while j < chars.len() && chars[j].is_ascii_hexdigit() {
            j += 1;
        }
        let hex: String = chars[start..j].iter().collect();
        let v = i128::from_str_radix(&hex, 16).map_err(|_| bad("bad hexadecimal literal"))?;
        let v = if chars[i] == '-' { -v } else { v };
        return Ok((Tok::Int(v), j - i));
    }
    let mut float = false;
    while j < chars.len() && chars[j].is_ascii_digit() {
        j += 1;
    }
    if chars.get(j) == Some(&'.') {
        float = true;
        j += 1;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
    }
    if matches!(chars.get(j), Some('e' | 'E')) {
        let mut k = j + 1;
        if matches!(chars.get(k), Some('+' | '-')) {
            k += 1;
        }
        if chars.get(k).is_some_and(char::is_ascii_digit) {
            float = true;
            j = k;
            while j < chars.len() && chars[j].is_ascii_digit() {
                j += 1;
            }
        }
    }
    let text: String = chars[i..j].iter().collect();
    if !chars[body..j].iter().any(char::is_ascii_digit) {
        return Err(bad("expected a number"));
    }
    if chars
        .get(j)
        .is_some_and(|c| c.is_alphanumeric() || *c == '_')
    {
        return Err(bad("a number runs into a name"));
    }
    if float {
        let v: f64 = text.parse().map_err(|_| bad("bad number"))?;
        Ok((Tok::Float(v), j - i))
    } else {
        let v: i128 = text.parse().map_err(|_| bad("integer out of range"))?;
        Ok((Tok::Int(v), j - i))
    }
}
