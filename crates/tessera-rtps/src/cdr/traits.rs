//! The [`CdrType`] and [`TopicType`] traits and the key-size arithmetic the derive uses.

use super::{CdrError, CdrReader, CdrWriter};

/// The serialized extent of a value's *key form* in XCDR2 (maximum alignment 4), for each
/// start offset modulo 4: `e[m]` is the number of bytes (padding included) the value occupies
/// when it starts at an offset `≡ m (mod 4)`. `None` means unbounded (strings, sequences).
///
/// Four numbers are enough because XCDR2 never aligns to more than 4; the derive composes them
/// with [`extent_then`] so that `KEY_MAX_SIZE` is exact, which decides between a zero-padded
/// key hash and an MD5 one.
pub type KeyExtent = Option<[usize; 4]>;

/// The extent of nothing: zero bytes at any offset.
pub const EXTENT_EMPTY: KeyExtent = Some([0; 4]);

/// The extent of a primitive of `size` bytes (1, 2, 4 or 8), aligned to `min(size, 4)`.
pub const fn extent_primitive(size: usize) -> KeyExtent {
    let a = if size < 4 { size } else { 4 };
    let mut out = [0; 4];
    let mut m = 0;
    while m < 4 {
        out[m] = ((a - m % a) % a) + size;
        m += 1;
    }
    Some(out)
}

/// The extent of `a` followed by `b`.
pub const fn extent_then(a: KeyExtent, b: KeyExtent) -> KeyExtent {
    match (a, b) {
        (Some(a), Some(b)) => {
            let mut out = [0; 4];
            let mut m = 0;
            while m < 4 {
                let mid = m + a[m];
                out[m] = a[m] + b[mid % 4];
                m += 1;
            }
            Some(out)
        }
        _ => None,
    }
}

/// The larger of two extents at each start offset: a value that is one of two shapes (the
/// members of a union).
pub const fn extent_max(a: KeyExtent, b: KeyExtent) -> KeyExtent {
    match (a, b) {
        (Some(a), Some(b)) => {
            let mut out = [0; 4];
            let mut m = 0;
            while m < 4 {
                out[m] = if a[m] > b[m] { a[m] } else { b[m] };
                m += 1;
            }
            Some(out)
        }
        _ => None,
    }
}

/// The extent of `n` consecutive values of extent `e` (a fixed array).
pub const fn extent_repeat(e: KeyExtent, n: usize) -> KeyExtent {
    if n == 0 {
        return EXTENT_EMPTY;
    }
    let e = match e {
        Some(e) => e,
        None => return None,
    };
    let mut out = [0; 4];
    let mut m = 0;
    while m < 4 {
        // The offset modulo 4 follows a map on four states, so after at most 4 steps it is on
        // a cycle whose length divides 12: simulate a prefix, then jump whole periods.
        let mut cur = m;
        let mut i = 0;
        while i < n && i < 4 {
            cur += e[cur % 4];
            i += 1;
        }
        if i < n {
            let mut c2 = cur;
            let mut j = 0;
            while j < 12 {
                c2 += e[c2 % 4];
                j += 1;
            }
            let reps = (n - i) / 12;
            cur += reps * (c2 - cur);
            i += reps * 12;
            while i < n {
                cur += e[cur % 4];
                i += 1;
            }
        }
        out[m] = cur - m;
        m += 1;
    }
    Some(out)
}

/// One member of [`TopicType::FIXED_KEY`]: its [`CdrType::FLAT`] layout and whether it is a
/// key member.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlatMember {
    /// The member type's [`CdrType::FLAT`].
    pub flat: Option<(usize, usize)>,
    /// Whether the member is part of the key.
    pub key: bool,
}

