//! Helpers shared by the conformance tests: options, electors, bounds and result checks.

use std::fmt::{Debug, Display};
use std::time::Duration;

use leasehold::{ElectionOptions, ElectionOptionsBuilder, Elector, Outcome, RetryPolicy};

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

/// An answer to "did it run here": `run_if_leader`'s `Option` or the `Outcome` of `run`,
/// `try_acquire` and `run_once_per`, read alike by [`elected`] and [`skipped`].
pub(crate) trait Answer<T> {
    /// The elected value, or why there is none.
    fn into_elected(self) -> Result<T, String>;
    /// True for a skip because the lock was held elsewhere.
    fn is_skip(&self) -> bool;
}

impl<T> Answer<T> for Option<T> {
    fn into_elected(self) -> Result<T, String> {
        self.ok_or_else(|| "the call skipped (lock held elsewhere)".to_owned())
    }
    fn is_skip(&self) -> bool {
        self.is_none()
    }
}

impl<T, E: Debug> Answer<T> for Outcome<T, E> {
    fn into_elected(self) -> Result<T, String> {
        match self {
            Outcome::Elected(v) => Ok(v),
            Outcome::Taken(holder) => Err(format!(
                "the call skipped (lock held elsewhere: {holder:?})"
            )),
            Outcome::AlreadyRan(record) => Err(format!("the period already ran: {record:?}")),
            Outcome::ActionFailed(e) => Err(format!("the action failed: {e:?}")),
        }
    }
    fn is_skip(&self) -> bool {
        self.is_taken()
    }
}

/// Asserts that a call was elected and returns its value.
#[track_caller]
pub(crate) fn elected<T, A: Answer<T>, E: Display>(r: Result<A, E>, what: &str) -> T {
    match r.map(Answer::into_elected) {
        Ok(Ok(v)) => v,
        Ok(Err(why)) => panic!("{what}: expected to be elected, but {why}"),
        Err(e) => panic!("{what}: expected to be elected, got error: {e}"),
    }
}

/// Asserts that a call skipped on contention.
#[track_caller]
pub(crate) fn skipped<A: Answer<T> + Debug, T, E: Display>(r: Result<A, E>, what: &str) {
    match r {
        Ok(a) if a.is_skip() => {}
        Ok(a) => panic!("{what}: expected a skip (lock held elsewhere), but got {a:?}"),
        Err(e) => panic!("{what}: expected a skip, got error: {e}"),
    }
}

/// A function that panics on purpose, for the panic-release test.
pub(crate) fn deliberate_panic() -> u32 {
    panic!("conformance: deliberate panic inside the action")
}
