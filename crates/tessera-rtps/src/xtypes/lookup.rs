//! The TypeLookup service's request and reply samples (DDS-XTypes 1.3 §7.6.3.3), as
//! serialized payloads (CDR2 encapsulation; Request and Reply are `@final`).
//!
//! ```text
//! Request { header { SampleIdentity requestId; string<255> instanceName }; Call }
//! Call    @appendable union (int32): getTypes -> @mutable { seq<TypeIdentifier> type_ids }
//!                                     getTypeDependencies -> { type_ids; seq<octet,32> cont }
//! Reply   { header { SampleIdentity relatedRequestId; int32 remoteEx }; Return }
//! Return  @appendable union (same discriminators) -> @appendable union (int32, 0 = OK) ->
//!           getTypes:  @mutable { seq<{TypeIdentifier; TypeObject}> types;
//!                                 seq<{TypeIdentifier; TypeIdentifier}> complete_to_minimal }
//!           getTypeDependencies: @mutable { seq<TypeIdentifierWithSize> dependent_typeids;
//!                                           seq<octet,32> continuation_point }
//! ```

use super::identifier::TypeIdentifier;
use super::info::{decode_with_size_seq, encode_with_size_seq, TypeIdentifierWithSize};
use super::object::TypeObject;
use super::{mutable, XTypesError};
use crate::cdr::{self, CdrReader, CdrWriter, Encoding};
use crate::types::Guid;

/// Discriminator of `getTypes` (the hashid of "getTypes").
pub const GET_TYPES: i32 = 0x0182_52D3;
/// Discriminator of `getTypeDependencies` (the hashid of "getDependencies").
pub const GET_DEPENDENCIES: i32 = 0x05AA_FB31;
/// Member id of `type_ids` (hashid).
pub const MEMBER_TYPE_IDS: u32 = 0x0C53_6065;
/// Member id of `continuation_point` (hashid).
pub const MEMBER_CONTINUATION_POINT: u32 = 0x0508_E3D2;
/// Member id of `types` in getTypes' result (hashid).
pub const MEMBER_TYPES: u32 = 0x0280_4AD1;
/// Member id of `complete_to_minimal` (hashid).
pub const MEMBER_COMPLETE_TO_MINIMAL: u32 = 0x0B8E_6577;
/// Member id of `dependent_typeids` (hashid).
pub const MEMBER_DEPENDENT_TYPEIDS: u32 = 0x0BA4_DFC9;

/// Most identifiers one request may carry (each takes at least one octet).
pub const MAX_REQUEST_IDS: usize = 1024;

/// DDS-RPC SampleIdentity: the writer GUID and sequence number of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SampleIdentity {
    /// The request writer.
    pub writer: Guid,
    /// The request's sequence number.
    pub seq: i64,
}

impl SampleIdentity {
    fn encode(&self, w: &mut CdrWriter<'_>) {
        w.write_bytes(&self.writer.to_bytes());
        w.write_i32((self.seq >> 32) as i32);
        w.write_u32(self.seq as u32);
    }

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, XTypesError> {
        let mut g = [0u8; 16];
        g.copy_from_slice(r.read_bytes(16)?);
        let high = r.read_i32()?;
        let low = r.read_u32()?;
        Ok(SampleIdentity {
            writer: Guid::from_bytes(g),
            seq: (i64::from(high) << 32) | i64::from(low),
        })
    }
}

/// What a request asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// The TypeObjects of these identifiers.
    GetTypes(Vec<TypeIdentifier>),
    /// The dependencies of these identifiers (from `continuation_point`, empty at first).
    GetTypeDependencies {
        /// The types.
        type_ids: Vec<TypeIdentifier>,
        /// Where a previous reply stopped.
        continuation_point: Vec<u8>,
    },
    /// An operation this service does not know (its discriminator).
    Unknown(i32),
}

/// A TypeLookup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Its identity (echoed in the reply).
    pub id: SampleIdentity,
    /// The service instance addressed ("dds.builtin.TOS." + GUID hex; not checked).
    pub instance_name: String,
    /// The call.
    pub call: Call,
}

impl Request {
    /// The serialized payload (CDR2_LE).
    pub fn to_payload(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(96);
        let at = cdr::begin_payload(&mut out, Encoding::XCDR2_LE);
        {
            let w = &mut CdrWriter::new(&mut out, Encoding::XCDR2_LE);
            self.id.encode(w);
            w.write_str(&self.instance_name);
            let u = w.begin_dheader();
            match &self.call {
                Call::GetTypes(ids) => {
                    w.write_i32(GET_TYPES);
                    let s = w.begin_dheader();
                    encode_ids_member(ids, w);
                    w.end_dheader(s);
                }
                Call::GetTypeDependencies {
                    type_ids,
                    continuation_point,
                } => {
                    w.write_i32(GET_DEPENDENCIES);
                    let s = w.begin_dheader();
                    encode_ids_member(type_ids, w);
                    let m = mutable::begin_member(w, MEMBER_CONTINUATION_POINT, false);
                    w.write_byte_seq(continuation_point);
                    mutable::end_member(w, m);
                    w.end_dheader(s);
                }
                Call::Unknown(d) => w.write_i32(*d),
            }
            w.end_dheader(u);
        }
        cdr::finish_payload(&mut out, at);
        out
    }