/// A type that can be (de)serialized as a member of a topic type: the primitives, `String`,
/// `Vec<T>` (IDL `sequence<T>`), `[T; N]` (IDL arrays) and structs deriving `TopicType`
/// (the derive macro lives in `tessera-derive` and is re-exported as `tessera::TopicType`).
///
/// Structs are `@final`: members in declaration order, no DHEADER, alignment continuing from
/// the enclosing value. The methods are named `*_cdr` so they do not collide with
/// [`TopicType`]'s in method-call syntax.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a member of a topic type",
    note = "supported member types: bool, u8, i8, i16, u16, i32, u32, i64, u64, f32, f64, char, \
            String, Vec<T>, [T; N], BTreeMap<K, V>, HashMap<K, V>, structs and unions that \
            derive TopicType, enums that derive TopicEnum and bitmasks that derive TopicBitmask"
)]
pub trait CdrType: Sized {
    /// A lower bound of the encoded size, used to reject sequence counts that the remaining
    /// bytes cannot hold before allocating.
    const MIN_SIZE: usize;
    /// The XCDR2 extent of the key form of this type (see [`KeyExtent`]).
    const KEY_EXTENT: KeyExtent;
    /// Whether this is a primitive type (boolean, octet, char, integers, floats). In XCDR2,
    /// sequences of non-primitive elements are preceded by a DHEADER.
    const IS_PRIMITIVE: bool = false;
    /// Whether this is a primitive or an array of them at any depth: Rust's `[[T; M]; N]` is
    /// IDL's multi-dimensional `T a[N][M]`, whose element type is `T`. In XCDR2, arrays whose
    /// elements are not flat primitives are preceded by a DHEADER.
    const IS_FLAT_PRIMITIVE: bool = Self::IS_PRIMITIVE;
    /// The XCDR2 EMHEADER length code a member of this type gets in a mutable struct, as
    /// Cyclone DDS writes it: 0–3 for 1/2/4/8-byte primitives, 5 for strings, sequences of
    /// 1-byte or non-primitive elements and arrays that start with a DHEADER, 6/7 for
    /// sequences of 4/8-byte primitives, else 4 (NEXTINT = byte length).
    const XCDR2_LC: u32 = 4;
    /// `Some((width, count))` when every value of this type is `count` primitives of `width`
    /// bytes (1, 2, 4 or 8) back to back, without a header, and every bit pattern is a value:
    /// the integers, floats and arrays of them. A key made of such members lies at offsets
    /// known from the type alone (see [`TopicType::FIXED_KEY`]).
    const FLAT: Option<(usize, usize)> = None;

    /// The XTypes description of this type as a member type (DDS-XTypes 1.3): what its
    /// TypeObject and TypeIdentifier are built from.
    fn type_desc() -> crate::xtypes::TypeDesc;

    /// Whether [`CdrType::filter_value`] answers for every member path of this type: true
    /// for the primitives, strings, sequences, arrays and derived types made of them; false
    /// (the default) for hand-written types, which content filters and query conditions
    /// then refuse.
    const FILTERABLE: bool = false;

    /// The layout hash of a type whose value is its bytes (see [`super::Plain`]), 0 when it is
    /// not one: the integers, floats, arrays of them and `#[repr(C)]` derived structs of such
    /// members. The runtime checks a loaned sample's hash against it before it reads the
    /// value where it lies (which [`super::Plain`] bounds cannot express in generic code).
    const PLAIN_LAYOUT: u64 = 0;

