//! The filter language end to end: expressions × samples of derived types, the errors'
//! kinds and columns, parameters, and a property test that parsing never panics.

use proptest::prelude::*;
use tessera_rtps::cdr::{CdrType, TopicType};
use tessera_rtps::filter::{ErrorKind, Filter, FilterError};

#[derive(Debug, Clone, Copy, PartialEq, tessera_derive::TopicEnum)]
#[topic(cdr_path = "tessera_rtps::cdr")]
enum Color {
    Red,
    Green = 5,
    Blue,
}

#[derive(Debug, Clone, PartialEq, tessera_derive::TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct Point {
    x: i32,
    y: f64,
}

#[derive(Debug, Clone, PartialEq, tessera_derive::TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr", extensibility = "appendable")]
struct Reading {
    #[key]
    id: u32,
    name: String,
    color: Color,
    at: Point,
    samples: Vec<i16>,
    grid: [u8; 3],
    ok: bool,
    grade: char,
    big: u64,
    #[optional]
    note: Option<String>,
}

fn sample(id: u32, name: &str, color: Color, x: i32, y: f64) -> Reading {
    Reading {
        id,
        name: name.into(),
        color,
        at: Point { x, y },
        samples: vec![10, 20, 30],
        grid: [1, 2, 3],
        ok: id % 2 == 0,
        grade: 'B',
        big: u64::MAX,
        note: (id == 3).then(|| "three".to_owned()),
    }
}

fn filter(expr: &str, params: &[&str]) -> Result<Filter, FilterError> {
    let params: Vec<String> = params.iter().map(|s| (*s).to_owned()).collect();
    Filter::new(expr, &Reading::type_desc(), &params)
}

#[test]
fn expressions_against_samples() {
    let samples = [
        sample(1, "sensor_1", Color::Red, 5, 0.5),
        sample(2, "sensor_22", Color::Green, -3, 2.5),
        sample(3, "probe", Color::Blue, 100, -1.0),
    ];
    // expression, parameters, which of the three samples pass
    let table: &[(&str, &[&str], [bool; 3])] = &[
        ("id = 2", &[], [false, true, false]),
        ("id <> 2", &[], [true, false, true]),
        ("id != 2", &[], [true, false, true]),
        ("id > 1 AND id < 3", &[], [false, true, false]),
        ("id >= 2", &[], [false, true, true]),
        ("id <= 2", &[], [true, true, false]),
        ("2 < id", &[], [false, false, true]),
        ("id = 1 OR id = 3", &[], [true, false, true]),
        ("NOT (id = 1 OR id = 3)", &[], [false, true, false]),
        ("not id = 1 and not id = 2", &[], [false, false, true]),
        ("id BETWEEN 2 AND 3", &[], [false, true, true]),
        ("id NOT BETWEEN 2 AND 3", &[], [true, false, false]),
        ("at.x BETWEEN -5 AND 5", &[], [true, true, false]),
        ("at.y > 0", &[], [true, true, false]),
        ("at.y > 0.75", &[], [false, true, false]),
        ("at.x < at.y", &[], [false, true, false]),
        ("at.x = id", &[], [false, false, false]),
        ("name LIKE 'sensor%'", &[], [true, true, false]),
        ("name LIKE 'sensor__'", &[], [true, false, false]),
        ("name LIKE 'sensor_2_'", &[], [false, true, false]),
        ("name NOT LIKE '%1'", &[], [false, true, true]),
        ("name = 'probe'", &[], [false, false, true]),
        ("name > 'q'", &[], [true, true, false]),
        ("color = Red", &[], [true, false, false]),
        ("color = 'Green'", &[], [false, true, false]),
        ("color = Green", &[], [false, true, false]),
        ("color <> Green", &[], [true, false, true]),
        ("color >= Green", &[], [false, true, true]),
        ("color = 6", &[], [false, false, true]),
        ("samples[1] = 20", &[], [true, true, true]),
        ("samples[3] = 20", &[], [false, false, false]),
        ("NOT samples[3] = 20", &[], [true, true, true]),
        ("grid[2] = 3 AND grid[0] < grid[1]", &[], [true, true, true]),
        ("ok = TRUE", &[], [false, true, false]),
        ("ok = false", &[], [true, false, true]),
        ("grade = 'B'", &[], [true, true, true]),
        ("grade LIKE '_'", &[], [true, true, true]),
        ("big = 18446744073709551615", &[], [true, true, true]),
        ("big > 0x10", &[], [true, true, true]),
        ("note = 'three'", &[], [false, false, true]),
        ("note LIKE '%'", &[], [false, false, true]),
        ("NOT note = 'three'", &[], [true, true, false]),
        ("id = %0", &["2"], [false, true, false]),
        ("id BETWEEN %0 AND %1", &["1", "2"], [true, true, false]),
        ("name = %0", &["'probe'"], [false, false, true]),
        ("name = %0", &["probe"], [false, false, true]),
        ("name LIKE %0", &["sensor%"], [true, true, false]),
        ("color = %0", &["Blue"], [false, false, true]),
        ("color = %0", &["'Red'"], [true, false, false]),
        ("at.y < %0 OR id = %1", &["0", "1"], [true, false, true]),
        ("at.y < %0", &["1"], [true, false, true]),
        ("id = %1 OR id = %1", &["9", "3"], [false, false, true]),
        ("((id = 1))", &[], [true, false, false]),
        ("id = 1 OR id = 2 AND id = 3", &[], [true, false, false]),
        ("(id = 1 OR id = 2) AND id = 2", &[], [false, true, false]),
    ];
    for (expr, params, want) in table {
        let f = filter(expr, params).unwrap_or_else(|e| panic!("{expr}: {e}"));
        for (s, want) in samples.iter().zip(want) {
            assert_eq!(
                f.matches_sample(s).unwrap(),
                *want,
                "{expr} {params:?} on id {}",
                s.id
            );
        }
    }
}

