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
//! The line orders one elector's tasks (and its clones: tenants, reconfigured copies); it does
//! not change who wins between processes, and the store still decides every grant. A task that
//! never tries (`wait = 0`) never joins a line.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::name::LockName;

/// Every line of one elector, by lock.
#[derive(Default)]
pub(crate) struct Lines {
    /// Places in all lines; lets the uncontended path skip the map.
    places: AtomicUsize,
    lines: Mutex<HashMap<LockName, Line, foldhash::fast::RandomState>>,
}

struct Line {
    next_ticket: u64,
    /// Tickets in arrival order, each with the notifier that tells it its turn has come.
    queue: VecDeque<(u64, Arc<Notify>)>,
    /// Woken (one waiter, permit kept) when this elector releases the lock.
    freed: Arc<Notify>,
}

impl Lines {
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

    /// This elector released `lock`: the first in line may try again at once.
    pub(crate) fn released(&self, lock: &LockName) {
        if self.places.load(Ordering::Acquire) == 0 {
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
        lines.released(&lock()); // before `freed()` is awaited: the permit is kept
        tokio::time::timeout(std::time::Duration::from_secs(1), first.freed())
            .await
            .unwrap();
        let other = LockName::new("other").unwrap();
        lines.released(&other); // no line: nothing happens
        assert!(!lines.is_busy(&other));
    }
}
