//! The exact attribute names and expressions a [`DynamoDbStore`](crate::DynamoDbStore) sends, for
//! review, IAM and monitoring set-up, and for benchmarks that issue the same requests raw.
//!
//! Every request of the store is one `UpdateItem` on one item, keyed by [`LOCK_NAME`] (see
//! [`item_key`](crate::item_key)); attribute names always go through placeholders (`#t` …), so
//! DynamoDB's reserved words (`ttl`, `owner`, …) never matter. Values:
//!
//! | value | meaning |
//! |---|---|
//! | `:token` | the request's token (32 hex digits) |
//! | `:owner`, `:node` | the owner recorded with the lease; this client's node id |
//! | `:now` | the client clock, epoch ms |
//! | `:stale` | `:now` − clock-skew tolerance: a lease that ended before this may be taken over |
//! | `:expiry` | the new `leaseExpiry`, epoch ms |
//! | `:ttl` | the new `ttl`, epoch s (`:expiry` + TTL padding, rounded up) |
//! | `:seed`, `:one` | the clock in ms × 1000 (the fence of a brand-new item, minus one); 1 |
//! | `:period`, `:from`, `:until` | the period claimed in the ledger: the id of `:now`'s period, its start (included) and end (excluded), epoch ms |
//! | `:zero` | 0 (a period claim not started yet) |
//! | `:fence` | the holder's fence (the lease check of a fenced transaction) |
//! | `:epoch` | the client clock, epoch s (counting items past their `ttl`) |
//!
//! ```
//! use leasehold_dynamodb::expressions;
//! assert!(expressions::ACQUIRE_UPDATE.contains("if_not_exists(#f, :seed) + :one"));
//! assert!(expressions::names(expressions::ACQUIRE_NAMES).any(|(p, a)| p == "#e" && a == "leaseExpiry"));
//! ```

/// Partition key (string): the lock name, prefixed and suffixed with the slot (see
/// [`item_key`](crate::item_key)).
pub const LOCK_NAME: &str = "lockName";
/// The current holder's owner (node id given to the elector); removed on release.
pub const OWNER: &str = "owner";
/// The current holder's token (32 hex digits); removed on release. An item without it is free.
pub const TOKEN: &str = "token";
/// The owner of the latest grant, kept after release for audit.
pub const AUDIT_OWNER: &str = "auditOwner";
/// The node id of the client that wrote the latest grant (default `hostname:pid`).
pub const NODE_ID: &str = "nodeId";
/// When the latest grant was made, epoch ms (client clock).
pub const ACQUIRED_AT: &str = "acquiredAt";
/// When the lease ends, epoch ms (client clock): **the correctness boundary**.
pub const LEASE_EXPIRY: &str = "leaseExpiry";
/// DynamoDB TTL attribute, epoch s: cleanup only, never consulted for correctness.
pub const TTL: &str = "ttl";
/// The fencing number: strictly increasing per item, never reset while the item exists, and
/// seeded from the clock when the item is created.
pub const FENCE: &str = "fence";

/// The period ledger (slot 0's item only): the latest period id claimed (client clock,
/// `floor((now − offset) / length)` under the claim's own length and offset); kept across
/// release and expiry.
pub const LEDGER_PERIOD: &str = "ledgerPeriod";
/// The period ledger: the claimed period's start (included), epoch ms.
pub const LEDGER_FROM: &str = "ledgerFrom";
/// The period ledger: the claimed period's end (excluded), epoch ms.
pub const LEDGER_UNTIL: &str = "ledgerUntil";
/// The period ledger: when the claim was granted, epoch ms (client clock). A later claim is
/// judged by it: the record counts for a period only if granted at or after the period's start.
pub const LEDGER_AT: &str = "ledgerAt";
/// The period ledger: the owner it was granted to.
pub const LEDGER_BY: &str = "ledgerBy";
/// The period ledger: the token of the lease granted with the claim.
pub const LEDGER_TOKEN: &str = "ledgerToken";
/// The period ledger: 1 once the claim's action started, 0 before (absent on items written
/// before it existed, which count as started).
pub const LEDGER_STARTED: &str = "ledgerStarted";
/// The period ledger: when the latest claim whose action started was granted, epoch ms (copied
/// from [`LEDGER_AT`] when a claim starts, and left alone by later claims until one starts, so
/// an unstarted claim never hides an earlier run; absent until a claim starts).
pub const LEDGER_RAN: &str = "ledgerRan";

