//! Parses arbitrary text as a content-filter expression (a peer's PID_CONTENT_FILTER_PROPERTY
//! carries one), checks it against a type with every member kind, binds parameters taken from
//! the same input and evaluates a sample: nothing may panic or overflow the stack.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_rtps::cdr::CdrType;
use tessera_rtps::filter::Filter;

#[derive(Clone, Copy, tessera_derive::TopicEnum)]
#[topic(cdr_path = "tessera_rtps::cdr")]
enum Color {
    Red,
    Green,
}

#[derive(tessera_derive::TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct Inner {
    x: i32,
    y: f64,
}

#[derive(tessera_derive::TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct Subject {
    id: u32,
    name: String,
    color: Color,
    at: Inner,
    seq: Vec<i16>,
    arr: [u8; 3],
    ok: bool,
    c: char,
    #[optional]
    note: Option<String>,
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // "expression\nparam0\nparam1...": parameters are attacker-controlled too.
    let mut lines = text.split('\n');
    let expr = lines.next().unwrap_or("");
    let params: Vec<String> = lines.take(101).map(str::to_owned).collect();
    let _ = Filter::check_syntax(expr);
    if let Ok(f) = Filter::new(expr, &Subject::type_desc(), &params) {
        let s = Subject {
            id: 7,
            name: "sensor_7".into(),
            color: Color::Green,
            at: Inner { x: -1, y: 2.5 },
            seq: vec![1, 2],
            arr: [1, 2, 3],
            ok: true,
            c: 'q',
            note: None,
        };
        let _ = f.matches_sample(&s);
        let _ = f.signature();
    }
});
