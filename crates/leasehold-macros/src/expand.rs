//! The expansion: the function's body runs inside `Elector::run_if_leader`, with the options
//! the attribute gives. Its literals were checked while parsing them (`args`), so the expansion
//! holds values the rules accept: the lock name as written, each duration as a
//! `Duration::new(secs, nanos)`.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::{ItemFn, ReturnType, Type};

use crate::args::{Args, DurationArg};

/// Expands `#[leader_only(args)] item`, or answers the errors to report.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let function: ItemFn = syn::parse2(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            format_args!("#[leader_only] applies to an `async fn` with a body: {e}"),
        )
    })?;
    let args = Args::parse(args, Span::call_site());
    let not_async = function.sig.asyncness.is_none().then(|| {
        syn::Error::new_spanned(
            function.sig.fn_token,
            format_args!(
                "#[leader_only] applies to an `async fn` (its body runs inside \
                 `Elector::run_if_leader`): write `async fn {}`",
                function.sig.ident
            ),
        )
    });
    let args = match (args, not_async) {
        (Ok(args), None) => args,
        (Err(e), None) | (Ok(_), Some(e)) => return Err(e),
        (Err(mut e), Some(not_async)) => {
            e.combine(not_async);
            return Err(e);
        }
    };
    Ok(rewrite(function, &args))
}

fn rewrite(function: ItemFn, args: &Args) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = function;
    // Inner attributes (`#![…]` at the top of the body) stay inside the function.
    let (inner, outer): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
    let statements = &block.stmts;
    let written: Type = match &sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    };
    sig.output = syn::parse_quote!(
        -> ::leasehold::Result<::core::option::Option<#written>>
    );

    // Items (consts) resolve at the call site; this name cannot meet the user's, which are in
    // the body's own block.
    let overrides_const = format_ident!("__LEASEHOLD_OVERRIDES");
    let lock = &args.lock;
    let mut overrides = quote!(::leasehold::__private::Overrides::NONE);
    let durations = [
        ("lease", &args.lease),
        ("wait", &args.wait),
        ("min_lease", &args.min_lease),
    ];
    for (key, arg) in durations {
        let Some(arg) = arg else { continue };
        let setter = format_ident!("{key}");
        let value = duration(arg);
        overrides.extend(quote!(.#setter(#value)));
    }
    if let Some(on) = args.auto_extend {
        overrides.extend(quote!(.auto_extend(#on)));
    }
    if let Some(on) = args.cancel_on_lost {
        overrides.extend(quote!(.cancel_on_lost(#on)));
    }

    let local = Span::mixed_site();
    let elector_var = quote_spanned!(local=> __leasehold_elector);
    let ret_var = quote_spanned!(local=> __leasehold_ret);
    let elector = &args.elector;
    let context = match &args.context {
        Some(ident) => quote!(#ident),
        None => quote!(_),
    };
    // `return` and `?` in the body leave the async block, whose output type is pinned to the
    // written return type first (by a `return` of that type that never runs) so that `?` knows
    // what to convert into and the body's value is coerced to it. An `impl Trait` cannot be
    // named there; such a body is left to inference.
    // The body's statements go into the block as they are (not as a nested `{ … }`, which
    // `unused_braces` would flag).
    let pin = (!mentions_impl(&written)).then(|| {
        quote! {
            if let ::core::option::Option::Some(#ret_var) =
                ::core::option::Option::None::<#written>
            {
                return #ret_var;
            }
        }
    });
    quote! {
        #(#outer)*
        #vis #sig {
            #(#inner)*
            const #overrides_const: ::leasehold::__private::Overrides = #overrides;
            let #elector_var =
                ::leasehold::__private::configure(&(#elector), &#overrides_const)?;
            #elector_var
                .run_if_leader(
                    #lock,
                    move |#context: ::leasehold::LeaderContext| async move {
                        #pin
                        #(#statements)*
                    },
                )
                .await
        }
    }
}

/// The duration of a checked literal as a `const` expression: `Duration::new(secs, nanos)`.
fn duration(arg: &DurationArg) -> TokenStream {
    let (secs, nanos) = (arg.value.as_secs(), arg.value.subsec_nanos());
    quote!(::core::time::Duration::new(#secs, #nanos))
}

/// True when the type contains `impl Trait`, which cannot be named inside the body.
fn mentions_impl(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            TokenTree::Ident(i) => i == "impl",
            TokenTree::Group(g) => walk(g.stream()),
            _ => false,
        })
    }
    walk(quote!(#ty))
}