/// A lock item attached to a session: the id of the session that keeps it alive (see
/// [`SESSION_EXPIRY`]). While it is there the lease lasts as long as its session, and
/// [`LEASE_EXPIRY`] is only the lease's own term, written when it was attached; removed on
/// release and by the next grant.
pub const SESSION: &str = "session";
/// A session item (key `[PREFIX/]#session-ID`, see [`session_key`](crate::session_key)): when
/// the session ends, epoch ms (client clock). Renewed by the holder once per beat; **the
/// correctness boundary** of every lease naming the session.
pub const SESSION_EXPIRY: &str = "sessionExpiry";
/// A session item: the tokens of its leases that a forced release took away (a string set,
/// absent when empty). A lock item naming the session with a revoked token is free; the
/// holder's next renewal reads the set, answers those leases `NotHeld`, and removes them.
pub const REVOKED: &str = "revoked";

/// Acquire: the item is missing, free (no token), or its own lease ended before `:stale` and
/// it names no session (an item naming a session is taken over with [`TAKEOVER_CONDITION`],
/// after its session was read).
pub const ACQUIRE_CONDITION: &str =
    "attribute_not_exists(#t) OR (#e < :stale AND attribute_not_exists(#sid))";
/// Acquire without a session: take the item and mint the next fence (`ReturnValues = ALL_NEW`,
/// `ReturnValuesOnConditionCheckFailure = ALL_OLD`).
pub const ACQUIRE_UPDATE: &str = "SET #o = :owner, #t = :token, #ao = :owner, #n = :node, \
     #a = :now, #e = :expiry, #x = :ttl, #f = if_not_exists(#f, :seed) + :one REMOVE #sid";
/// Placeholders used by the acquire request.
pub const ACQUIRE_NAMES: &[&str] = &["#o", "#t", "#ao", "#n", "#a", "#e", "#x", "#f", "#sid"];

/// Attaching a lease to a session, at its first extension by the store that holds it: the
/// lease is held ([`HELD_CONDITION`]); its own term moves to `:expiry`, it names the session
/// (`:session`), and it loses its `ttl`: DynamoDB TTL must not delete an item its session keeps
/// alive (release, forced release and the next grant write the `ttl` again).
pub const ATTACH_UPDATE: &str = "SET #e = :expiry, #sid = :session REMOVE #x";
/// Placeholders used by attaching a lease to a session.
pub const ATTACH_NAMES: &[&str] = &["#t", "#e", "#sid", "#x"];

/// Acquire joining a session at once: as [`ACQUIRE_UPDATE`], naming the session (`:session`)
/// and without a `ttl`. Used while the store instance renews that session (it was renewed
/// within half a lease): the grant needs no attachment at its first extension.
pub const SESSION_ACQUIRE_UPDATE: &str = "SET #o = :owner, #t = :token, #ao = :owner, \
     #n = :node, #a = :now, #e = :expiry, #sid = :session, #f = if_not_exists(#f, :seed) + :one \
     REMOVE #x";

/// Taking over an item that names a session, after a consistent read of that session found it
/// ended (missing, or ended before `:stale`, with the item's own lease ended too) or the item's
/// token revoked: the item is still exactly the grant read (`:held` its token, `:oldsession` its
/// session). Tokens are never reused, and an ended session never lives again, so the read
/// still holds when the write lands.
pub const TAKEOVER_CONDITION: &str = "#t = :held AND #sid = :oldsession";
/// Taking over an item that names a session while claiming a period: [`TAKEOVER_CONDITION`]
/// and the ledger part of [`PERIOD_CONDITION`].
pub const PERIOD_TAKEOVER_CONDITION: &str = "#t = :held AND #sid = :oldsession AND \
     (attribute_not_exists(#la) OR #la < :from OR #ls = :zero) AND \
     (attribute_not_exists(#lr) OR #lr < :from)";

