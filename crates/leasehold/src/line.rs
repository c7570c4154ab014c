//! The local line: an elector's tasks that wait for the same lock take turns in arrival order.
//!
//! Without it, a task that releases a lock and at once asks for it again usually beats the tasks
//! of its own process that have been waiting: it needs one round trip, while they first have to
//! be woken. Under steady local contention a waiter can then be starved until its wait runs out.
//!
//! With it, a task that finds the lock taken joins the line. Only the first `slots` places in a
//! line talk to the store; the others wait for their turn (or for their wait to run out, which
//! skips them without a store call). A task that arrives while others of its elector are in line
//! joins at the back instead of trying first. And a release by the same elector wakes the first
//! in line at once, without waiting for the store's release signal or a retry timer.
//!
//! The line orders one elector's tasks (and its clones: tenants, reconfigured copies); the store
//! still decides every grant. A task that never tries (`wait = 0`) never joins a line.
//!
//! Between processes, the line takes turns in rounds. Left alone, a process that holds a lock
//! other processes wait for would keep it: its next task is woken in-process, sooner than a
//! store's release signal reaches the others. So when a task wins the lock after finding it held
//! by another process, its elector's round is the tasks then in line (and the winner): each gets
//! one turn, handed over at once as above. After the round's last release the elector *yields*:
//! for a head start of about three store round trips its tasks make no attempt, so the other
//! processes' waiters, woken by the store's signal, go first. Each process thus gets one turn per
//! waiting task per round, and a task's share of the lock does not depend on how many tasks its
//! process runs.
//!
//! On a store that hands off ([`LeaseStore::hands_off`](crate::LeaseStore::hands_off)) the
//! store does what the head start does, without leaving the lock idle: each release within the
//! round keeps the freed lock for this elector's next task ([`HandOff::Keep`]), and the round's
//! last release keeps it for the elector the store has seen waiting longest
//! ([`HandOff::Longest`]). Only when the store knew of no other waiter (their next attempts
//! still on the way) does the round end with a head start, as below.
//!
//! A head start can be too short: the other processes may be slower to hear the signal or to
//! reach the store (a loaded machine, a longer network path). If this elector then wins the lock
//! again without another process having held it, the others missed their turn: a new round
//! starts (rather than in-process hand-offs for as long as nobody slips in) and its head start
//! is twice as long, up to [`HEAD_START_MAX`]. What was learned is kept while rounds go on: the
//! next win from another process starts its round with at least that head start. Only within
//! [`ROUND_MEMORY`] of the last win from another process: when the others have gone, the elector
//! stops yielding to them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::name::LockName;
use crate::store::hand_off::{HandOff, WaiterId};

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
pub(crate) struct Lines {
    /// This elector's identity among a lock's waiters on a store that hands off.
    waiter: WaiterId,
    /// True if the store hands off ([`LeaseStore::hands_off`](crate::LeaseStore::hands_off)):
    /// rounds end with a hand-off instead of a head start.
    hands_off: bool,
    /// Places in all lines; lets the uncontended path skip the map.
    places: AtomicUsize,
    lines: Mutex<HashMap<LockName, Line, foldhash::fast::RandomState>>,
    /// Rounds in progress or yielding; lets the uncontended path skip the map.
    live_rounds: AtomicUsize,
    /// This elector's round per lock contended with other processes.
    rounds: Mutex<HashMap<LockName, Round, foldhash::fast::RandomState>>,
    /// Releases of this elector sent to the store and not yet answered.
    releasing: Arc<AtomicUsize>,
}

/// A release of this elector in flight (see [`Lines::release_in_flight`]); ends on drop.
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
/// twice the delay of a waiter woken by another process's release (see [`Lines::signal_delay`]).
fn three_round_trips(round_trip: Duration) -> Duration {
    (round_trip * 3).clamp(HEAD_START_MIN, HEAD_START_MAX)
}

