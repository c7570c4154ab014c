//! The timeline a simulation produces: the JSON contract shared by `leasehold simulate --json`,
//! `GET /api/simulate` and the workbench page.
//!
//! Every field is plain data (`snake_case` in JSON). Words the page translates (node status,
//! operation, outcome) are machine words listed by [`Status`], [`Operation`] and [`Outcome`].

use serde::{Deserialize, Serialize};

use crate::sim::params::Params;

/// A whole simulated run: the effective parameters, one [`Frame`] per tick and the
/// [`TimelineEvent`]s in the order they happened.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let timeline = sim::simulate("contention", &Overrides::default())?;
/// assert_eq!(timeline.lock, "invoice-close");
/// assert_eq!(timeline.frames.len(), timeline.max_tick as usize + 1);
/// assert!(timeline.frames.iter().enumerate().all(|(i, f)| f.tick as usize == i));
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// The scenario id: `contention`, `expiry`, `extension`, `group`, `fencing`, `period` or
    /// `partition`.
    pub scenario: String,
    /// The parameters in effect (the preset with the caller's overrides applied).
    pub params: Params,
    /// The lock the candidates contend for (`invoice-close`); in `partition`, the partition
    /// set's name (`tenants`, whose shard `k` is the lock `tenants.shard-k`).
    pub lock: String,
    /// The candidates' node ids, in display order (`node-a`, `node-b`, …).
    pub candidates: Vec<String>,
    /// The last tick shown; frames cover `0..=max_tick`.
    pub max_tick: u32,
    /// Exactly `max_tick + 1` frames; `frames[i].tick == i`.
    pub frames: Vec<Frame>,
    /// What happened, in order (ticks ascending).
    pub events: Vec<TimelineEvent>,
    /// The `partition` scenario's checks over the whole run (absent from the JSON otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<PartitionCheck>,
}

impl Timeline {
    /// Who owned each shard when, as text (only in the `partition` scenario; `None`
    /// otherwise): a header of tick numbers (tens, then units), then one line per shard with
    /// the letter of its owner at the end of each tick (`.` while no lease of it is live) and
    /// its grants in order (`a·1:1` is lease `a·1`, fence 1).
    ///
    /// ```
    /// use leasehold_workbench::sim::{self, Overrides};
    ///
    /// let t = sim::simulate("partition", &Overrides { shards: Some(4), ..Overrides::default() })?;
    /// let chart = t.shard_chart().expect("a chart");
    /// let lines: Vec<&str> = chart.lines().collect();
    /// assert_eq!(lines.len(), 2 + 4);
    /// assert!(lines[2].starts_with("shard 0  aaaaaa"), "{chart}");
    /// assert!(sim::simulate("group", &Overrides::default())?.shard_chart().is_none());
    /// # Ok::<(), sim::SimError>(())
    /// ```
    pub fn shard_chart(&self) -> Option<String> {
        let check = self.partition.as_ref()?;
        let width = format!("shard {}", check.shards.saturating_sub(1)).len();
        let pad = |s: String| format!("{s:<width$}  ");
        let ticks = 0..=self.max_tick;
        let tens: String = ticks
            .clone()
            .map(|t| {
                if t % 10 == 0 {
                    char::from_digit(t / 10 % 10, 10).unwrap_or('?')
                } else {
                    ' '
                }
            })
            .collect();
        let units: String = ticks
            .map(|t| char::from_digit(t % 10, 10).unwrap_or('?'))
            .collect();
        let mut lines = vec![
            format!("{}{}", pad("tick".to_owned()), tens.trim_end()),
            format!("{}{units}  grants (lease:fence)", pad(String::new())),
        ];
        for shard in 0..check.shards {
            let lane: String = self
                .frames
                .iter()
                .map(|f| {
                    f.shards
                        .as_ref()
                        .and_then(|s| s.iter().find(|s| s.shard == shard))
                        .and_then(|s| s.owner.as_deref())
                        .and_then(|o| o.chars().last())
                        .unwrap_or('.')
                })
                .collect();
            let grants: Vec<String> = check
                .tenures
                .iter()
                .filter(|t| t.shard == shard)
                .map(|t| format!("{}:{}", t.token, t.fence))
                .collect();
            lines.push(format!(
                "{}{lane}  {}",
                pad(format!("shard {shard}")),
                grants.join(" ")
            ));
        }
        Some(lines.join("\n"))
    }
}