    /// The value at `path` inside this value, for content filters and query conditions
    /// ([`crate::filter`]); `path` was checked against [`CdrType::type_desc`]. The default
    /// reports the type not filterable.
    fn filter_value(
        &self,
        path: &[crate::filter::Step],
    ) -> Result<crate::filter::Value<'_>, crate::filter::NotFilterable> {
        let _ = path;
        Err(crate::filter::NotFilterable)
    }

    /// Appends the value.
    fn write_cdr(&self, w: &mut CdrWriter<'_>);
    /// Reads a value.
    fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError>;

    /// Reads a value into `self`, keeping the buffers of its sequences and strings where the
    /// type allows (a reader that takes into the same samples over and over allocates
    /// nothing). After an error `self` is some valid value, not necessarily the old one.
    #[inline]
    fn read_cdr_in_place(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        *self = Self::read_cdr(r)?;
        Ok(())
    }

    /// Appends the value's key form: for a struct with key members, those members (each in
    /// its key form); for a struct without, all members; for other types the value itself
    /// (DDS-XTypes 1.3 §7.6.8).
    fn write_cdr_key(&self, w: &mut CdrWriter<'_>) {
        self.write_cdr(w)
    }

    /// Reads a key form from `r` and writes the same key form to `w` (whose encoding may
    /// differ).
    fn transcode_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError>;

    /// Reads a full value from `r` and writes its key form to `w`, skipping non-key members.
    fn extract_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        Self::transcode_cdr_key(r, w)
    }

    /// Reads past a value without keeping it.
    fn skip_cdr(r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        Self::read_cdr(r).map(drop)
    }

    /// Appends the elements of a sequence or array body (overridden for octets: one copy).
    #[doc(hidden)]
    fn write_cdr_slice(items: &[Self], w: &mut CdrWriter<'_>) {
        for x in items {
            x.write_cdr(w);
        }
    }

    /// Reads `n` elements of a sequence body; `n` has been checked against `MIN_SIZE`.
    #[doc(hidden)]
    fn read_cdr_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(Self::read_cdr(r)?);
        }
        Ok(v)
    }

    /// [`CdrType::read_cdr_vec`] into `v`: its elements are read in place, and it keeps its
    /// buffer.
    #[doc(hidden)]
    fn read_cdr_vec_in_place(
        v: &mut Vec<Self>,
        r: &mut CdrReader<'_>,
        n: usize,
    ) -> Result<(), CdrError> {
        v.truncate(n);
        for x in v.iter_mut() {
            x.read_cdr_in_place(r)?;
        }
        v.reserve(n - v.len());
        while v.len() < n {
            v.push(Self::read_cdr(r)?);
        }
        Ok(())
    }

    /// Reads the `N` elements of an array.
    #[doc(hidden)]
    fn read_cdr_array<const N: usize>(r: &mut CdrReader<'_>) -> Result<[Self; N], CdrError> {
        super::impls::read_array_with(|| Self::read_cdr(r))
    }

    /// Skips `n` elements.
    #[doc(hidden)]
    fn skip_cdr_many(r: &mut CdrReader<'_>, n: usize) -> Result<(), CdrError> {
        for _ in 0..n {
            Self::skip_cdr(r)?;
        }
        Ok(())
    }
}