struct Line {
    next_ticket: u64,
    /// Tickets in arrival order, each with the notifier that tells it its turn has come.
    queue: VecDeque<(u64, Arc<Notify>)>,
    /// Woken (one waiter, permit kept) when this elector releases the lock.
    freed: Arc<Notify>,
}

impl Lines {
    /// The lines of a new elector, on a store that hands off or not.
    pub(crate) fn new(hands_off: bool) -> Self {
        Self {
            waiter: WaiterId::random(),
            hands_off,
            ..Self::default()
        }
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

    fn map(&self) -> MutexGuard<'_, HashMap<LockName, Line, foldhash::fast::RandomState>> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True if some task of this elector is in line for `lock`.
    pub(crate) fn is_busy(&self, lock: &LockName) -> bool {
        self.places.load(Ordering::Acquire) > 0 && self.map().contains_key(lock)
    }

    /// Joins the back of the line for `lock`, whose first `slots` places may try the store.
    pub(crate) fn join(self: &Arc<Self>, lock: &LockName, slots: u32) -> Place {
        let mut map = self.map();
        let line = map.entry(lock.clone()).or_insert_with(|| Line {
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
            lines: Arc::clone(self),
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
            .map()
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
        let waiting = self.places.load(Ordering::Acquire) > 0 && self.map().contains_key(lock);
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
        if let Some(line) = self.map().get(lock) {
            line.freed.notify_one();
        }
    }
}

/// A task's place in a line; leaving (drop) lets the next place take its turn.
pub(crate) struct Place {
    lines: Arc<Lines>,
    lock: LockName,
    ticket: u64,
    slots: usize,
    turn: Arc<Notify>,
    freed: Arc<Notify>,
}

impl Place {
    /// True if this place is among the first `slots` of its line, so it may try the store.
    pub(crate) fn is_active(&self) -> bool {
        self.lines.map().get(&self.lock).is_some_and(|line| {
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
        let mut map = self.lines.map();
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
        self.lines.places.fetch_sub(1, Ordering::AcqRel);
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
        let lines = Arc::new(Lines::default());
        assert!(!lines.is_busy(&lock()));
        let first = lines.join(&lock(), 1);
        let second = lines.join(&lock(), 1);
        let third = lines.join(&lock(), 1);
        assert!(lines.is_busy(&lock()));
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
        assert!(!lines.is_busy(&lock()), "an empty line is forgotten");
        assert_eq!(lines.places.load(Ordering::Acquire), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_slots_places_are_active() {
        let lines = Arc::new(Lines::default());
        let places: Vec<_> = (0..4).map(|_| lines.join(&lock(), 2)).collect();
        let active: Vec<bool> = places.iter().map(Place::is_active).collect();
        assert_eq!(active, [true, true, false, false]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_release_wakes_the_first_in_line_even_before_it_waits() {
        let lines = Arc::new(Lines::default());
        let first = lines.join(&lock(), 1);
        lines.released(&lock(), false); // before `freed()` is awaited: the permit is kept
        tokio::time::timeout(std::time::Duration::from_secs(1), first.freed())
            .await
            .unwrap();
        let other = LockName::new("other").unwrap();
        lines.released(&other, false); // no line: nothing happens
        assert!(!lines.is_busy(&other));
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_gives_each_task_in_line_one_turn_then_yields() {
        let lines = Arc::new(Lines::default());
        let places: Vec<_> = (0..3).map(|_| lines.join(&lock(), 1)).collect();
        lines.won(&lock(), Duration::from_millis(1), true);
        assert_eq!(lines.yielding(&lock()), None);
        assert_eq!(
            lines.signal_delay(&lock()),
            None,
            "the round is this elector's"
        );
        // Two turns handed over in-process at once.
        for _ in 0..2 {
            lines.released(&lock(), false);
            tokio::time::timeout(Duration::from_secs(1), places[0].freed())
                .await
                .unwrap();
            assert_eq!(lines.yielding(&lock()), None);
        }
        // The third ends the round: no in-process wake-up, a head start of 3 round trips.
        let ended = Instant::now();
        lines.released(&lock(), false);
        assert_eq!(
            lines.yielding(&lock()),
            Some(ended + Duration::from_millis(3))
        );
        assert_eq!(
            lines.signal_delay(&lock()),
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
        let lines = Arc::new(Lines::default());
        let place = lines.join(&lock(), 1);
        lines.won(&lock(), Duration::from_micros(10), true);
        drop(place);
        lines.released(&lock(), false);
        // The head start is never shorter than the minimum.
        let until = lines.yielding(&lock()).unwrap();
        assert_eq!(until, Instant::now() + HEAD_START_MIN);
        tokio::time::sleep_until(until).await;
        assert_eq!(lines.yielding(&lock()), None);
        assert!(
            lines.signal_delay(&lock()).is_some(),
            "still taking part in rounds"
        );
        tokio::time::sleep(ROUND_MEMORY * 2).await;
        assert_eq!(lines.yielding(&lock()), None);
        assert_eq!(lines.live_rounds.load(Ordering::Acquire), 0);
        assert_eq!(lines.signal_delay(&lock()), None);
    }

    /// Ends the round in progress on `lock` (one turn left, nobody in line) and returns when
    /// the yield it starts ends.
    fn end_round(lines: &Lines) -> Instant {
        lines.released(&lock(), false);
        lines.yielding(&lock()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_win_after_a_missed_head_start_starts_a_round_with_a_longer_one() {
        let lines = Arc::new(Lines::default());
        lines.won(&lock(), Duration::from_millis(1), true);
        let until = end_round(&lines);
        assert_eq!(until, Instant::now() + Duration::from_millis(3));
        tokio::time::sleep_until(until).await;
        // Nobody else took the lock during the head start: this elector wins again. A new
        // round, and the next head start is twice as long, up to the maximum.
        for expected in [6, 12, 20, 20] {
            lines.won(&lock(), Duration::from_millis(1), false);
            assert_eq!(lines.yielding(&lock()), None, "a round is in progress");
            let until = end_round(&lines);
            assert_eq!(until, Instant::now() + Duration::from_millis(expected));
            tokio::time::sleep_until(until).await;
        }
        // The signal delay stays one and a half round trips.
        assert_eq!(
            lines.signal_delay(&lock()),
            Some(Duration::from_micros(1500))
        );
        // The next win from another process keeps the learned head start.
        lines.won(&lock(), Duration::from_millis(1), true);
        assert_eq!(end_round(&lines), Instant::now() + HEAD_START_MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn wins_without_others_start_no_round_in_a_round_nor_long_after_the_last_win_from_others()
    {
        let lines = Arc::new(Lines::default());
        lines.won(&lock(), Duration::from_millis(1), false);
        assert_eq!(
            lines.live_rounds.load(Ordering::Acquire),
            0,
            "no rounds yet"
        );
        let places: Vec<_> = (0..2).map(|_| lines.join(&lock(), 1)).collect();
        lines.won(&lock(), Duration::from_millis(1), true);
        // A win within the round (an in-process hand-off) is a turn, not a new round.
        lines.released(&lock(), false);
        lines.won(&lock(), Duration::from_millis(1), false);
        drop(places);
        let until = end_round(&lines);
        assert_eq!(until, Instant::now() + Duration::from_millis(3));
        // Past the memory of the last win from another process, the others are gone: a win
        // starts no round, and the rounds are forgotten.
        tokio::time::sleep(ROUND_MEMORY + Duration::from_millis(10)).await;
        lines.won(&lock(), Duration::from_millis(1), false);
        tokio::time::sleep(ROUND_MEMORY).await;
        assert_eq!(lines.yielding(&lock()), None);
        assert_eq!(lines.live_rounds.load(Ordering::Acquire), 0);
    }
}