/// What the `partition` scenario checked over the whole run, shard by shard.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let t = sim::simulate("partition", &Overrides::default())?;
/// let check = t.partition.as_ref().expect("the partition scenario's checks");
/// assert_eq!(check.shards, 10);
/// assert_eq!(check.overlaps, 0);
/// assert!(check.fences_rise);
/// # Ok::<(), sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionCheck {
    /// The set's shard count.
    pub shards: u32,
    /// Pairs of tenures of one shard that overlapped: two nodes whose leases of the shard were
    /// live in the store at once, or whose work on it ran at once (from the `Acquired` event to
    /// the drop of its `ShardLease`). 0 when the set kept its promise.
    pub overlaps: u32,
    /// True when every shard's successive grants had strictly increasing fences.
    pub fences_rise: bool,
    /// How many times a shard was granted to a node other than its previous owner.
    pub moves: u32,
    /// Every grant of a shard, in the order granted: who, when, with which fence, and how the
    /// tenure ended.
    pub tenures: Vec<ShardTenure>,
}

/// One node's tenure of one shard: from the store's grant to its release or expiry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardTenure {
    /// The shard.
    pub shard: u32,
    /// The node granted it.
    pub owner: String,
    /// The lease's label (see [`TimelineEvent::token`]).
    pub token: String,
    /// The store's fence of the grant.
    pub fence: u64,
    /// The tick of the grant.
    pub from_tick: u32,
    /// The tick in which the lease was released or expired; `None` if still held at the end.
    pub until_tick: Option<u32>,
    /// `released` (handed over), `expired` (not renewed: the owner crashed), or `None` if still
    /// held at the end.
    pub ended: Option<String>,
    /// Exact virtual instants (ms since the start of the run) of the grant and of the end.
    pub from_ms: u64,
    /// See [`from_ms`](Self::from_ms).
    pub until_ms: Option<u64>,
    /// When the store's lease would end without another renewal, as of the tenure's end (or
    /// of the end of the run): for a released tenure, the instant its lease would have
    /// expired had it not been handed over; for an expired one, its expiry.
    pub deadline_ms: u64,
}

/// The state at the end of one tick.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let timeline = sim::simulate("contention", &Overrides::default())?;
/// let first = &timeline.frames[0];
/// assert_eq!(first.nodes[0].status, "running");
/// assert_eq!(first.holders[0].owner, "node-a");
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The tick this frame closes.
    pub tick: u32,
    /// One entry per candidate, in candidate order.
    pub nodes: Vec<NodeState>,
    /// The store's live record(s) of the lock at the end of the tick, in slot order (empty
    /// when the lock is free, and always in the `partition` scenario, whose records are in
    /// [`shards`](Self::shards)).
    pub holders: Vec<Holder>,
    /// The fenced resource the lock protects (in the `partition` scenario, the shards: each
    /// of its [`slots`](Resource::slots) is a shard, numbered as the shard).
    pub resource: Resource,
    /// The lock's period ledger at the end of the tick: the latest period a run was granted
    /// for (only in the `period` scenario, once a period ran; absent from the JSON otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<LedgerEntry>,
    /// Every shard of the partition set at the end of the tick, in shard order (only in the
    /// `partition` scenario; absent from the JSON otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Vec<ShardState>>,
}

/// One shard of the partition set at the end of a tick: its owner in the store, and the
/// target the assignment gives it.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let t = sim::simulate("partition", &Overrides::default())?;
/// let shards = t.frames[2].shards.as_ref().expect("shards in every frame");
/// assert!(shards.iter().all(|s| s.owner.as_deref() == Some("node-a"))); // alone: a owns all
/// # Ok::<(), sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardState {
    /// The shard (0-based; its lock is `<set>.shard-<shard>`).
    pub shard: u32,
    /// The node whose lease of the shard is live in the store, if any.
    pub owner: Option<String>,
    /// That lease's label.
    pub token: Option<String>,
    /// That lease's fence.
    pub fence: Option<u64>,
    /// Ticks of that lease left (renewals keep it near the lease).
    pub ttl: Option<u32>,
    /// The node the assignment gives the shard, as the first live member last computed it
    /// ([`Partition::assignment`](leasehold::partition::Partition::assignment)); `None` before
    /// any member computed it, or when no member is left.
    pub target: Option<String>,
}

