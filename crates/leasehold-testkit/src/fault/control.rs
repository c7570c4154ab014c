//! The run-time switches of a [`FaultyStore`](super::FaultyStore).

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use leasehold::ErrorKind;
use leasehold::store::{StoreCall, StoreError};

/// A store operation that faults can be injected into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// [`LeaseStore::try_acquire`](leasehold::LeaseStore::try_acquire).
    TryAcquire,
    /// [`LeaseStore::extend`](leasehold::LeaseStore::extend).
    Extend,
    /// [`LeaseStore::release`](leasehold::LeaseStore::release).
    Release,
    /// [`LeaseStore::state`](leasehold::LeaseStore::state), and the other reads of lock state:
    /// [`holders`](leasehold::LeaseStore::holders),
    /// [`list_locks`](leasehold::LeaseStore::list_locks) and
    /// [`period_record`](leasehold::LeaseStore::period_record).
    State,
    /// [`LeaseStore::force_release`](leasehold::LeaseStore::force_release), and the other
    /// break-glass write,
    /// [`clear_period_ledger`](leasehold::LeaseStore::clear_period_ledger).
    ForceRelease,
    /// [`LeaseStore::start_period`](leasehold::LeaseStore::start_period).
    StartPeriod,
}

impl Op {
    /// Every operation.
    pub const ALL: [Op; 6] = [
        Op::TryAcquire,
        Op::Extend,
        Op::Release,
        Op::State,
        Op::ForceRelease,
        Op::StartPeriod,
    ];

    fn index(self) -> usize {
        match self {
            Op::TryAcquire => 0,
            Op::Extend => 1,
            Op::Release => 2,
            Op::State => 3,
            Op::ForceRelease => 4,
            Op::StartPeriod => 5,
        }
    }

    /// The operation a [`FaultyStore`](super::FaultyStore) faults `call` as: a batch as its
    /// single call ([`StoreCall::ExtendMany`] is [`Op::Extend`], [`StoreCall::StateMany`] is
    /// [`Op::State`]), a release with a hand-off as a release, every read of lock state
    /// (`holders`, `list_locks`, `period_record`) as [`Op::State`], and `clear_period_ledger`
    /// as [`Op::ForceRelease`], the other break-glass write of operators.
    ///
    /// ```
    /// use leasehold::store::StoreCall;
    /// use leasehold_testkit::fault::Op;
    /// assert_eq!(Op::of(StoreCall::ExtendMany), Op::Extend);
    /// assert_eq!(Op::of(StoreCall::PeriodRecord), Op::State);
    /// ```
    pub fn of(call: StoreCall) -> Op {
        match call {
            StoreCall::TryAcquire => Op::TryAcquire,
            StoreCall::Extend | StoreCall::ExtendMany => Op::Extend,
            StoreCall::Release | StoreCall::ReleaseTo => Op::Release,
            StoreCall::StartPeriod => Op::StartPeriod,
            StoreCall::State
            | StoreCall::StateMany
            | StoreCall::Holders
            | StoreCall::ListLocks
            | StoreCall::PeriodRecord => Op::State,
            StoreCall::ForceRelease | StoreCall::ClearPeriodLedger => Op::ForceRelease,
        }
    }

    /// The operation's name, as used in injected error messages.
    pub fn name(self) -> &'static str {
        match self {
            Op::TryAcquire => "try_acquire",
            Op::Extend => "extend",
            Op::Release => "release",
            Op::State => "state",
            Op::ForceRelease => "force_release",
            Op::StartPeriod => "start_period",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where an injected failure happens relative to the wrapped store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FaultPoint {
    /// The request never reaches the store (connection refused, request timed out unsent).
    #[default]
    BeforeApply,
    /// The store applies the request but the answer is lost (reply timed out, connection reset
    /// after the write): the caller sees an error although the store's state changed.
    AfterApply,
}

/// An injected failure: its [`ErrorKind`], how many calls it affects and where it strikes.
///
/// ```
/// use leasehold::ErrorKind;
/// use leasehold_testkit::fault::{Fault, FaultPoint};
///
/// let f = Fault::transient().times(3).after_apply();
/// assert_eq!((f.kind(), f.remaining(), f.point()), (ErrorKind::Transient, Some(3), FaultPoint::AfterApply));
/// assert_eq!(Fault::permanent().remaining(), None); // every call until healed
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct Fault {
    kind: ErrorKind,
    remaining: Option<u64>,
    point: FaultPoint,
}

impl Fault {
    /// A transient failure of every call (until healed or limited with [`times`](Self::times)).
    pub fn transient() -> Self {
        Self::of(ErrorKind::Transient)
    }
    /// A permanent failure of every call (until healed or limited with [`times`](Self::times)).
    pub fn permanent() -> Self {
        Self::of(ErrorKind::Permanent)
    }
    /// A failure of the given kind of every call.
    pub fn of(kind: ErrorKind) -> Self {
        Self {
            kind,
            remaining: None,
            point: FaultPoint::BeforeApply,
        }
    }
    /// Only the next `n` calls fail; later calls go through.
    pub fn times(mut self, n: u64) -> Self {
        self.remaining = Some(n);
        self
    }
    /// The store applies the request and the answer is lost (see [`FaultPoint::AfterApply`]).
    pub fn after_apply(mut self) -> Self {
        self.point = FaultPoint::AfterApply;
        self
    }
    /// The error kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// Calls left to fail; `None` for every call.
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }
    /// Where it strikes.
    pub fn point(&self) -> FaultPoint {
        self.point
    }
}

/// Per-operation switches and counters.
#[derive(Debug, Default, Clone, Copy)]
struct OpState {
    fault: Option<Fault>,
    request_delay: Duration,
    answer_delay: Duration,
    calls: u64,
    injected: u64,
}

/// What one call has to do, decided atomically when it starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub(crate) request_delay: Duration,
    pub(crate) answer_delay: Duration,
    pub(crate) failure: Option<(ErrorKind, FaultPoint, u64)>,
}

