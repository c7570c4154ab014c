//! The steps the world can take, as a stateright [`Model`].

use stateright::{Model, Property};

use crate::properties;
use crate::rules::{Ledger, Setup};
use crate::state::{Answer, Elector, Exchange, Held, Holding, Phase, Record, Request, State, Tick};

/// One step of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The real clock advances by one tick.
    Tick,
    /// Elector `e` sends an acquisition (a period claim when a schedule runs).
    Ask(u8),
    /// The store applies elector `e`'s request.
    Apply(u8),
    /// Elector `e`'s request is lost before the store applies it.
    LoseRequest(u8),
    /// The answer to elector `e`'s request is lost (the store applied it).
    LoseAnswer(u8),
    /// Elector `e` receives its answer; a lease granted or renewed gets a local deadline off
    /// by `drift` ticks from an exact clock's.
    Deliver(u8, i8),
    /// Elector `e`, hearing nothing, sends the same request again (same token).
    Retry(u8),
    /// Elector `e`, hearing nothing, gives the request up (an acquisition: it releases the
    /// token's lease, which the store may have granted).
    GiveUp(u8),
    /// Elector `e` renews its lease.
    Renew(u8),
    /// Elector `e`'s action ends; it releases the lease.
    End(u8),
    /// The schedule's period length changes (between runs) to the setup's `n`-th.
    ChangePeriod(u8),
}

/// The lease protocol of leasehold, as the checker explores it.
#[derive(Clone, Debug)]
pub struct LeaseModel {
    /// The sizes and rules.
    pub setup: Setup,
}

impl LeaseModel {
    /// A model of `setup`.
    pub fn new(setup: Setup) -> Self {
        Self { setup }
    }

    /// The period length the schedule claims with now (0: plain locks).
    fn period(&self, state: &State) -> u8 {
        self.setup
            .periods
            .get(usize::from(state.period))
            .copied()
            .unwrap_or(0)
    }

    /// The offset of the schedule's periods now.
    fn offset(&self, state: &State) -> u8 {
        self.setup
            .offsets
            .get(usize::from(state.period))
            .copied()
            .unwrap_or(0)
    }

    /// The start of the period window holding `at`.
    fn window(&self, state: &State, at: Tick) -> Option<Tick> {
        match self.period(state) {
            0 => None,
            len => Some(start_of(at, len, self.offset(state))),
        }
    }

    /// True if elector `e` still has to try in this window (a scheduled elector that has not
    /// run nor found the period run).
    fn owes_a_try(&self, state: &State, e: &Elector) -> bool {
        let window = self.window(state, state.now);
        window.is_some()
            && e.done_in != window
            && e.phase == Phase::Idle
            && e.exchange.is_none()
            && e.sent_at != Some(state.now)
    }

    /// The store applies `request` at `state.now`.
    fn apply(&self, state: &mut State, request: Request) -> Answer {
        let now = state.now;
        let live = state.store.holder.filter(|h| h.expiry > now);
        let lease = self.setup.lease;
        match request {
            Request::Acquire {
                token,
                period,
                offset,
            } => {
                if let Some(h) = live.filter(|h| h.token == token) {
                    // A retried request the store already applied: the same lease.
                    return Answer::Granted { at: h.granted };
                }
                if period > 0 && self.already_ran(state, period, offset) {
                    return Answer::AlreadyRan;
                }
                if live.is_some() {
                    return Answer::Held;
                }
                state.store.holder = Some(Held {
                    token,
                    expiry: now + lease,
                    granted: now,
                });
                let shifted = now.saturating_add(period).saturating_sub(offset);
                if let Some(number) = shifted.checked_div(period) {
                    let ran = match self.setup.rules.ledger {
                        Ledger::ByTime => state.store.ledger.and_then(|r| r.ran),
                        Ledger::LatestClaim | Ledger::ByNumber => None,
                    };
                    state.store.ledger = Some(Record {
                        ran,
                        number,
                        at: now,
                        token,
                        // Before issue 33 a claim was a run.
                        started: self.setup.rules.ledger == Ledger::ByNumber,
                    });
                }
                Answer::Granted { at: now }
            }
            Request::Extend(token) => match live {
                Some(h) if h.token == token => {
                    state.store.holder = Some(Held {
                        expiry: now + lease,
                        ..h
                    });
                    Answer::Extended
                }
                _ => Answer::NotHeld,
            },
            Request::Start(token) => match (live, state.store.ledger.as_mut()) {
                (Some(h), Some(record)) if h.token == token && record.token == token => {
                    record.started = true;
                    if self.setup.rules.ledger == Ledger::ByTime {
                        record.ran = Some(record.at);
                    }
                    Answer::Started
                }
                _ => Answer::NotHeld,
            },
            Request::Release(token) => match live {
                Some(h) if h.token == token => {
                    state.store.holder = None;
                    Answer::Released
                }
                _ => Answer::NotHeld,
            },
        }
    }

