//! Owns the procedural macros `#[derive(Module)]` and `#[differentiate]`.
//! Must not depend on any nabla crate: a proc-macro, it names them only in the code it emits.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! `#[derive(Module)]`: implements `nabla_nn::Module` for a struct by visiting its fields in
//! declaration order, each under its own name, so parameters get PyTorch-style dotted names
//! (`encoder.layers.0.attn.q_proj.weight`).
//!
//! The struct's first type parameter is taken as the backend. Every field must implement `Module`
//! for that backend (parameters, layers, `Vec`s and `Option`s of them, and plain numbers and
//! flags, which hold nothing) unless it is marked `#[module(skip)]`. Tuple structs name their
//! fields `0`, `1`, ...
//!
//! The generated code refers to the library as `::nabla::nn`; a crate that depends on `nabla-nn`
//! directly says so with `#[module(crate = nabla_nn)]` on the struct.
//!
//! `#[differentiate]` generates the gradient of a plain `f64` function; see
//! [`macro@differentiate`].

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, GenericParam, Index, parse_macro_input};

mod differentiate;

#[doc = include_str!("differentiate/docs.md")]
#[proc_macro_attribute]
pub fn differentiate(attr: TokenStream, item: TokenStream) -> TokenStream {
    differentiate::expand(attr.into(), item.into())
        .unwrap_or_else(|err| err.to_compile_error())
        .into()
}

/// Derives `Module` for a struct whose fields are modules, parameters or plain settings.
///
/// Field attribute `#[module(skip)]` leaves a field out and `#[module(rename = "LayerNorm")]` names
/// it in parameter paths (for names Rust fields cannot have); struct attribute
/// `#[module(crate = path)]` names the library's path when it is not `::nabla::nn`.
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let krate = crate_path(input)?;
    let backend = input
        .generics
        .params
        .iter()
        .find_map(|p| match p {
            GenericParam::Type(t) => Some(t.ident.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            syn::Error::new_spanned(
                &input.ident,
                "#[derive(Module)] needs the backend as the struct's first type parameter, \
                 as in `struct Mlp<B: Backend>`",
            )
        })?;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Module)] supports structs only",
        ));
    };
    let mut visits = Vec::new();
    let mut trains = Vec::new();
    let fields: Vec<(TokenStream2, String)> = match &data.fields {
        Fields::Named(named) => {
            let mut out = Vec::new();
            for f in &named.named {
                let options = field_options(&f.attrs)?;
                if options.skip {
                    continue;
                }
                let ident = f.ident.clone().expect("named field");
                let name = match options.rename {
                    Some(name) => name,
                    None => ident.to_string().trim_start_matches("r#").to_string(),
                };
                out.push((quote!(#ident), name));
            }
            out
        }
        Fields::Unnamed(unnamed) => {
            let mut out = Vec::new();
            for (i, f) in unnamed.unnamed.iter().enumerate() {
                let options = field_options(&f.attrs)?;
                if options.skip {
                    continue;
                }
                let index = Index::from(i);
                out.push((
                    quote!(#index),
                    options.rename.unwrap_or_else(|| i.to_string()),
                ));
            }
            out
        }
        Fields::Unit => Vec::new(),
    };
    let visitor = format_ident!("__visitor");
    let prefix = format_ident!("__prefix");
    for (access, name) in &fields {
        visits.push(quote! {
            #krate::Module::<#backend>::visit(
                &self.#access,
                &#krate::join_name(#prefix, #name),
                #visitor,
            );
        });
        trains.push(quote! {
            #krate::Module::<#backend>::set_training(&mut self.#access, __training);
        });
    }
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics #krate::Module<#backend> for #name #ty_generics #where_clause {
            fn visit(
                &self,
                #prefix: &str,
                #visitor: &mut dyn FnMut(&str, &#krate::Param<#backend>),
            ) {
                let _ = (&#prefix, &#visitor);
                #(#visits)*
            }

            fn set_training(&mut self, __training: bool) {
                let _ = __training;
                #(#trains)*
            }
        }
    })
}

/// The library path from `#[module(crate = path)]`, or `::nabla::nn`.
fn crate_path(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let mut path = quote!(::nabla::nn);
    for attr in &input.attrs {
        if !attr.path().is_ident("module") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let p: syn::Path = meta.value()?.parse()?;
                path = quote!(#p);
                Ok(())
            } else {
                Err(meta.error("expected `crate = path` in #[module(...)] on the struct"))
            }
        })?;
    }
    Ok(path)
}

/// What `#[module(...)]` says about one field.
#[derive(Default)]
struct FieldOptions {
    /// `skip`: the field is left out.
    skip: bool,
    /// `rename = "name"`: the field's name in parameter paths, where the Rust name cannot be the
    /// one a checkpoint uses (`self`, `LayerNorm`).
    rename: Option<String>,
}

/// The options of a field's `#[module(skip)]` / `#[module(rename = "name")]` attributes.
fn field_options(attrs: &[syn::Attribute]) -> syn::Result<FieldOptions> {
    let mut options = FieldOptions::default();
    for attr in attrs {
        if !attr.path().is_ident("module") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                options.skip = true;
                Ok(())
            } else if meta.path.is_ident("rename") {
                let name: syn::LitStr = meta.value()?.parse()?;
                if name.value().is_empty() || name.value().contains('.') {
                    return Err(meta.error("a renamed field needs a non-empty name without dots"));
                }
                options.rename = Some(name.value());
                Ok(())
            } else {
                Err(meta
                    .error("expected `skip` or `rename = \"name\"` in #[module(...)] on a field"))
            }
        })?;
    }
    Ok(options)
}