/// A record of the period ledger: period `period` was granted to `by` in tick `tick`.
///
/// On an `acquire` event it is the record the grant wrote; on a `try_acquire` answered
/// `already_ran` it is the record that refused the claim; on a [`Frame`] it is the latest record.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let t = sim::simulate("period", &Overrides::default())?;
/// let refused = t.events.iter().find(|e| e.outcome == "already_ran").expect("a refusal");
/// let ledger = refused.ledger.as_ref().expect("the refusing record");
/// assert_eq!((refused.candidate.as_str(), refused.tick), ("node-b", 3));
/// assert_eq!((ledger.period, ledger.by.as_str(), ledger.tick), (0, "node-a", 0));
/// # Ok::<(), sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The period id, counted by the store's clock from the start of the run (period `k`
    /// starts at tick `k × period`).
    pub period: i64,
    /// The node the period was granted to.
    pub by: String,
    /// The tick in which it was granted.
    pub tick: u32,
}

/// One candidate as seen at the end of a tick.
///
/// ```
/// use leasehold_workbench::sim::{NodeState, Status};
///
/// let idle = NodeState { id: "node-c".into(), status: Status::Idle.to_string(), token: None, fence: None, slot: None, shards: None };
/// assert_eq!(idle.status, "idle");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    /// The node id.
    pub id: String,
    /// A [`Status`] word: `idle`, `waiting`, `running`, `skipped`, `stale`, `completed`,
    /// `finished_stale`, `already_ran`, `action_failed` or `store_error`.
    pub status: String,
    /// The display label of the node's lease (running, stale, completed or finished-stale
    /// nodes).
    pub token: Option<String>,
    /// The fence of the node's lease.
    pub fence: Option<u64>,
    /// The slot of the node's lease.
    pub slot: Option<u32>,
    /// The shards whose leases the node holds in the store at the end of the tick (only in the
    /// `partition` scenario; absent from the JSON otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Vec<u32>>,
}

/// One live record in the store.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let timeline = sim::simulate("contention", &Overrides::default())?;
/// let h = &timeline.frames[3].holders[0];
/// assert_eq!((h.owner.as_str(), h.token.as_str(), h.fence), ("node-a", "a·1", 1));
/// assert_eq!(h.ttl, h.expires_tick - 3);
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The owner recorded by the store (a node id).
    pub owner: String,
    /// The display label of the lease token (see [`TimelineEvent::token`]).
    pub token: String,
    /// The store's fence for this lease.
    pub fence: u64,
    /// The slot (0 except in the group scenario).
    pub slot: u32,
    /// The tick in which the lease was granted.
    pub acquired_tick: u32,
    /// The tick in which the lease ends unless renewed.
    pub expires_tick: u32,
    /// Ticks of lease left at the end of this tick: `expires_tick - tick`.
    pub ttl: u32,
}

/// The fenced resource: it accepts a write only if the writer's fence is at least the highest
/// fence it has accepted *in the writer's slot*. Fences are minted per lock and slot, so in the
/// group scenario every slot is its own fencing domain and fences of different slots are never
/// compared; [`slots`](Self::slots) shows each domain.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let timeline = sim::simulate("fencing", &Overrides::default())?;
/// let last = timeline.frames.last().expect("frames");
/// assert!(last.resource.rejected >= 1);
/// assert_eq!(last.resource.slots[0].highest_fence, 3);
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    /// One entry per slot that has accepted a write, in slot order (at most one, slot 0,
    /// outside the group and partition scenarios; in `partition`, one per shard, `slot` being
    /// the shard).
    pub slots: Vec<SlotResource>,
    /// The node whose write was accepted last (in any slot).
    pub last_writer: Option<String>,
    /// Writes accepted, in all slots.
    pub writes: u32,
    /// Writes rejected because their fence was lower than one already accepted in their slot,
    /// in all slots.
    pub rejected: u32,
}

