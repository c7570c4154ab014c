//! Hand-off on PostgreSQL: the line of waiting electors and the keep of a freed lock, in one
//! more column of slot 0's row (see [`leasehold::store::HandOff`] for the rules).
//!
//! `waiting` is `NULL` while nobody waits and nothing is kept — always, for an uncontended lock,
//! whose statements then only test it for `NULL` — or a `jsonb` object:
//!
//! | key | value |
//! |---|---|
//! | `"<elector>"` (16 hex digits) | `[since, seen]`: epoch ms (database clock) of the elector's first refusal and of a recent one |
//! | `"k"` | `["<elector>", until]`: the freed lock is kept for that elector until then; a single-slot acquisition by anyone else before then is refused |
//!
//! * A refused single-slot acquisition of a waiting elector writes its entry — from its first
//!   refusal, `seen` refreshed when older than a quarter of
//!   [`WAITING_FRESH`](leasehold::store::WAITING_FRESH) (so that a waiter's refused attempts
//!   do not all write) — while the object's text is at most [`MAX_LINE_BYTES`] long, which
//!   holds [`MAX_WAITERS`](leasehold::store::MAX_WAITERS) entries. Every other refusal writes
//!   nothing, as before.
//! * A grant drops `"k"`, the grantee's entry and the entry of an elector whose keep lapsed.
//! * A release that keeps the lock for its own elector writes `"k"` and sends no `NOTIFY`; a
//!   release to the longest waiter drops stale entries, keeps the lock for the earliest `since`
//!   among the others (if any) and sends `NOTIFY` as every release does.
//!
//! Versions without hand-off neither read nor write the column, so a mixed fleet is as safe as
//! before, only less fair: an older version may take a kept lock, and its grant leaves a keep in
//! the row that lapses within [`HAND_OFF_HOLD`](leasehold::store::HAND_OFF_HOLD).

use leasehold::store::{HAND_OFF_HOLD, MAX_WAITERS, WAITING_FRESH};

use crate::dialect::{Sql, UpsertTerms, WaitingLine, WaitingUpdate};

/// The statements of hand-off, on a database whose table has its column (PostgreSQL).
/// Parameters are numbered as in [`Statements`](crate::dialect::Statements).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HandOffStatements {
    /// A single-slot acquisition that honours the keep and records a refused waiter: (lock,
    /// slot, owner, token, ttl ms, waiter or `NULL`); returns fence, acquired_at, expires_at
    /// and token when it wrote the row: a grant (or a lease already this token's) when the
    /// token is the request's, else a refusal that recorded its waiter.
    pub acquire: String,
    /// The acquisition of a lock nobody waits for, which the store tries before `acquire`
    /// unless it recently met contention (it is as cheap as
    /// [`Statements::acquire`](crate::dialect::Statements::acquire), which the uncontended path then
    /// costs): (lock, slot, owner, token, ttl ms); returns like `Statements::acquire`, no row when
    /// held, kept, or when somebody waits.
    pub acquire_alone: String,
    /// The period claim likewise: (lock, slot, owner, token, ttl ms, period length ms, period
    /// offset ms, waiter or `NULL`); returns like
    /// [`Statements::acquire_period`](crate::dialect::Statements::acquire_period).
    pub acquire_period: String,
    /// A release that keeps the lock for the releasing elector's next task, without `NOTIFY`:
    /// (lock, slot, token, elector).
    pub release_keep: String,
    /// A release that keeps the lock for the longest waiter other than the releasing elector
    /// and sends `NOTIFY`: (lock, slot, token, releasing elector, channel); returns one row
    /// when released: the notification, the elector kept for (or `NULL`), and whether the line
    /// still holds anyone (or a keep).
    pub release_longest: String,
    /// The release of a lock nobody waits for, which the store tries before `release_longest`
    /// unless its releases recently found waiters (it is as cheap as
    /// [`Statements::release`](crate::dialect::Statements::release), which the uncontended path then
    /// costs): (lock, slot, token, channel); returns one row when released, none when not held
    /// or when somebody waits.
    pub release_alone: String,
    /// The statement that adds the column to a table created without it (run on first use,
    /// unless `create_schema` is off).
    pub add_column: String,
    /// A query that reads nothing but fails when the table lacks the column.
    pub probe: String,
}

/// The longest text form of the `waiting` object to which a refused elector is still added:
/// 52 bytes per waiter (`"<16 hex digits>": [<13 digits>, <13 digits>]` and a separator), so
/// that the line never holds more than [`MAX_WAITERS`](leasehold::store::MAX_WAITERS).
pub const MAX_LINE_BYTES: usize = 52 * (MAX_WAITERS - 1);

/// The column definition, as in `CREATE TABLE` (ending with `,\n`).
pub(super) const COLUMN: &str = "\x20 waiting     JSONB NULL,\n";