#[test]
fn errors_name_the_member_or_mismatch_with_its_column() {
    let cases: &[(&str, &[&str], ErrorKind, u32, &str)] = &[
        ("idx = 1", &[], ErrorKind::UnknownMember, 1, "idx"),
        (
            "id = 1 AND at.z > 2",
            &[],
            ErrorKind::UnknownMember,
            12,
            "at.z",
        ),
        (
            "name.first = 'a'",
            &[],
            ErrorKind::UnknownMember,
            1,
            "name.first",
        ),
        ("id[0] = 1", &[], ErrorKind::UnknownMember, 1, "id[0]"),
        ("grid[3] = 1", &[], ErrorKind::UnknownMember, 1, "past"),
        ("id = 'seven'", &[], ErrorKind::TypeMismatch, 6, "string"),
        ("name = 7", &[], ErrorKind::TypeMismatch, 8, "integer"),
        ("at = 1", &[], ErrorKind::TypeMismatch, 1, "not a primitive"),
        (
            "samples = 1",
            &[],
            ErrorKind::TypeMismatch,
            1,
            "not a primitive",
        ),
        (
            "id LIKE '1%'",
            &[],
            ErrorKind::TypeMismatch,
            1,
            "LIKE needs a string",
        ),
        ("color = PURPLE", &[], ErrorKind::UnknownMember, 9, "PURPLE"),
        (
            "color = 'Purple'",
            &[],
            ErrorKind::TypeMismatch,
            9,
            "Purple",
        ),
        (
            "name = id",
            &[],
            ErrorKind::TypeMismatch,
            8,
            "cannot be compared",
        ),
        (
            "grade = 'AB'",
            &[],
            ErrorKind::TypeMismatch,
            9,
            "one character",
        ),
        ("ok = 2", &[], ErrorKind::TypeMismatch, 6, "boolean"),
        ("1 = 1", &[], ErrorKind::Syntax, 1, "member on one side"),
        ("id =", &[], ErrorKind::Syntax, 5, "expected"),
        ("id = 1 AND", &[], ErrorKind::Syntax, 11, "expected"),
        ("(id = 1", &[], ErrorKind::Syntax, 8, "`)`"),
        ("id = 1)", &[], ErrorKind::Syntax, 7, "end"),
        ("id BETWEEN 1 OR 2", &[], ErrorKind::Syntax, 14, "AND"),
        ("id NOT = 1", &[], ErrorKind::Syntax, 8, "NOT"),
        ("", &[], ErrorKind::Syntax, 1, "empty"),
        ("id = %1", &["1"], ErrorKind::Parameter, 6, "%1"),
        ("id = %0", &["abc"], ErrorKind::Parameter, 6, "%0"),
        ("color = %0", &["Purple"], ErrorKind::Parameter, 9, "Purple"),
    ];
    for (expr, params, kind, column, needle) in cases {
        let e = filter(expr, params).expect_err(expr);
        assert_eq!((e.kind, e.column), (*kind, *column), "{expr}: {e}");
        assert!(e.message.contains(needle), "{expr}: {e}");
    }
}

