//! Turn-taking among waiters for one lock: an elector's own tasks take turns in arrival order
//! (the local line), and electors in different processes take turns in rounds.
//!
//! The turns are a seam of the acquisition loop (`elect::acquire`): it asks them, at a few
//! named points, whether to try now, whom to name as waiter, and how long to pause. An elector
//! built with [`fair_turns(false)`](crate::ElectionOptionsBuilder::fair_turns) keeps the local
//! line but takes no rounds with other processes and asks no store to hand off.
//!
//! In short: a task that finds the lock taken joins its elector's line, and only the first
//! `slots` places talk to the store; a release by the elector wakes the first in line at once.
//! When a task wins a single-slot lock from another process, its elector's round is the tasks
//! then in line, one turn each; after it the elector yields for a head start (about three store
//! round trips), or, with [`hand_off`](crate::ElectionOptionsBuilder::hand_off) on a store that
//! hands off, the round's last release keeps the lock for the elector the store has seen waiting
//! longest. Why, and how a head start that was too short
//! grows, is in `docs/design.md` ("Turns").

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::OptionFuture;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep, sleep_until, timeout_at};

use crate::hold::held::HeldLeases;
use crate::name::LockName;
use crate::store::hand_off::{HandOff, WaiterId};
use crate::store::signal::ReleaseSignal;

/// The shortest head start an elector gives other processes' waiters after its round.
pub(crate) const HEAD_START_MIN: Duration = Duration::from_millis(2);
/// The longest head start an elector gives other processes' waiters after its round.
pub(crate) const HEAD_START_MAX: Duration = Duration::from_millis(20);
/// How long after its round an elector still takes part in rounds on that lock: while it does,
/// a store release signal wakes its waiters half the head start late, so that another
/// process's in-process hand-off within its round goes first.
pub(crate) const ROUND_MEMORY: Duration = Duration::from_secs(1);

/// Every line of one elector, by lock.
#[derive(Default)]
pub(crate) struct Turns {
    /// This elector's identity among a lock's waiters on a store that hands off.
    waiter: WaiterId,
    /// True if the store hands off ([`LeaseStore::hands_off`](crate::LeaseStore::hands_off))
    /// and the elector asked for it ([`hand_off`](crate::ElectionOptionsBuilder::hand_off)):
    /// rounds end with a hand-off instead of a head start, and waiters are named to the store.
    hands_off: bool,
    /// Places in all queues; lets the uncontended path skip the map.
    places: AtomicUsize,
    queues: Mutex<HashMap<LockName, Queue, foldhash::fast::RandomState>>,
    /// Rounds in progress or yielding; lets the uncontended path skip the map.
    live_rounds: AtomicUsize,
    /// This elector's round per lock contended with other processes.
    rounds: Mutex<HashMap<LockName, Round, foldhash::fast::RandomState>>,
    /// Releases of this elector sent to the store and not yet answered.
    releasing: Arc<AtomicUsize>,
}

/// A release of this elector in flight (see [`Turns::release_in_flight`]); ends on drop.
pub(crate) struct ReleaseInFlight(Arc<AtomicUsize>);

impl Drop for ReleaseInFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// This elector's round on a lock other processes wait for too.
struct Round {
    /// Turns (releases) left in the round.
    left: usize,
    /// The store round trip measured when this elector last won the lock from another process.
    round_trip: Duration,
    /// The head start other processes get when the round ends.
    head_start: Duration,
    /// Set when the round is over: this elector's tasks wait until then before trying.
    yield_until: Option<Instant>,
    /// When this elector last won the lock from another process.
    won_from_others: Instant,
}

/// Three round trips, within the head start's bounds: the head start a round starts from, and
/// twice the delay of a waiter woken by another process's release (see [`Turns::signal_delay`]).
fn three_round_trips(round_trip: Duration) -> Duration {
    (round_trip * 3).clamp(HEAD_START_MIN, HEAD_START_MAX)
}

