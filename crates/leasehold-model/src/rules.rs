//! What is modelled: the rules the electors and the store follow, and the sizes explored.

/// How the period ledger judges a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ledger {
    /// Today's rule (`leasehold::store::judge_claim`): a period ran when a claim granted at or
    /// after its start started its action — the ledger keeps the latest claim **and** when the
    /// latest claim that started was granted, so a claim that never started cannot hide an
    /// earlier run. A claim that never started holds the period only while its lease is live,
    /// then it is taken over.
    ByTime,
    /// The rule of issue 33: judged by time as [`ByTime`](Self::ByTime), but the ledger keeps
    /// only the latest claim, which counts only once it started.
    LatestClaim,
    /// The rule before issue 33: the record is the bare period number under the claim's own
    /// length, any number at or above the one claimed refuses, and a claim counts as a run.
    ByNumber,
}

/// How a store with sessions (one renewal per process for all its leases) judges the leases
/// attached to a session: the renewal's answer for each lease, and an acquirer's view of a lock
/// record that names a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SessionRule {
    /// Today's rule: a lock record on a session is held while the session record is live (the
    /// same session, not run out) and has not revoked the record's token; a renewal answers
    /// `NotHeld` for a lease revoked, released or run out, and deletes the lock records of
    /// those it finds still there.
    #[default]
    Today,
    /// Broken on purpose: the renewal answers every lease it remembers as held while its session
    /// lives, ignoring the tokens an operator's forced release revoked.
    RenewalIgnoresRevocation,
    /// Broken on purpose: an acquirer judges a lock record by the end written at its grant,
    /// which session renewals do not move, so it frees a lock whose session is renewed.
    AcquirerJudgesByGrant,
    /// Broken on purpose: an acquirer treats a lock record whose session ran out as held for
    /// ever (only a revocation frees it).
    AcquirerIgnoresSessionExpiry,
}

/// The process of an elector that runs in none (see [`Setup::processes`]): it renews its own
/// lease.
pub const NO_PROCESS: u8 = u8::MAX;

/// The rules of one model: the elector's options and the ledger's rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rules {
    /// The elector renews its lease while the action runs (`auto_extend`).
    pub auto_extend: bool,
    /// The elector drops its action at the lease's local deadline (`cancel_on_lost`).
    pub cancel_on_lost: bool,
    /// The ledger's rule.
    pub ledger: Ledger,
    /// The fenced resource refuses a write whose fence is below the highest it accepted
    /// (`leasehold::fence::Admission`); without it, it accepts every write.
    pub resource_checks_fence: bool,
    /// How leases on a session are judged (only setups with sessions use it).
    pub session: SessionRule,
}

impl Rules {
    /// The library's defaults today.
    pub const TODAY: Self = Self {
        auto_extend: true,
        cancel_on_lost: true,
        ledger: Ledger::ByTime,
        resource_checks_fence: true,
        session: SessionRule::Today,
    };

    /// The library's defaults with the ledger of issue 33, which kept only the latest claim.
    pub const ISSUE_33: Self = Self {
        ledger: Ledger::LatestClaim,
        ..Self::TODAY
    };

    /// The library's defaults and the ledger before issue 33: no renewal, the action runs on
    /// after the loss, the ledger counts periods by number and a claim as a run.
    pub const BEFORE_ISSUE_33: Self = Self {
        auto_extend: false,
        cancel_on_lost: false,
        ledger: Ledger::ByNumber,
        resource_checks_fence: true,
        session: SessionRule::Today,
    };
}