/// Opening a session: a new item under a random id (`ReturnValues = NONE`).
pub const OPEN_SESSION_CONDITION: &str = "attribute_not_exists(#k)";
/// Opening a session: its end, its `ttl` (`:expiry` + TTL padding) and this client's node id.
pub const OPEN_SESSION_UPDATE: &str = "SET #se = :expiry, #x = :ttl, #n = :node";
/// Placeholders used by opening a session.
pub const OPEN_SESSION_NAMES: &[&str] = &["#k", "#se", "#x", "#n"];

/// Renewing a session (once per beat for all its leases): it has not ended, and the renewal
/// does not shorten it (`ReturnValues = ALL_NEW`, for [`REVOKED`];
/// `ReturnValuesOnConditionCheckFailure = ALL_OLD`). A session that ended is never renewed:
/// its leases are lost, and the next grant opens a new session.
pub const RENEW_SESSION_CONDITION: &str = "#se > :now AND #se <= :expiry";
/// Renewing a session: move its end (and `ttl`).
pub const RENEW_SESSION_UPDATE: &str = "SET #se = :expiry, #x = :ttl";
/// Renewing a session and forgetting revoked tokens whose lock items no longer name it
/// (`:tokens`, a string set).
pub const RENEW_PRUNE_UPDATE: &str = "SET #se = :expiry, #x = :ttl DELETE #rv :tokens";
/// Renewing a session and revoking tokens whose release failed (`:tokens`), so that their
/// locks are free for others even if the holder never frees them.
pub const RENEW_REVOKE_UPDATE: &str = "SET #se = :expiry, #x = :ttl ADD #rv :tokens";
/// Placeholders used by the session renewal (the plain update uses the first three).
pub const RENEW_SESSION_NAMES: &[&str] = &["#se", "#x", "#rv"];

/// Forced release of a lease of a session: revoke its token in the session item (`:tokens`, a
/// set of one) before freeing the lock item, so that the holder's next renewal sees it. At
/// most [`MAX_REVOKED`](crate::MAX_REVOKED) tokens wait there.
pub const REVOKE_CONDITION: &str =
    "attribute_exists(#se) AND (attribute_not_exists(#rv) OR size(#rv) < :max)";
/// Forced release of a lease of a session: add the token to [`REVOKED`].
pub const REVOKE_UPDATE: &str = "ADD #rv :tokens";
/// Placeholders used by the revocation.
pub const REVOKE_NAMES: &[&str] = &["#se", "#rv"];

/// Release of a lease granted under a session by the store that holds it: the item still
/// carries its token and names its session (whether the lease still held is judged from the
/// session's last renewal; the item is freed either way).
pub const SESSION_HELD_CONDITION: &str = "#t = :token AND #sid = :session";
/// Release keeping a minimum lease, of a lease of a session: end the lease at `:expiry` on its
/// own, out of the session.
pub const DETACH_UPDATE: &str = "SET #e = :expiry, #x = :ttl REMOVE #sid";
/// Placeholders of a session lease's release ([`RELEASE_UPDATE`]) and linger
/// ([`DETACH_UPDATE`]).
pub const SESSION_RELEASE_NAMES: &[&str] = &["#t", "#e", "#x", "#o", "#sid"];
/// Placeholders of a session lease's linger ([`DETACH_UPDATE`]).
pub const DETACH_NAMES: &[&str] = &["#t", "#e", "#x", "#sid"];

/// Acquire claiming a period: free as for [`ACQUIRE_CONDITION`], **and** no run counts for the
/// period starting at `:from`: the latest claim does not (the ledger is empty, its claim was
/// granted before `:from`, or that claim never started: the lock being free, it is taken over)
/// and no earlier run does (no [`LEDGER_RAN`], or before `:from`).
pub const PERIOD_CONDITION: &str = "(attribute_not_exists(#t) OR (#e < :stale AND \
     attribute_not_exists(#sid))) AND \
     (attribute_not_exists(#la) OR #la < :from OR #ls = :zero) AND \
     (attribute_not_exists(#lr) OR #lr < :from)";
/// Acquire claiming a period: as [`ACQUIRE_UPDATE`], recording the period's window, when, by
/// whom and with which token, not started yet.
pub const PERIOD_UPDATE: &str = "SET #o = :owner, #t = :token, #ao = :owner, #n = :node, \
     #a = :now, #e = :expiry, #x = :ttl, #f = if_not_exists(#f, :seed) + :one, \
     #lp = :period, #lf = :from, #lu = :until, #la = :now, #lb = :owner, #lt = :token, #ls = :zero \
     REMOVE #sid";
