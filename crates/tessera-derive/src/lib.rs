//! `#[derive(TopicType)]` for Tessera topic types.
//!
//! ```ignore
//! use tessera::TopicType;
//!
//! #[derive(TopicType)]
//! #[topic(type_name = "KeyedSeq")]      // registered type name; default: the struct's name
//! struct KeyedSeq {
//!     seq: u32,
//!     #[key]                            // the type is keyed iff some member is #[key]
//!     keyval: u32,
//!     baggage: Vec<u8>,                 // sequence<octet>
//! }
//! ```
//!
//! Supported: structs with named members and unions (below). Member types: `bool`, `u8`
//! (`octet`), `i8`, `i16`, `u16`, `i32`, `u32`, `i64`, `u64`, `f32`, `f64`, `char` (IDL `char`,
//! one octet), `String`, `Vec<T>` (`sequence<T>`), `[T; N]` (arrays), `BTreeMap`/`HashMap`
//! (`map`), other structs, unions, enums and bitmasks.
//!
//! A nested struct derives `TopicType` too: there is no lighter derive, as the implementation
//! is the same and an unused type name costs nothing. A `#[key]` member whose type is a
//! struct contributes that struct's key members, or all its members if it has none
//! (DDS-XTypes 1.3 §7.6.8).
//!
//! # Attributes
//! On the struct, inside `#[topic(..)]`:
//! - `type_name = "A::B"`: the registered name (also the TypeObject's name, IDL-scoped).
//! - `extensibility = "final" | "appendable" | "mutable"`: IDL's `@final` (the default: no
//!   headers), `@appendable` (in XCDR2 a DHEADER precedes the members, the encapsulation is
//!   `D_CDR2_*`, and a reader skips members a newer writer appended; in XCDR1 the layout of a
//!   final struct) or `@mutable` (members identified by id, in any order: in XCDR2 a DHEADER
//!   and an EMHEADER per member, `PL_CDR2_*`; in XCDR1 a parameter list, `PL_CDR_*`). A
//!   mutable reader skips members it does not know (unless flagged must-understand) and
//!   refuses a sample that lacks one of its non-optional members (no default values).
//! - `cdr_path = "path::to::cdr"`: see below.
//!
//! On members:
//! - `#[key]`: a key member (`@key`).
//! - `#[id(n)]`: the member id (`@id`); members without one take the previous id plus one,
//!   starting at 0 (`@autoid(SEQUENTIAL)`). Ids only show in the TypeObject of final and
//!   appendable types.
//! - `#[bound(n)]` on a `String` or `Vec<T>`: `string<n>` / `sequence<T, n>` in the
//!   TypeObject (not enforced when writing).
//! - `#[uint8]` on a member of `u8`s (`u8`, `Vec<u8>`, `[u8; N]`): IDL `uint8` instead of
//!   `octet` in the TypeObject (same bytes on the wire; peers that check types, as Cyclone 11
//!   does, tell the two apart — the interoperability suite's ShapeType uses `uint8`).
//! - `#[must_understand]`: IDL's `@must_understand` (the MUST_UNDERSTAND member flag; in a
//!   mutable struct's XCDR2 encoding the EMHEADER's M bit, so a reader that does not know the
//!   member drops the sample).
//! - `#[optional]` on an `Option<T>` member: IDL's `@optional` (in final and appendable
//!   structs a presence octet in XCDR2, a parameter header in XCDR1; in mutable ones the
//!   member is left out when `None`). A key member cannot be optional.
//!
//! Key members are serialized for the key hash and key-only payloads in member-id order.
//!
//! A `#[repr(C)]` struct (not `packed`) also gets `unsafe impl Plain`, which applies when the
//! struct is `Copy` and every member type is `Plain` (integers, floats, arrays and structs of
//! them): such types can be loaned in shared memory (`DataWriter::loan`). Whether a type is
//! plain is decided here, from its members, not promised by the user (see
//! `tessera_rtps::cdr::Plain`).
//!
//! `#[derive(TopicEnum)]` makes a fieldless enum an IDL `enum` member type (a 32-bit value; the
//! literals take their Rust discriminants).
//!
//! # Unions, maps and bitmasks
//! An enum whose variants carry one value each, with `#[union(discriminator = T)]`, is an IDL
//! `union` (derive `TopicType` on it):
//!
//! ```ignore
//! #[derive(TopicType)]
//! #[topic(type_name = "U", extensibility = "appendable")]   // optional, as for structs
//! #[union(discriminator = i32)]          // i8..u64, bool, char or a TopicEnum; `key` marks @key
//! enum U {
//!     #[case(1, 2)] A(i32),             // case 1: case 2: long a;
//!     #[case(3)] B(#[bound(8)] String), // case 3: string<8> b;  (#[uint8] too)
//!     #[default_case] C(f64),           // default: double c;
//! }
//! ```
//! Labels must fit XTypes' 32-bit label type (a larger literal is a compile error).
//! Member names are the variant names in snake case (`#[topic(name = "x")]` on a variant
//! gives another), ids count from 0 (`#[id(n)]` on a variant sets one). Labels are expressions cast `as i64`: literals, or `Color::Red` for an
//! enum discriminator. Writing, a variant sends its first label; the default case sends the
//! lowest non-negative value no case names (so which of several labels a peer sent is not
//! kept). Reading a discriminator that selects no variant and has no default case is
//! `CdrError::UnselectedDiscriminator`: a Rust enum cannot hold the empty union (the dynamic
//! types can). Final and appendable unions are the discriminator and the member (inside a
//! DHEADER in XCDR2 when appendable); mutable ones a parameter list of both (id 0 for the
//! discriminator).
//!
//! `BTreeMap<K, V>` and `HashMap<K, V>` members are IDL `map<K, V>` (`#[bound(n)]` for
//! `map<K, V, n>`); `BTreeMap` writes entries in key order, so equal maps give equal bytes.
//!
//! `#[derive(TopicBitmask)]` on a newtype over an unsigned integer is an IDL `bitmask`:
//!
//! ```ignore
//! #[derive(Clone, Copy, TopicBitmask)]
//! #[bitmask(bit_bound = 12, read, write, exec = 5)]  // @bit_bound(12) bitmask Perm
//! struct Perm(u16);                                // { read, write, @position(5) exec };
//! let rx = Perm::READ | Perm::EXEC;
//! ```
//! The integer is the smallest holding `bit_bound` bits (`u8`, `u16`, `u32`, `u64`); a flag
//! without `= n` follows the previous one; each flag is an associated constant in upper case.
//! Reading a value with bits at or beyond `bit_bound` is `CdrError::InvalidBitmask`.
//!
//! Every derived type also describes itself to XTypes (`CdrType::type_desc`), from which
//! `TopicType::type_bundle` builds its minimal and complete TypeObjects, identifiers and
//! TypeInformation: what SEDP announces and the TypeLookup service serves.
//!
//! Every derived type (and enum) also gives content filters and query conditions its member
//! values (`CdrType::filter_value`, by member index along a path that the filter resolved
//! against `type_desc`; an absent optional member is `Value::Absent`), and is `FILTERABLE`
//! when all its member types are.
//!
//! Generated code names the runtime as `::tessera::rtps::cdr`. Code depending on
//! `tessera-rtps` directly (without `tessera`) sets the path with
//! `#[topic(cdr_path = "::tessera_rtps::cdr")]`.