impl Plan {
    pub(crate) fn error(op: Op, kind: ErrorKind, call: u64) -> StoreError {
        StoreError::new(kind, format!("injected fault on {op} (call #{call})"))
    }
}

#[derive(Debug, Default)]
pub(crate) struct Switches {
    ops: Mutex<[OpState; Op::ALL.len()]>,
}

impl Switches {
    fn ops(&self) -> MutexGuard<'_, [OpState; Op::ALL.len()]> {
        self.ops.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a call of `op` and decides its delays and failure, using up one limited fault.
    pub(crate) fn plan(&self, op: Op) -> Plan {
        let mut ops = self.ops();
        let st = &mut ops[op.index()];
        st.calls += 1;
        let mut failure = None;
        if let Some(fault) = st.fault {
            failure = Some((fault.kind, fault.point, st.calls));
            // `fail` never stores a fault with no calls left, so `Some(1)` is the last one.
            st.fault = match fault.remaining {
                Some(n) if n <= 1 => None,
                Some(n) => Some(Fault {
                    remaining: Some(n - 1),
                    ..fault
                }),
                None => Some(fault),
            };
        }
        if failure.is_some() {
            st.injected += 1;
        }
        Plan {
            request_delay: st.request_delay,
            answer_delay: st.answer_delay,
            failure,
        }
    }
}

/// A cheap, cloneable handle that switches faults of one [`FaultyStore`](super::FaultyStore) at
/// run time, and counts its calls.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use leasehold::MemoryStore;
/// use leasehold_testkit::fault::{Fault, FaultyStore, Op};
///
/// let (_store, faults) = FaultyStore::new(Arc::new(MemoryStore::new()));
/// faults.fail(Op::Extend, Fault::transient());
/// faults.delay_request(Op::Release, Duration::from_millis(50));
/// faults.heal_all();
/// assert_eq!(faults.calls(Op::Extend), 0);
/// ```
#[derive(Clone)]
pub struct FaultControl {
    switches: Arc<Switches>,
}

impl fmt::Debug for FaultControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultControl")
            .field("ops", &*self.switches.ops())
            .finish()
    }
}

impl FaultControl {
    pub(crate) fn new(switches: Arc<Switches>) -> Self {
        Self { switches }
    }

    fn with<T>(&self, op: Op, f: impl FnOnce(&mut OpState) -> T) -> T {
        f(&mut self.switches.ops()[op.index()])
    }

    /// Makes calls of `op` fail as `fault` says, replacing any fault set before (a fault limited
    /// to `times(0)` clears it).
    pub fn fail(&self, op: Op, fault: Fault) {
        self.with(op, |st| {
            st.fault = (fault.remaining != Some(0)).then_some(fault)
        });
    }

    /// Makes calls of every operation fail (a partition from the store): each operation gets its
    /// own copy of `fault`, so `times(n)` counts per operation.
    pub fn fail_all_ops(&self, fault: Fault) {
        for op in Op::ALL {
            self.fail(op, fault);
        }
    }

    /// Delays each call of `op` by `delay` before it reaches the store (a slow request). Zero
    /// removes the delay.
    pub fn delay_request(&self, op: Op, delay: Duration) {
        self.with(op, |st| st.request_delay = delay);
    }

    /// Delays each answer of `op` by `delay` after the store applied the call (a slow reply). Zero
    /// removes the delay.
    pub fn delay_answer(&self, op: Op, delay: Duration) {
        self.with(op, |st| st.answer_delay = delay);
    }

    /// Removes the fault and the delays of `op` (counters are kept).
    pub fn heal(&self, op: Op) {
        self.with(op, |st| {
            st.fault = None;
            st.request_delay = Duration::ZERO;
            st.answer_delay = Duration::ZERO;
        });
    }

    /// Removes every fault and delay.
    pub fn heal_all(&self) {
        for op in Op::ALL {
            self.heal(op);
        }
    }

    /// The fault currently set for `op`, with the calls it has left.
    pub fn fault(&self, op: Op) -> Option<Fault> {
        self.with(op, |st| st.fault)
    }

    /// How many calls of `op` the wrapper has seen (failed or not).
    pub fn calls(&self, op: Op) -> u64 {
        self.with(op, |st| st.calls)
    }

    /// How many calls of `op` were failed on purpose.
    pub fn injected(&self, op: Op) -> u64 {
        self.with(op, |st| st.injected)
    }
}
