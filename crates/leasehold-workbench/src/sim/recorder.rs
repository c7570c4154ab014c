//! Turns the journal and the store's state into frames and timeline events.

use leasehold::{LostReason, store::LockState};

use crate::sim::clock::Clock;
use crate::sim::journal::{Entry, Journal, What};
use crate::sim::timeline::{
    Frame, Holder, LedgerEntry, NodeState, Operation, Outcome, Status, TimelineEvent,
};

/// One candidate's status and the lease of its run.
#[derive(Debug, Clone, Copy)]
struct Track {
    status: Status,
    lease: Option<usize>,
}

/// Builds the timeline tick by tick.
#[derive(Debug)]
pub(crate) struct Recorder {
    clock: Clock,
    journal: Journal,
    names: Vec<String>,
    nodes: Vec<Track>,
    pub(crate) events: Vec<TimelineEvent>,
    pub(crate) frames: Vec<Frame>,
    /// Whether events carry their exact instant ([`TimelineEvent::at_ms`]).
    precise: bool,
}

impl Recorder {
    pub(crate) fn new(clock: Clock, journal: Journal, names: Vec<String>) -> Self {
        let nodes = vec![
            Track {
                status: Status::Idle,
                lease: None,
            };
            names.len()
        ];
        Self {
            clock,
            journal,
            names,
            nodes,
            events: Vec::new(),
            frames: Vec::new(),
            precise: false,
        }
    }

    /// The same recorder, giving every event its exact instant (seeded runs).
    pub(crate) fn with_instants(mut self) -> Self {
        self.precise = true;
        self
    }

    /// Closes tick `tick`: takes what was journalled up to its end, then records the frame from
    /// `state`, the store's snapshot at the end of the tick.
    pub(crate) fn close_tick(&mut self, tick: u32, state: &LockState) {
        for entry in self.journal.drain(self.clock.end_of(tick)) {
            self.apply(&entry);
        }
        let nodes = self
            .names
            .iter()
            .zip(&self.nodes)
            .map(|(id, track)| self.node_state(id, *track))
            .collect();
        let holders = state.holders.iter().map(|h| self.holder(h, tick)).collect();
        let ledger = self.journal.ledger().and_then(|l| {
            let period = l.period?;
            Some(self.ledger_entry(period, l.node, l.acquired))
        });
        self.frames.push(Frame {
            tick,
            nodes,
            holders,
            resource: self.journal.resource(),
            ledger,
            shards: None,
        });
    }

    fn ledger_entry(&self, period: i64, by: usize, at: tokio::time::Instant) -> LedgerEntry {
        LedgerEntry {
            period,
            by: self.names[by].clone(),
            tick: self.clock.tick(at),
        }
    }

    fn node_state(&self, id: &str, track: Track) -> NodeState {
        let shows_lease = matches!(
            track.status,
            Status::Running
                | Status::Stale
                | Status::Completed
                | Status::FinishedStale
                | Status::ActionFailed
        );
        let lease = track
            .lease
            .filter(|_| shows_lease)
            .and_then(|l| self.journal.lease(l));
        NodeState {
            id: id.to_owned(),
            status: track.status.to_string(),
            token: lease.as_ref().map(|l| l.label.clone()),
            fence: lease.as_ref().map(|l| l.fence),
            slot: lease.as_ref().map(|l| l.slot),
            shards: None,
        }
    }

    fn holder(&self, h: &leasehold::Holder, tick: u32) -> Holder {
        let record = self.journal.lease_by_fence(h.slot, h.fence);
        let (token, acquired_tick, expires_tick) = match &record {
            Some(r) => (
                r.label.clone(),
                self.clock.tick(r.acquired),
                self.clock.tick(r.instant_of(h.expires_at)),
            ),
            // Every grant goes through the observed store, so this does not happen; show the
            // record anyway rather than hide it.
            None => ("?".to_owned(), tick, tick),
        };
        Holder {
            owner: h.owner.clone(),
            token,
            fence: h.fence,
            slot: h.slot,
            acquired_tick,
            expires_tick,
            ttl: expires_tick.saturating_sub(tick),
        }
    }

