//! Sessions: one record per client and lease length that keeps every lease the client holds
//! with that length alive, so a renewal period costs one write however many leases it holds.
//!
//! * The **session record** is the key `=session.<id>` (`id` random, never reused), written
//!   with a `Nats-TTL` of the lease: the server removes it when nobody renews it. Its value
//!   holds the lease length, the end by the holder's clock, and the leases forced out of it
//!   that the holder has not seen yet (see [`SessionRecord`](crate::record::SessionRecord)).
//! * A **grant** writes the lock record as a lease of its own, with its own `Nats-TTL` (as the
//!   previous version did): the lease is safe from the moment it is granted, whatever the
//!   state of the session, and a lease released before its first renewal never touches one.
//! * Its **first extension attaches** it to the session: after the session record's renewal,
//!   one compare-and-set write of the lock record naming the session in a header
//!   (`Leasehold-Session`) and carrying no TTL of its own. From then on it is held while its
//!   session record is there, its token is not revoked in it, and it is not deleted. An
//!   acquirer that finds a lock record naming a session reads the session record: removed, or
//!   the token revoked → the slot is free, taken with the usual compare-and-set on the lock
//!   record's sequence. (A lease extended with another length than its session's is attached
//!   to the session of that length the same way.)
//! * **Renewal**: one compare-and-set write of the session record per lease length, expecting
//!   the sequence of this client's own last write. A conflict means someone else wrote it (a
//!   forced release adding a revoked lease) or the server removed it: the record is read
//!   again; removed → the session is lost and so is every lease under it (a new session gets
//!   a new id); revoked leases → answered `NotHeld`, their lock records deleted if still there,
//!   and the rest renewed in the next write, which drops the entries seen.
//! * **Forced release** of one lease of a live session (and a release by another client than
//!   the holder): first the lease's slot key and token go into the session record's revoked
//!   list (compare-and-set on its sequence), then the lock record is deleted. A forcer that
//!   dies between the two leaves a revoked token, which acquirers treat as free.
//! * A lease that the client stopped renewing while its session lives on for others ends at
//!   its own expiry: the session's next renewal deletes its lock record.
//!
//! Whole-second TTLs: the session record's `Nats-TTL` is the lease rounded up, so the server
//! removes it (and frees its locks) no earlier than the end each renewal answered, which is
//! this host's clock when the write was sent plus the lease.

use std::time::Duration;

use crate::record::Revoked;

/// The most revoked leases a session record keeps at once. Entries leave when the session's
/// holder sees them (its next renewal, within a third of the lease), so the list only fills
/// when one session has this many leases forced out within one renewal period; a forced
/// release that finds it full fails with a transient error (try again after a renewal).
pub(crate) const MAX_REVOKED: usize = 256;

/// One of this client's sessions, as last written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Own {
    pub(crate) id: String,
    pub(crate) ttl: Duration,
    /// The sequence of this client's last write of it.
    pub(crate) seq: u64,
    /// Its end by this host's clock: when the last write was sent, plus the lease.
    pub(crate) expires_ms: u64,
    /// The revoked leases that last write kept: seen, but their lock records could not be
    /// checked yet (tried again at the next renewal).
    pub(crate) revoked: Vec<Revoked>,
}