/// Placeholders used by the period-claiming acquire request.
pub const PERIOD_NAMES: &[&str] = &[
    "#o", "#t", "#ao", "#n", "#a", "#e", "#x", "#f", "#lp", "#lf", "#lu", "#la", "#lb", "#lt",
    "#ls", "#lr", "#sid",
];

/// Starting a period claim's action: the token holds a lease that has not ended and made the
/// latest claim (`ReturnValues = NONE`).
pub const START_CONDITION: &str = "#t = :token AND #e > :now AND #lt = :token";
/// Starting a period claim's action: mark the claim started, the lock's latest run.
pub const START_UPDATE: &str = "SET #ls = :one, #lr = #la";
/// Placeholders used by the start request.
pub const START_NAMES: &[&str] = &["#t", "#e", "#lt", "#ls", "#lr", "#la"];

/// Clearing the period ledger (operators): slot 0's item has a ledger
/// (`ReturnValues = ALL_OLD`). A missing item fails it, so a clear never creates one.
pub const CLEAR_CONDITION: &str = "attribute_exists(#lp)";
/// Clearing the period ledger: remove the ledger's attributes, and only those (the lease, its
/// holder and its fence stay).
pub const CLEAR_UPDATE: &str = "REMOVE #lp, #lf, #lu, #la, #lb, #lt, #ls, #lr";
/// Placeholders used by the clear request.
pub const CLEAR_NAMES: &[&str] = &["#lp", "#lf", "#lu", "#la", "#lb", "#lt", "#ls", "#lr"];

/// Extend and release: the token holds a lease that has not ended.
pub const HELD_CONDITION: &str = "#t = :token AND #e > :now";
/// Extend: move the lease's end (`ReturnValues = NONE`).
pub const EXTEND_UPDATE: &str = "SET #e = :expiry, #x = :ttl";
/// Placeholders used by the extend request.
pub const EXTEND_NAMES: &[&str] = &["#t", "#e", "#x"];

/// Release: free the item but keep it, so its fence survives (`ReturnValues = NONE`).
pub const RELEASE_UPDATE: &str = "SET #e = :now, #x = :ttl REMOVE #t, #o, #sid";
/// Placeholders used by the release request.
pub const RELEASE_NAMES: &[&str] = &["#t", "#e", "#x", "#o", "#sid"];

/// Release keeping a minimum lease: only if that shortens the lease (never lengthens it).
pub const LINGER_CONDITION: &str = "#t = :token AND #e > :now AND #e > :expiry";
/// Release keeping a minimum lease: end the lease at `:expiry`.
pub const LINGER_UPDATE: &str = EXTEND_UPDATE;

/// Forced release (operators): the item still carries the holder read (`:token`; for a lease
/// of a live session, its token was first revoked there, see [`REVOKE_CONDITION`])
/// (`ReturnValues = ALL_OLD`).
pub const FORCE_CONDITION: &str = "#t = :token";
/// Forced release: free the item, keeping its fence.
pub const FORCE_UPDATE: &str = "SET #e = :now, #x = :ttl REMOVE #t, #o, #sid";
/// Placeholders used by the forced release request.
pub const FORCE_NAMES: &[&str] = &["#t", "#e", "#x", "#o", "#sid"];

/// Fenced transactions ([`FencedTransaction`](crate::fence::FencedTransaction)): the
/// `ConditionCheck` on the lease item added to the user's `TransactWriteItems` — the item still
/// carries the holder's token and fence, and its lease has not ended by the writer's clock
/// (`ReturnValuesOnConditionCheckFailure = ALL_OLD`). IAM: `dynamodb:ConditionCheckItem` on the
/// lease table.
pub const LEASE_CHECK_CONDITION: &str = "#t = :token AND #f = :fence AND #e > :now";
/// Placeholders used by the lease check of a fenced transaction.
pub const LEASE_CHECK_NAMES: &[&str] = &["#t", "#f", "#e"];
/// Fenced transactions of a lease held under a session: the lease item still carries the
/// holder's token and fence and names the session (or its own first term has not ended), beside
/// [`SESSION_CHECK_CONDITION`] on the session item.
pub const SESSION_LEASE_CHECK_CONDITION: &str =
    "#t = :token AND #f = :fence AND (#e > :now OR #sid = :session)";
