//! The state a held lease shares with its guard, contexts and watchdog: the lease as granted and
//! renewed, its local deadline, its lost signal, and the store calls that renew and release it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::{Instrument, debug, warn};

use crate::cleanup::background_release::{Unwanted, release_in_background};
use crate::elect::shared::ElectorShared;
use crate::error::{Error, Result};
use crate::events::{Event, LostReason};
use crate::hold::held::HeldPlace;
use crate::hold::state::CellState;
use crate::hold::suspend;
use crate::metrics::LockMetrics;
use crate::spans;
use crate::store::contract::ClockSource;
use crate::store::hand_off::HandOff;
use crate::store::lease::{Extension, Lease, Release};

/// The safety margin taken off a lease for the local deadline: a tenth of the lease, at least
/// 1 ms, at most half the lease. It covers clock-rate drift between this host and the store and
/// scheduling delay between noticing the deadline and acting on it.
pub(crate) fn safety_margin(ttl: Duration) -> Duration {
    (ttl / 10).max(Duration::from_millis(1)).min(ttl / 2)
}

/// How long a fresh grant of `ttl` lasts by its own terms: the store's `expires_at −
/// acquired_at` (both its clock), never more than asked. A store may grant less — etcd ends a
/// lease attached to a session with the session — and the local deadline, counted from when the
/// request was sent, must then come sooner too.
pub(crate) fn granted_for(lease: &Lease, ttl: Duration) -> Duration {
    lease
        .expires_at
        .duration_since(lease.acquired_at)
        .unwrap_or(Duration::ZERO)
        .min(ttl)
}

/// The terms a lease cell keeps its lease on, set by the elector that won it.
pub(crate) struct LeaseTerms {
    /// True for a single-slot lock of an elector with fair turns: its release may hand the
    /// lock off (see `turns`).
    pub(crate) may_hand_off: bool,
    pub(crate) ttl: Duration,
    pub(crate) min_lease: Duration,
}

/// An extension's turn (see [`LeaseCell::extension_turn`]): `extending` is held, and the
/// extension is counted in `extensions` until this is dropped.
pub(crate) struct ExtensionTurn<'a> {
    _one_at_a_time: tokio::sync::MutexGuard<'a, ()>,
    _counted: Counted<'a>,
}

/// One count in an `AtomicUsize`, taken back on drop (also when a future is cancelled).
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// State shared by a guard, its contexts and its watchdog.
pub(crate) struct LeaseCell {
    /// The electing elector's shared state: its store, events, turns (a release wakes the first
    /// of its tasks waiting in line), cleanup tasks (a dropped guard's release is counted there)
    /// and register of held leases.
    pub(crate) shared: Arc<ElectorShared>,
    metrics: Arc<LockMetrics>,
    /// See [`LeaseTerms::may_hand_off`].
    may_hand_off: bool,
    pub(crate) ttl: Duration,
    min_lease: Duration,
    /// Monotonic instant at which the acquisition succeeded (min-lease is counted from here).
    pub(crate) acquired: Instant,
    /// The lease as granted; its `expires_at` is kept current in `state`.
    granted: Lease,
    /// Shared with the elector's register of held leases, which reads it for health checks.
    state: Arc<Mutex<CellState>>,
    /// This cell's place in that register, left on release (or drop).
    held: HeldPlace,
    lost_flag: AtomicBool,
    lost_notify: Notify,
    pub(crate) stop: Notify,
    pub(crate) stopping: AtomicBool,
    /// One extension in flight at a time (watchdog or manual), so answers arrive in the order
    /// the store applied them and the local deadline always follows the store's expiry.
    extending: tokio::sync::Mutex<()>,
    /// Extensions waiting for or holding `extending`, and whether the release has begun: no
    /// extension is sent with or after the release (one arriving after it would lengthen a
    /// lease shortened to `min_lease` again). Two atomics instead of the lock keep the
    /// uncontended release cheap: see [`extension_turn`](Self::extension_turn).
    extensions: AtomicUsize,
    released: AtomicBool,
}