    fn apply(&mut self, entry: &Entry) {
        let tick = self.clock.tick(entry.at);
        let clock = self.clock;
        let ttl = |at: tokio::time::Instant| clock.ttl(at, tick);
        let mut ledger = None;
        let (operation, outcome, lease, ttl) = match entry.what {
            What::Contended { blocker } => {
                self.set(entry.node, Status::Waiting, None);
                (
                    Operation::TryAcquire,
                    Outcome::Contended,
                    None,
                    blocker.map(ttl),
                )
            }
            What::AlreadyRan { period, by, at } => {
                self.set(entry.node, Status::AlreadyRan, None);
                ledger = Some(self.ledger_entry(period, by, at));
                (Operation::TryAcquire, Outcome::AlreadyRan, None, None)
            }
            What::Skipped { blocker } => {
                self.set(entry.node, Status::Skipped, None);
                (Operation::Skip, Outcome::Skipped, None, blocker.map(ttl))
            }
            What::Granted { lease, expires } => {
                self.set(entry.node, Status::Running, Some(lease));
                let ttl = Some(ttl(expires));
                (Operation::Acquire, Outcome::Elected, Some(lease), ttl)
            }
            What::Extended { lease, expires } => {
                let ttl = Some(ttl(expires));
                (Operation::Extend, Outcome::Extended, Some(lease), ttl)
            }
            What::ExtendRefused { lease } => {
                self.went_stale(entry.node, lease);
                (Operation::Extend, Outcome::RejectedStale, Some(lease), None)
            }
            What::Released { lease } => {
                (Operation::Release, Outcome::Released, Some(lease), Some(0))
            }
            What::Lingered { lease, expires } => {
                let ttl = Some(ttl(expires));
                (Operation::Release, Outcome::Lingered, Some(lease), ttl)
            }
            What::ReleaseRefused { lease } => {
                self.went_stale(entry.node, lease);
                (
                    Operation::Release,
                    Outcome::RejectedStale,
                    Some(lease),
                    None,
                )
            }
            What::Expired { lease } => {
                self.went_stale(entry.node, lease);
                (Operation::Expire, Outcome::Expired, Some(lease), Some(0))
            }
            What::Lost {
                lease,
                reason,
                expires,
            } => {
                self.went_stale(entry.node, lease);
                let outcome = match reason {
                    LostReason::DeadlinePassed => Outcome::DeadlinePassed,
                    LostReason::StoreFailed => Outcome::StoreFailed,
                    _ => Outcome::NotHeld,
                };
                (Operation::Lost, outcome, Some(lease), expires.map(ttl))
            }
            What::Wrote { lease, accepted } => {
                let outcome = if accepted {
                    Outcome::Accepted
                } else {
                    Outcome::RejectedFence
                };
                (Operation::Write, outcome, Some(lease), None)
            }
            What::AcquireFailed => {
                self.set(entry.node, Status::Waiting, None);
                (Operation::TryAcquire, Outcome::StoreError, None, None)
            }
            What::ExtendFailed { lease } => {
                (Operation::Extend, Outcome::StoreError, Some(lease), None)
            }
            What::ReleaseFailed { lease } => {
                (Operation::Release, Outcome::StoreError, Some(lease), None)
            }
            What::RunFailed { store: false } => {
                // Elected, and the action failed: the lease of the run is the one it ran under.
                let track = &mut self.nodes[entry.node];
                track.status = Status::ActionFailed;
                (Operation::Fail, Outcome::ActionFailed, track.lease, None)
            }
            What::RunFailed { store: true } => {
                self.set(entry.node, Status::StoreError, None);
                (Operation::Fail, Outcome::StoreError, None, None)
            }
            What::Finished => {
                // The action has ended: a node that lost its lease meanwhile no longer runs
                // either, so it stops being `stale` (still running) and is `finished_stale`.
                let track = &mut self.nodes[entry.node];
                track.status = match track.status {
                    Status::Running => Status::Completed,
                    Status::Stale => Status::FinishedStale,
                    other => other,
                };
                return;
            }
        };
        let record = lease.and_then(|l| self.journal.lease(l));
        if let (Operation::Acquire, Some(r)) = (operation, &record)
            && let Some(period) = r.period
        {
            ledger = Some(self.ledger_entry(period, r.node, r.acquired));
        }
        self.events.push(TimelineEvent {
            tick,
            candidate: self.names[entry.node].clone(),
            operation: operation.to_string(),
            token: record.as_ref().map(|r| r.label.clone()),
            fence: record.as_ref().map(|r| r.fence),
            slot: record.as_ref().map(|r| r.slot),
            ttl,
            outcome: outcome.to_string(),
            ledger,
            at_ms: self.precise.then(|| self.clock.millis(entry.at)),
            shard: None,
        });
    }

    fn set(&mut self, node: usize, status: Status, lease: Option<usize>) {
        self.nodes[node] = Track { status, lease };
    }

    /// A running node whose lease `lease` is gone or lost goes stale (until its action ends).
    fn went_stale(&mut self, node: usize, lease: usize) {
        let track = &mut self.nodes[node];
        if track.lease == Some(lease) && track.status == Status::Running {
            track.status = Status::Stale;
        }
    }
}
