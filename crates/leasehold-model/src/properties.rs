//! The properties the checker holds every reachable state to. Each is stated in plain words in
//! `docs/correctness.md`.

use stateright::Property;

use crate::model::LeaseModel;
use crate::state::{Phase, State};

/// "At most one holder's local valid window is open at any real instant."
pub const ONE_VALID_HOLDER: &str = "at most one holder believes its lease valid";
/// "No elector keeps its action running past its local deadline."
pub const NOTHING_PAST_THE_DEADLINE: &str = "no action runs past its local deadline";
/// "At most one action runs at any real instant" (the promise the user sees).
pub const ONE_ACTION: &str = "at most one action runs at a time";
/// "A period runs at most once": no run starts in a period in which a run was already granted.
pub const AT_MOST_ONCE: &str = "each period runs at most once";
/// "A period with its electors up runs at least once, whatever one lost answer."
pub const AT_LEAST_ONCE: &str = "each period runs at least once";
/// "A lock is free within one lease of its last grant or renewal, whoever held it": the store
/// frees a lease `lease` ticks after the grant or renewal it last applied (a release frees it at
/// once), so a crashed, paused or cut-off holder blocks the lock for at most one lease.
pub const FREE_WITHIN_A_LEASE: &str = "a lock is free within one lease of its last renewal";

/// Every property, in the order above.
pub fn all() -> Vec<Property<LeaseModel>> {
    vec![
        Property::always(ONE_VALID_HOLDER, |_, s: &State| valid_holders(s) <= 1),
        Property::always(NOTHING_PAST_THE_DEADLINE, |_, s: &State| {
            s.electors
                .iter()
                .all(|e| !matches!(e.phase, Phase::Running(h) if h.deadline <= s.now))
        }),
        Property::always(ONE_ACTION, |_, s: &State| {
            s.electors
                .iter()
                .filter(|e| matches!(e.phase, Phase::Running(_)))
                .count()
                <= 1
        }),
        Property::always(AT_MOST_ONCE, |_, s: &State| !s.twice),
        Property::always(AT_LEAST_ONCE, |_, s: &State| s.missed.is_none()),
        Property::always(FREE_WITHIN_A_LEASE, |m: &LeaseModel, s: &State| {
            s.store
                .holder
                .is_none_or(|h| h.expiry <= s.now.saturating_add(m.setup.lease))
        }),
    ]
}

/// How many electors hold a lease whose local deadline is still ahead.
fn valid_holders(s: &State) -> usize {
    s.electors
        .iter()
        .filter(|e| match e.phase {
            Phase::Starting(h) | Phase::Running(h) => h.deadline > s.now,
            _ => false,
        })
        .count()
}
