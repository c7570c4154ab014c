//! Sessions, exhaustively at small sizes (`Setup::sessions`): one process holds two locks under
//! one session while an elector of another process contends for one of them. Today's rules
//! keep every property; each rule broken on purpose is caught by the checker.

#![allow(clippy::print_stdout)] // the traces are the point of a failure

use leasehold_model::properties::{
    AT_MOST_N_HOLDERS, FORCED_OUT_BESIDE_A_RENEWAL, FREE_WITHIN_A_LEASE, LOST_SESSION_TAKEN_OVER,
    NO_GRANT_BEFORE_THE_DEADLINE, NOTHING_PAST_THE_DEADLINE, ONE_HOLDER_PER_SLOT,
    RENEWS_ONLY_HELD_LEASES,
};
use leasehold_model::{LeaseModel, Rules, SessionRule, Setup};
use stateright::Checker;

mod common;

use common::{found, kept};

/// Checks `setup` to completion and returns the checker.
fn check(setup: Setup) -> impl Checker<LeaseModel> {
    common::check(LeaseModel::new(setup))
}

/// The session setup under `rule`.
fn sessions(rule: SessionRule) -> Setup {
    Setup::sessions(Rules {
        session: rule,
        ..Rules::TODAY
    })
}

/// A session holding two leases, renewed late, lost or never, with one lost message (an
/// acquisition, a release or a renewal, before or after the store applied it): every property
/// holds. A lease released while its session is renewed is answered `NotHeld` and stays free;
/// a session lost while holding both frees each lock only after its holder's deadline (the
/// checker must reach that case: `LOST_SESSION_TAKEN_OVER` is a property that needs an example).
#[test]
fn today_sessions_keep_every_property_with_a_lost_message() {
    check(sessions(SessionRule::Today)).assert_properties();
}

/// An operator forces out one lease of a live session (revoking its token in the session record,
/// then deleting the lock record, or stopping halfway after the revocation): its holder believes
/// in it until the session's next renewal answers `NotHeld` for it, by design (`AT_MOST_N_HOLDERS`
/// counts it), while the other lease of the session is renewed. Nothing else breaks: no renewal
/// renews the forced-out lease, and apart from it each lock has one holder.
#[test]
fn today_a_forced_release_of_one_lease_of_a_live_session_is_not_renewed() {
    let mut setup = sessions(SessionRule::Today);
    setup.losses = 0;
    setup.forced = 1;
    let checked = check(setup);
    found(&checked, AT_MOST_N_HOLDERS);
    found(&checked, FORCED_OUT_BESIDE_A_RENEWAL);
    found(&checked, LOST_SESSION_TAKEN_OVER);
    kept(
        &checked,
        &[
            ONE_HOLDER_PER_SLOT,
            NO_GRANT_BEFORE_THE_DEADLINE,
            RENEWS_ONLY_HELD_LEASES,
            NOTHING_PAST_THE_DEADLINE,
            FREE_WITHIN_A_LEASE,
        ],
    );
}

/// A renewal that answers every lease it remembers as renewed while its session lives, ignoring
/// the token a forced release revoked: the forced-out holder is told its lease was renewed.
#[test]
fn a_renewal_ignoring_revocations_renews_a_forced_out_lease() {
    let mut setup = sessions(SessionRule::RenewalIgnoresRevocation);
    setup.losses = 0;
    setup.forced = 1;
    setup.horizon = 2;
    let checked = check(setup);
    found(&checked, RENEWS_ONLY_HELD_LEASES);
}

/// An acquirer that judges a lock record on a session by the end written at its grant (which
/// session renewals do not move) takes a lock whose holder renewed it through its session.
#[test]
fn an_acquirer_judging_by_the_grant_takes_a_renewed_lock() {
    let mut setup = sessions(SessionRule::AcquirerJudgesByGrant);
    setup.losses = 0;
    let checked = check(setup);
    found(&checked, NO_GRANT_BEFORE_THE_DEADLINE);
    found(&checked, ONE_HOLDER_PER_SLOT);
}

/// An acquirer that treats a lock record whose session ran out as held for ever: a lost session
/// never frees its locks.
#[test]
fn an_acquirer_ignoring_session_expiry_never_frees_a_lost_sessions_locks() {
    let mut setup = sessions(SessionRule::AcquirerIgnoresSessionExpiry);
    setup.losses = 0;
    let checked = check(setup);
    found(&checked, FREE_WITHIN_A_LEASE);
    kept(
        &checked,
        &[ONE_HOLDER_PER_SLOT, NO_GRANT_BEFORE_THE_DEADLINE],
    );
}
