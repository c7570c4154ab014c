//! The options of `#[leader_only(...)]`: parsed, each key checked once, and the lock name and
//! duration literals checked by leasehold's input rules (`leasehold-rules`), with errors spanned
//! at the offending token.

use std::time::Duration;

use leasehold_rules::{LeaseError, check_lease, check_lock_name, parse_duration};
use proc_macro2::Span;
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, LitStr, Token};

/// Every key, in the order the error for an unknown one lists them.
const KEYS: &str = "elector, lock, lease, wait, min_lease, auto_extend, cancel_on_lost, context";

/// The parsed options of one attribute.
pub(crate) struct Args {
    /// `elector = <expr>`: the elector, evaluated at the start of each call.
    pub(crate) elector: Expr,
    /// `lock = "name"`: a name the lock-name rule accepts.
    pub(crate) lock: LitStr,
    /// `lease = "30s"`: within the lease bounds that the attribute's own options decide.
    pub(crate) lease: Option<DurationArg>,
    /// `wait = "5s"`.
    pub(crate) wait: Option<DurationArg>,
    /// `min_lease = "10s"`: at most `lease` when that is given.
    pub(crate) min_lease: Option<DurationArg>,
    /// `Some(on)` when given (`auto_extend` alone is `Some(true)`); `None`: the elector's.
    pub(crate) auto_extend: Option<bool>,
    /// As `auto_extend`.
    pub(crate) cancel_on_lost: Option<bool>,
    /// `context = ident`: the name the body sees the `LeaderContext` under.
    pub(crate) context: Option<Ident>,
}

/// A duration literal and the duration `leasehold_rules::parse_duration` reads in it.
pub(crate) struct DurationArg {
    /// The literal as written: where errors about it point.
    pub(crate) literal: LitStr,
    /// What it says.
    pub(crate) value: Duration,
}

/// One `key` or `key = value`.
struct Entry {
    key: Ident,
    value: Option<(Token![=], Expr)>,
}

impl Parse for Entry {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        let value = if input.peek(Token![=]) {
            Some((input.parse()?, input.parse()?))
        } else {
            None
        };
        Ok(Self { key, value })
    }
}

/// Collects errors so that one compilation reports every mistake in the attribute.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        self.add(syn::Error::new(span, message));
    }

    /// An error spanning all of `tokens` (`Error::new` with one span covers only the first
    /// token of an expression on stable Rust).
    fn push_spanned(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.add(syn::Error::new_spanned(tokens, message));
    }

    fn add(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }
}