/// Placeholders used by [`SESSION_LEASE_CHECK_CONDITION`].
pub const SESSION_LEASE_CHECK_NAMES: &[&str] = &["#t", "#f", "#e", "#sid"];
/// Fenced transactions of a lease held under a session: the second `ConditionCheck`, on the
/// session item: the session has not ended by the writer's clock and has not revoked the token.
pub const SESSION_CHECK_CONDITION: &str = "#se > :now AND NOT contains(#rv, :token)";
/// Placeholders used by [`SESSION_CHECK_CONDITION`].
pub const SESSION_CHECK_NAMES: &[&str] = &["#se", "#rv"];

/// Listing (`Scan` with `Limit`, `ConsistentRead`): the items held and not yet free to take
/// over (as `state` counts them: `#e >= :stale`) among those the `Limit` read, keyed under this
/// store's prefix (`:prefix` is `PREFIX/`). IAM: `dynamodb:Scan` on the lease table.
pub const LIST_FILTER_PREFIXED: &str = "attribute_exists(#t) AND (#e >= :stale OR \
     attribute_exists(#sid)) AND begins_with(#k, :prefix)";
/// Listing without a key prefix: as [`LIST_FILTER_PREFIXED`], for keys without a `/` (the items
/// of stores with a prefix have one; this store's never do, see [`item_key`](crate::item_key)).
pub const LIST_FILTER: &str = "attribute_exists(#t) AND (#e >= :stale OR attribute_exists(#sid)) \
     AND NOT contains(#k, :slash)";
/// Placeholders used by the listing filters.
pub const LIST_NAMES: &[&str] = &["#t", "#e", "#k", "#sid"];

/// Counting stale items ([`DynamoDbStore::stale_items`](crate::DynamoDbStore::stale_items): `Scan`
/// with `Select = COUNT`, `Limit`, eventually consistent), keyed under this store's prefix
/// (`:prefix` is `PREFIX/`): lease items (they have `leaseExpiry`) that are free or whose lease
/// ended before `:stale` — the negation of `state`'s "held". IAM: `dynamodb:Scan` on the table.
pub const STALE_FILTER_PREFIXED: &str = "attribute_exists(#e) AND (attribute_not_exists(#t) OR \
     (#e < :stale AND attribute_not_exists(#sid))) AND begins_with(#k, :prefix)";
/// Counting stale items without a key prefix: as [`STALE_FILTER_PREFIXED`], for keys without a
/// `/`.
pub const STALE_FILTER: &str = "attribute_exists(#e) AND (attribute_not_exists(#t) OR \
     (#e < :stale AND attribute_not_exists(#sid))) AND NOT contains(#k, :slash)";
/// Placeholders used by the stale filters.
pub const STALE_NAMES: &[&str] = &["#e", "#t", "#k", "#sid"];
/// Counting the lease items DynamoDB TTL may delete but has not yet: their `ttl` is before
/// `:epoch` (now, epoch seconds), keyed under this store's prefix.
pub const PAST_TTL_FILTER_PREFIXED: &str =
    "attribute_exists(#e) AND #x < :epoch AND begins_with(#k, :prefix)";
/// Counting past-TTL items without a key prefix: as [`PAST_TTL_FILTER_PREFIXED`], for keys
/// without a `/`.
pub const PAST_TTL_FILTER: &str =
    "attribute_exists(#e) AND #x < :epoch AND NOT contains(#k, :slash)";
/// Placeholders used by the past-TTL filters.
pub const PAST_TTL_NAMES: &[&str] = &["#e", "#x", "#k"];

/// The attribute each placeholder stands for.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("#k", LOCK_NAME),
    ("#o", OWNER),
    ("#t", TOKEN),
    ("#ao", AUDIT_OWNER),
    ("#n", NODE_ID),
    ("#a", ACQUIRED_AT),
    ("#e", LEASE_EXPIRY),
    ("#x", TTL),
    ("#f", FENCE),
    ("#lp", LEDGER_PERIOD),
    ("#lf", LEDGER_FROM),
    ("#lu", LEDGER_UNTIL),
    ("#la", LEDGER_AT),
    ("#lb", LEDGER_BY),
    ("#lt", LEDGER_TOKEN),
    ("#ls", LEDGER_STARTED),
    ("#lr", LEDGER_RAN),
    ("#sid", SESSION),
    ("#se", SESSION_EXPIRY),
    ("#rv", REVOKED),
];