struct Queue {
    next_ticket: u64,
    /// Tickets in arrival order, each with the notifier that tells it its turn has come.
    queue: VecDeque<(u64, Arc<Notify>)>,
    /// Woken (one waiter, permit kept) when this elector releases the lock.
    freed: Arc<Notify>,
}

impl Turns {
    /// The turns of a new elector, on a store that hands off or not.
    pub(crate) fn new(hands_off: bool) -> Self {
        Self {
            waiter: WaiterId::random(),
            hands_off,
            ..Self::default()
        }
    }

    /// True if turns between processes go through the store's line of waiters.
    pub(crate) fn hands_off(&self) -> bool {
        self.hands_off
    }

    /// This elector's identity among a lock's waiters.
    pub(crate) fn waiter(&self) -> WaiterId {
        self.waiter
    }

    /// Whom this elector's release of single-slot `lock` leaves the lock to, on a store that
    /// hands off: within its round, with a turn left and a task of its own in line, that task
    /// (kept for this elector); otherwise the elector that has waited longest, if another
    /// waits. Elsewhere: anyone.
    pub(crate) fn hand_off(&self, lock: &LockName) -> HandOff {
        if !self.hands_off {
            return HandOff::Anyone;
        }
        let mid_round = self.live_rounds.load(Ordering::Acquire) > 0
            && self
                .rounds()
                .get(lock)
                .is_some_and(|r| r.yield_until.is_none() && r.left > 1);
        if mid_round && self.is_busy(lock) {
            HandOff::Keep(self.waiter)
        } else {
            HandOff::Longest(self.waiter)
        }
    }

    fn queues(&self) -> MutexGuard<'_, HashMap<LockName, Queue, foldhash::fast::RandomState>> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True if some task of this elector is in line for `lock`.
    pub(crate) fn is_busy(&self, lock: &LockName) -> bool {
        self.places.load(Ordering::Acquire) > 0 && self.queues().contains_key(lock)
    }

    /// Joins the back of the line for `lock`, whose first `slots` places may try the store.
    pub(crate) fn join(self: &Arc<Self>, lock: &LockName, slots: u32) -> Place {
        let mut map = self.queues();
        let line = map.entry(lock.clone()).or_insert_with(|| Queue {
            next_ticket: 0,
            queue: VecDeque::new(),
            freed: Arc::new(Notify::new()),
        });
        let ticket = line.next_ticket;
        line.next_ticket += 1;
        let turn = Arc::new(Notify::new());
        line.queue.push_back((ticket, Arc::clone(&turn)));
        self.places.fetch_add(1, Ordering::AcqRel);
        Place {
            turns: Arc::clone(self),
            lock: lock.clone(),
            ticket,
            slots: slots as usize,
            turn,
            freed: Arc::clone(&line.freed),
        }
    }

    /// Marks a release of this elector as sent until the returned value is dropped.
    pub(crate) fn release_in_flight(&self) -> ReleaseInFlight {
        self.releasing.fetch_add(1, Ordering::AcqRel);
        ReleaseInFlight(Arc::clone(&self.releasing))
    }

    /// True if a release of this elector is in flight: a lock found held may still be its own.
    pub(crate) fn is_releasing(&self) -> bool {
        self.releasing.load(Ordering::Acquire) > 0
    }