    /// The ledger's verdict on a claim of a period of `len` ticks at offset `off` now: true if
    /// it already ran.
    fn already_ran(&self, state: &State, len: u8, off: u8) -> bool {
        let Some(record) = state.store.ledger else {
            return false;
        };
        match self.setup.rules.ledger {
            Ledger::ByNumber => {
                record.number >= state.now.saturating_add(len).saturating_sub(off) / len
            }
            Ledger::ByTime => record
                .ran
                .is_some_and(|ran| ran >= start_of(state.now, len, off)),
            Ledger::LatestClaim => record.started && record.at >= start_of(state.now, len, off),
        }
    }

    /// The local deadline of a lease granted or renewed by a request sent at `sent`.
    fn deadline(&self, sent: Tick, drift: i8) -> Tick {
        let exact = i16::from(sent) + i16::from(self.setup.lease) - i16::from(self.setup.margin);
        u8::try_from((exact + i16::from(drift)).max(0)).unwrap_or(u8::MAX)
    }

    /// Elector `e` receives `answer` to `exchange`.
    fn deliver(&self, state: &mut State, e: usize, exchange: Exchange, answer: Answer, drift: i8) {
        let now = state.now;
        let window = self.window(state, now);
        let Some(elector) = state.electors.get(e).copied() else {
            return;
        };
        let mut next = elector;
        match (elector.phase, exchange.request, answer) {
            (
                Phase::Acquiring(token),
                Request::Acquire { period, offset, .. },
                Answer::Granted { at },
            ) => {
                let holding = Holding {
                    token,
                    deadline: self.deadline(exchange.sent, drift),
                    granted: at,
                    since: now,
                };
                if holding.deadline <= now && self.setup.rules.cancel_on_lost {
                    // Answered too late: the lease is already lost; nothing runs under it.
                    next.phase = Phase::Idle;
                    next.exchange = Some(send(Request::Release(token), now));
                } else if period > 0 && self.setup.rules.ledger != Ledger::ByNumber {
                    next.phase = Phase::Starting(holding);
                    next.exchange = Some(send(Request::Start(token), now));
                } else {
                    next.phase = Phase::Running(holding);
                    record_run(state, at, period, offset);
                }
            }
            (Phase::Acquiring(_), _, Answer::AlreadyRan) => {
                next.phase = Phase::Idle;
                next.done_in = window;
            }
            (Phase::Acquiring(_), _, _) => next.phase = Phase::Idle,
            (Phase::Starting(holding), Request::Start(_), Answer::Started)
                if holding.deadline > now =>
            {
                next.phase = Phase::Running(Holding {
                    since: now,
                    ..holding
                });
                record_run(
                    state,
                    holding.granted,
                    self.period(state),
                    self.offset(state),
                );
            }
            (Phase::Starting(_), Request::Start(_), _) => next.phase = Phase::Idle,
            (Phase::Running(holding), Request::Extend(_), Answer::Extended) => {
                let renewed = self.deadline(exchange.sent, drift);
                next.phase = Phase::Running(Holding {
                    deadline: holding.deadline.max(renewed),
                    ..holding
                });
            }
            (Phase::Running(holding), Request::Extend(_), _) => {
                // The store no longer holds it: lost now.
                if self.setup.rules.cancel_on_lost {
                    next.phase = Phase::Idle;
                    next.done_in = window;
                } else {
                    next.phase = Phase::Running(Holding {
                        deadline: holding.deadline.min(now),
                        ..holding
                    });
                }
            }
            _ => {}
        }
        if let Some(slot) = state.electors.get_mut(e) {
            *slot = next;
        }
    }