    /// Decodes a received request payload (CDR2, either byte order).
    pub fn decode(payload: &[u8]) -> Result<Self, XTypesError> {
        let (enc, body) = open(payload)?;
        let r = &mut CdrReader::new(body, enc);
        let id = SampleIdentity::decode(r)?;
        let instance_name = r.read_str()?.to_owned();
        let u = r.read_dheader()?;
        let disc = r.read_i32()?;
        let call = match disc {
            GET_TYPES | GET_DEPENDENCIES => {
                let end = r.read_dheader()?;
                let mut ids = Vec::new();
                let mut cont = Vec::new();
                while r.position() < end {
                    let m = mutable::read_member(r, end)?;
                    match m.id {
                        MEMBER_TYPE_IDS => ids = decode_ids(r)?,
                        MEMBER_CONTINUATION_POINT if disc == GET_DEPENDENCIES => {
                            let b = r.read_byte_seq()?;
                            if b.len() > 32 {
                                return Err(XTypesError::TooLarge);
                            }
                            cont = b.to_vec();
                        }
                        _ if m.must_understand => return Err(XTypesError::MustUnderstand(m.id)),
                        _ => {}
                    }
                    r.finish_dheader(m.end)?;
                }
                r.finish_dheader(end)?;
                if disc == GET_TYPES {
                    Call::GetTypes(ids)
                } else {
                    Call::GetTypeDependencies {
                        type_ids: ids,
                        continuation_point: cont,
                    }
                }
            }
            other => Call::Unknown(other),
        };
        r.finish_dheader(u)?;
        Ok(Request {
            id,
            instance_name,
            call,
        })
    }
}

/// What a reply returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Return {
    /// getTypes: identifier/TypeObject pairs (objects serialized canonically), and
    /// complete-to-minimal pairs.
    Types {
        /// The objects found.
        types: Vec<(TypeIdentifier, std::sync::Arc<Vec<u8>>)>,
        /// Complete identifiers with their minimal ones.
        complete_to_minimal: Vec<(TypeIdentifier, TypeIdentifier)>,
        /// Objects received of kinds Tessera does not model, with why (filled by `decode`
        /// only; skipped whole, so the other objects of the reply are kept).
        unsupported: Vec<(TypeIdentifier, XTypesError)>,
    },
    /// getTypeDependencies.
    Dependencies {
        /// The dependencies.
        dependent_typeids: Vec<TypeIdentifierWithSize>,
        /// Where to continue (empty: done).
        continuation_point: Vec<u8>,
    },
}

/// A TypeLookup reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The request answered.
    pub related: SampleIdentity,
    /// The remote exception code (0: OK).
    pub remote_ex: i32,
    /// The result.
    pub result: Return,
}

impl Reply {
    /// The serialized payload (CDR2_LE).
    pub fn to_payload(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        let at = cdr::begin_payload(&mut out, Encoding::XCDR2_LE);
        {
            let w = &mut CdrWriter::new(&mut out, Encoding::XCDR2_LE);
            self.related.encode(w);
            w.write_i32(self.remote_ex);
            let outer = w.begin_dheader();
            w.write_i32(match self.result {
                Return::Types { .. } => GET_TYPES,
                Return::Dependencies { .. } => GET_DEPENDENCIES,
            });
            let inner = w.begin_dheader();
            w.write_i32(0); // DDS_RETCODE_OK
            let s = w.begin_dheader();
            match &self.result {
                Return::Types {
                    types,
                    complete_to_minimal,
                    ..
                } => {
                    let m = mutable::begin_member(w, MEMBER_TYPES, false);
                    let d = w.begin_dheader();
                    w.write_len(types.len());
                    for (id, obj) in types {
                        id.encode(w);
                        // A serialized TypeObject starts with its 4-aligned DHEADER, and XCDR2
                        // never aligns beyond 4: its bytes drop in unchanged.
                        w.align(4);
                        w.write_bytes(obj);
                    }
                    w.end_dheader(d);
                    mutable::end_member(w, m);
                    let m = mutable::begin_member(w, MEMBER_COMPLETE_TO_MINIMAL, false);
                    let d = w.begin_dheader();
                    w.write_len(complete_to_minimal.len());
                    for (c, min) in complete_to_minimal {
                        c.encode(w);
                        min.encode(w);
                    }
                    w.end_dheader(d);
                    mutable::end_member(w, m);
                }
                Return::Dependencies {
                    dependent_typeids,
                    continuation_point,
                } => {
                    let m = mutable::begin_member(w, MEMBER_DEPENDENT_TYPEIDS, false);
                    encode_with_size_seq(dependent_typeids, w);
                    mutable::end_member(w, m);
                    let m = mutable::begin_member(w, MEMBER_CONTINUATION_POINT, false);
                    w.write_byte_seq(continuation_point);
                    mutable::end_member(w, m);
                }
            }
            w.end_dheader(s);
            w.end_dheader(inner);
            w.end_dheader(outer);
        }
        cdr::finish_payload(&mut out, at);
        out
    }