impl LeaseCell {
    /// A cell for `lease`, granted by `shared.store` on `terms` to a request sent at `sent_at`
    /// and answered at `acquired`.
    pub(crate) fn new(
        shared: Arc<ElectorShared>,
        terms: LeaseTerms,
        metrics: Arc<LockMetrics>,
        lease: Lease,
        sent_at: Instant,
        acquired: Instant,
    ) -> Self {
        let LeaseTerms {
            may_hand_off,
            ttl,
            min_lease,
        } = terms;
        let state = Arc::new(Mutex::new(CellState {
            expires_at: lease.expires_at,
            deadline: crate::limits::deadline_after(sent_at, {
                let granted = granted_for(&lease, ttl);
                granted.saturating_sub(safety_margin(granted))
            }),
            boot_offset: suspend::offset(),
            lost: None,
            renewed: (sent_at, ttl),
            at_risk: false,
            leading: true,
        }));
        metrics.leading(true);
        Self {
            held: shared.held.enter(&lease, Arc::clone(&state)),
            shared,
            metrics,
            may_hand_off,
            ttl,
            min_lease,
            acquired,
            state,
            granted: lease,
            lost_flag: AtomicBool::new(false),
            lost_notify: Notify::new(),
            stop: Notify::new(),
            stopping: AtomicBool::new(false),
            extending: tokio::sync::Mutex::new(()),
            extensions: AtomicUsize::new(0),
            released: AtomicBool::new(false),
        }
    }

    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, CellState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lease with its current expiry.
    pub(crate) fn lease(&self) -> Lease {
        let mut lease = self.granted.clone();
        lease.expires_at = self.state().expires_at;
        lease
    }

    /// The lease as granted (its `expires_at` may be stale): what store calls need.
    pub(crate) fn granted(&self) -> &Lease {
        &self.granted
    }

    pub(crate) fn expires_at(&self) -> SystemTime {
        self.state().expires_at
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.state().deadline
    }

    pub(crate) fn lost_reason(&self) -> Option<LostReason> {
        if !self.lost_flag.load(Ordering::Acquire) {
            if Instant::now() >= self.deadline() || self.suspended_past_deadline() {
                self.mark_lost(LostReason::DeadlinePassed);
            } else {
                return None;
            }
        }
        self.state().lost
    }

    pub(crate) fn metrics(&self) -> &LockMetrics {
        &self.metrics
    }

    /// True if the host was suspended since the last grant or renewal was sent, for so long that
    /// the local deadline has passed in real time although the monotonic clock, which stood
    /// still meanwhile, has not reached it.
    fn suspended_past_deadline(&self) -> bool {
        let (deadline, base) = {
            let st = self.state();
            (st.deadline, st.boot_offset)
        };
        let Some(suspended) = suspend::since(base) else {
            return false;
        };
        let past = Instant::now()
            .checked_add(suspended)
            .is_none_or(|real_now| real_now >= deadline);
        if past {
            let g = &self.granted;
            warn!(lock = %g.lock, slot = g.slot, fence = g.fence, ?suspended,
                "the host was suspended past the lease's local deadline; the store may have expired it");
        }
        past
    }

    /// Reports the first failure of a run of failed renewals: a warning, the at-risk metrics and
    /// a [`RenewalFailing`](Event::RenewalFailing) event, ahead of any `Lost`.
    pub(crate) fn renewal_failing(&self, error: &str) {
        let g = &self.granted;
        let expires_at = {
            let mut st = self.state();
            if st.lost.is_none() && !st.at_risk {
                st.at_risk = true;
                self.metrics.at_risk(true);
            }
            st.expires_at
        };
        self.metrics.renewal_at_risk();
        warn!(lock = %g.lock, slot = g.slot, fence = g.fence, error,
            "lease renewal failing; retrying until the local deadline, then the lease is lost");
        self.shared.events.emit(|| Event::RenewalFailing {
            lock: g.lock.clone(),
            slot: g.slot,
            fence: g.fence,
            error: error.to_owned(),
            expires_at,
        });
    }