#[test]
fn parameters_change_and_a_bad_set_keeps_the_old_ones() {
    let mut f = filter("id = %0 AND name LIKE %1", &["1", "sensor%"]).unwrap();
    let s1 = sample(1, "sensor_1", Color::Red, 0, 0.0);
    let s2 = sample(2, "sensor_2", Color::Red, 0, 0.0);
    assert!(f.matches_sample(&s1).unwrap());
    let sig = f.signature();
    f.set_parameters(&["2".into(), "sensor%".into()]).unwrap();
    assert!(!f.matches_sample(&s1).unwrap());
    assert!(f.matches_sample(&s2).unwrap());
    assert_ne!(f.signature(), sig);
    assert!(f.set_parameters(&["x".into(), "y".into()]).is_err());
    assert_eq!(f.parameters(), ["2", "sensor%"]);
    assert!(f.matches_sample(&s2).unwrap());
    assert_eq!(
        filter("id = %0 AND name LIKE %1", &["2", "sensor%"])
            .unwrap()
            .signature(),
        f.signature()
    );
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = format!("{}id = 1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(filter(&deep, &[]).unwrap_err().kind, ErrorKind::Syntax);
    let nots = format!("{}id = 1", "NOT ".repeat(10_000));
    assert_eq!(filter(&nots, &[]).unwrap_err().kind, ErrorKind::Syntax);
    // Long flat chains are fine (the tree is built iteratively per level).
    let flat = vec!["id = 1"; 2000].join(" OR ");
    assert!(filter(&flat, &[]).is_ok());
}

/// A hand-written type has no member access: the derive-free default says so.
#[test]
fn derived_types_are_filterable() {
    const { assert!(<Reading as CdrType>::FILTERABLE) };
    const { assert!(<Vec<Point> as CdrType>::FILTERABLE) };
    assert_eq!(Reading::TYPE_NAME, "Reading");
}

proptest! {
    #[test]
    fn parse_never_panics(s in "\\PC{0,80}") {
        let _ = Filter::check_syntax(&s);
        let _ = filter(&s, &["1", "'a'", "x"]);
    }

    #[test]
    fn grammar_shaped_input_never_panics(
        parts in proptest::collection::vec(prop_oneof![
            Just("id"), Just("at.x"), Just("name"), Just("samples[1]"), Just("color"),
            Just("="), Just("<>"), Just("<"), Just(">="), Just("BETWEEN"), Just("LIKE"),
            Just("AND"), Just("OR"), Just("NOT"), Just("("), Just(")"), Just("%0"),
            Just("1"), Just("-2.5"), Just("'a%'"), Just("Red"), Just("TRUE"),
        ], 0..24)
    ) {
        let expr = parts.join(" ");
        if let Ok(f) = filter(&expr, &["3", "x"]) {
            let _ = f.matches_sample(&sample(1, "a", Color::Red, 0, 0.0));
        }
    }
}

/// A hand-written type: no member access unless it writes one.
struct Manual(u32);

impl CdrType for Manual {
    const MIN_SIZE: usize = 4;
    const KEY_EXTENT: tessera_rtps::cdr::KeyExtent = tessera_rtps::cdr::extent_primitive(4);
    fn type_desc() -> tessera_rtps::xtypes::TypeDesc {
        use tessera_rtps::xtypes::{Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc};
        TypeDesc::Struct(std::sync::Arc::new(StructDesc {
            name: "Manual".into(),
            extensibility: Extensibility::Final,
            members: vec![MemberDesc::new(
                "v",
                0,
                TypeDesc::Primitive(Primitive::UInt32),
            )],
        }))
    }
    fn write_cdr(&self, w: &mut tessera_rtps::cdr::CdrWriter<'_>) {
        w.write_u32(self.0)
    }
    fn read_cdr(
        r: &mut tessera_rtps::cdr::CdrReader<'_>,
    ) -> Result<Self, tessera_rtps::cdr::CdrError> {
        r.read_u32().map(Manual)
    }
    fn transcode_cdr_key(
        r: &mut tessera_rtps::cdr::CdrReader<'_>,
        w: &mut tessera_rtps::cdr::CdrWriter<'_>,
    ) -> Result<(), tessera_rtps::cdr::CdrError> {
        w.write_u32(r.read_u32()?);
        Ok(())
    }
}

#[test]
fn hand_written_types_report_not_filterable() {
    const { assert!(!<Manual as CdrType>::FILTERABLE) };
    // The expression fits the type's description, but the type gives no values.
    let f = Filter::new("v = 1", &Manual::type_desc(), &[]).unwrap();
    assert_eq!(
        f.matches_sample(&Manual(1)),
        Err(tessera_rtps::filter::NotFilterable)
    );
}