impl Args {
    /// Parses the attribute's arguments; `attr_span` is where errors about a missing key point.
    pub(crate) fn parse(tokens: proc_macro2::TokenStream, attr_span: Span) -> syn::Result<Self> {
        let entries =
            syn::parse::Parser::parse2(Punctuated::<Entry, Token![,]>::parse_terminated, tokens)?;
        let mut errors = Errors::default();
        let mut seen: Vec<String> = Vec::new();
        let (mut elector, mut lock, mut lease, mut wait, mut min_lease, mut context) =
            (None, None, None, None, None, None);
        let (mut auto_extend, mut cancel_on_lost) = (None, None);
        for Entry { key, value } in entries {
            let name = key.to_string();
            if !KEYS.split(", ").any(|k| k == name) {
                errors.push(
                    key.span(),
                    format_args!("unknown option `{name}`; the options are: {KEYS}"),
                );
                continue;
            }
            if seen.contains(&name) {
                errors.push(key.span(), format_args!("`{name}` is given twice"));
                continue;
            }
            seen.push(name.clone());
            match (name.as_str(), value) {
                ("auto_extend" | "cancel_on_lost", value) => {
                    let on = match value {
                        None => Some(true),
                        Some((eq, value)) => bool_literal(&value).or_else(|| {
                            errors.push_spanned(
                                quote::quote!(#eq #value),
                                format_args!(
                                    "`{name}` is a flag: write `{name}` alone (on), or \
                                     `{name} = false` (off) or `{name} = true`"
                                ),
                            );
                            None
                        }),
                    };
                    if name == "auto_extend" {
                        auto_extend = on;
                    } else {
                        cancel_on_lost = on;
                    }
                }
                (_, None) => errors.push(key.span(), needs_value(&name)),
                ("elector", Some((_, expr))) => elector = Some(expr),
                ("context", Some((_, expr))) => match single_ident(&expr) {
                    Some(ident) => context = Some(ident),
                    None => errors.push_spanned(
                        &expr,
                        "`context` names the binding of the `leasehold::LeaderContext` in the \
                         body: write an identifier, e.g. `context = ctx`",
                    ),
                },
                (_, Some((_, expr))) => match string_literal(&expr) {
                    // A refused literal is reported here and counts as given (no "missing
                    // `lock`" besides).
                    Some(lit) if name == "lock" => match check_lock_name(&lit.value()) {
                        Ok(()) => lock = Some(lit),
                        Err(refused) => errors.push_spanned(&lit, refused),
                    },
                    Some(literal) => match parse_duration(&literal.value()) {
                        Ok(value) => {
                            let arg = Some(DurationArg { literal, value });
                            match name.as_str() {
                                "lease" => lease = arg,
                                "wait" => wait = arg,
                                _ => min_lease = arg,
                            }
                        }
                        Err(refused) => errors.push_spanned(&literal, refused),
                    },
                    None => errors.push_spanned(&expr, needs_literal(&name)),
                },
            }
        }
        check_lease_bounds(&mut errors, lease.as_ref(), min_lease.as_ref(), auto_extend);
        if elector.is_none() && !seen.iter().any(|k| k == "elector") {
            errors.push(
                attr_span,
                "missing `elector = <expression>`: the `leasehold::Elector` to run with, \
                 evaluated at the start of each call (a field such as `self.elector`, a \
                 parameter, a function call)",
            );
        }
        if lock.is_none() && !seen.iter().any(|k| k == "lock") {
            errors.push(
                attr_span,
                "missing `lock = \"<name>\"`: the lock that guards the function, e.g. \
                 `lock = \"billing.nightly\"`",
            );
        }
        match (errors.0, elector, lock) {
            (Some(e), _, _) => Err(e),
            (None, Some(elector), Some(lock)) => Ok(Self {
                elector,
                lock,
                lease,
                wait,
                min_lease,
                auto_extend,
                cancel_on_lost,
                context,
            }),
            // A missing key was reported above.
            (None, _, _) => Err(syn::Error::new(attr_span, "missing `elector` or `lock`")),
        }
    }
}

/// The lease bounds that the attribute's literals decide, when `lease` is given: the lease's own
/// (at least `MIN_LEASE`; with `auto_extend` turned on here, at least `MIN_AUTO_EXTEND_LEASE`)
/// reported at the lease, `min_lease` ≤ `lease` at the min_lease. An `auto_extend` left to the
/// elector, and a `min_lease` without a `lease`, are checked against the elector's options when
/// the call builds them.
fn check_lease_bounds(
    errors: &mut Errors,
    lease: Option<&DurationArg>,
    min_lease: Option<&DurationArg>,
    auto_extend: Option<bool>,
) {
    let Some(lease) = lease else { return };
    let auto_extend = auto_extend == Some(true);
    if let Err(refused) = check_lease(lease.value, Duration::ZERO, auto_extend) {
        errors.push_spanned(&lease.literal, refused);
        return;
    }
    // The lease's own bounds passed above: what is left to break is `min_lease` ≤ `lease`.
    if let Some(min_lease) = min_lease
        && let Err(refused @ LeaseError::MinLeaseExceedsLease { .. }) =
            check_lease(lease.value, min_lease.value, auto_extend)
    {
        errors.push_spanned(&min_lease.literal, refused);
    }
}

fn needs_value(key: &str) -> String {
    match key {
        "elector" => "`elector` needs a value: `elector = <expression>`".to_owned(),
        "context" => "`context` needs a value: `context = ctx`".to_owned(),
        "lock" => "`lock` needs a value: `lock = \"<name>\"`".to_owned(),
        _ => format!("`{key}` needs a value: `{key} = \"30s\"`"),
    }
}

fn needs_literal(key: &str) -> String {
    if key == "lock" {
        "`lock` must be a string literal such as \"billing.nightly\" (it is checked at compile \
         time; for a name computed at run time call `Elector::run_if_leader`)"
            .to_owned()
    } else {
        format!(
            "`{key}` must be a string literal such as \"30s\", \"500ms\" or \"PT1M\" (it is \
             checked at compile time)"
        )
    }
}

/// The value of a `true` or `false` literal.
fn bool_literal(expr: &Expr) -> Option<bool> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => Some(b.value),
        _ => None,
    }
}

fn string_literal(expr: &Expr) -> Option<LitStr> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(lit),
            attrs,
        }) if attrs.is_empty() => Some(lit.clone()),
        _ => None,
    }
}

fn single_ident(expr: &Expr) -> Option<Ident> {
    match expr {
        Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => p.path.get_ident().cloned(),
        _ => None,
    }
}