    /// Records a successful extension whose request was sent at `sent_at`: the store's expiry is
    /// now its clock + `ttl` (which may be sooner than before), so the local deadline follows it.
    /// Callers hold an [`ExtensionTurn`], so extensions are applied and recorded in the same order.
    /// `sent_offset` is [`suspend::offset`] read when the request was sent.
    pub(crate) fn extended(
        &self,
        sent_at: Instant,
        sent_offset: Option<suspend::Offset>,
        ttl: Duration,
        expires_at: SystemTime,
    ) {
        let answered = Instant::now();
        let margin = {
            let mut st = self.state();
            if st.lost.is_some() {
                return;
            }
            let margin = st.deadline.saturating_duration_since(answered);
            st.boot_offset = sent_offset;
            st.deadline = crate::limits::deadline_after(sent_at, ttl - safety_margin(ttl));
            st.expires_at = expires_at;
            st.renewed = (sent_at, ttl);
            if std::mem::take(&mut st.at_risk) {
                self.metrics.at_risk(false);
            }
            margin
        };
        self.metrics.extended(margin);
        if self.shared.store.clock_source() == ClockSource::Server
            && let Some(store_now) = expires_at.checked_sub(ttl)
        {
            let round_trip = answered.saturating_duration_since(sent_at);
            self.metrics.clock_offset(crate::metrics::clock_offset(
                store_now,
                SystemTime::now(),
                round_trip,
            ));
        }
        let g = &self.granted;
        self.shared.events.emit(|| Event::Extended {
            lock: g.lock.clone(),
            slot: g.slot,
            fence: g.fence,
            expires_at,
        });
    }

    /// Marks the lease lost (once): wakes `lost()` waiters, emits `Lost`, counts it.
    pub(crate) fn mark_lost(&self, reason: LostReason) {
        {
            let mut st = self.state();
            if st.lost.is_some() {
                return;
            }
            st.lost = Some(reason);
            self.stop_leading(&mut st);
        }
        let (lock, slot, fence) = (
            self.granted.lock.clone(),
            self.granted.slot,
            self.granted.fence,
        );
        self.lost_flag.store(true, Ordering::Release);
        self.lost_notify.notify_waiters();
        warn!(lock = %lock, slot, fence, %reason, "lease lost");
        self.metrics.lost(reason);
        self.shared.events.emit(|| Event::Lost {
            lock,
            slot,
            fence,
            reason,
        });
    }

    /// Resolves when the lease is lost or its local deadline passes.
    pub(crate) async fn lost(&self) -> LostReason {
        loop {
            let notified = self.lost_notify.notified();
            if let Some(reason) = self.lost_reason() {
                return reason;
            }
            let mut wake = self.deadline();
            if suspend::detectable() {
                // The monotonic clock stands still while the host is suspended: look again now
                // and then, so a suspend past the deadline is noticed soon after waking up.
                wake = wake.min(Instant::now() + suspend::SUSPEND_CHECK);
            }
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    /// Resolves when the extensions that took their turn before the release began are done
    /// (the lock is fair; later ones find `released` set). Boxed, so that the future of a
    /// release that finds none (the usual case) stays small.
    fn extensions_done(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move { drop(self.extending.lock().await) })
    }

    /// Waits for this extension's turn (one at a time); `None` once the release has begun.
    pub(crate) async fn extension_turn(&self) -> Option<ExtensionTurn<'_>> {
        self.extensions.fetch_add(1, Ordering::SeqCst);
        let counted = Counted(&self.extensions);
        let one_at_a_time = self.extending.lock().await;
        if self.released.load(Ordering::SeqCst) {
            return None;
        }
        Some(ExtensionTurn {
            _one_at_a_time: one_at_a_time,
            _counted: counted,
        })
    }