    /// Decodes a reply payload; the TypeObjects are decoded and re-serialized canonically.
    pub fn decode(payload: &[u8]) -> Result<Self, XTypesError> {
        let (enc, body) = open(payload)?;
        let r = &mut CdrReader::new(body, enc);
        let related = SampleIdentity::decode(r)?;
        let remote_ex = r.read_i32()?;
        let outer = r.read_dheader()?;
        let disc = r.read_i32()?;
        if disc != GET_TYPES && disc != GET_DEPENDENCIES {
            return Err(XTypesError::BadValue);
        }
        let inner = r.read_dheader()?;
        if r.read_i32()? != 0 {
            return Err(XTypesError::BadValue);
        }
        let end = r.read_dheader()?;
        let mut types = Vec::new();
        let mut complete_to_minimal = Vec::new();
        let mut unsupported = Vec::new();
        let mut deps = Vec::new();
        let mut cont = Vec::new();
        while r.position() < end {
            let m = mutable::read_member(r, end)?;
            match (disc, m.id) {
                (GET_TYPES, MEMBER_TYPES) => {
                    let d = r.read_dheader()?;
                    let n = r.read_len(9)?.min(MAX_REQUEST_IDS);
                    for _ in 0..n {
                        let id = TypeIdentifier::decode(r)?;
                        r.align(4)?;
                        // The object's own DHEADER says where it ends, whatever its kind.
                        let obj_end = r.clone().read_dheader()?;
                        match TypeObject::decode(r) {
                            Ok(obj) => types.push((id, std::sync::Arc::new(obj.to_bytes()))),
                            Err(
                                e @ (XTypesError::UnsupportedTypeObject(_)
                                | XTypesError::UnsupportedTypeIdentifier(_)
                                | XTypesError::UnsupportedAnnotation),
                            ) => {
                                unsupported.push((id, e));
                                r.seek(obj_end)?;
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    r.finish_dheader(d)?;
                }
                (GET_TYPES, MEMBER_COMPLETE_TO_MINIMAL) => {
                    let d = r.read_dheader()?;
                    let n = r.read_len(2)?.min(MAX_REQUEST_IDS);
                    for _ in 0..n {
                        let c = TypeIdentifier::decode(r)?;
                        let min = TypeIdentifier::decode(r)?;
                        complete_to_minimal.push((c, min));
                    }
                    r.finish_dheader(d)?;
                }
                (GET_DEPENDENCIES, MEMBER_DEPENDENT_TYPEIDS) => deps = decode_with_size_seq(r)?,
                (GET_DEPENDENCIES, MEMBER_CONTINUATION_POINT) => {
                    cont = r.read_byte_seq()?.to_vec();
                }
                _ if m.must_understand => return Err(XTypesError::MustUnderstand(m.id)),
                _ => {}
            }
            r.finish_dheader(m.end)?;
        }
        r.finish_dheader(end)?;
        r.finish_dheader(inner)?;
        r.finish_dheader(outer)?;
        let result = if disc == GET_TYPES {
            Return::Types {
                types,
                complete_to_minimal,
                unsupported,
            }
        } else {
            Return::Dependencies {
                dependent_typeids: deps,
                continuation_point: cont,
            }
        };
        Ok(Reply {
            related,
            remote_ex,
            result,
        })
    }
}

fn open(payload: &[u8]) -> Result<(Encoding, &[u8]), XTypesError> {
    let (enc, body) = cdr::parse_payload(payload)?;
    if enc.version != crate::cdr::CdrVersion::Xcdr2 {
        return Err(XTypesError::BadEncapsulation);
    }
    Ok((enc, body))
}

fn encode_ids_member(ids: &[TypeIdentifier], w: &mut CdrWriter<'_>) {
    let m = mutable::begin_member(w, MEMBER_TYPE_IDS, false);
    let d = w.begin_dheader();
    w.write_len(ids.len());
    for id in ids {
        id.encode(w);
    }
    w.end_dheader(d);
    mutable::end_member(w, m);
}

fn decode_ids(r: &mut CdrReader<'_>) -> Result<Vec<TypeIdentifier>, XTypesError> {
    let d = r.read_dheader()?;
    let n = r.read_len(1)?;
    if n > MAX_REQUEST_IDS {
        return Err(XTypesError::TooLarge);
    }
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(TypeIdentifier::decode(r)?);
    }
    r.finish_dheader(d)?;
    Ok(ids)
}