/// The fenced resource as seen by one slot: its own highest fence and counts.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let t = sim::simulate("group", &Overrides::default())?;
/// let slots: Vec<(u32, u64)> = t.frames[1].resource.slots.iter().map(|s| (s.slot, s.highest_fence)).collect();
/// assert_eq!(slots, [(0, 1), (1, 1)]); // each slot starts its own fences at 1
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotResource {
    /// The slot.
    pub slot: u32,
    /// The highest fence accepted in this slot.
    pub highest_fence: u64,
    /// The node whose write was accepted last in this slot.
    pub last_writer: String,
    /// Writes accepted in this slot.
    pub writes: u32,
    /// Writes rejected in this slot (their fence was lower than `highest_fence` at the time).
    pub rejected: u32,
}

/// One thing that happened, as a row of the event table.
///
/// ```
/// use leasehold_workbench::sim::{self, Overrides};
///
/// let timeline = sim::simulate("contention", &Overrides::default())?;
/// let first = &timeline.events[0];
/// assert_eq!((first.tick, first.candidate.as_str(), first.operation.as_str()), (0, "node-a", "acquire"));
/// assert_eq!((first.token.as_deref(), first.fence, first.outcome.as_str()), (Some("a·1"), Some(1), "elected"));
/// # Ok::<(), leasehold_workbench::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEvent {
    /// The tick in which it happened.
    pub tick: u32,
    /// The node it happened to.
    pub candidate: String,
    /// An [`Operation`] word.
    pub operation: String,
    /// The display label of the lease involved: the candidate's letter and the acquisition's
    /// sequence number in this run (`a·1`, `b·2`, …). The real token is 128 random bits; the
    /// label stands for it so that the same input always gives the same timeline.
    pub token: Option<String>,
    /// The store's fence of the lease involved.
    pub fence: Option<u64>,
    /// The slot of the lease involved, like `token` and `fence` (always 0 outside the group
    /// scenario). Fences are minted per slot: compare a fence only with fences of the same slot.
    #[serde(default)]
    pub slot: Option<u32>,
    /// Ticks of lease left as of this event, where one applies: the new lease on `acquire` and
    /// `extend`, the blocking lease on `try_acquire` (but not on `already_ran`, which no lease
    /// causes) and `skip`, what the minimum lease keeps on
    /// a `lingered` release, the store's record on `lost`, 0 on `expire` and `released`.
    pub ttl: Option<u32>,
    /// An [`Outcome`] word.
    pub outcome: String,
    /// The period ledger's record involved (only in the `period` scenario; absent from the JSON
    /// otherwise): the one an `acquire` wrote, or the one that answered a claim `already_ran`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<LedgerEntry>,
    /// The exact virtual instant, in milliseconds since the start of the run: set in the
    /// timelines of [seeded runs](crate::sim::seeds), whose faults and actions are not aligned
    /// to ticks; absent from the JSON (and `None`) in the lesson scenarios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// The shard involved (only in the `partition` scenario; absent from the JSON otherwise):
    /// the shard's lock is the lock of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
}

impl TimelineEvent {
    /// The column names of [`cells`](Self::cells), as `leasehold simulate` prints them.
    pub const COLUMNS: [&'static str; 7] = [
        "TICK",
        "CANDIDATE",
        "OPERATION",
        "TOKEN",
        "FENCE",
        "TTL",
        "OUTCOME",
    ];

