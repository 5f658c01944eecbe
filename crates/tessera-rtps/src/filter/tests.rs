use super::eval::like;
use super::lex::{lex, Tok};

#[test]
fn like_wildcards() {
    for (text, pattern, want) in [
        ("sensor_12", "sensor%", true),
        ("sensor_12", "sensor\\_%", false),
        ("sensor_12", "%12", true),
        ("sensor_12", "%_1_", true),
        ("sensor_12", "s%r%2", true),
        ("sensor_12", "s%x%2", false),
        ("", "%", true),
        ("", "_", false),
        ("abc", "abc", true),
        ("abc", "ab", false),
        ("abc", "a_c", true),
        ("aXbXc", "a%b%c", true),
        ("aaa", "a%a%a%a", false),
        ("héllo", "h_llo", true),
    ] {
        assert_eq!(like(text, pattern), want, "{text:?} LIKE {pattern:?}");
    }
}

#[test]
fn lexer_columns_and_literals() {
    let t = lex("a.b>=-5 AND x<>0x1f OR s = 'it''s' and f < 1.5e3 %7").unwrap();
    let kinds: Vec<_> = t.iter().map(|t| t.kind.clone()).collect();
    assert_eq!(
        kinds,
        vec![
            Tok::Ident("a".into()),
            Tok::Dot,
            Tok::Ident("b".into()),
            Tok::Ge,
            Tok::Int(-5),
            Tok::And,
            Tok::Ident("x".into()),
            Tok::Ne,
            Tok::Int(31),
            Tok::Or,
            Tok::Ident("s".into()),
            Tok::Eq,
            Tok::Str("it's".into()),
            Tok::And,
            Tok::Ident("f".into()),
            Tok::Lt,
            Tok::Float(1500.0),
            Tok::Param(7),
        ]
    );
    assert_eq!(t[3].column, 4);
    assert_eq!(t[6].column, 13);
    for bad in ["'open", "%100", "%", "a # b", "12abc"] {
        assert!(lex(bad).is_err(), "{bad}");
    }
}