mod enums;
mod unions;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::spanned::Spanned;
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitStr};

/// Derives `TopicType` (and its CDR encoding) for a struct with named fields.
///
/// Attributes: `#[key]`, `#[id(n)]`, `#[bound(n)]`, `#[optional]` on members; `#[topic(type_name = "Name",
/// extensibility = "appendable", cdr_path = "path::to::cdr")]` on the struct (see the crate
/// docs).
#[proc_macro_derive(
    TopicType,
    attributes(
        key,
        topic,
        id,
        optional,
        bound,
        must_understand,
        uint8,
        union,
        case,
        default_case
    )
)]
pub fn derive_topic_type(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Derives the CDR encoding and XTypes description of a fieldless enum, to use it as a member
/// of topic types (IDL `enum`: a 32-bit value; literals take their Rust discriminants, or one
/// more than the previous). Attributes: `#[topic(type_name = "A::Color", extensibility =
/// "appendable", cdr_path = "...")]`.
#[proc_macro_derive(TopicEnum, attributes(topic))]
pub fn derive_topic_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match enums::expand(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Derives the CDR encoding and XTypes description of an IDL `bitmask` for a newtype over
/// the unsigned integer that holds its bits: `#[bitmask(bit_bound = 12, read, write, exec =
/// 5)]` (flags in order; `= n` gives a flag's position, else it follows the previous one;
/// `bit_bound` defaults to 32 and picks the integer: `u8` up to 8, `u16`, `u32`, `u64`).
/// Each flag becomes an associated constant in upper case (`Perm::READ`); `|` combines them.
#[proc_macro_derive(TopicBitmask, attributes(topic, bitmask))]
pub fn derive_topic_bitmask(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match unions::expand_bitmask(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ext {
    Final,
    Appendable,
    Mutable,
}

struct Options {
    type_name: Option<LitStr>,
    cdr_path: Option<syn::Path>,
    extensibility: Ext,
}

impl Options {
    /// The runtime path (default `::tessera::rtps::cdr`) and the type name (default: the
    /// item's name).
    fn paths(&self, item: &syn::Ident) -> (syn::Path, LitStr) {
        let cdr = self
            .cdr_path
            .clone()
            .unwrap_or_else(|| syn::parse_quote!(::tessera::rtps::cdr));
        let name = self
            .type_name
            .clone()
            .unwrap_or_else(|| LitStr::new(&item.to_string(), item.span()));
        (cdr, name)
    }
}

fn parse_options(input: &DeriveInput) -> syn::Result<Options> {
    let mut opts = Options {
        type_name: None,
        cdr_path: None,
        extensibility: Ext::Final,
    };
    for attr in &input.attrs {
        if !attr.path().is_ident("topic") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("type_name") {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().is_empty() {
                    return Err(syn::Error::new(lit.span(), "type_name must not be empty"));
                }
                opts.type_name = Some(lit);
                Ok(())
            } else if meta.path.is_ident("cdr_path") {
                let lit: LitStr = meta.value()?.parse()?;
                opts.cdr_path = Some(lit.parse()?);
                Ok(())
            } else if meta.path.is_ident("extensibility") {
                let lit: LitStr = meta.value()?.parse()?;
                opts.extensibility = match lit.value().as_str() {
                    "final" => Ext::Final,
                    "appendable" => Ext::Appendable,
                    "mutable" => Ext::Mutable,
                    _ => {
                        return Err(syn::Error::new(
                            lit.span(),
                            "extensibility is \"final\", \"appendable\" or \"mutable\"",
                        ))
                    }
                };
                Ok(())
            } else {
                Err(meta.error(
                    "unknown topic attribute; expected `type_name`, `cdr_path` or `extensibility`",
                ))
            }
        })?;
    }
    Ok(opts)
}

/// What the attributes of one member say.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    pub(crate) key: bool,
    pub(crate) optional: bool,
    pub(crate) must_understand: bool,
    pub(crate) id: Option<u32>,
    pub(crate) bound: Option<u32>,
    uint8: bool,
}

pub(crate) fn field_attrs(field: &syn::Field) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs::default();
    for attr in &field.attrs {
        if attr.path().is_ident("key")
            || attr.path().is_ident("optional")
            || attr.path().is_ident("must_understand")
            || attr.path().is_ident("uint8")
        {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                return Err(syn::Error::new_spanned(
                    attr,
                    "this attribute takes no arguments",
                ));
            }
            let flag = if attr.path().is_ident("key") {
                &mut out.key
            } else if attr.path().is_ident("optional") {
                &mut out.optional
            } else if attr.path().is_ident("uint8") {
                &mut out.uint8
            } else {
                &mut out.must_understand
            };
            if *flag {
                return Err(syn::Error::new_spanned(attr, "duplicate attribute"));
            }
            *flag = true;
        } else if attr.path().is_ident("bound") {
            let lit: syn::LitInt = attr.parse_args()?;
            let n: u32 = lit.base10_parse()?;
            if n == 0 || out.bound.replace(n).is_some() {
                return Err(syn::Error::new(lit.span(), "one #[bound(n)] with n > 0"));
            }
        } else if attr.path().is_ident("id") {
            let lit: syn::LitInt = attr.parse_args()?;
            let id: u32 = lit.base10_parse()?;
            if id > 0x0fff_ffff {
                return Err(syn::Error::new(lit.span(), "member ids have 28 bits"));
            }
            if out.id.replace(id).is_some() {
                return Err(syn::Error::new_spanned(attr, "duplicate #[id]"));
            }
        } else if attr.path().is_ident("topic") {
            return Err(syn::Error::new_spanned(
                attr,
                "#[topic(...)] belongs on the struct; mark key members with #[key]",
            ));
        }
    }
    if out.key && out.optional {
        return Err(syn::Error::new(
            field.span(),
            "a key member cannot be #[optional]",
        ));
    }
    Ok(out)
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "TopicType cannot be derived for generic types: a topic type has one fixed layout",
        ));
    }
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => &named.named,
            Fields::Unnamed(u) => {
                return Err(syn::Error::new(
                    u.span(),
                    "TopicType needs named fields: tuple structs have no member names",
                ))
            }
            Fields::Unit => {
                return Err(syn::Error::new(
                    name.span(),
                    "TopicType needs a struct with named fields, not a unit struct",
                ))
            }
        },
        Data::Enum(e) if input.attrs.iter().any(|a| a.path().is_ident("union")) => {
            return unions::expand_union(input, e)
        }
        Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span(),
                "TopicType is derived for structs with named fields and for unions \
                 (enums with #[union(discriminator = T)]); derive TopicEnum for a plain enum",
            ))
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span(),
                "TopicType can only be derived for structs with named fields (enums and unions are not supported)",
            ))
        }
    };
    let opts = parse_options(input)?;
    let (cdr, type_name) = opts.paths(name);

    let mut members = Vec::new();
    let mut next_id: u32 = 0;
    for f in fields {
        // Named fields always have an identifier.
        let Some(ident) = f.ident.clone() else {
            return Err(syn::Error::new(f.span(), "expected a named field"));
        };
        let a = field_attrs(f)?;
        // IDL's @autoid(SEQUENTIAL): one more than the previous member, or what @id says.
        let id = a.id.unwrap_or(next_id);
        if members.iter().any(|m: &Member| m.id == id) {
            return Err(syn::Error::new(
                f.span(),
                format!("member id {id} used twice"),
            ));
        }
        next_id = id.saturating_add(1);
        // An optional member is an `Option<T>`; its wire and XTypes type is `T`.
        let inner = if a.optional {
            match option_inner(&f.ty) {
                Some(t) => t.clone(),
                None => {
                    return Err(syn::Error::new(
                        f.ty.span(),
                        "an #[optional] member must have type Option<T>",
                    ))
                }
            }
        } else {
            f.ty.clone()
        };
        members.push(Member {
            name: ident.to_string().trim_start_matches("r#").to_owned(),
            ident,
            ty: f.ty.clone(),
            inner,
            key: a.key,
            optional: a.optional,
            must_understand: a.must_understand,
            id,
            bound: a.bound,
            uint8: a.uint8,
        });
    }
    let repr_c = repr_c(input)?;
    let layout = plain_layout(name, &type_name, repr_c, &members);
    let mut out = generate(name, &cdr, &type_name, opts.extensibility, &members, layout);
    out.extend(plain_impl(name, &cdr, repr_c, &members));
    Ok(out)
}

