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
//! Supported: structs with named members. Member types: `bool`, `u8` (`octet`), `i8`, `i16`,
//! `u16`, `i32`, `u32`, `i64`, `u64`, `f32`, `f64`, `char` (IDL `char`, one octet), `String`,
//! `Vec<T>` (`sequence<T>`), `[T; N]` (arrays) and other structs.
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
//!   final struct). `mutable` is recognized but refused for now: its XCDR encoding (EMHEADERs,
//!   parameter lists) is not generated yet.
//! - `cdr_path = "path::to::cdr"`: see below.
//!
//! On members:
//! - `#[key]`: a key member (`@key`).
//! - `#[id(n)]`: the member id (`@id`); members without one take the previous id plus one,
//!   starting at 0 (`@autoid(SEQUENTIAL)`). Ids only show in the TypeObject of final and
//!   appendable types.
//! - `#[bound(n)]` on a `String` or `Vec<T>`: `string<n>` / `sequence<T, n>` in the
//!   TypeObject (not enforced when writing).
//! - `#[optional]` (on `Option<T>` members): recognized but refused for now, like `mutable`.
//!
//! Every derived type also describes itself to XTypes (`CdrType::type_desc`), from which
//! `TopicType::type_bundle` builds its minimal and complete TypeObjects, identifiers and
//! TypeInformation: what SEDP announces and the TypeLookup service serves.
//!
//! Generated code names the runtime as `::tessera::rtps::cdr`. Code depending on
//! `tessera-rtps` directly (without `tessera`) sets the path with
//! `#[topic(cdr_path = "::tessera_rtps::cdr")]`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::spanned::Spanned;
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitStr};