    pub(crate) async fn extend(&self, ttl: Duration) -> Result<Extension> {
        crate::limits::check_duration("extension", ttl)?;
        let Some(_turn) = self.extension_turn().await else {
            return Ok(Extension::NotHeld);
        };
        let lease = &self.granted;
        let sent_at = Instant::now();
        let sent_offset = suspend::offset();
        let span = spans::renew(lease, &self.shared.store_label);
        let outcome = self
            .shared
            .store
            .extend(lease, ttl)
            .instrument(span.clone())
            .await;
        spans::record_outcome(&span, spans::extension_outcome(&outcome));
        let outcome = outcome.map_err(|e| Error::store(&lease.lock, e))?;
        match outcome {
            Extension::Extended { expires_at } => {
                self.extended(sent_at, sent_offset, ttl, expires_at);
            }
            Extension::NotHeld => self.mark_lost(LostReason::NotHeld),
        }
        Ok(outcome)
    }

    /// The remaining minimum lease, counted from after acquisition.
    fn linger(&self) -> Duration {
        if self.min_lease.is_zero() {
            return Duration::ZERO;
        }
        self.min_lease.saturating_sub(self.acquired.elapsed())
    }

    /// Takes the lease out of the 0/1 gauges (leading, at risk): it is lost or released.
    fn stop_leading(&self, st: &mut CellState) {
        if std::mem::take(&mut st.leading) {
            self.metrics.leading(false);
        }
        if std::mem::take(&mut st.at_risk) {
            self.metrics.at_risk(false);
        }
    }

    /// Releases on the store (after the watchdog stopped) and reports it.
    pub(crate) async fn release(&self) -> Result<Release> {
        // Set before looking at the count; an extension counts itself before looking at the
        // flag (both SeqCst): either it sees the flag, or this sees it and waits for its end.
        self.released.store(true, Ordering::SeqCst);
        if self.extensions.load(Ordering::SeqCst) > 0 {
            self.extensions_done().await;
        }
        let lease = &self.granted;
        self.held.leave();
        self.stop_leading(&mut self.state());
        let linger = self.linger();
        // Until the store answers, a waiter of this elector that finds the lock held must not
        // take this lease for another process's (see `turns`).
        let in_flight = self.shared.turns.release_in_flight();
        let to = if self.may_hand_off && linger.is_zero() {
            self.shared.turns.hand_off(&lease.lock)
        } else {
            HandOff::Anyone
        };
        let answer = self.shared.store.release_to(lease, linger, to).await;
        drop(in_flight);
        self.metrics.released();
        let kept_for_another = answer.as_ref().is_ok_and(|a| a.kept_for_another);
        let outcome = answer.map(|a| a.release);
        match &outcome {
            Ok(Release::Released) => {
                if linger.is_zero() {
                    self.shared.turns.released(&lease.lock, kept_for_another);
                }
                debug!(lock = %lease.lock, slot = lease.slot, fence = lease.fence, ?linger, "released");
                self.shared.events.emit(|| Event::Released {
                    lock: lease.lock.clone(),
                    slot: lease.slot,
                    fence: lease.fence,
                    linger,
                });
            }
            Ok(Release::NotHeld) => {
                debug!(lock = %lease.lock, slot = lease.slot, "release found the lease no longer held");
                self.mark_lost(LostReason::NotHeld);
            }
            Err(e) if e.is_transient() => {
                warn!(lock = %lease.lock, slot = lease.slot, error = %e, "release failed; retrying in the background");
                let unwanted = Unwanted::Lease {
                    lease: lease.clone(),
                    linger,
                };
                release_in_background(
                    &self.shared.store,
                    &self.shared.cleanup,
                    unwanted,
                    self.deadline(),
                );
            }
            Err(e) => {
                warn!(lock = %lease.lock, slot = lease.slot, error = %e, "release failed; the lease ends at its expiry");
            }
        }
        outcome.map_err(|e| Error::store(&lease.lock, e))
    }
}

impl Drop for LeaseCell {
    /// A cell dropped without a release (its guard was dropped outside a runtime) leads no more.
    fn drop(&mut self) {
        self.stop_leading(&mut self.state());
    }
}