/// Whether the struct is `#[repr(C)]` (possibly with `align(n)`), and not `packed`: the
/// layout every compiler gives the same way, which a loan shared between processes needs.
fn repr_c(input: &DeriveInput) -> syn::Result<bool> {
    let (mut c, mut packed) = (false, false);
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") {
                c = true;
            } else if meta.path.is_ident("packed") {
                packed = true;
            }
            // `align(n)` and others: consume their arguments, if any.
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream2>()?;
            }
            Ok(())
        })?;
    }
    Ok(c && !packed)
}

/// `CdrType::PLAIN_LAYOUT` of the struct: its layout hash when it is `#[repr(C)]` and every
/// member type's `PLAIN_LAYOUT` is nonzero (evaluated by the compiler), else 0.
fn plain_layout(
    name: &syn::Ident,
    type_name: &LitStr,
    repr_c: bool,
    members: &[Member],
) -> TokenStream2 {
    // An optional member is a presence flag and a value: never plain.
    if !repr_c || members.iter().any(|m| m.optional) {
        return quote!(
            const PLAIN_LAYOUT: u64 = 0;
        );
    }
    let tys: Vec<_> = members.iter().map(|m| &m.ty).collect();
    let mixes = members.iter().map(|m| {
        let (ident, ty, mname) = (&m.ident, &m.ty, &m.name);
        quote! {
            let h = __cdr::layout_mix(
                h,
                __cdr::layout_hash(#mname, ::core::mem::offset_of!(#name, #ident), 0)
                    ^ <#ty as __cdr::CdrType>::PLAIN_LAYOUT,
            );
        }
    });
    quote! {
        const PLAIN_LAYOUT: u64 = if true #( && <#tys as __cdr::CdrType>::PLAIN_LAYOUT != 0 )* {
            let h = __cdr::layout_hash(
                #type_name,
                ::core::mem::size_of::<#name>(),
                ::core::mem::align_of::<#name>(),
            );
            #( #mixes )*
            h
        } else {
            0
        };
    }
}