/// The sizes one check explores, in ticks of the real clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Setup {
    /// How many electors contend (2 or 3).
    pub electors: u8,
    /// The lease: the store frees a lock `lease` ticks after its grant or last renewal.
    pub lease: u8,
    /// The elector's safety margin: its local deadline is `lease - margin` after it *sent* the
    /// request that was granted or renewed (the library uses a tenth of the lease).
    pub margin: u8,
    /// The largest error of an elector's clock over one lease, in ticks: the local deadline
    /// lands anywhere in `± drift` of where an exact clock would put it.
    pub drift: u8,
    /// Time ends here.
    pub horizon: u8,
    /// The longest action: an action may end at any tick up to this long after it started.
    pub action: u8,
    /// The period lengths a schedule claims with, changing between runs (the first is used
    /// first). Empty: plain locks, no ledger.
    pub periods: Vec<u8>,
    /// The offset of each of `periods`, in ticks (below its length): the windows of the `n`-th
    /// start at `offsets[n] + k × periods[n]`. Missing entries are 0, so a change between two
    /// entries of the same length and other offsets is an offset change.
    pub offsets: Vec<u8>,
    /// How many requests or answers may be lost (each either before or after the store
    /// applied it).
    pub losses: u8,
    /// Electors may pause for any time: an answer may wait, a timeout may come late, a renewal
    /// may not be sent. Without pauses every elector acts before time passes (what the
    /// at-least-once property assumes of "an elector that stays up"); a process's session
    /// renewals may still be delayed, lost or not sent (see [`processes`](Self::processes)).
    pub pauses: bool,
    /// The leases the configuration may change to, at any moment (a rolling deploy with a new
    /// lease: requests sent after a change ask for the new one, renewals of a running action
    /// included). Empty: the lease never changes.
    pub lease_changes: Vec<u8>,
    /// How many slots the lock has (`max_leaders`, 1 or 2; schedules use 1).
    pub slots: u8,
    /// The slot counts the configuration may change to between runs (when no elector holds or
    /// asks). Empty: never.
    pub slot_changes: Vec<u8>,
    /// Model the fences and the fenced resource: each grant mints a fence for its slot, each
    /// action sends one write carrying it, and the write lands at the resource any time later.
    pub fences: bool,
    /// How far the store's clock seeds a fence: a grant's fence is `max(last + 1, (now + 1) ×
    /// fence_clock)`, so a record cleaned up while idle still continues above every fence
    /// minted before (the stores seed from their clock in microseconds). 0: no seed.
    pub fence_clock: u8,
    /// How many times the store may clean up the lock's record once it has been idle (no live
    /// lease, untouched for at least one tick): the fence counters are forgotten.
    pub cleanups: u8,
    /// How many times an operator may force a release (`leasehold release --force`): every
    /// slot's lease is freed whoever holds it; the fence counters are kept.
    pub forced: u8,
    /// How many requests may be duplicated: a copy stays on its way and the store may apply it
    /// again any time later; its answer reaches nobody.
    pub duplicates: u8,
    /// Sessions: the process each elector belongs to (`processes[e]` for elector `e`, below
    /// [`PROCESSES`](crate::PROCESSES); [`NO_PROCESS`]: none, it renews its own lease). The
    /// electors of one process share one session: the store keeps a session record per
    /// process, every lease a process's elector is granted is attached to it, and the process
    /// renews all of them with one request. Empty: no sessions.
    pub processes: Vec<u8>,
    /// The lock each elector asks for (`locks[e]`, a slot of the store, each slot then being a
    /// lock of its own). Empty: any free slot, as a lock with `slots` slots.
    pub locks: Vec<u8>,
    /// The rules followed.
    pub rules: Rules,
}

impl Setup {
    /// Two electors on a plain lock: lease 3, margin 1, actions up to twice the lease, one
    /// loss, pauses.
    pub fn plain(rules: Rules) -> Self {
        Self {
            electors: 2,
            lease: 3,
            margin: 1,
            drift: 0,
            horizon: 8,
            action: 5,
            periods: Vec::new(),
            offsets: Vec::new(),
            losses: 1,
            pauses: true,
            lease_changes: Vec::new(),
            slots: 1,
            slot_changes: Vec::new(),
            fences: false,
            fence_clock: 0,
            cleanups: 0,
            forced: 0,
            duplicates: 0,
            processes: Vec::new(),
            locks: Vec::new(),
            rules,
        }
    }

    /// Two electors running a schedule with periods of `periods` ticks (changing between
    /// runs when more than one is given), lease 2, margin 1, one loss, no pauses, for two
    /// periods of the longest length.
    pub fn scheduled(rules: Rules, periods: &[u8]) -> Self {
        Self {
            lease: 2,
            horizon: periods.iter().copied().max().unwrap_or(1).saturating_mul(2),
            action: 1,
            periods: periods.to_vec(),
            pauses: false,
            ..Self::plain(rules)
        }
    }

    /// Two electors on a plain lock with fences and a fenced resource: lease 2, margin 1,
    /// actions up to the lease, pauses, no loss (a pause delays as much), four ticks; fences
    /// seeded from the clock at four a tick (a tick is long against the store's microseconds;
    /// two electors make up to four grants in one, each applying an acquisition sent earlier
    /// and one sent now) and one clean-up of the idle record.
    /// Writes and fences multiply the states, so this is smaller than [`plain`](Self::plain).
    pub fn fenced(rules: Rules) -> Self {
        Self {
            lease: 2,
            action: 2,
            horizon: 4,
            losses: 0,
            fences: true,
            fence_clock: 4,
            cleanups: 1,
            ..Self::plain(rules)
        }
    }

    /// Sessions: two locks (each slot a lock of its own) and one process running two electors,
    /// one on each lock, under one session; a third elector in another process contends for
    /// lock 0 with a lease of its own. So one session holds two leases: one of them may be
    /// released or forced out while the other is renewed, or the session may be lost while
    /// holding both and lock 0 taken over. Lease 3, margin 1, actions up to the lease, three
    /// ticks, one lost message. The electors act before time passes (their acquisitions and
    /// releases are answered within the tick, as without pauses), but the session's renewals
    /// may be delayed across ticks, lost, or not sent at all: the process may pause. No forced
    /// release and no fences (each test adds what it checks: forced release and fences
    /// multiply the states).
    pub fn sessions(rules: Rules) -> Self {
        Self {
            electors: 3,
            lease: 3,
            action: 3,
            horizon: 3,
            pauses: false,
            slots: 2,
            processes: vec![0, 0, NO_PROCESS],
            locks: vec![0, 1, 0],
            ..Self::plain(rules)
        }
    }