    /// What time passing does: a lease past its local deadline is lost, and a window that
    /// ended without a run is noted.
    fn tick(&self, state: &mut State) {
        state.now += 1;
        let now = state.now;
        let cancel = self.setup.rules.cancel_on_lost;
        let (len, off) = (self.period(state), self.offset(state));
        let window = (len > 0).then(|| start_of(now, len, off));
        for elector in &mut state.electors {
            // What only mattered within the past tick or window is forgotten.
            elector.sent_at = None;
            if elector.done_in != window {
                elector.done_in = None;
            }
            match elector.phase {
                Phase::Starting(h) if h.deadline <= now => elector.phase = Phase::Idle,
                Phase::Running(h) if h.deadline <= now && cancel => {
                    // Dropped at the deadline; the run counts for its period.
                    elector.phase = Phase::Idle;
                    elector.done_in = window.filter(|w| h.granted >= *w);
                }
                _ => {}
            }
        }
        if len > 0 && start_of(now, len, off) == now && now >= len && state.changed_at <= now - len
        {
            let from = now - len;
            let ran = state.last_run.is_some_and(|at| at >= from);
            if !ran && state.missed.is_none() {
                state.missed = Some((from, now));
            }
        }
    }

    /// True if time may pass: actions at their longest end first, scheduled electors try
    /// first, and without pauses every elector acts first.
    fn may_tick(&self, state: &State) -> bool {
        if state.now >= self.setup.horizon {
            return false;
        }
        state.electors.iter().all(|e| {
            let ends = match e.phase {
                Phase::Running(h) => state.now - h.since < self.setup.action,
                _ => true,
            };
            let tried = !self.owes_a_try(state, e);
            let prompt = self.setup.pauses || (e.exchange.is_none() && !self.must_renew(state, e));
            ends && tried && prompt
        })
    }

    /// True if an elector that does not pause renews now: its lease would end before the next
    /// tick's end.
    fn must_renew(&self, state: &State, e: &Elector) -> bool {
        match e.phase {
            Phase::Running(h) => {
                self.setup.rules.auto_extend
                    && h.deadline <= state.now + 1
                    && e.sent_at != Some(state.now)
            }
            _ => false,
        }
    }
}

/// A request sent at `now`.
fn send(request: Request, now: Tick) -> Exchange {
    Exchange {
        request,
        sent: now,
        in_flight: true,
        answer: None,
    }
}

/// The start of the window of `len` ticks at offset `off` that holds `at` (0 for a window that
/// began before time did).
fn start_of(at: Tick, len: u8, off: u8) -> Tick {
    let (at16, len16) = (u16::from(at), u16::from(len.max(1)));
    let into = (at16 + len16 - u16::from(off) % len16) % len16;
    at.saturating_sub(u8::try_from(into).unwrap_or(u8::MAX))
}

/// Notes an action that starts under a lease granted at `granted` for a period of `period`
/// ticks at offset `offset` (0: none): it runs twice if a run was granted within its period
/// before.
fn record_run(state: &mut State, granted: Tick, period: u8, offset: u8) {
    if period == 0 {
        return;
    }
    let from = start_of(granted, period, offset);
    if state.last_run.is_some_and(|last| last >= from) {
        state.twice = true;
    }
    state.last_run = Some(state.last_run.map_or(granted, |last| last.max(granted)));
}

