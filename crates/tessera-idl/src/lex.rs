//! The IDL lexer: tokens with their line and column, comments skipped, preprocessor lines kept
//! as single tokens for the parser to act on (`#include`) or ignore (`#pragma`, include guards).

use crate::{IdlError, Pos};

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An identifier or keyword (IDL keywords are case-sensitive identifiers here).
    Ident(String),
    /// An integer literal.
    Int(i128),
    /// A floating-point literal.
    Float(f64),
    /// A string literal (escapes resolved).
    Str(String),
    /// A character literal.
    Char(char),
    /// Punctuation: `{ } ( ) < > [ ] ; , : = + - * / % ~ | & ^ @`, or `::`, `<<`, `>>`.
    Punct(&'static str),
    /// A preprocessor line without its `#`, trimmed (`include "x.idl"`).
    Directive(String),
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Where it starts.
    pub pos: Pos,
}

const PUNCT2: [&str; 3] = ["::", "<<", ">>"];
const PUNCT1: &str = "{}()<>[];,:=+-*/%~|&^@";

/// Splits `src` (from `file`) into tokens.
pub fn lex(src: &str, file: &str) -> Result<Vec<Token>, IdlError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut at_line_start = true;
    let pos = |line, col| Pos {
        file: file.to_string(),
        line,
        col,
    };
    let err = |line, col, msg: String| IdlError::Syntax {
        pos: pos(line, col),
        msg,
    };
    while i < chars.len() {
        let c = chars[i];
        let advance = |n: usize, i: &mut usize, col: &mut u32| {
            *i += n;
            *col += n as u32;
        };
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            at_line_start = true;
            continue;
        }
        if c.is_whitespace() {
            advance(1, &mut i, &mut col);
            continue;
        }
        // Comments.
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            let (l0, c0) = (line, col);
            advance(2, &mut i, &mut col);
            loop {
                match chars.get(i) {
                    None => return Err(err(l0, c0, "unterminated comment".into())),
                    Some('*') if chars.get(i + 1) == Some(&'/') => {
                        advance(2, &mut i, &mut col);
                        break;
                    }
                    Some('\n') => {
                        i += 1;
                        line += 1;
                        col = 1;
                    }
                    Some(_) => advance(1, &mut i, &mut col),
                }
            }
            continue;
        }
        let start = pos(line, col);
        // Preprocessor lines (with `\` continuations).
        if c == '#' && at_line_start {
            let mut text = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '\n' {
                if chars[i] == '\\' && chars.get(i + 1) == Some(&'\n') {
                    i += 2;
                    line += 1;
                    continue;
                }
                text.push(chars[i]);
                i += 1;
            }
            col = 1;
            out.push(Token {
                tok: Tok::Directive(text.trim().to_string()),
                pos: start,
            });
            continue;
        }
        at_line_start = false;
        if c.is_ascii_alphabetic() || c == '_' {
            let s: String = chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                .collect();
            advance(s.chars().count(), &mut i, &mut col);
            out.push(Token {
                tok: Tok::Ident(s),
                pos: start,
            });
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let s: String = chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == '.')
                .collect();
            // An exponent sign belongs to the number (1e-3).
            let mut s = s;
            let mut n = s.chars().count();
            while (s.ends_with('e') || s.ends_with('E'))
                && !s.starts_with("0x")
                && matches!(chars.get(i + n), Some('+') | Some('-'))
            {
                s.push(chars[i + n]);
                n += 1;
                let more: String = chars[i + n..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                n += more.len();
                s.push_str(&more);
            }
            advance(n, &mut i, &mut col);
            let t = number(&s)
                .ok_or_else(|| err(start.line, start.col, format!("bad number {s:?}")))?;
            out.push(Token { tok: t, pos: start });
            continue;
        }
        if c == '"' || c == '\'' {
            let (l0, c0) = (line, col);
            advance(1, &mut i, &mut col);
            let mut s = String::new();
            loop {
                match chars.get(i) {
                    None | Some('\n') => {
                        return Err(err(l0, c0, "unterminated literal".into()));
                    }
                    Some(&q) if q == c => {
                        advance(1, &mut i, &mut col);
                        break;
                    }
                    Some('\\') => {
                        let e = chars.get(i + 1).copied().unwrap_or('\\');
                        s.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            '0' => '\0',
                            other => other,
                        });
                        advance(2, &mut i, &mut col);
                    }
                    Some(&ch) => {
                        s.push(ch);
                        advance(1, &mut i, &mut col);
                    }
                }
            }
            let tok = if c == '"' {
                Tok::Str(s)
            } else {
                let mut it = s.chars();
                match (it.next(), it.next()) {
                    (Some(ch), None) => Tok::Char(ch),
                    _ => {
                        return Err(err(
                            l0,
                            c0,
                            "a character literal holds one character".into(),
                        ))
                    }
                }
            };
            out.push(Token { tok, pos: start });
            continue;
        }
        let two: String = chars[i..].iter().take(2).collect();
        if let Some(p) = PUNCT2.iter().find(|p| **p == two) {
            advance(2, &mut i, &mut col);
            out.push(Token {
                tok: Tok::Punct(p),
                pos: start,
            });
            continue;
        }
        if let Some(k) = PUNCT1.find(c) {
            advance(1, &mut i, &mut col);
            out.push(Token {
                tok: Tok::Punct(&PUNCT1[k..k + 1]),
                pos: start,
            });
            continue;
        }
        return Err(err(line, col, format!("unexpected character {c:?}")));
    }
    Ok(out)
}

fn number(s: &str) -> Option<Tok> {
    let t = s.trim_end_matches(['d', 'D']);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i128::from_str_radix(h, 16).ok().map(Tok::Int);
    }
    if t.contains(['.', 'e', 'E']) {
        return t.parse().ok().map(Tok::Float);
    }
    if t.len() > 1 && t.starts_with('0') {
        return i128::from_str_radix(&t[1..], 8).ok().map(Tok::Int);
    }
    t.parse().ok().map(Tok::Int)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s, "t.idl")
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn tokens_comments_and_directives() {
        assert_eq!(
            toks("#include \"a.idl\"\nmodule M { // x\n /* y\n z */ const long N = 0x10; };"),
            vec![
                Tok::Directive("include \"a.idl\"".into()),
                Tok::Ident("module".into()),
                Tok::Ident("M".into()),
                Tok::Punct("{"),
                Tok::Ident("const".into()),
                Tok::Ident("long".into()),
                Tok::Ident("N".into()),
                Tok::Punct("="),
                Tok::Int(16),
                Tok::Punct(";"),
                Tok::Punct("}"),
                Tok::Punct(";"),
            ]
        );
        assert_eq!(
            toks("1.5e-3 017 'c' \"s\\n\" a::b"),
            vec![
                Tok::Float(1.5e-3),
                Tok::Int(15),
                Tok::Char('c'),
                Tok::Str("s\n".into()),
                Tok::Ident("a".into()),
                Tok::Punct("::"),
                Tok::Ident("b".into()),
            ]
        );
    }

    #[test]
    fn errors_point_at_line_and_column() {
        let e = lex("struct A {\n  long x; $\n};", "f.idl").unwrap_err();
        assert_eq!(e.to_string(), "f.idl:2:11: unexpected character '$'");
        let e = lex("/* open", "f.idl").unwrap_err();
        assert_eq!(e.to_string(), "f.idl:1:1: unterminated comment");
    }
}
