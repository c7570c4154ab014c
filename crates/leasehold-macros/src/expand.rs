//! The expansion: the function's body runs inside `Elector::run_if_leader`, behind compile-time
//! checks of every literal by the core's own `const fn` rules.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::{ItemFn, LitStr, ReturnType, Type};

use crate::args::Args;

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

    // Items (consts) resolve at the call site; these names cannot meet the user's, which are in
    // the body's own block.
    let lock_const = format_ident!("__LEASEHOLD_LOCK");
    let overrides_const = format_ident!("__LEASEHOLD_OVERRIDES");
    let mut consts = vec![lock_check(&lock_const, &args.lock)];
    let mut overrides = quote!(::leasehold::__private::Overrides::NONE);
    let mut lease_rules = Vec::new();
    let durations = [
        ("lease", &args.lease),
        ("wait", &args.wait),
        ("min_lease", &args.min_lease),
    ];
    for (key, lit) in durations {
        let Some(lit) = lit else { continue };
        let name = format_ident!("__LEASEHOLD_{}", key.to_uppercase());
        consts.push(duration_const(&name, lit));
        let setter = format_ident!("{key}");
        overrides.extend(quote!(.#setter(#name)));
    }
    if let Some(on) = args.auto_extend {
        overrides.extend(quote!(.auto_extend(#on)));
    }
    if let Some(on) = args.cancel_on_lost {
        overrides.extend(quote!(.cancel_on_lost(#on)));
    }
    // The builder's rules between lease, min_lease and auto_extend, when the lease is known:
    // the lease's own ones at the lease, `min_lease` ≤ `lease` at the min_lease.
    if let Some(lease) = &args.lease {
        // Checked here only when turned on explicitly; otherwise the elector's own setting is
        // checked when the call builds its options.
        let auto_extend = args.auto_extend == Some(true);
        let at = site(lease.span());
        lease_rules.push(quote_spanned! {at=>
            const _: () = match ::leasehold::__private::check_lease(
                __LEASEHOLD_LEASE,
                ::core::time::Duration::ZERO,
                #auto_extend,
            ) {
                ::core::result::Result::Ok(()) => (),
                ::core::result::Result::Err(fault) => ::core::panic!("{}", fault.message()),
            };
        });
        if let Some(min_lease) = &args.min_lease {
            let at = site(min_lease.span());
            lease_rules.push(quote_spanned! {at=>
                const _: () = match ::leasehold::__private::check_lease(
                    __LEASEHOLD_LEASE,
                    __LEASEHOLD_MIN_LEASE,
                    #auto_extend,
                ) {
                    ::core::result::Result::Err(
                        fault @ ::leasehold::__private::LeaseFault::MinLeaseExceedsLease,
                    ) => ::core::panic!("{}", fault.message()),
                    // Reported at the lease.
                    _ => (),
                };
            });
        }
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
            #(#consts)*
            #(#lease_rules)*
            const #overrides_const: ::leasehold::__private::Overrides = #overrides;
            let #elector_var =
                ::leasehold::__private::configure(&(#elector), &#overrides_const)?;
            #elector_var
                .run_if_leader(
                    #lock_const,
                    move |#context: ::leasehold::LeaderContext| async move {
                        #pin
                        #(#statements)*
                    },
                )
                .await
        }
    }
}

/// Where a compile-time check's error points: at the literal, with the macro's own edition for
/// the `panic!` (its `"{}"` form is `const` in every edition the user may write in).
fn site(literal: Span) -> Span {
    Span::mixed_site().located_at(literal)
}

/// `const NAME: &str = "<lock>";`, a compile error at the literal unless the core's
/// `check_lock_name` accepts it.
fn lock_check(name: &syn::Ident, lit: &LitStr) -> TokenStream {
    let at = site(lit.span());
    quote_spanned! {at=>
        const #name: &str = match ::leasehold::__private::check_lock_name(#lit) {
            ::core::result::Result::Ok(()) => #lit,
            ::core::result::Result::Err(fault) => ::core::panic!("{}", fault.message()),
        };
    }
}

/// `const NAME: Duration = <the literal, parsed by the core's parse_duration_const>;`, a compile
/// error at the literal when it does not parse.
fn duration_const(name: &syn::Ident, lit: &LitStr) -> TokenStream {
    let at = site(lit.span());
    quote_spanned! {at=>
        const #name: ::core::time::Duration =
            match ::leasehold::__private::parse_duration_const(#lit) {
                ::core::result::Result::Ok(duration) => duration,
                ::core::result::Result::Err(fault) => ::core::panic!("{}", fault.message()),
            };
    }
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
