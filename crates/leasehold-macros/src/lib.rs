//! # leasehold-macros
//!
//! The `#[leader_only]` attribute of [leasehold](https://docs.rs/leasehold): an `async fn` whose
//! body runs only on the node that holds a lock, the way the original library's
//! `@LeaderElection` annotation guards a method. Use it as `leasehold::leader_only` with the
//! `macros` feature of `leasehold`; this crate is not meant to be a dependency of its own (its
//! expansion refers to `::leasehold`).
//!
//! ```toml
//! [dependencies]
//! leasehold = { version = "0.1", features = ["macros"] }
//! ```
//!
//! See [`leader_only`] for the options, the return type and what is checked at compile time.

mod args;
mod expand;

use proc_macro::TokenStream;

/// Runs the body of an `async fn` only while this node holds a lock: the function calls
/// [`Elector::run_if_leader`] with its body as the action.
///
/// ```
/// use std::sync::Arc;
/// use leasehold::{Elector, MemoryStore};
///
/// struct Billing {
///     elector: Elector,
/// }
///
/// #[derive(Debug)]
/// struct BillingError;
///
/// impl Billing {
///     /// Bills yesterday's usage; one node of the fleet does it.
///     #[leasehold::leader_only(elector = self.elector, lock = "billing.nightly", lease = "30s",
///                              auto_extend, context = ctx)]
///     async fn nightly(&self, day: u32) -> Result<u64, BillingError> {
///         // `ctx` is the `LeaderContext`: its fence goes with every write.
///         Ok(u64::from(day) * 1000 + ctx.fence())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> leasehold::Result<()> {
/// let billing = Billing { elector: Elector::new(Arc::new(MemoryStore::new())) };
/// match billing.nightly(7).await? {
///     Some(Ok(total)) => assert_eq!(total, 7001),       // this node held the lock
///     Some(Err(e)) => panic!("the body failed: {e:?}"), // it held it, and the body failed
///     None => unreachable!("another node holds billing.nightly"),
/// }
/// # Ok(()) }
/// ```
///
/// # The return type
///
/// The function's return type becomes `leasehold::Result<Option<T>>`, `T` being the type it is
/// written with — the contract of `run_if_leader`:
///
/// * `Ok(Some(value))`: this node won the lock within `wait`, the body ran and returned `value`;
///   the lease is released when it ends.
/// * `Ok(None)`: another node kept the lock for the whole `wait`; the body did not run.
/// * `Err(e)`: a `leasehold::Error` — a store failure, options that do not combine with the
///   elector's (see below), or, with `cancel_on_lost`, the lease lost while the body ran (the
///   body was dropped). The body's own errors are never turned into this one.
///
/// The body keeps its written return type: it runs in an `async move` block inside the action
/// closure, so `return x` ends the body with `x` (the call answers `Ok(Some(x))`) and `?` inside
/// the body converts into the **written** error type, as in any function. A body written
/// `-> Result<u64, BillingError>` therefore gives `leasehold::Result<Option<Result<u64,
/// BillingError>>>`: `billing.nightly(day).await?` leaves the `Option<Result<…>>` to match. The
/// function's arguments (and `self`) are moved into that block.
///
/// If the body panics, the lease is released and the panic resumes, as with `run_if_leader`;
/// dropping the returned future drops the body and releases the lease in the background
/// ([`Elector::settled`] waits for it).
///
/// # Options
///
/// | option | value | meaning |
/// |---|---|---|
/// | `elector` | any expression (required) | the elector to run with (an `Elector`, `&Elector` or `Arc<Elector>`): `self.elector`, a parameter, a function call; evaluated at the start of every call. There is no hidden global elector. |
/// | `lock` | string literal (required) | the lock name, checked at compile time by the lock-name rule of [`LockName`] (1-255 bytes of `[A-Za-z0-9_.:/-]`, starting with a letter or digit, every `/` followed by a letter or digit, no `..`) |
/// | `lease` | duration literal | the lease for this call ([`ElectionOptionsBuilder::lease`]) |
/// | `wait` | duration literal | how long to keep trying before skipping ([`ElectionOptionsBuilder::wait`]) |
/// | `min_lease` | duration literal | hold the lock at least this long ([`ElectionOptionsBuilder::min_lease`]) |
/// | `auto_extend` | flag, or `= false` / `= true` | renew the lease while the body runs (the elector's default: on) |
/// | `cancel_on_lost` | flag, or `= false` / `= true` | drop the body when the lease is lost; the call answers `Err(Error::Lost)` (the elector's default: on) |
/// | `context` | identifier | the name under which the body sees the [`LeaderContext`] (fence, lost signal, extension) |
///
/// Durations are written as [`parse_duration`] reads them: `"500ms"`, `"30s"`, `"1m30s"`,
/// `"PT10S"`, at most [`MAX_DURATION`]. A flag alone turns its option on; `= false` turns it off
/// for this call (both are on in the default options, so `auto_extend = false, cancel_on_lost =
/// false` is the way to let a body outlive its lease, which only a fenced resource makes safe).
///
/// The options given are applied **on top of the elector's own options** for that call
/// (`elector.options().to_builder()` with the given ones set, then [`Elector::reconfigured`]);
/// everything not given — `node_id`, `max_leaders`, the retry policy, the attempt timeout, the
/// options not listed — stays the elector's, and the reconfigured elector shares the elector's
/// store, events, waiting line and held leases. Without any option the elector is used as it is.
/// This costs a copy of the options and a few reference-count increments per call, well under
/// a microsecond, against a store round trip per call; it is not cached, so every call sees the
/// elector's current options.
///
/// # Checked at compile time
///
/// The lock name and every duration are string literals, checked while the attribute expands by
/// leasehold's input rules — the crate `leasehold-rules`, the very rules that [`LockName::new`],
/// [`parse_duration`] and the options builder apply at run time: a bad one is a compile error at
/// the literal with the message the library gives at run time for the same text, e.g.
///
/// ```text
/// error: invalid duration "30x": unknown unit (use ms, s, m, h or d); use forms like 500ms, 10s, 5m, 1h30m, 2d or ISO-8601 PT10S
///  --> src/billing.rs:3:70
///   |
/// 3 | #[leasehold::leader_only(elector = self.elector, lock = "x", lease = "30x")]
///   |                                                                      ^^^^^
/// ```
///
/// Every refused literal of one attribute is reported, each at its own literal. The expansion
/// holds what the rules read: the lock name as written, each duration as a
/// `Duration::new(secs, nanos)`.
///
/// When `lease` is given, the builder's rules that the literals decide are checked too: a lease
/// of at least 1 ms, `min_lease` ≤ `lease`, and with `auto_extend` a lease of at least 75 ms.
/// What depends on the elector's options (a `min_lease` longer than the elector's lease when no
/// `lease` is given, `auto_extend` on the elector's short lease) is checked at the call and
/// answered as `Err(Error::Options(_))`.
///
/// Also compile errors, at the offending token: a function that is not `async`, a missing
/// `elector` or `lock`, an unknown option (the error lists the options), an option given twice,
/// a lock or duration that is not a string literal, and a flag given a value.
///
/// # Where it applies
///
/// Free `async fn`s and inherent `async` methods (`&self`, `&mut self`, `self`, arguments and
/// generics). The signature changes, so a guarded method cannot implement a trait method with
/// the original return type. A return type with `impl Trait` in it is left to inference inside
/// the body, so `?` there may need a type annotation.
///
/// [`Elector::run_if_leader`]: https://docs.rs/leasehold/latest/leasehold/struct.Elector.html#method.run_if_leader
/// [`Elector::settled`]: https://docs.rs/leasehold/latest/leasehold/struct.Elector.html#method.settled
/// [`Elector::reconfigured`]: https://docs.rs/leasehold/latest/leasehold/struct.Elector.html#method.reconfigured
/// [`ElectionOptionsBuilder::lease`]: https://docs.rs/leasehold/latest/leasehold/struct.ElectionOptionsBuilder.html#method.lease
/// [`ElectionOptionsBuilder::wait`]: https://docs.rs/leasehold/latest/leasehold/struct.ElectionOptionsBuilder.html#method.wait
/// [`ElectionOptionsBuilder::min_lease`]: https://docs.rs/leasehold/latest/leasehold/struct.ElectionOptionsBuilder.html#method.min_lease
/// [`LeaderContext`]: https://docs.rs/leasehold/latest/leasehold/struct.LeaderContext.html
/// [`LockName`]: https://docs.rs/leasehold/latest/leasehold/struct.LockName.html
/// [`LockName::new`]: https://docs.rs/leasehold/latest/leasehold/struct.LockName.html#method.new
/// [`parse_duration`]: https://docs.rs/leasehold/latest/leasehold/fn.parse_duration.html
/// [`MAX_DURATION`]: https://docs.rs/leasehold/latest/leasehold/constant.MAX_DURATION.html
#[proc_macro_attribute]
pub fn leader_only(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    match expand::expand(args.into(), item.clone()) {
        Ok(tokens) => tokens.into(),
        // The function as written beside the errors, so that its callers do not add errors of
        // their own (nor warnings: its `elector` parameter, say, is unused without the
        // expansion).
        Err(e) => {
            let errors = e.to_compile_error();
            quote::quote!(#errors #[allow(unused)] #item).into()
        }
    }
}