/// `(placeholder, attribute)` pairs for the placeholders in `used` (DynamoDB rejects unused ones).
pub fn names(used: &'static [&'static str]) -> impl Iterator<Item = (&'static str, &'static str)> {
    PLACEHOLDERS
        .iter()
        .copied()
        .filter(move |(p, _)| used.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_names_exactly_the_placeholders_it_uses() {
        let requests: [(&[&str], &[&str]); 29] = [
            (&[LIST_FILTER_PREFIXED], LIST_NAMES),
            (&[LIST_FILTER], LIST_NAMES),
            (&[STALE_FILTER], STALE_NAMES),
            (&[STALE_FILTER_PREFIXED], STALE_NAMES),
            (&[PAST_TTL_FILTER], PAST_TTL_NAMES),
            (&[PAST_TTL_FILTER_PREFIXED], PAST_TTL_NAMES),
            (&[ACQUIRE_CONDITION, ACQUIRE_UPDATE], ACQUIRE_NAMES),
            (&[PERIOD_CONDITION, PERIOD_UPDATE], PERIOD_NAMES),
            (&[START_CONDITION, START_UPDATE], START_NAMES),
            (&[CLEAR_CONDITION, CLEAR_UPDATE], CLEAR_NAMES),
            (&[HELD_CONDITION, EXTEND_UPDATE], EXTEND_NAMES),
            (&[HELD_CONDITION, RELEASE_UPDATE], RELEASE_NAMES),
            (&[LINGER_CONDITION, LINGER_UPDATE], EXTEND_NAMES),
            (&[FORCE_CONDITION, FORCE_UPDATE], FORCE_NAMES),
            (&[LEASE_CHECK_CONDITION], LEASE_CHECK_NAMES),
            (&[HELD_CONDITION, ATTACH_UPDATE], ATTACH_NAMES),
            (&[ACQUIRE_CONDITION, SESSION_ACQUIRE_UPDATE], ACQUIRE_NAMES),
            (&[TAKEOVER_CONDITION, SESSION_ACQUIRE_UPDATE], ACQUIRE_NAMES),
            (&[TAKEOVER_CONDITION, ACQUIRE_UPDATE], ACQUIRE_NAMES),
            (&[PERIOD_TAKEOVER_CONDITION, PERIOD_UPDATE], PERIOD_NAMES),
            (
                &[OPEN_SESSION_CONDITION, OPEN_SESSION_UPDATE],
                OPEN_SESSION_NAMES,
            ),
            (
                &[RENEW_SESSION_CONDITION, RENEW_PRUNE_UPDATE],
                RENEW_SESSION_NAMES,
            ),
            (
                &[RENEW_SESSION_CONDITION, RENEW_REVOKE_UPDATE],
                RENEW_SESSION_NAMES,
            ),
            (
                &[RENEW_SESSION_CONDITION, RENEW_SESSION_UPDATE],
                &["#se", "#x"],
            ),
            (&[REVOKE_CONDITION, REVOKE_UPDATE], REVOKE_NAMES),
            (
                &[SESSION_HELD_CONDITION, RELEASE_UPDATE],
                SESSION_RELEASE_NAMES,
            ),
            (&[SESSION_HELD_CONDITION, DETACH_UPDATE], DETACH_NAMES),
            (&[SESSION_LEASE_CHECK_CONDITION], SESSION_LEASE_CHECK_NAMES),
            (&[SESSION_CHECK_CONDITION], SESSION_CHECK_NAMES),
        ];
        for (texts, used) in requests {
            let text = texts.join(" ");
            let mut found: Vec<&str> = text
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
                .filter(|w| w.starts_with('#'))
                .collect();
            found.sort_unstable();
            found.dedup();
            let mut expected = used.to_vec();
            expected.sort_unstable();
            assert_eq!(found, expected, "{text}");
            assert_eq!(names(used).count(), used.len());
        }
    }
}