/// `unsafe impl Plain` for a `#[repr(C)]` struct (nothing otherwise): usable only when the
/// struct is `Copy` and every member type is `Plain`. The bounds sit under a higher-ranked
/// binder so that the compiler checks them where the impl is used, not here: a `#[repr(C)]`
/// struct with a `String` still derives, and is simply not plain.
fn plain_impl(
    name: &syn::Ident,
    cdr: &syn::Path,
    repr_c: bool,
    members: &[Member],
) -> TokenStream2 {
    if !repr_c {
        return quote!();
    }
    let tys: Vec<_> = members.iter().map(|m| &m.ty).collect();
    quote! {
        const _: () = {
            use #cdr as __cdr;
            // SAFETY: `#[repr(C)]` fixes the layout; the bounds make the impl apply only when
            // every member is plain (any bit pattern valid, no pointer) and the struct `Copy`.
            #[automatically_derived]
            unsafe impl __cdr::Plain for #name
            where
                for<'__p> #name: ::core::marker::Copy,
                #( for<'__p> #tys: __cdr::Plain, )*
            {
            }
        };
    }
}

/// One member as the generator needs it.
struct Member {
    ident: syn::Ident,
    name: String,
    /// The declared type (`Option<T>` for optional members).
    ty: syn::Type,
    /// The wire type (`T` for optional members, else `ty`).
    inner: syn::Type,
    key: bool,
    optional: bool,
    must_understand: bool,
    id: u32,
    bound: Option<u32>,
    /// `#[uint8]`: its `u8`s are IDL `uint8`, not `octet` (the TypeObject only).
    uint8: bool,
}

