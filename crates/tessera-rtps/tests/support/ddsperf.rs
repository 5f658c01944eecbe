//! ddsperf's default type, shared by the CDR tests (`#[path]`-included).

use tessera_derive::TopicType;

/// ddsperf's `KeyedSeq`: a sequence number, the key, and `size − 12` octets of baggage.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
pub struct KeyedSeq {
    pub seq: u32,
    #[key]
    pub keyval: u32,
    pub baggage: Vec<u8>,
}
