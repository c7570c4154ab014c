//! The steps the world can take, as a stateright [`Model`].

use stateright::{Model, Property};

use crate::properties;
use crate::rules::{Ledger, SessionRule, Setup};
use crate::state::{
    Accepted, Answer, Attached, Elector, Exchange, Fence, Held, Holding, OnSession, Phase, Process,
    Record, Request, SLOTS, Session, State, Tick, Token, Write,
};

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
    /// The configured lease changes to the `n`-th of the setup's (0: `Setup::lease`).
    ChangeLease(u8),
    /// The configured slot count changes (between runs) to the `n`-th of the setup's.
    ChangeSlots(u8),
    /// Elector `e`'s action sends its write, carrying its fence, to the resource.
    Write(u8),
    /// Elector `e`'s write reaches the resource, which accepts or refuses it.
    Land(u8),
    /// Elector `e`'s request is duplicated: a copy stays on its way to the store.
    Duplicate(u8),
    /// The store applies the duplicated copy; its answer reaches nobody.
    ApplyStray,
    /// An operator forces the lock free, whoever holds it.
    ForceRelease,
    /// The store cleans up the lock's idle record, fence counters included.
    Cleanup,
    /// Process `p` renews its session, and with it every lease its electors hold, in one
    /// request (sessions only; a renewal lost or unanswered is sent again this way).
    Beat(u8),
    /// The store applies process `p`'s renewal.
    ApplyBeat(u8),
    /// Process `p`'s renewal is lost: before the store applied it, or its answer after.
    LoseBeat(u8),
    /// Process `p` receives the answer to its renewal; every lease renewed gets a local deadline
    /// off by `drift` ticks from an exact clock's.
    DeliverBeat(u8, i8),
    /// Process `p`'s renewal is duplicated: a copy stays on its way to the store.
    DuplicateBeat(u8),
    /// An operator forces out the lease of slot `s` (sessions: each slot is a lock): it revokes
    /// the token in the lease's session record, then deletes the lock record, unless it stops
    /// halfway (`true`), after the revocation.
    ForceOut(u8, bool),
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

    /// The lease the electors ask for now.
    fn lease(&self, state: &State) -> u8 {
        match state.lease {
            0 => self.setup.lease,
            n => self
                .setup
                .lease_changes
                .get(usize::from(n) - 1)
                .copied()
                .unwrap_or(self.setup.lease),
        }
    }

    /// How many slots the electors use now.
    fn slots(&self, state: &State) -> u8 {
        match state.slots {
            0 => self.setup.slots,
            n => self
                .setup
                .slot_changes
                .get(usize::from(n) - 1)
                .copied()
                .unwrap_or(self.setup.slots),
        }
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
        match request {
            Request::Acquire {
                token,
                period,
                offset,
                ttl,
                slots,
                lock,
                session,
            } => {
                if let Some((slot, h)) = state
                    .store
                    .slot_of(token, now)
                    .and_then(|slot| state.store.live(slot, now).map(|h| (slot, h)))
                {
                    // A retried request the store already applied: the same lease.
                    return granted(h.granted, slot, &h);
                }
                if period > 0 && self.already_ran(state, period, offset) {
                    return Answer::AlreadyRan;
                }
                let wanted = usize::from(slots).min(SLOTS);
                let asked = match lock {
                    Some(l) => usize::from(l)..usize::from(l).saturating_add(1).min(SLOTS),
                    None => 0..wanted,
                };
                let Some(slot) = asked
                    .into_iter()
                    .find(|&s| state.store.live(s, now).is_none())
                else {
                    return Answer::Held;
                };
                note_early_grant(state, slot, token);
                note_lost_session_taken_over(state, slot);
                let (fence, grant) = self.mint(state, slot);
                let session = session.and_then(|p| attach(state, p, slot, token, ttl));
                let held = Held {
                    token,
                    expiry: now.saturating_add(ttl),
                    granted: now,
                    fence,
                    grant,
                    session,
                };
                state.store.holders[slot] = Some(held);
                self.touch(state);
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
                granted(now, slot, &held)
            }
            Request::Extend { token, ttl } => match state.store.slot_of(token, now) {
                Some(slot) => {
                    if let Some(h) = state.store.holders[slot].as_mut() {
                        h.expiry = now.saturating_add(ttl);
                    }
                    self.touch(state);
                    Answer::Extended
                }
                None => Answer::NotHeld,
            },
            Request::Start(token) => {
                match (state.store.live(0, now), state.store.ledger.as_mut()) {
                    (Some(h), Some(record)) if h.token == token && record.token == token => {
                        record.started = true;
                        if self.setup.rules.ledger == Ledger::ByTime {
                            record.ran = Some(record.at);
                        }
                        Answer::Started
                    }
                    _ => Answer::NotHeld,
                }
            }
            Request::Release(token) => match state.store.slot_of(token, now) {
                Some(slot) => {
                    if let Some(on) = state.store.holders[slot].and_then(|h| h.session)
                        && let Some(session) = state.store.sessions.get_mut(usize::from(on.process))
                        && session.leases[slot].is_some_and(|a| a.token == token)
                    {
                        // The holder forgets it: its session no longer renews it.
                        session.leases[slot] = None;
                    }
                    state.store.holders[slot] = None;
                    self.touch(state);
                    Answer::Released
                }
                None => Answer::NotHeld,
            },
            Request::Beat {
                process,
                epoch,
                ttl,
                tokens,
            } => self.beat(state, process, epoch, ttl, tokens),
        }
    }

    /// The store applies a renewal of process `process`'s session `epoch` listing `tokens`: a
    /// session run out or replaced is lost (never revived); a live one is renewed, every lease
    /// it remembers that was revoked or ran out is dropped (its lock record deleted if it still
    /// names it), the listed ones still remembered are renewed, and the revocations are cleared.
    fn beat(
        &self,
        state: &mut State,
        process: u8,
        epoch: u8,
        ttl: u8,
        tokens: [Option<Token>; SLOTS],
    ) -> Answer {
        let now = state.now;
        let lost = Answer::Beat {
            lost: true,
            extended: [false; SLOTS],
        };
        let Some(mut session) = state.store.sessions.get(usize::from(process)).copied() else {
            return lost;
        };
        if session.epoch != epoch || session.expiry <= now {
            return lost;
        }
        let until = now.saturating_add(ttl);
        session.expiry = session.expiry.max(until);
        let ignores = self.setup.rules.session == SessionRule::RenewalIgnoresRevocation;
        let mut forced_out = None;
        for slot in 0..SLOTS {
            let Some(lease) = session.leases[slot] else {
                continue;
            };
            let revoked = !ignores && session.revoked[slot] == Some(lease.token);
            if revoked && tokens.contains(&Some(lease.token)) {
                forced_out = Some(lease.token);
            }
            if revoked || lease.end <= now {
                session.leases[slot] = None;
                if state.store.holders[slot].is_some_and(|h| h.token == lease.token) {
                    state.store.holders[slot] = None;
                }
            } else if tokens.contains(&Some(lease.token)) {
                session.leases[slot] = Some(Attached {
                    end: until,
                    ..lease
                });
            }
        }
        if !ignores {
            session.revoked = [None; SLOTS];
        }
        if let Some(slot) = state.store.sessions.get_mut(usize::from(process)) {
            *slot = session;
        }
        let extended = tokens
            .map(|t| t.is_some_and(|t| session.leases.iter().flatten().any(|a| a.token == t)));
        for (t, renewed) in tokens.iter().zip(extended) {
            if let Some(t) = *t
                && renewed
                && !(0..SLOTS).any(|s| state.store.truly_held(s, t, now))
            {
                state.renewed_unheld = true;
            }
        }
        if forced_out.is_some() && extended.contains(&true) {
            state.forced_out_beside_a_renewal = true;
        }
        Answer::Beat {
            lost: false,
            extended,
        }
    }

    /// Mints the fence of a grant of `slot` now: `max(last + 1, (now + 1) × fence_clock)`; returns it
    /// with the grant's number, and notes a fence not above every earlier one of the slot. Both
    /// are 0 when the setup does not model fences.
    fn mint(&self, state: &mut State, slot: usize) -> (Fence, u8) {
        if !self.setup.fences {
            return (0, 0);
        }
        let last = state.store.fences[slot];
        let seeded = state
            .now
            .saturating_add(1)
            .saturating_mul(self.setup.fence_clock);
        let fence = last.saturating_add(1).max(seeded);
        if fence <= state.minted[slot] {
            state.fence_fell = true;
        }
        state.minted[slot] = state.minted[slot].max(fence);
        state.store.fences[slot] = fence;
        state.grants = state.grants.saturating_add(1);
        (fence, state.grants)
    }

    /// Notes that a request wrote the lock's record now (kept only where the record can be
    /// cleaned up, so other setups do not tell states apart by it).
    fn touch(&self, state: &mut State) {
        if self.setup.cleanups > 0 {
            state.store.touched = state.now;
        }
    }

    /// The resource receives `write`: it refuses a fence below the highest it accepted (if it
    /// checks fences), and notes a write of an earlier grant accepted after a later grant's.
    fn land(&self, state: &mut State, write: Write) {
        let Some(accepted) = state.resource.get_mut(usize::from(write.slot)) else {
            return;
        };
        let admitted = !self.setup.rules.resource_checks_fence
            || accepted.is_none_or(|a| write.fence >= a.fence);
        if !admitted {
            return;
        }
        if accepted.is_some_and(|a| write.grant < a.grant) {
            state.out_of_order = true;
        }
        *accepted = Some(Accepted {
            fence: accepted.map_or(write.fence, |a| a.fence.max(write.fence)),
            grant: accepted.map_or(write.grant, |a| a.grant.max(write.grant)),
        });
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

    /// The local deadline of a lease of `ttl` granted or renewed by a request sent at `sent`.
    fn deadline(&self, sent: Tick, ttl: u8, drift: i8) -> Tick {
        let exact = i16::from(sent) + i16::from(ttl) - i16::from(self.setup.margin);
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
        let ttl = exchange.request.ttl().unwrap_or(0);
        match (elector.phase, exchange.request, answer) {
            (
                Phase::Acquiring(token),
                Request::Acquire { period, offset, .. },
                Answer::Granted {
                    at,
                    slot,
                    fence,
                    grant,
                    epoch,
                },
            ) => {
                if let Some(p) = state.processes.get_mut(usize::from(elector.process)) {
                    p.epoch = p.epoch.max(epoch);
                }
                let holding = Holding {
                    token,
                    deadline: self.deadline(exchange.sent, ttl, drift),
                    granted: at,
                    since: now,
                    slot,
                    fence,
                    grant,
                    wrote: false,
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
            (Phase::Running(holding), Request::Extend { .. }, Answer::Extended) => {
                let renewed = self.deadline(exchange.sent, ttl, drift);
                next.phase = Phase::Running(Holding {
                    deadline: holding.deadline.max(renewed),
                    ..holding
                });
            }
            (Phase::Running(holding), Request::Extend { .. }, _) => {
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

    /// Process `p` receives `answer` to its renewal `exchange`: each lease it listed is renewed
    /// or lost; a lost session is forgotten (the next acquisition starts a new one).
    fn deliver_beat(
        &self,
        state: &mut State,
        p: u8,
        exchange: Exchange,
        answer: Answer,
        drift: i8,
    ) {
        let (
            Request::Beat {
                epoch, ttl, tokens, ..
            },
            Answer::Beat { lost, extended },
        ) = (exchange.request, answer)
        else {
            return;
        };
        let now = state.now;
        let window = self.window(state, now);
        if let Some(process) = state.processes.get_mut(usize::from(p))
            && lost
            && process.epoch == epoch
        {
            process.epoch = 0;
        }
        let renewed = self.deadline(exchange.sent, ttl, drift);
        let cancel = self.setup.rules.cancel_on_lost;
        for (t, kept) in tokens.iter().zip(extended) {
            let Some(t) = *t else {
                continue;
            };
            for elector in &mut state.electors {
                let Phase::Running(h) = elector.phase else {
                    continue;
                };
                if elector.process != p || h.token != t {
                    continue;
                }
                if kept {
                    elector.phase = Phase::Running(Holding {
                        deadline: h.deadline.max(renewed),
                        ..h
                    });
                } else if cancel {
                    elector.phase = Phase::Idle;
                    elector.done_in = window;
                } else {
                    elector.phase = Phase::Running(Holding {
                        deadline: h.deadline.min(now),
                        ..h
                    });
                }
            }
        }
    }

    /// The tokens of the leases process `p`'s electors hold and renew: those not asked for in
    /// this very tick (a renewal sent with the acquisition would change nothing).
    fn held_by(state: &State, p: u8) -> [Option<Token>; SLOTS] {
        let mut tokens = [None; SLOTS];
        let held = state.electors.iter().filter_map(|e| match e.phase {
            Phase::Running(h) if e.process == p && e.sent_at != Some(state.now) => Some(h.token),
            _ => None,
        });
        for (slot, t) in tokens.iter_mut().zip(held) {
            *slot = Some(t);
        }
        tokens
    }

    /// True if process `p` may send a renewal now: it knows a session, one of its electors holds
    /// a lease, and no renewal is on its way or answered (a lost one is sent again).
    fn may_beat(&self, state: &State, p: u8) -> bool {
        let Some(process) = state.processes.get(usize::from(p)) else {
            return false;
        };
        self.setup.rules.auto_extend
            && process.epoch > 0
            && process.beat_at != Some(state.now)
            && process.beat.is_none_or(|x| x.silent())
            && Self::held_by(state, p).iter().any(Option::is_some)
    }

    /// What time passing does: a lease past its local deadline is lost, and a window that
    /// ended without a run is noted.
    fn tick(&self, state: &mut State) {
        state.now += 1;
        let now = state.now;
        let cancel = self.setup.rules.cancel_on_lost;
        let (len, off) = (self.period(state), self.offset(state));
        let window = (len > 0).then(|| start_of(now, len, off));
        for process in &mut state.processes {
            process.beat_at = None;
        }
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
                    && !in_session(state, e)
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

/// The answer granting `held` on `slot`, granted at `at`.
fn granted(at: Tick, slot: usize, held: &Held) -> Answer {
    Answer::Granted {
        at,
        slot: u8::try_from(slot).unwrap_or(u8::MAX),
        fence: held.fence,
        grant: held.grant,
        epoch: held.session.map_or(0, |on| on.epoch),
    }
}

/// True if elector `e` renews its leases through its process's session.
fn in_session(state: &State, e: &Elector) -> bool {
    usize::from(e.process) < state.processes.len()
}

/// Attaches the lease of `token` on `slot` to process `p`'s session at `state.now`, renewing
/// the session beside the grant, or starting a new one (the next number) if it ran out or
/// there was none. Returns the session.
fn attach(state: &mut State, p: u8, slot: usize, token: Token, ttl: u8) -> Option<OnSession> {
    let now = state.now;
    let until = now.saturating_add(ttl);
    let session = state.store.sessions.get_mut(usize::from(p))?;
    if session.epoch == 0 || session.expiry <= now {
        *session = Session {
            epoch: session.epoch.checked_add(1)?,
            expiry: until,
            leases: [None; SLOTS],
            revoked: [None; SLOTS],
        };
    } else {
        session.expiry = session.expiry.max(until);
    }
    *session.leases.get_mut(slot)? = Some(Attached { token, end: until });
    Some(OnSession {
        process: p,
        epoch: session.epoch,
    })
}

/// Notes a grant of `slot` over a record whose session ran out while it held two leases.
fn note_lost_session_taken_over(state: &mut State, slot: usize) {
    let now = state.now;
    let Some(on) = state
        .store
        .holders
        .get(slot)
        .copied()
        .flatten()
        .and_then(|h| h.session)
    else {
        return;
    };
    let Some(session) = state.store.sessions.get(usize::from(on.process)) else {
        return;
    };
    if session.epoch == on.epoch
        && session.expiry <= now
        && session.leases.iter().flatten().count() >= 2
    {
        state.lost_session_taken_over = true;
    }
}

/// Notes a grant of `slot` to `token` while another holder of it, not forced out, still
/// believes its lease valid.
fn note_early_grant(state: &mut State, slot: usize, token: Token) {
    let now = state.now;
    let forced = state.forced_out.get(slot).copied().flatten();
    let early = state.electors.iter().any(|e| match e.phase {
        Phase::Starting(h) | Phase::Running(h) => {
            usize::from(h.slot) == slot
                && h.token != token
                && h.deadline > now
                && forced != Some(h.token)
        }
        _ => false,
    });
    if early {
        state.granted_early = true;
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
        let electors = (0..self.setup.electors)
            .map(|e| Elector {
                phase: Phase::Idle,
                exchange: None,
                write: None,
                done_in: None,
                sent_at: None,
                process: self
                    .setup
                    .processes
                    .get(usize::from(e))
                    .copied()
                    .unwrap_or(0),
                lock: self.setup.locks.get(usize::from(e)).copied(),
            })
            .collect();
        let processes = self.setup.process_count();
        let process = Process {
            epoch: 0,
            beat: None,
            beat_at: None,
        };
        vec![State {
            now: 0,
            store: crate::state::Store {
                sessions: vec![Session::default(); processes],
                rule: self.setup.rules.session,
                ..Default::default()
            },
            electors,
            next_token: 1,
            losses_left: self.setup.losses,
            duplicates_left: self.setup.duplicates,
            stray: None,
            forced_left: self.setup.forced,
            cleanups_left: self.setup.cleanups,
            period: 0,
            changed_at: 0,
            lease: 0,
            slots: 0,
            grants: 0,
            minted: [0; SLOTS],
            fence_fell: false,
            resource: [None; SLOTS],
            out_of_order: false,
            last_run: None,
            twice: false,
            missed: None,
            processes: vec![process; processes],
            forced_out: [None; SLOTS],
            granted_early: false,
            renewed_unheld: false,
            lost_session_taken_over: false,
            forced_out_beside_a_renewal: false,
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
            match (e.phase, e.write) {
                (_, Some(_)) => actions.push(Action::Land(id)),
                (Phase::Running(h), None) if self.setup.fences && !h.wrote => {
                    actions.push(Action::Write(id));
                }
                _ => {}
            }
            match e.exchange {
                Some(x) if x.in_flight => {
                    actions.push(Action::Apply(id));
                    if state.losses_left > 0 {
                        actions.push(Action::LoseRequest(id));
                    }
                    if state.duplicates_left > 0 && state.stray.is_none() {
                        actions.push(Action::Duplicate(id));
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
                        (Phase::Starting(h), _) | (Phase::Running(h), Request::Extend { .. }) => {
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
                        if self.setup.rules.auto_extend
                            && !in_session(state, e)
                            && e.sent_at != Some(state.now)
                        {
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
        // A deploy moves forward through the configurations: leases at any moment, slot
        // counts between runs.
        let later = |current: u8, count: usize| {
            (usize::from(current) + 1..=count).map(|n| u8::try_from(n).unwrap_or(u8::MAX))
        };
        for n in later(state.lease, self.setup.lease_changes.len()) {
            actions.push(Action::ChangeLease(n));
        }
        if idle {
            for n in later(state.slots, self.setup.slot_changes.len()) {
                actions.push(Action::ChangeSlots(n));
            }
        }
        for (p, process) in state.processes.iter().enumerate() {
            let id = u8::try_from(p).unwrap_or(u8::MAX);
            match process.beat {
                Some(x) if x.in_flight => {
                    actions.push(Action::ApplyBeat(id));
                    if state.losses_left > 0 {
                        actions.push(Action::LoseBeat(id));
                    }
                    if state.duplicates_left > 0 && state.stray.is_none() {
                        actions.push(Action::DuplicateBeat(id));
                    }
                }
                Some(Exchange {
                    answer: Some(answer),
                    ..
                }) => {
                    let renewed =
                        matches!(answer, Answer::Beat { extended, .. } if extended.contains(&true));
                    if renewed {
                        for drift in drifts.clone() {
                            actions.push(Action::DeliverBeat(id, drift));
                        }
                    } else {
                        actions.push(Action::DeliverBeat(id, 0));
                    }
                    if state.losses_left > 0 {
                        actions.push(Action::LoseBeat(id));
                    }
                }
                _ => {}
            }
            if self.may_beat(state, id) {
                actions.push(Action::Beat(id));
            }
        }
        if state.stray.is_some() {
            actions.push(Action::ApplyStray);
        }
        let held = (0..SLOTS).any(|s| state.store.live(s, state.now).is_some());
        if state.forced_left > 0 && held {
            if self.setup.has_sessions() {
                for s in 0..SLOTS {
                    if let Some(h) = state.store.live(s, state.now) {
                        let slot = u8::try_from(s).unwrap_or(u8::MAX);
                        actions.push(Action::ForceOut(slot, false));
                        // Only a lease on a session has a revocation to stop after.
                        if h.session.is_some() {
                            actions.push(Action::ForceOut(slot, true));
                        }
                    }
                }
            } else {
                actions.push(Action::ForceRelease);
            }
        }
        if state.cleanups_left > 0
            && !held
            && state.now > state.store.touched
            && state.store.fences != [0; SLOTS]
        {
            actions.push(Action::Cleanup);
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
                let (ttl, slots) = (self.lease(&state), self.slots(&state));
                let processes = state.processes.len();
                let elector = state.electors.get_mut(at(e))?;
                let session = usize::from(elector.process) < processes;
                elector.phase = Phase::Acquiring(token);
                elector.exchange = Some(send(
                    Request::Acquire {
                        token,
                        period,
                        offset,
                        ttl,
                        slots,
                        lock: elector.lock,
                        session: session.then_some(elector.process),
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
                let ttl = self.lease(&state);
                let elector = state.electors.get_mut(at(e))?;
                let Phase::Running(h) = elector.phase else {
                    return None;
                };
                elector.exchange = Some(send(
                    Request::Extend {
                        token: h.token,
                        ttl,
                    },
                    now,
                ));
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
            Action::ChangeLease(n) => state.lease = n,
            Action::ChangeSlots(n) => state.slots = n,
            Action::Write(e) => {
                let elector = state.electors.get_mut(at(e))?;
                let Phase::Running(h) = &mut elector.phase else {
                    return None;
                };
                h.wrote = true;
                elector.write = Some(Write {
                    slot: h.slot,
                    fence: h.fence,
                    grant: h.grant,
                });
            }
            Action::Land(e) => {
                let write = state.electors.get_mut(at(e))?.write.take()?;
                self.land(&mut state, write);
            }
            Action::Duplicate(e) => {
                state.duplicates_left = state.duplicates_left.checked_sub(1)?;
                state.stray = Some(state.electors.get(at(e))?.exchange?.request);
            }
            Action::ApplyStray => {
                let request = state.stray.take()?;
                self.apply(&mut state, request);
            }
            Action::ForceRelease => {
                state.forced_left = state.forced_left.checked_sub(1)?;
                for s in 0..SLOTS {
                    if let Some(h) = state.store.live(s, now) {
                        state.forced_out[s] = Some(h.token);
                    }
                }
                state.store.holders = [None; SLOTS];
                self.touch(&mut state);
            }
            Action::ForceOut(slot, halfway) => {
                state.forced_left = state.forced_left.checked_sub(1)?;
                let s = usize::from(slot);
                let h = state.store.live(s, now)?;
                if let Some(on) = h.session
                    && let Some(session) = state.store.sessions.get_mut(usize::from(on.process))
                {
                    *session.revoked.get_mut(s)? = Some(h.token);
                }
                if !halfway {
                    *state.store.holders.get_mut(s)? = None;
                }
                *state.forced_out.get_mut(s)? = Some(h.token);
                self.touch(&mut state);
            }
            Action::Beat(p) => {
                let tokens = Self::held_by(&state, p);
                let ttl = self.lease(&state);
                let process = state.processes.get_mut(usize::from(p))?;
                process.beat = Some(send(
                    Request::Beat {
                        process: p,
                        epoch: process.epoch,
                        ttl,
                        tokens,
                    },
                    now,
                ));
                process.beat_at = Some(now);
            }
            Action::ApplyBeat(p) => {
                let exchange = state.processes.get(usize::from(p))?.beat?;
                let answer = self.apply(&mut state, exchange.request);
                state.processes.get_mut(usize::from(p))?.beat = Some(Exchange {
                    in_flight: false,
                    answer: Some(answer),
                    ..exchange
                });
            }
            Action::LoseBeat(p) => {
                state.losses_left = state.losses_left.checked_sub(1)?;
                let exchange = state.processes.get_mut(usize::from(p))?.beat.as_mut()?;
                exchange.in_flight = false;
                exchange.answer = None;
            }
            Action::DeliverBeat(p, drift) => {
                let exchange = state.processes.get_mut(usize::from(p))?.beat.take()?;
                let answer = exchange.answer?;
                self.deliver_beat(&mut state, p, exchange, answer, drift);
            }
            Action::DuplicateBeat(p) => {
                state.duplicates_left = state.duplicates_left.checked_sub(1)?;
                state.stray = Some(state.processes.get(usize::from(p))?.beat?.request);
            }
            Action::Cleanup => {
                state.cleanups_left = state.cleanups_left.checked_sub(1)?;
                state.store.holders = [None; SLOTS];
                state.store.fences = [0; SLOTS];
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
        let mut all = properties::all();
        all.extend(properties::coverage(&self.setup));
        all
    }

    fn within_boundary(&self, state: &State) -> bool {
        state.now <= self.setup.horizon
    }
}