/// `T` of a type written `Option<T>` (or `std::option::Option<T>`...).
fn option_inner(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(t) if args.args.len() == 1 => Some(t),
        _ => None,
    }
}

fn generate(
    name: &syn::Ident,
    cdr: &syn::Path,
    type_name: &LitStr,
    ext: Ext,
    members: &[Member],
    plain_layout: TokenStream2,
) -> TokenStream2 {
    let keyed = members.iter().any(|m| m.key);
    // The key form: the #[key] members, or all of them for a keyless struct used as a key
    // member of another; in member-id order (DDS-XTypes 1.3 §7.6.8).
    // Optional members never belong to it (a key member cannot be optional).
    let mut key_members: Vec<&Member> = members
        .iter()
        .filter(|m| m.key || (!keyed && !m.optional))
        .collect();
    key_members.sort_by_key(|m| m.id);
    let key_idents: Vec<_> = key_members.iter().map(|m| &m.ident).collect();
    let key_types: Vec<_> = key_members.iter().map(|m| &m.inner).collect();
    let key_ids: Vec<_> = key_members.iter().map(|m| m.id).collect();
    let required_types: Vec<_> = members
        .iter()
        .filter(|m| !m.optional)
        .map(|m| &m.ty)
        .collect();
    let appendable = ext == Ext::Appendable;
    let ext_variant = match ext {
        Ext::Final => quote!(Final),
        Ext::Appendable => quote!(Appendable),
        Ext::Mutable => quote!(Mutable),
    };

    let descs = members.iter().map(|m| {
        let (mname, id, key, optional, inner) = (&m.name, m.id, m.key, m.optional, &m.inner);
        let mu = m.must_understand;
        let ty = match m.bound {
            Some(n) => quote!(<#inner as __cdr::CdrType>::type_desc().with_bound(#n)),
            None => quote!(<#inner as __cdr::CdrType>::type_desc()),
        };
        let ty = if m.uint8 {
            quote!(#ty.with_uint8())
        } else {
            ty
        };
        quote! {
            __xt::MemberDesc {
                name: ::std::string::String::from(#mname),
                id: #id,
                ty: #ty,
                key: #key,
                optional: #optional,
                must_understand: #mu,
            },
        }
    });

    // Member access for content filters: by declaration index, as the filter resolved the
    // path against `type_desc` (whose members are in declaration order).
    let inner_types: Vec<_> = members.iter().map(|m| &m.inner).collect();
    let filter_arms = members.iter().enumerate().map(|(i, m)| {
        let (ident, inner) = (&m.ident, &m.inner);
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        if m.optional {
            quote! {
                #i => match &self.#ident {
                    ::core::option::Option::Some(v) => <#inner as __cdr::CdrType>::filter_value(v, __rest),
                    ::core::option::Option::None => ::core::result::Result::Ok(__cdr::__filter::Value::Absent),
                },
            }
        } else {
            quote!(#i => <#inner as __cdr::CdrType>::filter_value(&self.#ident, __rest),)
        }
    });
    // Reading one member of a final/appendable struct, and skipping it.
    let read_in_order = members.iter().map(|m| {
        let (ident, ty, inner) = (&m.ident, &m.ty, &m.inner);
        if m.optional {
            quote!(#ident: __cdr::read_optional::<#inner>(r)?,)
        } else {
            quote!(#ident: <#ty as __cdr::CdrType>::read_cdr(r)?,)
        }
    });
    let skip_in_order: Vec<_> = members
        .iter()
        .map(|m| {
            let (ty, inner) = (&m.ty, &m.inner);
            if m.optional {
                quote!(__cdr::read_optional::<#inner>(r)?;)
            } else {
                quote!(<#ty as __cdr::CdrType>::skip_cdr(r)?;)
            }
        })
        .collect();
    let extract_steps = members.iter().map(|m| {
        let (ty, inner) = (&m.ty, &m.inner);
        if key_members.iter().any(|k| k.id == m.id) {
            quote! { <#ty as __cdr::CdrType>::extract_cdr_key(r, w)?; }
        } else if m.optional {
            quote! { __cdr::read_optional::<#inner>(r)?; }
        } else {
            quote! { <#ty as __cdr::CdrType>::skip_cdr(r)?; }
        }
    });

    // An appendable struct's DHEADER in XCDR2, around the members read in order (members a
    // newer writer appended are skipped by `finish_dheader`).
    let open_dheader = quote! {
        let __dh = if #appendable && r.is_xcdr2() {
            ::core::option::Option::Some(r.read_dheader()?)
        } else {
            ::core::option::Option::None
        };
    };
    let close_dheader = quote! {
        if let ::core::option::Option::Some(end) = __dh {
            r.finish_dheader(end)?;
        }
    };
    // Reading into an existing value member by member, so that its sequences and strings keep
    // their buffers (final and appendable structs; a mutable one's members may come in any
    // order or not at all, so it is read whole, the trait's default).
    let read_in_place = if ext == Ext::Mutable {
        quote!()
    } else {
        let steps = members.iter().map(|m| {
            let (ident, ty, inner) = (&m.ident, &m.ty, &m.inner);
            if m.optional {
                quote!(self.#ident = __cdr::read_optional::<#inner>(r)?;)
            } else {
                quote!(<#ty as __cdr::CdrType>::read_cdr_in_place(&mut self.#ident, r)?;)
            }
        });
        quote! {
            fn read_cdr_in_place(
                &mut self,
                r: &mut __cdr::CdrReader<'_>,
            ) -> ::core::result::Result<(), __cdr::CdrError> {
                #open_dheader
                #( #steps )*
                #close_dheader
                ::core::result::Result::Ok(())
            }
        }
    };
    let (write_body, read_body, skip_body, extract_body) = if ext == Ext::Mutable {
        let write_members = members.iter().map(|m| {
            let (ident, ty, inner, id) = (&m.ident, &m.ty, &m.inner, m.id);
            let mu = m.must_understand;
            if m.optional {
                quote! {
                    if let ::core::option::Option::Some(v) = &self.#ident {
                        __m.member::<#inner>(w, #id, #mu, |w| <#inner as __cdr::CdrType>::write_cdr(v, w));
                    }
                }
            } else {
                quote! {
                    __m.member::<#ty>(w, #id, #mu, |w| <#ty as __cdr::CdrType>::write_cdr(&self.#ident, w));
                }
            }
        });
        let slots: Vec<_> = (0..members.len())
            .map(|i| quote::format_ident!("__f{}", i))
            .collect();
        let slot_types = members.iter().map(|m| &m.inner);
        let arms = members.iter().zip(&slots).map(|(m, slot)| {
            let (inner, id) = (&m.inner, m.id);
            quote! {
                #id => #slot = ::core::option::Option::Some(
                    <#inner as __cdr::CdrType>::read_cdr(&mut __mem.reader)?,
                ),
            }
        });
        let builds = members.iter().zip(&slots).map(|(m, slot)| {
            let (ident, id) = (&m.ident, m.id);
            if m.optional {
                quote!(#ident: #slot,)
            } else {
                quote!(#ident: #slot.ok_or(__cdr::CdrError::MissingMember(#id))?,)
            }
        });
        (
            quote! {
                let __m = __cdr::MutableWriter::begin(w);
                #( #write_members )*
                __m.end(w);
            },
            quote! {
                let mut __mr = __cdr::MutableReader::begin(r)?;
                #( let mut #slots: ::core::option::Option<#slot_types> = ::core::option::Option::None; )*
                while let ::core::option::Option::Some(mut __mem) = __mr.next(r)? {
                    match __mem.id {
                        #( #arms )*
                        _ if __mem.must_understand => {
                            return ::core::result::Result::Err(__cdr::CdrError::MustUnderstand(__mem.id));
                        }
                        _ => {}
                    }
                }
                __mr.end(r)?;
                ::core::result::Result::Ok(Self { #( #builds )* })
            },
            quote! { __cdr::MutableReader::skip(r) },
            quote! {
                let v = <Self as __cdr::CdrType>::read_cdr(r)?;
                <Self as __cdr::CdrType>::write_cdr_key(&v, w);
                ::core::result::Result::Ok(())
            },
        )
    } else {
        let write_members = members.iter().map(|m| {
            let (ident, ty, inner, id) = (&m.ident, &m.ty, &m.inner, m.id);
            if m.optional {
                quote!(__cdr::write_optional::<#inner>(w, #id, &self.#ident);)
            } else {
                quote!(<#ty as __cdr::CdrType>::write_cdr(&self.#ident, w);)
            }
        });
        (
            quote! {
                // An appendable struct is a DHEADER and its members in XCDR2; in XCDR1 it is
                // laid out as a final one.
                let __dh = (#appendable && w.is_xcdr2()).then(|| w.begin_dheader());
                #( #write_members )*
                if let ::core::option::Option::Some(d) = __dh {
                    w.end_dheader(d);
                }
            },
            quote! {
                #open_dheader
                let v = Self { #( #read_in_order )* };
                #close_dheader
                ::core::result::Result::Ok(v)
            },
            quote! {
                if #appendable && r.is_xcdr2() {
                    let end = r.read_dheader()?;
                    return r.finish_dheader(end);
                }
                #( #skip_in_order )*
                ::core::result::Result::Ok(())
            },
            quote! {
                #open_dheader
                #( #extract_steps )*
                #close_dheader
                ::core::result::Result::Ok(())
            },
        )
    };

    // Where the key lies when every member up to the last key one is a flat primitive (or an
    // array of them): the runtime reads received key hashes there. Only for final structs
    // without optional members in that prefix, whose key members are in member-id order
    // (the key-hash order) as declared; `TopicType::FIXED_KEY` stays empty otherwise.
    let last_key = members.iter().rposition(|m| m.key);
    let fixed_key = match last_key {
        Some(last)
            if ext == Ext::Final
                && members[..=last].iter().all(|m| !m.optional)
                && members
                    .iter()
                    .filter(|m| m.key)
                    .map(|m| m.id)
                    .collect::<Vec<_>>()
                    .windows(2)
                    .all(|w| w[0] < w[1]) =>
        {
            let prefix = members[..=last].iter().map(|m| {
                let (ty, key) = (&m.ty, m.key);
                quote!(__cdr::FlatMember { flat: <#ty as __cdr::CdrType>::FLAT, key: #key },)
            });
            quote!(const FIXED_KEY: &'static [__cdr::FlatMember] = &[ #( #prefix )* ];)
        }
        _ => quote!(),
    };
    // A mutable type's key-only payload keeps its member headers (and only key members).
    let mutable_key_payload = if ext == Ext::Mutable {
        let key_slots: Vec<_> = (0..key_members.len())
            .map(|i| quote::format_ident!("__k{}", i))
            .collect();
        quote! {
            fn encode_key(&self, w: &mut __cdr::CdrWriter<'_>) {
                if !#keyed {
                    return;
                }
                let __m = __cdr::MutableWriter::begin(w);
                #( __m.member::<#key_types>(w, #key_ids, false, |w| {
                    <#key_types as __cdr::CdrType>::write_cdr_key(&self.#key_idents, w)
                }); )*
                __m.end(w);
            }

            fn transcode_key_only(
                r: &mut __cdr::CdrReader<'_>,
                w: &mut __cdr::CdrWriter<'_>,
            ) -> ::core::result::Result<(), __cdr::CdrError> {
                if !#keyed {
                    return ::core::result::Result::Ok(());
                }
                let mut __mr = __cdr::MutableReader::begin(r)?;
                #( let mut #key_slots = ::core::option::Option::None; )*
                while let ::core::option::Option::Some(__mem) = __mr.next(r)? {
                    match __mem.id {
                        #( #key_ids => #key_slots = ::core::option::Option::Some(__mem.reader), )*
                        _ if __mem.must_understand => {
                            return ::core::result::Result::Err(__cdr::CdrError::MustUnderstand(__mem.id));
                        }
                        _ => {}
                    }
                }
                __mr.end(r)?;
                #( <#key_types as __cdr::CdrType>::transcode_cdr_key(
                    &mut #key_slots.ok_or(__cdr::CdrError::MissingMember(#key_ids))?,
                    w,
                )?; )*
                ::core::result::Result::Ok(())
            }
        }
    } else {
        quote!()
    };

    quote! {
        const _: () = {
            use #cdr as __cdr;

            #[automatically_derived]
            impl __cdr::CdrType for #name {
                const MIN_SIZE: usize = 0usize #( .saturating_add(<#required_types as __cdr::CdrType>::MIN_SIZE) )*;
                #plain_layout
                const KEY_EXTENT: __cdr::KeyExtent = {
                    let e = __cdr::EXTENT_EMPTY;
                    #( let e = __cdr::extent_then(e, <#key_types as __cdr::CdrType>::KEY_EXTENT); )*
                    e
                };

                fn type_desc() -> __cdr::__xtypes::TypeDesc {
                    use __cdr::__xtypes as __xt;
                    __xt::TypeDesc::Struct(::std::sync::Arc::new(__xt::StructDesc {
                        name: ::std::string::String::from(#type_name),
                        extensibility: __xt::Extensibility::#ext_variant,
                        members: ::std::vec![ #( #descs )* ],
                    }))
                }

                const FILTERABLE: bool = true #( && <#inner_types as __cdr::CdrType>::FILTERABLE )*;

                fn filter_value(
                    &self,
                    __path: &[__cdr::__filter::Step],
                ) -> ::core::result::Result<__cdr::__filter::Value<'_>, __cdr::__filter::NotFilterable> {
                    match __path.split_first() {
                        ::core::option::Option::Some((__cdr::__filter::Step::Member { index, .. }, __rest)) => match *index {
                            #( #filter_arms )*
                            _ => ::core::result::Result::Err(__cdr::__filter::NotFilterable),
                        },
                        _ => ::core::result::Result::Err(__cdr::__filter::NotFilterable),
                    }
                }

                #[inline]
                fn write_cdr(&self, w: &mut __cdr::CdrWriter<'_>) {
                    #write_body
                }

                #[inline]
                fn read_cdr(r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<Self, __cdr::CdrError> {
                    #read_body
                }

                #read_in_place

                fn write_cdr_key(&self, w: &mut __cdr::CdrWriter<'_>) {
                    #( <#key_types as __cdr::CdrType>::write_cdr_key(&self.#key_idents, w); )*
                }

                fn transcode_cdr_key(
                    r: &mut __cdr::CdrReader<'_>,
                    w: &mut __cdr::CdrWriter<'_>,
                ) -> ::core::result::Result<(), __cdr::CdrError> {
                    #( <#key_types as __cdr::CdrType>::transcode_cdr_key(r, w)?; )*
                    ::core::result::Result::Ok(())
                }

                fn extract_cdr_key(
                    r: &mut __cdr::CdrReader<'_>,
                    w: &mut __cdr::CdrWriter<'_>,
                ) -> ::core::result::Result<(), __cdr::CdrError> {
                    #extract_body
                }

                fn skip_cdr(r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<(), __cdr::CdrError> {
                    #skip_body
                }
            }

            #[automatically_derived]
            impl __cdr::TopicType for #name {
                const TYPE_NAME: &'static str = #type_name;
                const KEYED: bool = #keyed;
                const EXTENSIBILITY: __cdr::__xtypes::Extensibility =
                    __cdr::__xtypes::Extensibility::#ext_variant;
                #mutable_key_payload
                #fixed_key
            }
        };
    }
}
