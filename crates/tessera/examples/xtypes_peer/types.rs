//! The types of the XTypes peer, shared with `tests/derive_xtypes.rs` (which checks that their
//! identifiers equal those PyPI's cyclonedds computes for the same IDL).

use tessera::TopicType;

/// The interoperability suite's ShapeType, with `octet` for its `uint8` (Rust's `u8`).
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "ShapeType", extensibility = "appendable")]
pub struct Shape {
    #[key]
    #[bound(128)]
    pub color: String,
    pub x: i32,
    pub y: i32,
    pub shapesize: i32,
    pub additional_payload_size: Vec<u8>,
}

#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "xt::Mut", extensibility = "mutable")]
pub struct Mut {
    #[key]
    pub id: i32,
    pub text: String,
    #[optional]
    pub maybe: Option<i64>,
    pub list: Vec<i32>,
}