    /// The event as the cells of a table row, in [`COLUMNS`](Self::COLUMNS) order, with `-`
    /// where a field does not apply. A [`ledger`](Self::ledger) record is added to the outcome
    /// cell: `elected(period=1)`, `already_ran(period=1,by=node-a,tick=8)`; so is the shard of
    /// the `partition` scenario: `elected(shard=3)`.
    ///
    /// ```
    /// use leasehold_workbench::sim::{self, Overrides, TimelineEvent};
    ///
    /// let timeline = sim::simulate("contention", &Overrides::default())?;
    /// assert_eq!(timeline.events[0].cells(), ["0", "node-a", "acquire", "a·1", "1", "10", "elected"]);
    /// assert_eq!(TimelineEvent::COLUMNS[3], "TOKEN");
    ///
    /// let period = sim::simulate("period", &Overrides::default())?;
    /// let refused = period.events.iter().find(|e| e.outcome == "already_ran").expect("a refusal");
    /// assert_eq!(refused.cells(), ["3", "node-b", "try_acquire", "-", "-", "-",
    ///     "already_ran(period=0,by=node-a,tick=0)"]);
    /// # Ok::<(), sim::SimError>(())
    /// ```
    pub fn cells(&self) -> [String; 7] {
        let dash = || "-".to_owned();
        [
            self.tick.to_string(),
            self.candidate.clone(),
            self.operation.clone(),
            self.token.clone().unwrap_or_else(dash),
            self.fence.map_or_else(dash, |f| f.to_string()),
            self.ttl.map_or_else(dash, |t| t.to_string()),
            self.outcome_cell(),
        ]
    }

    fn outcome_cell(&self) -> String {
        let outcome = self.outcome_and_ledger();
        match self.shard {
            Some(shard) => format!("{outcome}(shard={shard})"),
            None => outcome,
        }
    }

    fn outcome_and_ledger(&self) -> String {
        match &self.ledger {
            None => self.outcome.clone(),
            Some(l) if self.outcome == Outcome::AlreadyRan.as_str() => format!(
                "{}(period={},by={},tick={})",
                self.outcome, l.period, l.by, l.tick
            ),
            Some(l) => format!("{}(period={})", self.outcome, l.period),
        }
    }
}

/// Defines a vocabulary enum with its machine words.
macro_rules! words {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $word:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),*
        }

        impl $name {
            /// Every word, in declaration order.
            ///
            #[doc = concat!("```\nuse leasehold_workbench::sim::", stringify!($name), ";\n",
                "let words: Vec<&str> = ", stringify!($name), "::ALL.iter().map(|w| w.as_str()).collect();\n",
                "assert!(words.iter().all(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '_')));\n```")]
            pub const ALL: &'static [Self] = &[$(Self::$variant),*];

            /// The machine word used in the JSON (also its `Display` form).
            ///
            #[doc = concat!("```\nuse leasehold_workbench::sim::", stringify!($name), ";\n",
                "let first = ", stringify!($name), "::ALL[0];\n",
                "assert_eq!(first.as_str(), first.to_string());\n```")]
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $word),*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

words! {
    /// A candidate's status ([`NodeState::status`]).
    ///
    /// ```
    /// use leasehold_workbench::sim::Status;
    /// assert_eq!(Status::Stale.as_str(), "stale");
    /// assert_eq!(Status::FinishedStale.as_str(), "finished_stale");
    /// assert_eq!(Status::ALL.len(), 13);
    /// ```
    Status {
        /// Has not tried yet.
        Idle => "idle",
        /// Tried, found the lock taken, and keeps trying until its wait runs out.
        Waiting => "waiting",
        /// Holds a lease it can still prove and runs its action.
        Running => "running",
        /// Gave up when its wait ran out; its action never ran.
        Skipped => "skipped",
        /// Its lease was lost (the core reported it lost, or the store no longer holds it)
        /// and its action is still running: only a fence can stop its writes. When the action
        /// ends it becomes [`FinishedStale`](Self::FinishedStale).
        Stale => "stale",
        /// Its action ended while it still held the lease.
        Completed => "completed",
        /// Its action ended after its lease was lost: it ran to the end without a lease (its
        /// release was refused, and its final write was judged by the fence alone). Nothing of
        /// it runs any more.
        FinishedStale => "finished_stale",
        /// Its claim for a period was refused by the lock's period ledger: that period (or a
        /// later one) already ran, here or on another node. Its action did not run; it did not
        /// wait, whether or not the lock was held.
        AlreadyRan => "already_ran",
        /// It was elected and its action returned an error: the run reported
        /// [`Outcome::ActionFailed`](leasehold::Outcome::ActionFailed) and the lease was
        /// released (or kept for the minimum lease) as after a success.
        ActionFailed => "action_failed",
        /// Its run returned a store error: the store failed on the run's last attempt (the
        /// store outage). Not a skip: nobody said the lock was taken.
        StoreError => "store_error",
        /// A member of the partition set (the `partition` scenario): it joined and has not
        /// left; its shards are in [`NodeState::shards`].
        Member => "member",
        /// It left the partition set: its shards were handed over.
        Left => "left",
        /// It crashed: it no longer reaches the store, and its leases end only by expiring.
        Crashed => "crashed",
    }
}

