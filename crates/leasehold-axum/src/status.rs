//! The management report:
//! `{"locks":[{"name","status","leaderId","fence","leaderSince","leaseExpiry","ledger"}]}`, and
//! `"partitions":[{"set","node","shards","owned","members","settled"}]` when shard jobs are
//! reported.

use std::time::SystemTime;

use leasehold::{PeriodRecord, store::LockState};
use serde::Serialize;

/// The body of `GET /management/leader-election`.
///
/// Serialized with `serde_json`, so every string (lock names, node ids) is properly escaped.
///
/// ```
/// use leasehold_axum::{LeaderElectionStatus, LockStatus, LockStatusKind};
/// let report = LeaderElectionStatus {
///     locks: vec![LockStatus {
///         name: "report".into(),
///         status: LockStatusKind::Free,
///         leader_id: None,
///         fence: None,
///         leader_since: None,
///         lease_expiry: None,
///         ledger: None,
///     }],
///     partitions: Vec::new(), // left out of the JSON when empty
/// };
/// assert_eq!(
///     serde_json::to_string(&report)?,
///     r#"{"locks":[{"name":"report","status":"FREE","leaderId":null,"fence":null,"leaderSince":null,"leaseExpiry":null,"ledger":null}]}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaderElectionStatus {
    /// One entry per lock, sorted by name.
    pub locks: Vec<LockStatus>,
    /// One entry per shard job added with [`Management::shards`](crate::Management::shards),
    /// sorted by set name: this node's view of its partition set (which shards it runs, the
    /// members it sees, whether the set is settled). Not serialized when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<crate::ShardJobsStatus>,
}

/// One lock in a [`LeaderElectionStatus`].
///
/// ```
/// use leasehold_axum::{LockStatus, LockStatusKind};
/// let held = LockStatus {
///     name: "report".into(),
///     status: LockStatusKind::Held,
///     leader_id: Some("node-\"a\"".into()),
///     fence: Some(7),
///     leader_since: Some("2025-12-31T23:59:00.000Z".into()),
///     lease_expiry: Some("2026-01-01T00:00:00.000Z".into()),
///     ledger: None,
/// };
/// assert!(serde_json::to_string(&held)?.contains(r#""leaderId":"node-\"a\"""#));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LockStatus {
    /// The lock name as configured (tenant prefixes are applied by the elector, not shown here).
    pub name: String,
    /// Held, free, or unknown (the store could not be asked).
    pub status: LockStatusKind,
    /// The holder's node id (owner), when held.
    pub leader_id: Option<String>,
    /// The holder's fencing number, when held.
    pub fence: Option<u64>,
    /// When the holder's current lease was granted — for a stable leader
    /// ([`Elector::lead`](leasehold::Elector::lead), [`LeaderOnly`](crate::LeaderOnly)) when its
    /// term began, since renewals keep it: RFC 3339 like `leaseExpiry`, by the store's clock;
    /// `null` when not held.
    pub leader_since: Option<String>,
    /// When the holder's lease ends unless renewed: RFC 3339, UTC, millisecond precision, by the
    /// store's clock (e.g. `2026-11-29T10:15:30.123Z`); `null` when not held.
    pub lease_expiry: Option<String>,
    /// The lock's period ledger (its latest `run_once_per` or scheduled-job claim, and its latest
    /// run), whether or not the lock is held now; `null` for a lock never claimed with a period,
    /// or when the store could not be asked.
    pub ledger: Option<LedgerStatus>,
}

/// The period ledger of a lock in a [`LockStatus`]: "did this period's run happen, and where?".
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use leasehold::PeriodRecord;
/// use leasehold_axum::LedgerStatus;
/// let at = UNIX_EPOCH + Duration::from_millis(1_796_000_000_730);
/// let record = PeriodRecord {
///     period: 20_787,
///     from: UNIX_EPOCH + Duration::from_secs(20_787 * 86_400),
///     until: UNIX_EPOCH + Duration::from_secs(20_788 * 86_400),
///     at,
///     by: "web-2".into(),
///     started: true,
///     ran_at: Some(at),
/// };
/// let json = serde_json::to_value(LedgerStatus::from(&record))?;
/// assert_eq!(json["state"], "RAN");
/// assert_eq!(json["at"], "2026-11-30T00:53:20.730Z");
/// assert_eq!(json["lengthMs"], 86_400_000);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerStatus {
    /// The id of the window claimed, under the claim's own period length.
    pub period: i64,
    /// The window claimed, RFC 3339 by the store's clock.
    pub from: String,
    /// Its end (excluded).
    pub until: String,
    /// The period length the claim was made under, in milliseconds.
    pub length_ms: u64,
    /// `"RAN"` once the claim's action started, `"CLAIMED"` before (a claim that never starts is
    /// taken over by the next claim of its period once its lease ends).
    pub state: &'static str,
    /// When the claim was granted, RFC 3339 by the store's clock.
    pub at: String,
    /// The node id it was granted to.
    pub by: String,
    /// When the lock's latest run was granted (`at` once this claim ran); `null` when none is
    /// known.
    pub last_run: Option<String>,
}

impl From<&PeriodRecord> for LedgerStatus {
    fn from(r: &PeriodRecord) -> Self {
        Self {
            period: r.period,
            from: rfc3339(r.from),
            until: rfc3339(r.until),
            length_ms: u64::try_from(r.length().as_millis()).unwrap_or(u64::MAX),
            state: if r.started { "RAN" } else { "CLAIMED" },
            at: rfc3339(r.at),
            by: r.by.clone(),
            last_run: r.last_run().map(rfc3339),
        }
    }
}

/// The `status` of a lock: `"HELD"`, `"FREE"` or `"UNKNOWN"`.
///
/// ```
/// use leasehold_axum::LockStatusKind;
/// assert_eq!(serde_json::to_string(&LockStatusKind::Held)?, r#""HELD""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LockStatusKind {
    /// A live lease holds the lock.
    Held,
    /// No live lease.
    Free,
    /// The store could not be asked (the error is logged at WARN).
    Unknown,
}

impl LockStatus {
    /// The entry for `name` from a state snapshot (slot 0's holder for a single-leader lock).
    pub(crate) fn from_state(name: String, state: &LockState) -> Self {
        match state.holder() {
            Some(h) => Self {
                name,
                status: LockStatusKind::Held,
                leader_id: Some(h.owner.clone()),
                fence: Some(h.fence),
                leader_since: Some(rfc3339(h.acquired_at)),
                lease_expiry: Some(rfc3339(h.expires_at)),
                ledger: None,
            },
            None => Self::empty(name, LockStatusKind::Free),
        }
    }

    pub(crate) fn empty(name: String, status: LockStatusKind) -> Self {
        Self {
            name,
            status,
            leader_id: None,
            fence: None,
            leader_since: None,
            lease_expiry: None,
            ledger: None,
        }
    }
}

/// RFC 3339 in UTC with exactly three digits of milliseconds, e.g. `2026-11-29T10:15:30.730Z`:
/// the core's [`leasehold::store::format_utc`], the one format every leasehold output uses.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    leasehold::store::format_utc(at)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    #[test]
    fn rfc3339_is_utc_with_three_digits_of_millis() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_411_330_123);
        assert_eq!(super::rfc3339(t), "2025-11-29T10:15:30.123Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_411_330_730);
        assert_eq!(super::rfc3339(t), "2025-11-29T10:15:30.730Z");
        assert_eq!(
            super::rfc3339(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000Z"
        );
    }
}
