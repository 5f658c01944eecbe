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
//! Supported: structs with named members, serialized as IDL `@final` structs (members in
//! declaration order). Member types: `bool`, `u8` (`octet`), `i8`, `i16`, `u16`, `i32`, `u32`,
//! `i64`, `u64`, `f32`, `f64`, `char` (IDL `char`, one octet), `String`, `Vec<T>`
//! (`sequence<T>`), `[T; N]` (arrays) and other structs.
//!
//! A nested struct derives `TopicType` too: there is no lighter derive, as the implementation
//! is the same and an unused type name costs nothing. A `#[key]` member whose type is a
//! struct contributes that struct's key members, or all its members if it has none
//! (DDS-XTypes 1.3 §7.6.8).
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
/// Attributes: `#[key]` on members; `#[topic(type_name = "Name")]` and
/// `#[topic(cdr_path = "path::to::cdr")]` on the struct.
#[proc_macro_derive(TopicType, attributes(key, topic))]
pub fn derive_topic_type(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

struct Options {
    type_name: Option<LitStr>,
    cdr_path: Option<syn::Path>,
}

fn parse_options(input: &DeriveInput) -> syn::Result<Options> {
    let mut opts = Options {
        type_name: None,
        cdr_path: None,
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
            } else {
                Err(meta.error("unknown topic attribute; expected `type_name` or `cdr_path`"))
            }
        })?;
    }
    Ok(opts)
}

fn is_key(field: &syn::Field) -> syn::Result<bool> {
    let mut key = false;
    for attr in &field.attrs {
        if attr.path().is_ident("key") {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                return Err(syn::Error::new_spanned(attr, "#[key] takes no arguments"));
            }
            if key {
                return Err(syn::Error::new_spanned(attr, "duplicate #[key]"));
            }
            key = true;
        } else if attr.path().is_ident("topic") {
            return Err(syn::Error::new_spanned(
                attr,
                "#[topic(...)] belongs on the struct; mark key members with #[key]",
            ));
        }
    }
    Ok(key)
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

    let mut idents = Vec::new();
    let mut types = Vec::new();
    let mut keys = Vec::new();
    for f in fields {
        // Named fields always have an identifier.
        let Some(ident) = f.ident.clone() else {
            return Err(syn::Error::new(f.span(), "expected a named field"));
        };
        keys.push(is_key(f)?);
        idents.push(ident);
        types.push(f.ty.clone());
    }
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

                #[inline]
                fn write_cdr(&self, w: &mut __cdr::CdrWriter<'_>) {
                    #( <#types as __cdr::CdrType>::write_cdr(&self.#idents, w); )*
                }

                #[inline]
                fn read_cdr(r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<Self, __cdr::CdrError> {
                    ::core::result::Result::Ok(Self {
                        #( #idents: <#types as __cdr::CdrType>::read_cdr(r)?, )*
                    })
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
                    #( #extract_steps )*
                    ::core::result::Result::Ok(())
                }

                fn skip_cdr(r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<(), __cdr::CdrError> {
                    #( <#types as __cdr::CdrType>::skip_cdr(r)?; )*
                    ::core::result::Result::Ok(())
                }
            }

            #[automatically_derived]
            impl __cdr::TopicType for #name {
                const TYPE_NAME: &'static str = #type_name;
                const KEYED: bool = #keyed;
            }
        };
    })
}
