//! The mutable state of a held lease, shared by its cell and the elector's register of held
//! leases.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::events::LostReason;
use crate::hold::suspend;

/// What changes while a lease is held: its expiry and local deadline, loss, renewals.
pub(crate) struct CellState {
    pub(crate) expires_at: SystemTime,
    pub(crate) deadline: Instant,
    /// [`suspend::offset`] when the request behind `deadline` was sent: a suspend since then
    /// moves the real deadline closer (see [`suspend`]).
    pub(crate) boot_offset: Option<suspend::Offset>,
    pub(crate) lost: Option<LostReason>,
    /// When the request of the last successful grant or renewal was sent, and the lease it asked
    /// for.
    pub(crate) renewed: (Instant, Duration),
    /// Counted in `leasehold_at_risk`: from a `RenewalFailing` until a renewal succeeds, or the
    /// lease is lost or released.
    pub(crate) at_risk: bool,
    /// Counted in `leader_election_master_status`: until the lease is lost or released.
    pub(crate) leading: bool,
}
