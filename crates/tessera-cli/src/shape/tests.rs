//! Tests of `tessera shape`: option parsing, the sample line, the type's identifiers, names
//! and motion.

use tessera::qos::{Durability, History, Presentation, PresentationAccessScope};

use super::publish::{Motion, AREA_HEIGHT, AREA_WIDTH};
use super::qos::{history, presentation};
use super::*;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn parses_the_suites_options() {
    let a = parse(&args(
        "-P -t Circle -c RED -d 3 -b -k 0 -f 50 -s 20 -p p1 -D l -x 1 -w -z 0 \
         --write-period 10 --num-instances 3 --num-topics 2 --final-instance-state d \
         --additional-payload-size 100 --lifespan 40 --size-modulo 4",
    ))
    .unwrap();
    assert_eq!(a.role, Role::Publish);
    assert_eq!(a.topic, "Circle");
    assert_eq!(a.color.as_deref(), Some("RED"));
    assert_eq!(a.domain, 3);
    assert!(!a.reliable);
    assert_eq!(history(&a), Some(History::KeepAll));
    assert_eq!(a.deadline, Some(Duration::from_millis(50)));
    assert_eq!(a.strength, 20);
    assert_eq!(a.durability, Durability::TransientLocal);
    assert_eq!(a.representation, 1);
    assert!(a.print_writes);
    assert_eq!(a.size, 0);
    assert_eq!(a.instances, 3);
    assert_eq!(a.topics, 2);
    assert_eq!(a.final_state, Some(FinalState::Dispose));
    assert_eq!(a.payload, 100);
    assert_eq!(a.size_modulo, Some(4));
}

#[test]
fn refuses_what_the_suite_never_sends() {
    assert!(parse(&args("-t Square")).is_err(), "no role");
    assert!(parse(&args("-S -c RED --cft x>1")).is_err());
    assert!(parse(&args("-P -D q")).is_err());
    assert!(parse(&args("-P -k")).is_err());
    assert!(parse(&args("-P --bogus")).is_err());
}

#[test]
fn presentation_options_are_parsed_group_scope_included() {
    let a = parse(&args(
        "-P --coherent --ordered --access-scope t --coherent-sample-count 3",
    ))
    .unwrap();
    assert!(a.unsupported.is_empty());
    assert_eq!(
        presentation(&a),
        Presentation {
            access_scope: PresentationAccessScope::Topic,
            coherent_access: true,
            ordered_access: true,
        }
    );
    assert_eq!(a.coherent_sample_count, 3);
    let g = parse(&args("-S --coherent --access-scope g")).unwrap();
    assert!(g.unsupported.is_empty());
    assert_eq!(g.access_scope, PresentationAccessScope::Group);
    assert!(parse(&args("-S --access-scope x")).is_err());
}

#[test]
fn sample_line_matches_the_reference_format() {
    let s = ShapeType {
        color: "BLUE".into(),
        x: 7,
        y: 123,
        shapesize: 30,
        additional_payload_size: vec![0, 0, 255],
    };
    assert_eq!(
        sample_line("Square", &s),
        "Square     BLUE       007 123 [30] {255}"
    );
    let plain = ShapeType {
        additional_payload_size: Vec::new(),
        ..s
    };
    assert_eq!(
        sample_line("Square", &plain),
        "Square     BLUE       007 123 [30]"
    );
}

#[test]
fn shape_type_has_the_suites_identifiers() {
    // Cyclone DDS 11's identifiers for the suite's IDL (xtypes.md §3).
    let ours = ShapeType::type_bundle();
    let suite = tessera::rtps::xtypes::TypeBundle::new(&tessera::rtps::xtypes::shape_type());
    assert_eq!(ours.minimal, suite.minimal);
    assert_eq!(ours.complete, suite.complete);
}

#[test]
fn names_follow_the_suite() {
    assert_eq!(nth_name("Square", 0), "Square");
    assert_eq!(nth_name("Square", 2), "Square2");
}

#[test]
fn shapes_stay_in_the_area() {
    let mut m = Motion::new(7);
    for _ in 0..10_000 {
        m.step(30);
        assert!((0..=AREA_WIDTH - 30).contains(&m.x));
        assert!((0..=AREA_HEIGHT - 30).contains(&m.y));
    }
}