impl Model for LeaseModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let idle = Elector {
            phase: Phase::Idle,
            exchange: None,
            done_in: None,
            sent_at: None,
        };
        vec![State {
            now: 0,
            store: Default::default(),
            electors: vec![idle; usize::from(self.setup.electors)],
            next_token: 1,
            losses_left: self.setup.losses,
            period: 0,
            changed_at: 0,
            last_run: None,
            twice: false,
            missed: None,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        if self.may_tick(state) {
            actions.push(Action::Tick);
        }
        let drifts = -i8::try_from(self.setup.drift).unwrap_or(0)
            ..=i8::try_from(self.setup.drift).unwrap_or(0);
        for (i, e) in state.electors.iter().enumerate() {
            let id = u8::try_from(i).unwrap_or(u8::MAX);
            match e.exchange {
                Some(x) if x.in_flight => {
                    actions.push(Action::Apply(id));
                    if state.losses_left > 0 {
                        actions.push(Action::LoseRequest(id));
                    }
                }
                Some(Exchange {
                    answer: Some(answer),
                    ..
                }) => {
                    if matches!(answer, Answer::Granted { .. } | Answer::Extended) {
                        for drift in drifts.clone() {
                            actions.push(Action::Deliver(id, drift));
                        }
                    } else {
                        actions.push(Action::Deliver(id, 0));
                    }
                    if state.losses_left > 0 {
                        actions.push(Action::LoseAnswer(id));
                    }
                }
                Some(x) => {
                    // The start of a claim is retried until the lease's local deadline; other
                    // requests may also be given up at once.
                    let retries = match (e.phase, x.request) {
                        (Phase::Starting(h), _) | (Phase::Running(h), Request::Extend(_)) => {
                            h.deadline > state.now
                        }
                        _ => true,
                    };
                    if retries {
                        actions.push(Action::Retry(id));
                    }
                    if !retries || !matches!(x.request, Request::Start(_)) {
                        actions.push(Action::GiveUp(id));
                    }
                }
                None => match e.phase {
                    Phase::Idle => {
                        let plain = self.period(state) == 0;
                        if e.sent_at != Some(state.now) && (plain || self.owes_a_try(state, e)) {
                            actions.push(Action::Ask(id));
                        }
                    }
                    Phase::Running(_) => {
                        if self.setup.rules.auto_extend && e.sent_at != Some(state.now) {
                            actions.push(Action::Renew(id));
                        }
                        actions.push(Action::End(id));
                    }
                    _ => {}
                },
            }
        }
        let idle = state
            .electors
            .iter()
            .all(|e| e.phase == Phase::Idle && e.exchange.is_none());
        if idle && state.changed_at != state.now {
            for n in 0..self.setup.periods.len() {
                let n = u8::try_from(n).unwrap_or(u8::MAX);
                if n != state.period {
                    actions.push(Action::ChangePeriod(n));
                }
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        let now = state.now;
        let at = |e: u8| usize::from(e);
        match action {
            Action::Tick => self.tick(&mut state),
            Action::Ask(e) => {
                let token = state.next_token;
                state.next_token = state.next_token.checked_add(1)?;
                let (period, offset) = (self.period(&state), self.offset(&state));
                let elector = state.electors.get_mut(at(e))?;
                elector.phase = Phase::Acquiring(token);
                elector.exchange = Some(send(
                    Request::Acquire {
                        token,
                        period,
                        offset,
                    },
                    now,
                ));
                elector.sent_at = Some(now);
            }
            Action::Apply(e) => {
                let exchange = state.electors.get(at(e))?.exchange?;
                let answer = self.apply(&mut state, exchange.request);
                state.electors.get_mut(at(e))?.exchange = Some(Exchange {
                    in_flight: false,
                    answer: Some(answer),
                    ..exchange
                });
            }
            Action::LoseRequest(e) | Action::LoseAnswer(e) => {
                state.losses_left = state.losses_left.checked_sub(1)?;
                let exchange = state.electors.get_mut(at(e))?.exchange.as_mut()?;
                exchange.in_flight = false;
                exchange.answer = None;
            }
            Action::Deliver(e, drift) => {
                let elector = state.electors.get_mut(at(e))?;
                let exchange = elector.exchange.take()?;
                let answer = exchange.answer?;
                self.deliver(&mut state, at(e), exchange, answer, drift);
            }
            Action::Retry(e) => {
                let elector = state.electors.get_mut(at(e))?;
                let exchange = elector.exchange.as_mut()?;
                let live = match elector.phase {
                    Phase::Starting(h) | Phase::Running(h) => h.deadline > now,
                    _ => true,
                };
                if !live {
                    return None;
                }
                // A retried acquisition's lease may be the one the first try was granted: its
                // local deadline counts from the first send, as the elector's does.
                let sent = match exchange.request {
                    Request::Acquire { .. } => exchange.sent,
                    _ => now,
                };
                *exchange = Exchange {
                    sent,
                    ..send(exchange.request, now)
                };
            }
            Action::GiveUp(e) => {
                let elector = state.electors.get_mut(at(e))?;
                let exchange = elector.exchange.take()?;
                match (elector.phase, exchange.request) {
                    (Phase::Acquiring(token), _) | (Phase::Starting(Holding { token, .. }), _) => {
                        elector.phase = Phase::Idle;
                        elector.exchange = Some(send(Request::Release(token), now));
                    }
                    _ => {}
                }
            }
            Action::Renew(e) => {
                let elector = state.electors.get_mut(at(e))?;
                let Phase::Running(h) = elector.phase else {
                    return None;
                };
                elector.exchange = Some(send(Request::Extend(h.token), now));
                elector.sent_at = Some(now);
            }
            Action::End(e) => {
                let window = self.window(&state, now);
                let elector = state.electors.get_mut(at(e))?;
                let Phase::Running(h) = elector.phase else {
                    return None;
                };
                elector.phase = Phase::Idle;
                elector.done_in = window;
                elector.exchange = Some(send(Request::Release(h.token), now));
            }
            Action::ChangePeriod(n) => {
                state.period = n;
                state.changed_at = now;
                // Windows of another length: every elector tries again.
                for elector in &mut state.electors {
                    elector.done_in = None;
                }
            }
        }
        Some(state.canonical())
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
    }

    fn within_boundary(&self, state: &State) -> bool {
        state.now <= self.setup.horizon
    }
}