/// A type that can be published on a DDS topic: a struct with named members, `@final`,
/// optionally keyed. Derive it with `#[derive(tessera::TopicType)]`; the provided methods
/// follow from [`CdrType`] and need not be written by hand.
///
/// ```
/// # use tessera_rtps::cdr::{key_hash, TopicType};
/// // Through the `tessera` crate this is `#[derive(tessera::TopicType)]` with no `cdr_path`.
/// #[derive(tessera_derive::TopicType)]
/// #[topic(cdr_path = "tessera_rtps::cdr")]
/// struct Keyed32 {
///     seq: u32,
///     #[key]
///     keyval: u32,
///     baggage: [u8; 24],
/// }
/// assert_eq!(Keyed32::TYPE_NAME, "Keyed32");
/// assert_eq!(Keyed32::KEY_MAX_SIZE, Some(4));
/// let s = Keyed32 { seq: 0, keyval: 1, baggage: [0; 24] };
/// assert_eq!(key_hash(&s), [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
/// ```
///
/// The derive rejects enums, tuple structs and generic structs with an error at the
/// offending token:
///
/// ```compile_fail
/// #[derive(tessera_derive::TopicType)]
/// #[topic(cdr_path = "tessera_rtps::cdr")]
/// enum Choice { A, B }
/// ```
///
/// ```compile_fail
/// #[derive(tessera_derive::TopicType)]
/// #[topic(cdr_path = "tessera_rtps::cdr")]
/// struct Pair(u32, u32);
/// ```
///
/// ```compile_fail
/// #[derive(tessera_derive::TopicType)]
/// #[topic(cdr_path = "tessera_rtps::cdr")]
/// struct Wrapper<T> { inner: T }
/// ```
pub trait TopicType: CdrType + Send + Sync + 'static {
    /// The registered type name (IDL-style, e.g. `"KeyedSeq"`), compared verbatim by peers.
    const TYPE_NAME: &'static str;
    /// Whether the type has key members (decides the entity kinds and instance handling).
    const KEYED: bool;
    /// The type's extensibility: decides the encapsulation id (and, in XCDR2, the DHEADER of
    /// an appendable type).
    const EXTENSIBILITY: crate::xtypes::Extensibility = crate::xtypes::Extensibility::Final;
    /// The maximum size of the key serialized as XCDR2 (the key-hash input); `None` when
    /// unbounded, `Some(0)` for keyless types.
    const KEY_MAX_SIZE: Option<usize> = if Self::KEYED {
        match Self::KEY_EXTENT {
            Some(e) => Some(e[0]),
            None => None,
        }
    } else {
        Some(0)
    };

    /// The members of a final struct up to its last key member, in declaration order, when
    /// the derive knows their layout (see [`FlatMember`]); empty (the default) otherwise. With
    /// it a received sample's key hash is read at offsets computed from the type instead of
    /// by re-encoding the key. Hand-written types leave it empty.
    #[doc(hidden)]
    const FIXED_KEY: &'static [FlatMember] = &[];

    /// The type's TypeObjects (minimal and complete, with those of the types it depends on),
    /// identifiers and TypeInformation (built from [`CdrType::type_desc`]; not cached).
    fn type_bundle() -> crate::xtypes::TypeBundle {
        crate::xtypes::TypeBundle::new(&Self::type_desc())
    }

    /// Appends the sample body.
    fn encode(&self, w: &mut CdrWriter<'_>) {
        self.write_cdr(w)
    }

    /// Reads a sample body.
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Self::read_cdr(r)
    }

    /// Reads a sample body into `self`, keeping its buffers (see
    /// [`CdrType::read_cdr_in_place`]).
    fn decode_in_place(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        self.read_cdr_in_place(r)
    }

    /// Appends the key members in declaration order: the key-only payload of a dispose and,
    /// written as big-endian XCDR2, the input of the key hash. Writes nothing if keyless.
    ///
    /// A key-only payload keeps the type's headers: in XCDR2 an appendable type's key members
    /// are inside a DHEADER.
    fn encode_key(&self, w: &mut CdrWriter<'_>) {
        if !Self::KEYED {
            return;
        }
        if Self::EXTENSIBILITY == crate::xtypes::Extensibility::Appendable && w.is_xcdr2() {
            let d = w.begin_dheader();
            self.write_cdr_key(w);
            w.end_dheader(d);
        } else {
            self.write_cdr_key(w)
        }
    }

    /// Reads a received key-only payload body and re-encodes its key members into `w`
    /// (without headers: the key-hash form).
    fn transcode_key_only(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if !Self::KEYED {
            return Ok(());
        }
        if Self::EXTENSIBILITY == crate::xtypes::Extensibility::Appendable && r.is_xcdr2() {
            let end = r.read_dheader()?;
            Self::transcode_cdr_key(r, w)?;
            r.finish_dheader(end)
        } else {
            Self::transcode_cdr_key(r, w)
        }
    }

    /// Reads a full sample body and writes only its key members into `w`, without building
    /// the sample.
    fn extract_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if Self::KEYED {
            Self::extract_cdr_key(r, w)
        } else {
            Ok(())
        }
    }
}
