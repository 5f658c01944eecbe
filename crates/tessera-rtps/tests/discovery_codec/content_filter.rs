//! PID_CONTENT_FILTER_PROPERTY in both byte orders and round-tripped; a malformed one is
//! ignored without losing the reader.

use super::{endpoint_guid, Raw};
use tessera_rtps::discovery::*;
use tessera_rtps::types::entity_kind;
use tessera_rtps::wire::pid;

// ------------------------------------------------------------------ content filters

/// PID_CONTENT_FILTER_PROPERTY built by hand: four strings and a string sequence, each
/// string 4-aligned from the value's start.
fn content_filter_value(raw: &Raw, params: &[&str]) -> Vec<u8> {
    let mut v = Vec::new();
    let pad = |v: &mut Vec<u8>| {
        while v.len() % 4 != 0 {
            v.push(0);
        }
    };
    for s in ["cft_a", "Square", "DDSSQL", "x > %0 AND color = 'RED'"] {
        v.extend_from_slice(&raw.string(s));
        pad(&mut v);
    }
    v.extend_from_slice(&raw.u32b(params.len() as u32));
    for p in params {
        v.extend_from_slice(&raw.string(p));
        pad(&mut v);
    }
    v
}

fn reader_with_filter(le: bool, value: impl FnOnce(&Raw) -> Vec<u8>) -> Vec<u8> {
    let g = endpoint_guid(0x207, entity_kind::USER_READER_WITH_KEY);
    let raw = Raw::new(le)
        .param(pid::ENDPOINT_GUID, &g.to_bytes())
        .str_param(pid::TOPIC_NAME, "Square")
        .str_param(pid::TYPE_NAME, "ShapeType");
    let v = value(&raw);
    raw.param(pid::CONTENT_FILTER_PROPERTY, &v).finish()
}

#[test]
fn content_filter_property_both_byte_orders_and_round_trip() {
    for le in [true, false] {
        let bytes = reader_with_filter(le, |r| content_filter_value(r, &["10", "'x'"]));
        let d = DiscoveredReaderData::decode(&bytes).unwrap();
        let cf = d.content_filter.clone().expect("filter decoded");
        assert_eq!(cf.content_filtered_topic_name, "cft_a");
        assert_eq!(cf.related_topic_name, "Square");
        assert_eq!(cf.filter_class_name, "DDSSQL");
        assert_eq!(cf.filter_expression, "x > %0 AND color = 'RED'");
        assert_eq!(cf.expression_parameters, ["10", "'x'"]);
        // Ours encodes little-endian with the same layout.
        let again = DiscoveredReaderData::decode(&d.to_payload()).unwrap();
        assert_eq!(again.content_filter, Some(cf));
        if le {
            let ours = d.to_payload();
            let theirs = content_filter_value(&Raw::new(true), &["10", "'x'"]);
            assert!(
                ours.windows(theirs.len()).any(|w| w == theirs.as_slice()),
                "our value is laid out as the hand-built one"
            );
        }
    }
    let none = reader_with_filter(true, |r| content_filter_value(r, &[]));
    let d = DiscoveredReaderData::decode(&none).unwrap();
    assert_eq!(d.content_filter.unwrap().expression_parameters.len(), 0);
}

#[test]
fn malformed_content_filter_is_ignored_not_the_reader() {
    let cases: [fn(&Raw) -> Vec<u8>; 3] = [
        // a string whose length runs past the value
        |r: &Raw| {
            let mut v = r.u32b(1000).to_vec();
            v.extend_from_slice(b"abc\0");
            v
        },
        // too many parameters
        |r: &Raw| {
            let mut v = content_filter_value(r, &[]);
            let n = v.len() - 4;
            v[n..].copy_from_slice(&r.u32b(1_000_000));
            v
        },
        // truncated before the parameter count
        |r: &Raw| r.string("only one"),
    ];
    for (i, c) in cases.into_iter().enumerate() {
        let bytes = reader_with_filter(true, c);
        let d = DiscoveredReaderData::decode(&bytes).unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(d.content_filter, None, "case {i}");
        assert_eq!(d.topic_name, "Square");
    }
}
