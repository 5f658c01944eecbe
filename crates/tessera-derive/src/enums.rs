//! `#[derive(TopicEnum)]`: a fieldless Rust enum as an IDL `enum` member type.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let Data::Enum(e) = &input.data else {
        return Err(syn::Error::new(
            name.span(),
            "TopicEnum is for fieldless enums; derive TopicType for structs",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "TopicEnum cannot be derived for generic enums",
        ));
    }
    let opts = crate::parse_options(input)?;
    if opts.extensibility == crate::Ext::Mutable {
        return Err(syn::Error::new(
            name.span(),
            "an enum is final or appendable, not mutable",
        ));
    }
    let (cdr, type_name) = opts.paths(name);
    let ext = if opts.extensibility == crate::Ext::Appendable {
        quote!(Appendable)
    } else {
        quote!(Final)
    };
    if e.variants.is_empty() {
        return Err(syn::Error::new(name.span(), "an enum needs a literal"));
    }
    // Values as IDL gives them: explicit (`A = 5`) or one more than the previous.
    let mut idents = Vec::new();
    let mut names = Vec::new();
    let mut values: Vec<i32> = Vec::new();
    let mut next: i64 = 0;
    for v in &e.variants {
        if !matches!(v.fields, Fields::Unit) {
            return Err(syn::Error::new(
                v.span(),
                "TopicEnum variants carry no data (IDL enums are plain literals)",
            ));
        }
        if let Some((_, expr)) = &v.discriminant {
            next = match expr {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => i.base10_parse()?,
                syn::Expr::Unary(syn::ExprUnary {
                    op: syn::UnOp::Neg(_),
                    expr,
                    ..
                }) => match expr.as_ref() {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => -i.base10_parse::<i64>()?,
                    _ => return Err(syn::Error::new(expr.span(), "expected an integer literal")),
                },
                _ => return Err(syn::Error::new(expr.span(), "expected an integer literal")),
            };
        }
        let value =
            i32::try_from(next).map_err(|_| syn::Error::new(v.span(), "enum values are 32-bit"))?;
        if values.contains(&value) {
            return Err(syn::Error::new(
                v.span(),
                format!("value {value} used twice"),
            ));
        }
        values.push(value);
        idents.push(&v.ident);
        names.push(v.ident.to_string());
        next += 1;
    }
    Ok(quote! {
        const _: () = {
            use #cdr as __cdr;

            #[automatically_derived]
            impl __cdr::CdrType for #name {
                const MIN_SIZE: usize = 4;
                const KEY_EXTENT: __cdr::KeyExtent = __cdr::extent_primitive(4);
                // Enums are not primitive for XCDR2 (sequences of them carry a DHEADER), but
                // a mutable struct gives them a 4-byte length code.
                const XCDR2_LC: u32 = 2;

                fn type_desc() -> __cdr::__xtypes::TypeDesc {
                    use __cdr::__xtypes as __xt;
                    __xt::TypeDesc::Enum(::std::sync::Arc::new(__xt::EnumDesc {
                        name: ::std::string::String::from(#type_name),
                        extensibility: __xt::Extensibility::#ext,
                        bit_bound: 32,
                        literals: ::std::vec![ #( (::std::string::String::from(#names), #values), )* ],
                    }))
                }

                const FILTERABLE: bool = true;

                fn filter_value(
                    &self,
                    __path: &[__cdr::__filter::Step],
                ) -> ::core::result::Result<__cdr::__filter::Value<'_>, __cdr::__filter::NotFilterable> {
                    if !__path.is_empty() {
                        return ::core::result::Result::Err(__cdr::__filter::NotFilterable);
                    }
                    ::core::result::Result::Ok(__cdr::__filter::Value::Enum(
                        match self { #( Self::#idents => #values, )* },
                    ))
                }

                #[inline]
                fn write_cdr(&self, w: &mut __cdr::CdrWriter<'_>) {
                    w.write_i32(match self { #( Self::#idents => #values, )* });
                }

                #[inline]
                fn read_cdr(r: &mut __cdr::CdrReader<'_>) -> ::core::result::Result<Self, __cdr::CdrError> {
                    match r.read_i32()? {
                        #( #values => ::core::result::Result::Ok(Self::#idents), )*
                        other => ::core::result::Result::Err(__cdr::CdrError::InvalidEnum(other)),
                    }
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