words! {
    /// What an event did ([`TimelineEvent::operation`]).
    ///
    /// ```
    /// use leasehold_workbench::sim::Operation;
    /// assert_eq!(Operation::TryAcquire.to_string(), "try_acquire");
    /// ```
    Operation {
        /// A granted acquisition (first attempt, retry, or wake-up after a release).
        Acquire => "acquire",
        /// An attempt that was not granted: the first attempt of a run found the lock taken
        /// (later retries are not shown), or the period ledger refused the claim.
        TryAcquire => "try_acquire",
        /// The wait ran out: the node skips the work.
        Skip => "skip",
        /// The watchdog renewed the lease.
        Extend => "extend",
        /// The store's lease ended without renewal.
        Expire => "expire",
        /// The node released (or shortened) its lease after its action.
        Release => "release",
        /// The core reported the lease lost (before the store can hand it on).
        Lost => "lost",
        /// The action wrote to the fenced resource.
        Write => "write",
        /// The run ended in an error returned to its caller: the action's own error
        /// (`action_failed`) or the store's (`store_error`).
        Fail => "fail",
        /// The node joined the partition set (`joined`).
        Join => "join",
        /// The node left the partition set (`left`): it hands its shards over.
        Leave => "leave",
        /// The node crashed (`crashed`): from now on none of its requests reaches the store.
        Crash => "crash",
    }
}

words! {
    /// How an event ended ([`TimelineEvent::outcome`]).
    ///
    /// ```
    /// use leasehold_workbench::sim::Outcome;
    /// assert_eq!(Outcome::RejectedFence.as_str(), "rejected_fence");
    /// ```
    Outcome {
        /// `acquire`: the node holds the lock.
        Elected => "elected",
        /// `try_acquire`: the lock was taken.
        Contended => "contended",
        /// `try_acquire`: the period ledger records a run for this period (or a later one), see
        /// [`TimelineEvent::ledger`]. Not contention: it is answered at once, and the lock may
        /// well be free.
        AlreadyRan => "already_ran",
        /// `skip`: the node gave up.
        Skipped => "skipped",
        /// `extend`: the lease was renewed to the full lease.
        Extended => "extended",
        /// `expire`: the lease ran out in the store.
        Expired => "expired",
        /// `release`: the store freed the lock.
        Released => "released",
        /// `release`: the minimum lease keeps the lock held a while longer.
        Lingered => "lingered",
        /// `release` or `extend`: the token no longer held the lease; nothing changed.
        RejectedStale => "rejected_stale",
        /// `lost`: the lease could not be renewed before its local deadline.
        DeadlinePassed => "deadline_passed",
        /// `lost`: the store said the token no longer holds the lease.
        NotHeld => "not_held",
        /// `lost`: renewal failed with a permanent store error.
        StoreFailed => "store_failed",
        /// `write`: the resource accepted the write.
        Accepted => "accepted",
        /// `write`: the resource had already accepted a higher fence.
        RejectedFence => "rejected_fence",
        /// `fail`: the action returned an error
        /// ([`Outcome::ActionFailed`](leasehold::Outcome::ActionFailed)).
        ActionFailed => "action_failed",
        /// `try_acquire`, `extend` or `release`: the store answered with an error (the first one
        /// of the run, or of the lease, is shown); `fail`: the run returned the store's error.
        /// Never contention: the store did not say the lock was taken.
        StoreError => "store_error",
        /// `join`: the node holds its member slot of the partition set.
        Joined => "joined",
        /// `leave`: the node left the set; its shards were handed over.
        Left => "left",
        /// `crash`: the node stopped; its shards' leases run out on their own.
        Crashed => "crashed",
    }
}
