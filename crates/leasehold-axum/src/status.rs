//! The management report:
//! `{"locks":[{"name","status","leaderId","fence","leaderSince","leaseExpiry"}]}`.

use std::time::SystemTime;

use leasehold::LockState;
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

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
///     }],
/// };
/// assert_eq!(
///     serde_json::to_string(&report)?,
///     r#"{"locks":[{"name":"report","status":"FREE","leaderId":null,"fence":null,"leaderSince":null,"leaseExpiry":null}]}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaderElectionStatus {
    /// One entry per lock, sorted by name.
    pub locks: Vec<LockStatus>,
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
        }
    }
}

/// RFC 3339 in UTC with milliseconds, e.g. `2026-11-29T10:15:30.123Z`.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    let at = OffsetDateTime::from(at);
    let at = at
        .replace_nanosecond(at.millisecond() as u32 * 1_000_000)
        .unwrap_or(at);
    at.format(&Rfc3339)
        .unwrap_or_else(|_| String::from("invalid-time"))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    #[test]
    fn rfc3339_is_utc_with_millis() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_411_330_123);
        assert_eq!(super::rfc3339(t), "2025-11-29T10:15:30.123Z");
        assert_eq!(
            super::rfc3339(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00Z"
        );
    }
}