/// The hand-off statements for `table` on PostgreSQL.
pub(super) fn statements(d: &dyn Sql, table: &str) -> HandOffStatements {
    let p = |n| d.param(n);
    let now = d.now_ms();
    let hold = HAND_OFF_HOLD.as_millis();
    let fresh = WAITING_FRESH.as_millis();
    // The row of parameters 1 and 2 that parameter 3's token holds.
    let held = crate::dialect::held(d, 1, &d.clock(3));
    let me = format!("CAST({} AS TEXT)", p(4));
    let freed = d.freed();
    let release_keep = format!(
        "UPDATE {table} SET {freed}, waiting = COALESCE(waiting, '{{}}'::jsonb) \
         || jsonb_build_object('k', jsonb_build_array({me}, {now} + {hold})) WHERE {held}"
    );
    // The waiters' entries still fresh now; the longest waiter is the earliest `since` among
    // them. When nobody waits (the common, uncontended release) only the release is done.
    let entries = format!(
        "FROM jsonb_each(l.waiting) e WHERE e.key <> 'k' \
         AND {now} - CAST(e.value ->> 1 AS BIGINT) < {fresh}"
    );
    let release_longest = format!(
        "WITH r AS (UPDATE {table} AS l SET {freed}, \
         waiting = CASE WHEN l.waiting IS NULL THEN NULL ELSE NULLIF(\
         COALESCE((SELECT jsonb_object_agg(e.key, e.value) {entries}), '{{}}'::jsonb) \
         || COALESCE((SELECT jsonb_build_object('k', jsonb_build_array(e.key, {now} + {hold})) \
         {entries} AND e.key <> {me} ORDER BY CAST(e.value ->> 0 AS BIGINT), e.key LIMIT 1), \
         '{{}}'::jsonb), '{{}}'::jsonb) END \
         WHERE {held} RETURNING l.lock_name, l.waiting -> 'k' ->> 0 AS kept, \
         l.waiting IS NOT NULL AS line) \
         SELECT pg_notify({channel}, lock_name)::text, kept, line FROM r",
        channel = p(5),
    );
    let release_alone = d.announce_release(format!(
        "UPDATE {table} SET {freed} WHERE {held} AND waiting IS NULL"
    ));
    let upsert = |period, line: Upsert| {
        crate::dialect::upsert_on_conflict(d, table, period, Some(&line), |_, _, _| {
            ("", String::new(), String::new())
        })
    };
    let keeps = |n| Upsert::Keeps(format!("CAST({} AS TEXT)", p(n)));
    let acquire = upsert(false, keeps(6));
    let acquire_alone = upsert(false, Upsert::Alone);
    let acquire_period = super::period_claim(
        table,
        &format!("g AS ({})", upsert(true, keeps(8))),
        &format!("g.token = {}", p(4)),
    );
    HandOffStatements {
        acquire,
        acquire_alone,
        acquire_period,
        release_keep,
        release_longest,
        release_alone,
        add_column: format!("ALTER TABLE {table} ADD COLUMN IF NOT EXISTS waiting JSONB NULL"),
        probe: format!("SELECT waiting FROM {table} WHERE 1 = 0"),
    }
}

/// Hand-off's part of an acquisition upsert.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Upsert {
    /// Takes only a row nobody waits for and nothing is kept in (`waiting` is `NULL`).
    Alone,
    /// Honours the keep and keeps the line, for the waiter given (as text: the parameter cast).
    Keeps(String),
}

impl WaitingLine for Upsert {
    fn take(&self, now: &str) -> String {
        match self {
            Self::Alone => "l.waiting IS NULL".to_owned(),
            Self::Keeps(w) => not_kept(w, now),
        }
    }

    /// For [`Upsert::Keeps`], the waiter's entry in the line, written by a refused acquisition
    /// of waiter `w` (as text); for a period claim only if the ledger allows it (a claim the
    /// ledger refuses is not recorded as waiting: no waiting can help it).
    fn update(&self, terms: &UpsertTerms<'_>) -> Option<WaitingUpdate> {
        let Self::Keeps(w) = self else {
            return None;
        };
        let UpsertTerms {
            now,
            take,
            retried,
            ledger_allows,
        } = *terms;
        let fresh = WAITING_FRESH.as_millis();
        let refresh = fresh / 4;
        let entry = format!("(l.waiting -> {w})");
        let record = format!(
            "({w} IS NOT NULL AND NOT {take} AND NOT COALESCE({retried}, false){ledger} AND \
             CASE WHEN {entry} IS NULL \
             THEN COALESCE(octet_length(CAST(l.waiting AS TEXT)), 0) <= {MAX_LINE_BYTES} \
             ELSE {now} - CAST({entry} ->> 1 AS BIGINT) >= {refresh} END)",
            ledger = ledger_allows
                .map(|r| format!(" AND {r}"))
                .unwrap_or_default(),
        );
        let since = format!(
            "CASE WHEN {entry} IS NOT NULL AND {now} - CAST({entry} ->> 1 AS BIGINT) < {fresh} \
             THEN CAST({entry} ->> 0 AS BIGINT) ELSE {now} END"
        );
        let set = format!(
            ", waiting = CASE WHEN {take} THEN (CASE WHEN l.waiting IS NULL THEN NULL \
             ELSE NULLIF(l.waiting - 'k' - COALESCE({w}, '') \
             - COALESCE(l.waiting -> 'k' ->> 0, ''), '{{}}'::jsonb) END) \
             WHEN {record} THEN COALESCE(l.waiting, '{{}}'::jsonb) \
             || jsonb_build_object({w}, jsonb_build_array({since}, {now})) \
             ELSE l.waiting END"
        );
        Some(WaitingUpdate { record, set })
    }
}

/// True unless the row (prefixed `l.`) is kept, at `now`, for another elector than `w` (the
/// waiter as text; `NULL` for a caller that does not wait, for whom it is then `NULL`: false
/// in every condition it is part of). Nobody waiting, it costs one test for `NULL`.
fn not_kept(w: &str, now: &str) -> String {
    format!(
        "(l.waiting IS NULL OR l.waiting -> 'k' IS NULL \
         OR CAST(l.waiting -> 'k' ->> 1 AS BIGINT) <= {now} OR l.waiting -> 'k' ->> 0 = {w})"
    )
}
