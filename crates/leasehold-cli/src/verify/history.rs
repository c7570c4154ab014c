//! The history of a verify run: every operation, timed from the run's start, one JSON object per
//! line with `--json`.

use std::sync::{Mutex, MutexGuard};

use serde::Serialize;
use tokio::time::Instant;

/// One operation of one contender.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Op {
    /// The store granted the lock.
    Granted {
        contender: usize,
        /// When the request was sent (ms since the start).
        asked_ms: f64,
        /// When the grant arrived.
        at_ms: f64,
        fence: u64,
        /// Until when this contender believes its lease valid (its local deadline).
        valid_until_ms: f64,
    },
    /// Someone else held the lock.
    Skipped { contender: usize, at_ms: f64 },
    /// The store failed (the message has no secret: it went through the CLI's scrubber).
    StoreError {
        contender: usize,
        at_ms: f64,
        error: String,
    },
    /// The contender froze for longer than its lease (a simulated stall), holding the lock.
    Paused {
        contender: usize,
        at_ms: f64,
        fence: u64,
        pause_ms: f64,
    },
    /// A write to the fenced register.
    Write {
        contender: usize,
        at_ms: f64,
        fence: u64,
        value: u64,
        /// The highest fence the register had accepted before this write.
        highest_before: Option<u64>,
        accepted: bool,
    },
    /// The contender stopped believing it held the lock and asked the store to release it.
    Released {
        contender: usize,
        at_ms: f64,
        fence: u64,
        /// "released", "not held" (the lease had ended) or the store's error.
        outcome: String,
    },
    /// The proxy cut every connection to the store for a moment.
    ProxyCut { at_ms: f64, for_ms: f64 },
}

/// The operations so far, in the order they were recorded.
#[derive(Debug)]
pub(crate) struct History {
    start: Instant,
    ops: Mutex<Vec<Op>>,
}

impl History {
    pub(crate) fn new() -> Self {
        Self {
            start: Instant::now(),
            ops: Mutex::new(Vec::new()),
        }
    }

    fn ops(&self) -> MutexGuard<'_, Vec<Op>> {
        self.ops.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Milliseconds since the start.
    pub(crate) fn ms(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.start).as_secs_f64() * 1e3
    }

    /// Milliseconds since the start, now.
    pub(crate) fn now_ms(&self) -> f64 {
        self.ms(Instant::now())
    }

    pub(crate) fn record(&self, op: Op) {
        self.ops().push(op);
    }

    /// Records the operation `make` builds while holding the history's lock, so the order of
    /// the records is the order of the steps `make` observed.
    pub(crate) fn record_with<T>(&self, make: impl FnOnce() -> (Op, T)) -> T {
        let mut ops = self.ops();
        let (op, out) = make();
        ops.push(op);
        out
    }

    pub(crate) fn snapshot(&self) -> Vec<Op> {
        self.ops().clone()
    }
}
