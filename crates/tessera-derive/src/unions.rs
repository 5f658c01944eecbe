//! `#[derive(TopicType)]` on an enum with data (an IDL `union`) and `#[derive(TopicBitmask)]`
//! on a newtype over an unsigned integer (an IDL `bitmask`).
//!
//! A union's discriminator is carried as an `i64` in the generated code: labels are
//! expressions cast with `as i64` (integer, `bool` and `char` literals, or fieldless enum
//! paths such as `Color::Red` of a `TopicEnum`).

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Expr, Fields, Token};

/// How a discriminator type goes on the wire.
enum Disc {
    /// An integer primitive (`i8` … `u64`): its writer and reader method suffix.
    Int(syn::Ident),
    Bool,
    Char,
    /// A `TopicEnum` (32-bit).
    Enum,
}

fn disc_kind(ty: &syn::Type) -> Disc {
    if let syn::Type::Path(p) = ty {
        if let Some(id) = p.path.get_ident() {
            let s = id.to_string();
            match s.as_str() {
                "i8" | "u8" | "i16" | "u16" | "i32" | "u32" | "i64" | "u64" => {
                    return Disc::Int(id.clone())
                }
                "bool" => return Disc::Bool,
                "char" => return Disc::Char,
                _ => {}
            }
        }
    }
    Disc::Enum
}

struct Case<'a> {
    ident: &'a syn::Ident,
    ty: Option<&'a syn::Type>,
    /// `#[uint8]` / `#[bound(n)]` on the variant's field, as on struct members.
    uint8: bool,
    bound: Option<u32>,
    name: String,
    id: u32,
    labels: Vec<Expr>,
    default: bool,
}

