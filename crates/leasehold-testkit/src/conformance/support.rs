//! Helpers shared by the conformance tests: options, electors, bounds and result checks.

use std::fmt::{Debug, Display};
use std::time::Duration;

use leasehold::{ElectionOptions, ElectionOptionsBuilder, Elector, RetryPolicy};

use crate::factory::StoreFactory;

/// Slack added to upper bounds: generous, for shared 2-core machines and real servers.
pub(crate) const SLACK: Duration = Duration::from_millis(1500);
/// Tolerance on lower bounds measured locally against the store's clock (round trips).
pub(crate) const EARLY: Duration = Duration::from_millis(150);

/// `n` milliseconds.
pub(crate) const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Unwraps a value the test's own constants produced; a failure is a bug in the suite.
pub(crate) fn valid<T, E: Display>(r: Result<T, E>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("conformance suite bug: {what}: {e}"),
    }
}

/// Election options with a fast retry policy (10–50 ms pauses), so hand-offs are quick even
/// for stores without release signals. Renewal and cancellation on loss are off (the library
/// turns both on by default): the suite checks what the *store* does with a lease left alone —
/// expiry, takeover, stale holders — and the cases that test renewal turn it on themselves.
pub(crate) fn options(node: &str, wait: Duration, lease: Duration) -> ElectionOptionsBuilder {
    ElectionOptions::builder()
        .node_id(node)
        .wait(wait)
        .lease(lease)
        .auto_extend(false)
        .cancel_on_lost(false)
        .retry(valid(RetryPolicy::new(ms(10), ms(50), 0.5), "retry policy"))
}

/// An elector on a new client of the store under test.
pub(crate) fn node(
    factory: &dyn StoreFactory,
    node: &str,
    wait: Duration,
    lease: Duration,
) -> Elector {
    node_with(factory, options(node, wait, lease))
}

/// An elector on a new client with custom options.
pub(crate) fn node_with(factory: &dyn StoreFactory, builder: ElectionOptionsBuilder) -> Elector {
    Elector::with_options(factory.make(), valid(builder.build(), "election options"))
}

/// An elector with `max_leaders` slots on a new client of the store under test.
pub(crate) fn group_node(
    factory: &dyn StoreFactory,
    node: &str,
    max_leaders: u32,
    wait: Duration,
    lease: Duration,
) -> Elector {
    let options = options(node, wait, lease).max_leaders(max_leaders).build();
    Elector::with_options(factory.make(), valid(options, "group options"))
}

/// The value of a call that must succeed.
#[track_caller]
pub(crate) fn ok<T, E: Display>(r: Result<T, E>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: expected success, got error: {e}"),
    }
}

/// The value of a call that must be elected.
#[track_caller]
pub(crate) fn elected<T, E: Display>(r: Result<Option<T>, E>, what: &str) -> T {
    match r {
        Ok(Some(v)) => v,
        Ok(None) => {
            panic!("{what}: expected to be elected, but the call skipped (lock held elsewhere)")
        }
        Err(e) => panic!("{what}: expected to be elected, got error: {e}"),
    }
}

/// Asserts that a call skipped on contention.
#[track_caller]
pub(crate) fn skipped<T: Debug, E: Display>(r: Result<Option<T>, E>, what: &str) {
    match r {
        Ok(None) => {}
        Ok(Some(v)) => {
            panic!("{what}: expected a skip (lock held elsewhere), but was elected: {v:?}")
        }
        Err(e) => panic!("{what}: expected a skip, got error: {e}"),
    }
}

/// A function that panics on purpose, for the panic-release test.
pub(crate) fn deliberate_panic() -> u32 {
    panic!("conformance: deliberate panic inside the action")
}
