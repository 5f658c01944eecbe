//! PID_TYPE_INFORMATION in SEDP: ours goes out as Cyclone expects it; a peer's that does not
//! decode is ignored and flagged, never a reason to drop the endpoint.

use std::sync::Arc;
use tessera_rtps::discovery::{DiscoveredReaderData, DiscoveredWriterData};
use tessera_rtps::types::{EntityId, Guid, GuidPrefix};
use tessera_rtps::wire::{pid, ParameterList};
use tessera_rtps::xtypes::{shape_type, TypeBundle};

fn shape() -> TypeBundle {
    TypeBundle::new(&shape_type())
}

fn writer() -> DiscoveredWriterData {
    let g = Guid::new(GuidPrefix([7; 12]), EntityId([0, 0, 1, 0x02]));
    DiscoveredWriterData::new(g, "Square", "ShapeType")
}

fn type_information_param(payload: &[u8]) -> Option<Vec<u8>> {
    let pl = ParameterList::parse(&payload[4..], true).unwrap();
    pl.get(pid::TYPE_INFORMATION).map(<[u8]>::to_vec)
}

#[test]
fn announced_type_information_is_the_xcdr2_value() {
    let b = shape();
    let mut w = writer();
    assert_eq!(
        type_information_param(&w.to_payload()),
        None,
        "absent unless set"
    );
    w.type_information = Some(Arc::new(b.information.clone()));
    let payload = w.to_payload();
    let value = type_information_param(&payload).unwrap();
    assert_eq!(value, b.information.to_bytes(false));
    assert_eq!(value.len(), 100);
    let back = DiscoveredWriterData::decode(&payload).unwrap();
    assert_eq!(back.type_information, w.type_information);
    assert!(!back.type_information_rejected);

    let g = Guid::new(GuidPrefix([7; 12]), EntityId([0, 0, 2, 0x07]));
    let mut r = DiscoveredReaderData::new(g, "Square", "ShapeType");
    r.type_information = Some(Arc::new(b.information.clone()));
    let back = DiscoveredReaderData::decode(&r.to_payload()).unwrap();
    assert_eq!(back.type_information, r.type_information);
}

/// Replaces the value of PID_TYPE_INFORMATION in a payload with `value` (same length).
fn with_value(mut payload: Vec<u8>, value: &[u8]) -> Vec<u8> {
    let good = type_information_param(&payload).unwrap();
    let at = payload
        .windows(good.len())
        .position(|w| w == good.as_slice())
        .unwrap();
    let mut v = value.to_vec();
    v.resize(good.len(), 0);
    payload[at..at + good.len()].copy_from_slice(&v);
    payload
}

#[test]
fn an_undecodable_type_information_keeps_the_endpoint() {
    let mut w = writer();
    w.type_information = Some(Arc::new(shape().information));
    // What Fast DDS 2.9 sends: an encapsulation header and classic CDR.
    let fast = with_value(w.to_payload(), &[0, 1, 0, 0, 0xf1, 0, 0, 0, 0x4c, 0, 0, 0]);
    let back = DiscoveredWriterData::decode(&fast).expect("the endpoint survives");
    assert_eq!(back.type_information, None);
    assert!(back.type_information_rejected);
    assert_eq!(back.topic_name, "Square");
    // Minimal and complete swapped: Cyclone refuses such a value, we ignore it.
    let b = shape();
    let mut swapped = b.information.clone();
    std::mem::swap(&mut swapped.minimal, &mut swapped.complete);
    let bad = with_value(w.to_payload(), &swapped.to_bytes(false));
    let back = DiscoveredWriterData::decode(&bad).unwrap();
    assert!(back.type_information_rejected && back.type_information.is_none());
}

mod matching {
    use super::*;
    use tessera_rtps::discovery::{evaluate_match, MatchOutcome, NoMatchReason};
    use tessera_rtps::qos::TypeConsistencyKind;
    use tessera_rtps::xtypes::{Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc};

    fn other_type() -> TypeBundle {
        TypeBundle::new(&TypeDesc::Struct(Arc::new(StructDesc {
            name: "Other".into(),
            extensibility: Extensibility::Final,
            members: vec![MemberDesc::new(
                "x",
                0,
                TypeDesc::Primitive(Primitive::Int32),
            )],
        })))
    }

    fn pair(
        w_type: (&str, Option<&TypeBundle>),
        r_type: (&str, Option<&TypeBundle>),
    ) -> (DiscoveredWriterData, DiscoveredReaderData) {
        let mut w = writer();
        w.type_name = w_type.0.into();
        w.type_information = w_type.1.map(|b| Arc::new(b.information.clone()));
        let g = Guid::new(GuidPrefix([8; 12]), EntityId([0, 0, 2, 0x07]));
        let mut r = DiscoveredReaderData::new(g, "Square", r_type.0);
        r.type_information = r_type.1.map(|b| Arc::new(b.information.clone()));
        (w, r)
    }

    #[test]
    fn equal_identifiers_match_whatever_the_names() {
        let s = shape();
        let (w, r) = pair(("ShapeType", Some(&s)), ("Shape", Some(&s)));
        assert_eq!(evaluate_match(&w, &r), MatchOutcome::Match);
        // Without type information on one side, names decide.
        let (w, r) = pair(("ShapeType", None), ("Shape", Some(&s)));
        assert_eq!(
            evaluate_match(&w, &r),
            MatchOutcome::NoMatch(NoMatchReason::TypeName)
        );
    }

    #[test]
    fn disallow_type_coercion_needs_equal_identifiers() {
        let (s, o) = (shape(), other_type());
        // ALLOW (default): different identifiers fall back to the names (the peer's
        // TypeObjects are not fetched).
        let (w, mut r) = pair(("ShapeType", Some(&o)), ("ShapeType", Some(&s)));
        assert_eq!(evaluate_match(&w, &r), MatchOutcome::Match);
        r.qos.type_consistency.kind = TypeConsistencyKind::DisallowTypeCoercion;
        assert_eq!(
            evaluate_match(&w, &r),
            MatchOutcome::NoMatch(NoMatchReason::TypeMismatch)
        );
    }

    #[test]
    fn force_type_validation_refuses_a_writer_without_type_information() {
        let s = shape();
        let (w, mut r) = pair(("ShapeType", None), ("ShapeType", Some(&s)));
        assert_eq!(evaluate_match(&w, &r), MatchOutcome::Match);
        r.qos.type_consistency.force_type_validation = true;
        assert_eq!(
            evaluate_match(&w, &r),
            MatchOutcome::NoMatch(NoMatchReason::TypeMismatch)
        );
    }
}