/// `IntValue` → `int_value`: IDL member names from Rust variant names.
fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn expand_union(input: &DeriveInput, e: &syn::DataEnum) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let opts = crate::parse_options(input)?;
    let (cdr, type_name) = opts.paths(name);
    let mut disc_ty: Option<syn::Type> = None;
    let mut disc_key = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("union")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("discriminator") {
                disc_ty = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("key") {
                disc_key = true;
                Ok(())
            } else {
                Err(meta.error("expected `discriminator = TYPE` or `key`"))
            }
        })?;
    }
    let disc_ty = disc_ty.ok_or_else(|| {
        syn::Error::new(
            name.span(),
            "a union needs #[union(discriminator = TYPE)]; derive TopicEnum for a plain enum",
        )
    })?;
    let disc = disc_kind(&disc_ty);

    let mut cases = Vec::new();
    let mut next_id = 0u32;
    for v in &e.variants {
        let field = match &v.fields {
            Fields::Unnamed(f) if f.unnamed.len() == 1 => Some(&f.unnamed[0]),
            _ => None,
        };
        let fa = match field {
            Some(f) => crate::field_attrs(f)?,
            None => crate::FieldAttrs::default(),
        };
        let ty = match &v.fields {
            Fields::Unnamed(f) if f.unnamed.len() == 1 => Some(&f.unnamed[0].ty),
            Fields::Unit => None,
            _ => {
                return Err(syn::Error::new(
                    v.span(),
                    "a union case is a variant with one unnamed field: `A(i32)`",
                ))
            }
        };
        let mut c = Case {
            ident: &v.ident,
            ty,
            uint8: fa.uint8,
            bound: fa.bound,
            name: snake(&v.ident.to_string()),
            id: next_id,
            labels: Vec::new(),
            default: false,
        };
        for attr in &v.attrs {
            if attr.path().is_ident("case") {
                let labels =
                    attr.parse_args_with(Punctuated::<Expr, Token![,]>::parse_terminated)?;
                c.labels.extend(labels);
            } else if attr.path().is_ident("default_case") {
                c.default = true;
            } else if attr.path().is_ident("id") {
                let lit: syn::LitInt = attr.parse_args()?;
                c.id = lit.base10_parse()?;
            } else if attr.path().is_ident("topic") {
                // `#[topic(name = "x")]`: the IDL member name, when snake case is not it.
                attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("name") {
                        let lit: syn::LitStr = meta.value()?.parse()?;
                        c.name = lit.value();
                        Ok(())
                    } else {
                        Err(meta.error("on a union case: `#[topic(name = \"...\")]`"))
                    }
                })?;
            }
        }
        if ty.is_none() {
            return Err(syn::Error::new(
                v.span(),
                "a union case carries a value: `A(i32)`",
            ));
        }
        if c.labels.is_empty() && !c.default {
            return Err(syn::Error::new(
                v.span(),
                "a union case needs #[case(label, ...)] or #[default_case]",
            ));
        }
        next_id = c.id + 1;
        cases.push(c);
    }
    if cases.is_empty() {
        return Err(syn::Error::new(name.span(), "a union needs a case"));
    }
    if cases.iter().filter(|c| c.default).count() > 1 {
        return Err(syn::Error::new(name.span(), "one #[default_case] at most"));
    }

    let ext = match opts.extensibility {
        crate::Ext::Final => quote!(Final),
        crate::Ext::Appendable => quote!(Appendable),
        crate::Ext::Mutable => quote!(Mutable),
    };
    let appendable = opts.extensibility == crate::Ext::Appendable;
    let mutable = opts.extensibility == crate::Ext::Mutable;

    let (write_disc, read_disc, disc_size, disc_lc) = match &disc {
        Disc::Int(t) => {
            let wm = syn::Ident::new(&format!("write_{t}"), t.span());
            let rm = syn::Ident::new(&format!("read_{t}"), t.span());
            let size: usize = match t.to_string().as_str() {
                "i8" | "u8" => 1,
                "i16" | "u16" => 2,
                "i32" | "u32" => 4,
                _ => 8,
            };
            (
                quote!(__w.#wm(__d as #t)),
                quote!(__r.#rm()? as i64),
                size,
                size.trailing_zeros(),
            )
        }
        Disc::Bool => (
            quote!(__w.write_bool(__d != 0)),
            quote!(i64::from(__r.read_bool()?)),
            1,
            0,
        ),
        Disc::Char => (
            quote!(__w.write_u8(__d as u8)),
            quote!(i64::from(__r.read_u8()?)),
            1,
            0,
        ),
        Disc::Enum => (
            quote!(__w.write_i32(__d as i32)),
            quote!(i64::from(__r.read_i32()?)),
            4,
            2,
        ),
    };

    let ty_descs: Vec<TokenStream2> = cases
        .iter()
        .map(|c| {
            let ty = c.ty.unwrap();
            let mut t = quote!(<#ty as __cdr::CdrType>::type_desc());
            if let Some(n) = c.bound {
                t = quote!(#t.with_bound(#n));
            }
            if c.uint8 {
                t = quote!(#t.with_uint8());
            }
            t
        })
        .collect();
    let idents: Vec<_> = cases.iter().map(|c| c.ident).collect();
    let tys: Vec<_> = cases.iter().map(|c| c.ty.unwrap()).collect();
    let names: Vec<_> = cases.iter().map(|c| &c.name).collect();
    let ids: Vec<_> = cases.iter().map(|c| c.id).collect();
    let defaults: Vec<_> = cases.iter().map(|c| c.default).collect();
    let label_lists: Vec<Vec<&Expr>> = cases.iter().map(|c| c.labels.iter().collect()).collect();
    // The value each variant writes: its first label, or for the default case the lowest
    // non-negative value no case names (computed at run time from the labels).
    let all_labels: Vec<&Expr> = cases.iter().flat_map(|c| c.labels.iter()).collect();
    let disc_of: Vec<TokenStream2> = cases
        .iter()
        .map(|c| match c.labels.first() {
            Some(l) => quote!((#l) as i64),
            None => quote!(__unused_disc()),
        })
        .collect();
    // Reading: the case whose labels hold the value, else the default, else nothing.
    let default_arm = match cases.iter().find(|c| c.default) {
        Some(c) => {
            let id = c.ident;
            let ty = c.ty.unwrap();
            quote!(::core::result::Result::Ok(Self::#id(<#ty as __cdr::CdrType>::read_cdr(__r)?)))
        }
        None => quote!(::core::result::Result::Err(
            __cdr::CdrError::UnselectedDiscriminator(__d)
        )),
    };
    let default_key_arm = match cases.iter().find(|c| c.default) {
        Some(c) => {
            let ty = c.ty.unwrap();
            quote!(<#ty as __cdr::CdrType>::transcode_cdr_key(__r, __w))
        }
        None => quote!(::core::result::Result::Err(
            __cdr::CdrError::UnselectedDiscriminator(__d)
        )),
    };
    let default_extract_arm = match cases.iter().find(|c| c.default) {
        Some(c) => {
            let ty = c.ty.unwrap();
            quote!(<#ty as __cdr::CdrType>::extract_cdr_key(__r, __w))
        }
        None => quote!(::core::result::Result::Err(
            __cdr::CdrError::UnselectedDiscriminator(__d)
        )),
    };
    let labelled: Vec<usize> = (0..cases.len())
        .filter(|i| !cases[*i].labels.is_empty())
        .collect();
    let l_idents: Vec<_> = labelled.iter().map(|i| cases[*i].ident).collect();
    let l_tys: Vec<_> = labelled.iter().map(|i| cases[*i].ty.unwrap()).collect();
    let l_labels: Vec<_> = labelled.iter().map(|i| &label_lists[*i]).collect();
    let l_ids: Vec<_> = labelled.iter().map(|i| cases[*i].id).collect();
    let default_ident = cases.iter().find(|c| c.default).map(|c| c.ident);
    let default_id = cases.iter().find(|c| c.default).map_or(0, |c| c.id);
    let default_ty = cases.iter().find(|c| c.default).map(|c| c.ty.unwrap());

    let body_write = if mutable {
        quote! {
            let __m = __cdr::MutableWriter::begin(__w);
            __m.member_with_lc(__w, 0, true, #disc_lc, |__w| { let __d = __disc; #write_disc; });
            match self {
                #( Self::#idents(__x) => __m.member_with_lc(
                    __w, #ids, false, <#tys as __cdr::CdrType>::XCDR2_LC, |__w| __x.write_cdr(__w)), )*
            }
            __m.end(__w);
        }
    } else {
        quote! {
            __cdr::__in_dheader_w(__w, #appendable, |__w| {
                let __d = __disc;
                #write_disc;
                match self { #( Self::#idents(__x) => __x.write_cdr(__w), )* }
            })
        }
    };
    let read_selected = quote! {
        #( if [#( (#l_labels) as i64 ),*].contains(&__d) {
            return ::core::result::Result::Ok(Self::#l_idents(<#l_tys as __cdr::CdrType>::read_cdr(__r)?));
        } )*
        #default_arm
    };
    let body_read = if mutable {
        let default_read = match (default_ident, default_ty) {
            (Some(id), Some(ty)) => quote! {
                if __m.id == #default_id {
                    __out = ::core::option::Option::Some(Self::#id(<#ty as __cdr::CdrType>::read_cdr(&mut __m.reader)?));
                    continue;
                }
            },
            _ => quote!(),
        };
        quote! {
            let mut __mr = __cdr::MutableReader::begin(__r)?;
            let mut __first = __mr.next(__r)?.ok_or(__cdr::CdrError::MissingMember(0))?;
            let __d: i64 = { let __r = &mut __first.reader; #read_disc };
            let mut __out: ::core::option::Option<Self> = ::core::option::Option::None;
            while let ::core::option::Option::Some(mut __m) = __mr.next(__r)? {
                if __out.is_some() { continue; }
                #( if __m.id == #l_ids && [#( (#l_labels) as i64 ),*].contains(&__d) {
                    __out = ::core::option::Option::Some(Self::#l_idents(<#l_tys as __cdr::CdrType>::read_cdr(&mut __m.reader)?));
                    continue;
                } )*
                #default_read
                if __m.must_understand {
                    return ::core::result::Result::Err(__cdr::CdrError::MustUnderstand(__m.id));
                }
            }
            __mr.end(__r)?;
            __out.ok_or(__cdr::CdrError::UnselectedDiscriminator(__d))
        }
    } else {
        quote! {
            __cdr::__in_dheader_r(__r, #appendable, |__r| {
                let __d: i64 = #read_disc;
                #read_selected
            })
        }
    };
    let key_arms = quote! {
        #( if [#( (#l_labels) as i64 ),*].contains(&__d) {
            return <#l_tys as __cdr::CdrType>::transcode_cdr_key(__r, __w);
        } )*
        #default_key_arm
    };
    let extract_arms = quote! {
        #( if [#( (#l_labels) as i64 ),*].contains(&__d) {
            return <#l_tys as __cdr::CdrType>::extract_cdr_key(__r, __w);
        } )*
        #default_extract_arm
    };
    let extract = if mutable {
        // A mutable union's members come in any order: decode, then write the key form.
        quote! {
            let __v = <Self as __cdr::CdrType>::read_cdr(__r)?;
            __v.write_cdr_key(__w);
            ::core::result::Result::Ok(())
        }
    } else {
        quote! {
            __cdr::__in_dheader_r(__r, #appendable, |__r| {
                let __d: i64 = #read_disc;
                { let __w = &mut *__w; #write_disc; }
                #extract_arms
            })
        }
    };
    let min_size = if appendable || mutable { 4 } else { disc_size };

    Ok(quote! {
        const _: () = {
            use #cdr as __cdr;

            #[allow(dead_code)]
            fn __unused_disc() -> i64 {
                let __labels: &[i64] = &[#( (#all_labels) as i64 ),*];
                let mut __v = 0i64;
                while __labels.contains(&__v) { __v += 1; }
                __v
            }

            #[automatically_derived]
            impl __cdr::CdrType for #name {
                const MIN_SIZE: usize = #min_size;
                const KEY_EXTENT: __cdr::KeyExtent = __cdr::extent_then(
                    __cdr::extent_primitive(#disc_size),
                    {
                        let __e = __cdr::EXTENT_EMPTY;
                        #( let __e = __cdr::extent_max(__e, <#tys as __cdr::CdrType>::KEY_EXTENT); )*
                        __e
                    },
                );

                fn type_desc() -> __cdr::__xtypes::TypeDesc {
                    use __cdr::__xtypes as __xt;
                    __xt::TypeDesc::Union(::std::sync::Arc::new(__xt::UnionDesc {
                        name: ::std::string::String::from(#type_name),
                        extensibility: __xt::Extensibility::#ext,
                        discriminator: <#disc_ty as __cdr::CdrType>::type_desc(),
                        discriminator_key: #disc_key,
                        cases: ::std::vec![ #( __xt::UnionCase {
                            name: ::std::string::String::from(#names),
                            id: #ids,
                            labels: ::std::vec![ #( (#label_lists) as i32 ),* ],
                            default: #defaults,
                            ty: #ty_descs,
                        }, )* ],
                    }))
                }

                fn write_cdr(&self, __w: &mut __cdr::CdrWriter<'_>) {
                    let __disc: i64 = match self { #( Self::#idents(_) => #disc_of, )* };
                    #body_write
                }

                fn read_cdr(__r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<Self, __cdr::CdrError> {
                    #body_read
                }

                fn write_cdr_key(&self, __w: &mut __cdr::CdrWriter<'_>) {
                    // The key form: the discriminator and the member's key form, no headers.
                    let __d: i64 = match self { #( Self::#idents(_) => #disc_of, )* };
                    #write_disc;
                    match self { #( Self::#idents(__x) => __x.write_cdr_key(__w), )* }
                }

                fn transcode_cdr_key(
                    __r: &mut __cdr::CdrReader<'_>,
                    __w: &mut __cdr::CdrWriter<'_>,
                ) -> ::core::result::Result<(), __cdr::CdrError> {
                    let __d: i64 = #read_disc;
                    { let __w = &mut *__w; #write_disc; }
                    #key_arms
                }

                fn extract_cdr_key(
                    __r: &mut __cdr::CdrReader<'_>,
                    __w: &mut __cdr::CdrWriter<'_>,
                ) -> ::core::result::Result<(), __cdr::CdrError> {
                    #extract
                }
            }
        };
    })
}

pub(crate) fn expand_bitmask(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let inner = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Unnamed(f) if f.unnamed.len() == 1 => &f.unnamed[0].ty,
            _ => {
                return Err(syn::Error::new(
                    name.span(),
                    "TopicBitmask is for a newtype: `struct Perm(u16);`",
                ))
            }
        },
        _ => {
            return Err(syn::Error::new(
                name.span(),
                "TopicBitmask is for a newtype: `struct Perm(u16);`",
            ))
        }
    };
    let opts = crate::parse_options(input)?;
    let (cdr, type_name) = opts.paths(name);
    let mut bit_bound: Option<u16> = None;
    let mut flags: Vec<(syn::Ident, u16)> = Vec::new();
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("bitmask")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("bit_bound") {
                let lit: syn::LitInt = meta.value()?.parse()?;
                bit_bound = Some(lit.base10_parse()?);
                return Ok(());
            }
            let id = meta
                .path
                .get_ident()
                .cloned()
                .ok_or_else(|| meta.error("expected a flag name"))?;
            // IDL: a flag without @position takes the previous one's plus one.
            let pos = if meta.input.peek(Token![=]) {
                let lit: syn::LitInt = meta.value()?.parse()?;
                lit.base10_parse()?
            } else {
                flags.last().map_or(0, |f| f.1 + 1)
            };
            flags.push((id, pos));
            Ok(())
        })?;
    }
    let bit_bound = bit_bound.unwrap_or(32);
    let holder = match bit_bound {
        1..=8 => "u8",
        9..=16 => "u16",
        17..=32 => "u32",
        33..=64 => "u64",
        _ => return Err(syn::Error::new(name.span(), "bit_bound is 1 to 64")),
    };
    let ok = matches!(inner, syn::Type::Path(p) if p.path.is_ident(holder));
    if !ok {
        return Err(syn::Error::new(
            inner.span(),
            format!("a bitmask of bit_bound {bit_bound} holds a {holder}"),
        ));
    }
    for (f, p) in &flags {
        if *p >= bit_bound {
            return Err(syn::Error::new(
                f.span(),
                "flag position beyond the bit_bound",
            ));
        }
    }
    let holder_ty: syn::Type = syn::parse_str(holder)?;
    let write = syn::Ident::new(&format!("write_{holder}"), name.span());
    let read = syn::Ident::new(&format!("read_{holder}"), name.span());
    let size: usize = match holder {
        "u8" => 1,
        "u16" => 2,
        "u32" => 4,
        _ => 8,
    };
    let consts: Vec<syn::Ident> = flags
        .iter()
        .map(|(f, _)| syn::Ident::new(&f.to_string().to_uppercase(), f.span()))
        .collect();
    let fnames: Vec<String> = flags.iter().map(|(f, _)| f.to_string()).collect();
    let positions: Vec<u16> = flags.iter().map(|f| f.1).collect();
    let lc = size.trailing_zeros();
    let mask = if bit_bound >= 64 {
        quote!(#holder_ty::MAX)
    } else {
        quote!((((1u64 << #bit_bound) - 1) as #holder_ty))
    };
    Ok(quote! {
        impl #name {
            #( #[doc = concat!("The flag `", #fnames, "`.")] pub const #consts: #name = #name(1 << #positions); )*
            /// Whether every flag of `other` is set here.
            pub const fn contains(self, other: #name) -> bool {
                self.0 & other.0 == other.0
            }
        }
        impl ::core::ops::BitOr for #name {
            type Output = #name;
            fn bitor(self, rhs: #name) -> #name {
                #name(self.0 | rhs.0)
            }
        }
        const _: () = {
            use #cdr as __cdr;
            #[automatically_derived]
            impl __cdr::CdrType for #name {
                const MIN_SIZE: usize = #size;
                const KEY_EXTENT: __cdr::KeyExtent = __cdr::extent_primitive(#size);
                const XCDR2_LC: u32 = #lc;
                fn type_desc() -> __cdr::__xtypes::TypeDesc {
                    use __cdr::__xtypes as __xt;
                    __xt::TypeDesc::Bitmask(::std::sync::Arc::new(__xt::BitmaskDesc {
                        name: ::std::string::String::from(#type_name),
                        bit_bound: #bit_bound,
                        flags: ::std::vec![ #( (::std::string::String::from(#fnames), #positions), )* ],
                    }))
                }
                #[inline]
                fn write_cdr(&self, w: &mut __cdr::CdrWriter<'_>) {
                    w.#write(self.0)
                }
                #[inline]
                fn read_cdr(r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<Self, __cdr::CdrError> {
                    let x = r.#read()?;
                    if x & !#mask != 0 {
                        return ::core::result::Result::Err(__cdr::CdrError::InvalidBitmask(x as u64));
                    }
                    ::core::result::Result::Ok(#name(x))
                }
                fn transcode_cdr_key(
                    r: &mut __cdr::CdrReader<'_>,
                    w: &mut __cdr::CdrWriter<'_>,
                ) -> ::core::result::Result<(), __cdr::CdrError> {
                    let v = <Self as __cdr::CdrType>::read_cdr(r)?;
                    <Self as __cdr::CdrType>::write_cdr(&v, w);
                    ::core::result::Result::Ok(())
                }
            }
        };
    })
}