    fn rounds(&self) -> MutexGuard<'_, HashMap<LockName, Round, foldhash::fast::RandomState>> {
        self.rounds.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A task of this elector won `lock` with an attempt that took `round_trip`, after finding
    /// it held by another process (`from_others`) or not. A win from others starts a round: one
    /// turn for each task in line (the winner's place included, if it had one). A win without
    /// one, after this elector's round is over and within [`ROUND_MEMORY`] of its last win from
    /// others, means the others missed their head start: a new round starts, its head start
    /// doubled. Otherwise (no rounds, or a round in progress) nothing changes.
    pub(crate) fn won(&self, lock: &LockName, round_trip: Duration, from_others: bool) {
        if !from_others && self.live_rounds.load(Ordering::Acquire) == 0 {
            return;
        }
        let turns = self
            .queues()
            .get(lock)
            .map_or(1, |line| line.queue.len().max(1));
        let now = Instant::now();
        let mut rounds = self.rounds();
        let earlier = rounds
            .get(lock)
            .filter(|r| now.saturating_duration_since(r.won_from_others) <= ROUND_MEMORY);
        let round = match earlier {
            _ if from_others => Round {
                left: turns,
                round_trip,
                head_start: three_round_trips(round_trip)
                    .max(earlier.map_or(Duration::ZERO, |r| r.head_start)),
                yield_until: None,
                won_from_others: now,
            },
            Some(r) if r.yield_until.is_some() => Round {
                left: turns,
                round_trip: r.round_trip,
                head_start: (r.head_start * 2).min(HEAD_START_MAX),
                yield_until: None,
                won_from_others: r.won_from_others,
            },
            _ => return,
        };
        if rounds.insert(lock.clone(), round).is_none() {
            self.live_rounds.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// If this elector is yielding `lock` to other processes, until when.
    pub(crate) fn yielding(&self, lock: &LockName) -> Option<Instant> {
        if self.live_rounds.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut rounds = self.rounds();
        let until = rounds.get(lock)?.yield_until?;
        let now = Instant::now();
        if until > now {
            return Some(until);
        }
        if now - until > ROUND_MEMORY {
            rounds.remove(lock);
            self.live_rounds.fetch_sub(1, Ordering::AcqRel);
        }
        None
    }

    /// How long a waiter woken by the store's release signal waits before trying: half the
    /// head start a round starts from (one and a half round trips) while this elector takes
    /// part in rounds on `lock` and its own round is over (the release was another process's),
    /// else nothing. It does not grow with a learned head start: the others' head starts would
    /// then have to grow with it.
    pub(crate) fn signal_delay(&self, lock: &LockName) -> Option<Duration> {
        if self.hands_off || self.live_rounds.load(Ordering::Acquire) == 0 {
            return None;
        }
        let rounds = self.rounds();
        let round = rounds.get(lock).filter(|r| r.yield_until.is_some())?;
        Some(three_round_trips(round.round_trip) / 2)
    }

    /// Counts a turn of `lock`'s round; true if the round is over (and yielding starts now,
    /// for the head start, or for nothing if the release kept the lock for another process).
    fn round_over(&self, lock: &LockName, kept_for_another: bool) -> bool {
        if self.live_rounds.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut rounds = self.rounds();
        let Some(round) = rounds.get_mut(lock).filter(|r| r.yield_until.is_none()) else {
            return false;
        };
        round.left = round.left.saturating_sub(1);
        let waiting = self.places.load(Ordering::Acquire) > 0 && self.queues().contains_key(lock);
        if round.left > 0 && waiting {
            return false;
        }
        // A release that kept the lock for another process gives the others their turn
        // itself; without a waiter recorded in the store (one too slow to be refused yet), the
        // head start does.
        let head_start = if kept_for_another {
            Duration::ZERO
        } else {
            round.head_start
        };
        round.yield_until = Some(Instant::now() + head_start);
        true
    }

    /// This elector released `lock`: the first in line may try again at once, unless this
    /// elector's round is over (then the line waits out the head start of other processes).
    pub(crate) fn released(&self, lock: &LockName, kept_for_another: bool) {
        if self.round_over(lock, kept_for_another) || self.places.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(line) = self.queues().get(lock) {
            line.freed.notify_one();
        }
    }
}

/// A task's place in a line; leaving (drop) lets the next place take its turn.
pub(crate) struct Place {
    turns: Arc<Turns>,
    lock: LockName,
    ticket: u64,
    slots: usize,
    turn: Arc<Notify>,
    freed: Arc<Notify>,
}

impl Place {
    /// True if this place is among the first `slots` of its line, so it may try the store.
    pub(crate) fn is_active(&self) -> bool {
        self.turns.queues().get(&self.lock).is_some_and(|line| {
            line.queue
                .iter()
                .take(self.slots)
                .any(|(t, _)| *t == self.ticket)
        })
    }

    /// Resolves when this place may try the store.
    pub(crate) async fn turn(&self) {
        while !self.is_active() {
            self.turn.notified().await;
        }
    }

    /// Resolves when this elector releases the lock (or released it since the last call).
    pub(crate) async fn freed(&self) {
        self.freed.notified().await;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut map = self.turns.queues();
        if let Some(line) = map.get_mut(&self.lock) {
            line.queue.retain(|(t, _)| *t != self.ticket);
            if line.queue.is_empty() {
                map.remove(&self.lock);
            } else {
                for (_, turn) in line.queue.iter().take(self.slots) {
                    turn.notify_one();
                }
            }
        }
        self.turns.places.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How one acquisition takes part in its elector's turns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TurnRules {
    /// Waits in the local line: an acquisition that may wait (`wait` above zero), not a
    /// campaign.
    pub(crate) line: bool,
    /// Yields when its elector's round is over, and lets another process's in-process hand-off
    /// go first after a release signal: every acquisition of an elector with fair turns, but a
    /// campaign.
    pub(crate) yields: bool,
    /// Takes part in rounds with other processes: also only for a single-slot lock whose
    /// store's release signal reaches every process.
    pub(crate) rounds: bool,
    /// Names its elector as a waiter to a store that hands off.
    pub(crate) named: bool,
}

/// One acquisition's dealings with its elector's turns, asked by the acquisition loop at five
/// named points: [`before_attempt`](Self::before_attempt), [`waiter`](Self::waiter),
/// [`won`](Self::won), [`refused`](Self::refused) and [`between_attempts`](Self::between_attempts).
pub(crate) struct TurnTaking<'a> {
    turns: &'a Arc<Turns>,
    held: &'a HeldLeases,
    lock: &'a LockName,
    slots: u32,
    rules: TurnRules,
    place: Option<Place>,
    /// The last refusal came from a lease held by another process (for rounds).
    held_by_others: bool,
}

impl<'a> TurnTaking<'a> {
    /// An acquisition of `lock` (with `slots`) by the elector whose turns and held leases these
    /// are. Tasks of this elector already waiting for the lock go first: it joins the back of
    /// their line.
    pub(crate) fn new(
        turns: &'a Arc<Turns>,
        held: &'a HeldLeases,
        lock: &'a LockName,
        slots: u32,
        rules: TurnRules,
    ) -> Self {
        let place = (rules.line && turns.is_busy(lock)).then(|| turns.join(lock, slots));
        Self {
            turns,
            held,
            lock,
            slots,
            rules,
            place,
            held_by_others: false,
        }
    }

    /// Before an attempt: waits for this task's turn in the local line, then out the head start
    /// this elector gives other processes when its round is over. False if `deadline` came
    /// before the turn.
    pub(crate) async fn before_attempt(&self, deadline: Option<Instant>) -> bool {
        if let Some(place) = self.place.as_ref().filter(|p| !p.is_active()) {
            match deadline {
                Some(d) => {
                    if timeout_at(d, place.turn()).await.is_err() {
                        return false;
                    }
                }
                None => place.turn().await,
            }
        }
        if self.rules.yields
            && let Some(until) = self.turns.yielding(self.lock)
        {
            sleep_until(deadline.map_or(until, |d| until.min(d))).await;
        }
        true
    }

    /// The waiter an attempt names to a store that
    /// [hands off](crate::LeaseStore::hands_off): none while a task of this elector holds the
    /// lock — its next turn comes in-process, so the store need not record it as waiting (a
    /// write per refusal on a SQL store) nor look through it at the release.
    pub(crate) fn waiter(&self) -> Option<WaiterId> {
        (self.rules.named && !self.held.holds(self.lock)).then(|| self.turns.waiter())
    }

    /// The lock was won by an attempt that took `round_trip`: leaves the line, and starts or
    /// counts a round.
    pub(crate) fn won(self, round_trip: Duration) {
        if self.rules.rounds {
            self.turns.won(self.lock, round_trip, self.held_by_others);
        }
    }

    /// The lock was found held: by another process, unless a release of this elector is in
    /// flight or a task of this elector holds it.
    pub(crate) fn refused(&mut self) {
        self.held_by_others =
            self.rules.rounds && !self.turns.is_releasing() && !self.held.holds(self.lock);
    }

    /// Between attempts: joins the line (if this acquisition waits in it), then waits for the
    /// first of this elector's release of the lock, the store's release `signal` and `pause`.
    /// After another process's release, while processes take turns in rounds, its next task,
    /// woken in-process, goes first. False, at once, if other tasks of this elector come first:
    /// [`before_attempt`](Self::before_attempt) waits for the turn.
    pub(crate) async fn between_attempts(
        &mut self,
        pause: Duration,
        signal: Option<&mut ReleaseSignal>,
        deadline: Option<Instant>,
    ) -> bool {
        if self.rules.line {
            let place = self
                .place
                .get_or_insert_with(|| self.turns.join(self.lock, self.slots));
            if !place.is_active() {
                return false;
            }
        }
        let freed = OptionFuture::from(self.place.as_ref().map(Place::freed));
        let store_signal = OptionFuture::from(signal.map(ReleaseSignal::released));
        let by_signal = tokio::select! {
            biased;
            Some(()) = freed => false,
            Some(()) = store_signal => true,
            () = sleep(pause) => false,
        };
        let delay = (by_signal && self.rules.yields)
            .then(|| self.turns.signal_delay(self.lock))
            .flatten();
        if let Some(delay) = delay {
            let until = Instant::now() + delay;
            sleep_until(deadline.map_or(until, |d| until.min(d))).await;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn lock() -> LockName {
        LockName::new("job").unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn places_take_turns_in_arrival_order() {
        let turns = Arc::new(Turns::default());
        assert!(!turns.is_busy(&lock()));
        let first = turns.join(&lock(), 1);
        let second = turns.join(&lock(), 1);
        let third = turns.join(&lock(), 1);
        assert!(turns.is_busy(&lock()));
        assert!(first.is_active());
        assert!(!second.is_active() && !third.is_active());
        drop(first);
        // The turn is handed over with a kept permit: no lost wake-up.
        tokio::time::timeout(std::time::Duration::from_secs(1), second.turn())
            .await
            .unwrap();
        assert!(!third.is_active());
        drop(second);
        drop(third);
        assert!(!turns.is_busy(&lock()), "an empty line is forgotten");
        assert_eq!(turns.places.load(Ordering::Acquire), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_slots_places_are_active() {
        let turns = Arc::new(Turns::default());
        let places: Vec<_> = (0..4).map(|_| turns.join(&lock(), 2)).collect();
        let active: Vec<bool> = places.iter().map(Place::is_active).collect();
        assert_eq!(active, [true, true, false, false]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_release_wakes_the_first_in_line_even_before_it_waits() {
        let turns = Arc::new(Turns::default());
        let first = turns.join(&lock(), 1);
        turns.released(&lock(), false); // before `freed()` is awaited: the permit is kept
        tokio::time::timeout(std::time::Duration::from_secs(1), first.freed())
            .await
            .unwrap();
        let other = LockName::new("other").unwrap();
        turns.released(&other, false); // no line: nothing happens
        assert!(!turns.is_busy(&other));
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_gives_each_task_in_line_one_turn_then_yields() {
        let turns = Arc::new(Turns::default());
        let places: Vec<_> = (0..3).map(|_| turns.join(&lock(), 1)).collect();
        turns.won(&lock(), Duration::from_millis(1), true);
        assert_eq!(turns.yielding(&lock()), None);
        assert_eq!(
            turns.signal_delay(&lock()),
            None,
            "the round is this elector's"
        );
        // Two turns handed over in-process at once.
        for _ in 0..2 {
            turns.released(&lock(), false);
            tokio::time::timeout(Duration::from_secs(1), places[0].freed())
                .await
                .unwrap();
            assert_eq!(turns.yielding(&lock()), None);
        }
        // The third ends the round: no in-process wake-up, a head start of 3 round trips.
        let ended = Instant::now();
        turns.released(&lock(), false);
        assert_eq!(
            turns.yielding(&lock()),
            Some(ended + Duration::from_millis(3))
        );
        assert_eq!(
            turns.signal_delay(&lock()),
            Some(Duration::from_micros(1500))
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(50), places[0].freed())
                .await
                .is_err()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_ends_early_when_nobody_is_left_in_line_and_is_forgotten_later() {
        let turns = Arc::new(Turns::default());
        let place = turns.join(&lock(), 1);
        turns.won(&lock(), Duration::from_micros(10), true);
        drop(place);
        turns.released(&lock(), false);
        // The head start is never shorter than the minimum.
        let until = turns.yielding(&lock()).unwrap();
        assert_eq!(until, Instant::now() + HEAD_START_MIN);
        tokio::time::sleep_until(until).await;
        assert_eq!(turns.yielding(&lock()), None);
        assert!(
            turns.signal_delay(&lock()).is_some(),
            "still taking part in rounds"
        );
        tokio::time::sleep(ROUND_MEMORY * 2).await;
        assert_eq!(turns.yielding(&lock()), None);
        assert_eq!(turns.live_rounds.load(Ordering::Acquire), 0);
        assert_eq!(turns.signal_delay(&lock()), None);
    }

    /// Ends the round in progress on `lock` (one turn left, nobody in line) and returns when
    /// the yield it starts ends.
    fn end_round(turns: &Turns) -> Instant {
        turns.released(&lock(), false);
        turns.yielding(&lock()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_win_after_a_missed_head_start_starts_a_round_with_a_longer_one() {
        let turns = Arc::new(Turns::default());
        turns.won(&lock(), Duration::from_millis(1), true);
        let until = end_round(&turns);
        assert_eq!(until, Instant::now() + Duration::from_millis(3));
        tokio::time::sleep_until(until).await;
        // Nobody else took the lock during the head start: this elector wins again. A new
        // round, and the next head start is twice as long, up to the maximum.
        for expected in [6, 12, 20, 20] {
            turns.won(&lock(), Duration::from_millis(1), false);
            assert_eq!(turns.yielding(&lock()), None, "a round is in progress");
            let until = end_round(&turns);
            assert_eq!(until, Instant::now() + Duration::from_millis(expected));
            tokio::time::sleep_until(until).await;
        }
        // The signal delay stays one and a half round trips.
        assert_eq!(
            turns.signal_delay(&lock()),
            Some(Duration::from_micros(1500))
        );
        // The next win from another process keeps the learned head start.
        turns.won(&lock(), Duration::from_millis(1), true);
        assert_eq!(end_round(&turns), Instant::now() + HEAD_START_MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn wins_without_others_start_no_round_in_a_round_nor_long_after_the_last_win_from_others()
    {
        let turns = Arc::new(Turns::default());
        turns.won(&lock(), Duration::from_millis(1), false);
        assert_eq!(
            turns.live_rounds.load(Ordering::Acquire),
            0,
            "no rounds yet"
        );
        let places: Vec<_> = (0..2).map(|_| turns.join(&lock(), 1)).collect();
        turns.won(&lock(), Duration::from_millis(1), true);
        // A win within the round (an in-process hand-off) is a turn, not a new round.
        turns.released(&lock(), false);
        turns.won(&lock(), Duration::from_millis(1), false);
        drop(places);
        let until = end_round(&turns);
        assert_eq!(until, Instant::now() + Duration::from_millis(3));
        // Past the memory of the last win from another process, the others are gone: a win
        // starts no round, and the rounds are forgotten.
        tokio::time::sleep(ROUND_MEMORY + Duration::from_millis(10)).await;
        turns.won(&lock(), Duration::from_millis(1), false);
        tokio::time::sleep(ROUND_MEMORY).await;
        assert_eq!(turns.yielding(&lock()), None);
        assert_eq!(turns.live_rounds.load(Ordering::Acquire), 0);
    }
}