    /// True if the electors renew through sessions.
    pub fn has_sessions(&self) -> bool {
        !self.processes.is_empty()
    }

    /// How many processes (sessions) there are: 0 without sessions. An elector whose process
    /// is [`PROCESSES`](crate::PROCESSES) or above runs in none: it renews its own lease.
    pub fn process_count(&self) -> usize {
        self.processes
            .iter()
            .map(|&p| usize::from(p))
            .filter(|&p| p < crate::PROCESSES)
            .map(|p| p + 1)
            .max()
            .unwrap_or(0)
    }

    /// The largest lease any configuration asks for.
    pub fn longest_lease(&self) -> u8 {
        self.lease_changes.iter().copied().fold(self.lease, u8::max)
    }

    /// The most slots any configuration uses.
    pub fn most_slots(&self) -> u8 {
        self.slot_changes.iter().copied().fold(self.slots, u8::max)
    }

    /// As [`scheduled`](Self::scheduled), with each schedule a `(length, offset)` pair, so
    /// changes between runs can move the offset as well as the length.
    pub fn scheduled_with_offsets(rules: Rules, periods: &[(u8, u8)]) -> Self {
        let lengths: Vec<u8> = periods.iter().map(|&(len, _)| len).collect();
        Self {
            offsets: periods.iter().map(|&(_, off)| off).collect(),
            ..Self::scheduled(rules, &lengths)
        }
    }
}

/// How the members of a partition set behave ([`ShardSetup`]): today's rules of
/// `leasehold::partition`, or one of them broken on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ShardRule {
    /// Today's rules (`partition/member.rs`): a member takes only the free shards the
    /// assignment gives it, hands over the shards it no longer gets (the shard's work is told to
    /// stop, and the lease is released once it has), and, when a free shard waits a whole
    /// period for another member, changes the member group's fingerprint (a fresh slot in, the
    /// oldest out) so that every member reads the set again.
    #[default]
    Today,
    /// Broken on purpose: a member takes every free shard it reads, whatever the assignment
    /// says, and never hands one over.
    IgnoresAssignment,
    /// Broken on purpose: a hand-over releases the shard's lease at once, while the shard's work
    /// is still stopping (today it waits for the work to end, at most the drain).
    ReleasesBeforeWorkEnds,
    /// Broken on purpose: a member that sees a free shard wait for another member does nothing
    /// about it (no fresh member slot), so a member that saw nothing change never looks again.
    NoNudge,
    /// Broken on purpose: the store deletes a shard's record when its lease is released (a
    /// hand-over), so the shard's fence counter starts again from nothing.
    ReleaseForgetsFence,
    /// Broken on purpose (the core's rule before issue 39's fix): the member group's weights
    /// are counted per live slot, so a node holding two slots — restarted with the same node id
    /// while its old process's slot is still live — counts twice until the old one runs out.
    CountsEverySlot,
}

/// The sizes and faults of one check of a partition set, in ticks of the real clock (see
/// [`ShardModel`](crate::ShardModel)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShardSetup {
    /// How many shards the set has (1 to [`MAX_SHARDS`](crate::MAX_SHARDS)).
    pub shards: u8,
    /// The lease of every shard and member slot; a member reads and acts once a period, a
    /// third of the lease: one tick, so the lease is 3.
    pub lease: u8,
    /// The safety margin: a member's local deadline for a lease is `lease - margin` after the
    /// grant or renewal.
    pub margin: u8,
    /// Time ends here.
    pub horizon: u8,
    /// How many nodes (of [`NODES`](crate::NODES)) are members at the start, the first ones.
    pub members: u8,
    /// How many joins may happen later: a node that is not a member (never was, left, or
    /// crashed: a restart with the same node id) joins.
    pub joins: u8,
    /// How many graceful leaves may happen (member slot released, then every shard handed
    /// over).
    pub leaves: u8,
    /// How many crashes may happen: the node forgets everything at once; its leases run out.
    pub crashes: u8,
    /// How many pauses may happen: a node stops renewing, reading and acting for any time, then
    /// resumes.
    pub pauses: u8,
    /// How many times an operator may force one shard's lease free (`leasehold release
    /// --force`); its owner learns of it at its next renewal.
    pub forced: u8,
    /// The coverage and balance bound: once this many ticks have passed since the last change
    /// (a join, a leave, a crash, a pause or its end, a forced release), every shard must be
    /// owned by a live member and the shards balanced within one of even.
    pub settle: u8,
    /// The rules the members follow.
    pub rule: ShardRule,
}

impl ShardSetup {
    /// Two nodes, both members from the start, three shards, lease 3 (a period of one tick),
    /// margin 1, no faults, a horizon of six ticks and a bound of four ticks (a lease and a
    /// period). Each test adds the changes it checks.
    pub fn two_nodes(rule: ShardRule) -> Self {
        Self {
            shards: 3,
            lease: 3,
            margin: 1,
            horizon: 6,
            members: 2,
            joins: 0,
            leaves: 0,
            crashes: 0,
            pauses: 0,
            forced: 0,
            settle: 4,
            rule,
        }
    }
}