/// Derives `TopicType` (and its CDR encoding) for a struct with named fields.
///
/// Attributes: `#[key]`, `#[id(n)]`, `#[bound(n)]` on members; `#[topic(type_name = "Name",
/// extensibility = "appendable", cdr_path = "path::to::cdr")]` on the struct (see the crate
/// docs).
#[proc_macro_derive(TopicType, attributes(key, topic, id, optional, bound))]
pub fn derive_topic_type(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
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
struct FieldAttrs {
    key: bool,
    optional: bool,
    id: Option<u32>,
    bound: Option<u32>,
}

fn field_attrs(field: &syn::Field) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs::default();
    for attr in &field.attrs {
        if attr.path().is_ident("key") || attr.path().is_ident("optional") {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                return Err(syn::Error::new_spanned(
                    attr,
                    "this attribute takes no arguments",
                ));
            }
            let flag = if attr.path().is_ident("key") {
                &mut out.key
            } else {
                &mut out.optional
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
    if out.optional {
        // The presence flag / parameter header of optional members belongs with the XCDR2
        // encoding of extensible types, which the derive does not generate yet.
        return Err(syn::Error::new(
            field.span(),
            "#[optional] members are not supported yet",
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
        Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span(),
                "TopicType can only be derived for structs with named fields (enums and unions are not supported)",
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
    let cdr: syn::Path = opts
        .cdr_path
        .unwrap_or_else(|| syn::parse_quote!(::tessera::rtps::cdr));
    let type_name = opts
        .type_name
        .unwrap_or_else(|| LitStr::new(&name.to_string(), name.span()));

    if opts.extensibility == Ext::Mutable {
        return Err(syn::Error::new(
            name.span(),
            "extensibility = \"mutable\" is not supported yet (its XCDR encoding is not generated)",
        ));
    }
    let mut idents = Vec::new();
    let mut types = Vec::new();
    let mut keys = Vec::new();
    let mut ids = Vec::new();
    let mut descs = Vec::new();
    let mut next_id: u32 = 0;
    for f in fields {
        // Named fields always have an identifier.
        let Some(ident) = f.ident.clone() else {
            return Err(syn::Error::new(f.span(), "expected a named field"));
        };
        let a = field_attrs(f)?;
        // IDL's @autoid(SEQUENTIAL): one more than the previous member, or what @id says.
        let id = a.id.unwrap_or(next_id);
        if ids.contains(&id) {
            return Err(syn::Error::new(
                f.span(),
                format!("member id {id} used twice"),
            ));
        }
        next_id = id.saturating_add(1);
        ids.push(id);
        let ty = &f.ty;
        descs.push(match a.bound {
            Some(n) => quote!(<#ty as __cdr::CdrType>::type_desc().with_bound(#n)),
            None => quote!(<#ty as __cdr::CdrType>::type_desc()),
        });
        keys.push(a.key);
        idents.push(ident);
        types.push(f.ty.clone());
    }
    let names: Vec<String> = idents
        .iter()
        .map(|i| i.to_string().trim_start_matches("r#").to_owned())
        .collect();
    let appendable = opts.extensibility == Ext::Appendable;
    let ext_variant = match opts.extensibility {
        Ext::Final => quote!(Final),
        Ext::Appendable => quote!(Appendable),
        Ext::Mutable => quote!(Mutable),
    };
    let keyed = keys.iter().any(|k| *k);
    // Members forming the key form: the #[key] ones, or all of them for a keyless struct
    // used as a key member of another.
    let key_idx: Vec<usize> = (0..idents.len()).filter(|&i| !keyed || keys[i]).collect();
    let key_idents: Vec<_> = key_idx.iter().map(|&i| &idents[i]).collect();
    let key_types: Vec<_> = key_idx.iter().map(|&i| &types[i]).collect();
    let extract_steps = idents.iter().zip(&types).enumerate().map(|(i, (_, ty))| {
        if key_idx.contains(&i) {
            quote! { <#ty as __cdr::CdrType>::extract_cdr_key(r, w)?; }
        } else {
            quote! { <#ty as __cdr::CdrType>::skip_cdr(r)?; }
        }
    });

    Ok(quote! {
        const _: () = {
            use #cdr as __cdr;

            #[automatically_derived]
            impl __cdr::CdrType for #name {
                const MIN_SIZE: usize = 0usize #( .saturating_add(<#types as __cdr::CdrType>::MIN_SIZE) )*;
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
                        members: ::std::vec![ #(
                            __xt::MemberDesc {
                                name: ::std::string::String::from(#names),
                                id: #ids,
                                ty: #descs,
                                key: #keys,
                                optional: false,
                                must_understand: false,
                            },
                        )* ],
                    }))
                }

                #[inline]
                fn write_cdr(&self, w: &mut __cdr::CdrWriter<'_>) {
                    // An appendable struct is a DHEADER and its members in XCDR2; in XCDR1 it is
                    // laid out as a final one.
                    let __dh = (#appendable && w.is_xcdr2()).then(|| w.begin_dheader());
                    #( <#types as __cdr::CdrType>::write_cdr(&self.#idents, w); )*
                    if let ::core::option::Option::Some(d) = __dh {
                        w.end_dheader(d);
                    }
                }

                #[inline]
                fn read_cdr(r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<Self, __cdr::CdrError> {
                    let __dh = if #appendable && r.is_xcdr2() {
                        ::core::option::Option::Some(r.read_dheader()?)
                    } else {
                        ::core::option::Option::None
                    };
                    let v = Self {
                        #( #idents: <#types as __cdr::CdrType>::read_cdr(r)?, )*
                    };
                    // Members a newer writer appended are skipped.
                    if let ::core::option::Option::Some(end) = __dh {
                        r.finish_dheader(end)?;
                    }
                    ::core::result::Result::Ok(v)
                }

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
                    let __dh = if #appendable && r.is_xcdr2() {
                        ::core::option::Option::Some(r.read_dheader()?)
                    } else {
                        ::core::option::Option::None
                    };
                    #( #extract_steps )*
                    if let ::core::option::Option::Some(end) = __dh {
                        r.finish_dheader(end)?;
                    }
                    ::core::result::Result::Ok(())
                }

                fn skip_cdr(r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<(), __cdr::CdrError> {
                    if #appendable && r.is_xcdr2() {
                        let end = r.read_dheader()?;
                        return r.finish_dheader(end);
                    }
                    #( <#types as __cdr::CdrType>::skip_cdr(r)?; )*
                    ::core::result::Result::Ok(())
                }
            }

            #[automatically_derived]
            impl __cdr::TopicType for #name {
                const TYPE_NAME: &'static str = #type_name;
                const KEYED: bool = #keyed;
                const EXTENSIBILITY: __cdr::__xtypes::Extensibility =
                    __cdr::__xtypes::Extensibility::#ext_variant;
            }
        };
    })
}
