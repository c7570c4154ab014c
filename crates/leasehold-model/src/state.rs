//! The state of the modelled world: the real clock, the store, the electors and their messages,
//! the fenced resource, and what has run.

/// A moment or a duration on the real clock, in ticks.
pub type Tick = u8;

/// A lease's token: unique per acquisition attempt (a retry of the same attempt keeps it).
pub type Token = u8;

/// A fence: minted by the store with each grant, per slot.
pub type Fence = u8;

/// The most slots a modelled lock has.
pub const SLOTS: usize = 2;

/// The most processes (sessions) a model with sessions has.
pub const PROCESSES: usize = 2;

use crate::rules::SessionRule;

/// The store: one lock with up to [`SLOTS`] slots, a fence counter per slot and the period
/// ledger. It is linearizable and reads the real clock (the store's clock is the reference).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Store {
    /// Each slot's lease, if any; a slot is free once its `expiry` is not after now.
    pub holders: [Option<Held>; SLOTS],
    /// The last fence minted for each slot (0: none, or the record was cleaned up).
    pub fences: [Fence; SLOTS],
    /// When a request last wrote the lock's record (a grant, renewal or release): an idle
    /// record is cleaned up only after this.
    pub touched: Tick,
    /// The ledger's latest claim.
    pub ledger: Option<Record>,
    /// The session record of each process (empty without sessions).
    pub sessions: Vec<Session>,
    /// How lock records on a session are judged (the same in every state of a model).
    pub rule: SessionRule,
}

impl Store {
    /// The live lease of slot `slot` at `now`, as an acquirer judges it under the store's rule.
    pub fn live(&self, slot: usize, now: Tick) -> Option<Held> {
        self.held_until(slot, now)
            .and(self.holders.get(slot).copied().flatten())
    }

    /// Until when an acquirer, under the store's rule, takes slot `slot`'s record as held, if it
    /// does at `now` (`Tick::MAX`: for ever).
    pub fn held_until(&self, slot: usize, now: Tick) -> Option<Tick> {
        self.held_until_by(self.rule, slot, now)
    }

    /// As [`held_until`](Self::held_until), under `rule`.
    fn held_until_by(&self, rule: SessionRule, slot: usize, now: Tick) -> Option<Tick> {
        let h = self.holders.get(slot).copied().flatten()?;
        let Some(on) = h.session else {
            return (h.expiry > now).then_some(h.expiry);
        };
        let session = self.sessions.get(usize::from(on.process))?;
        if session.revoked.get(slot).copied().flatten() == Some(h.token) {
            return None;
        }
        let same = session.epoch == on.epoch;
        match rule {
            SessionRule::Today | SessionRule::RenewalIgnoresRevocation => {
                (same && session.expiry > now).then_some(session.expiry)
            }
            SessionRule::AcquirerJudgesByGrant => (h.expiry > now).then_some(h.expiry),
            SessionRule::AcquirerIgnoresSessionExpiry => Some(if same && session.expiry > now {
                session.expiry
            } else {
                Tick::MAX
            }),
        }
    }

    /// True if slot `slot`'s record is held by `token` under today's rule, whatever rule the
    /// store follows (what the properties compare a renewal's answers with).
    pub fn truly_held(&self, slot: usize, token: Token, now: Tick) -> bool {
        self.held_until_by(SessionRule::Today, slot, now).is_some()
            && self
                .holders
                .get(slot)
                .copied()
                .flatten()
                .is_some_and(|h| h.token == token)
    }

    /// The slot whose live lease `token` holds at `now`.
    pub fn slot_of(&self, token: Token, now: Tick) -> Option<usize> {
        (0..SLOTS).find(|&s| self.live(s, now).is_some_and(|h| h.token == token))
    }
}

/// A lease as the store keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Held {
    /// Whose lease it is.
    pub token: Token,
    /// When the store frees it.
    pub expiry: Tick,
    /// When the store granted it.
    pub granted: Tick,
    /// The fence minted with it.
    pub fence: Fence,
    /// Which grant this is, in the real order of grants (kept for the properties only; 0 when
    /// the setup does not model fences).
    pub grant: u8,
    /// The session the lease is attached to, if any: it is then held while that session is
    /// live and has not revoked it, whatever `expiry` says.
    pub session: Option<OnSession>,
}

/// The session a lock record names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OnSession {
    /// The process whose session it is.
    pub process: u8,
    /// Which of that process's sessions (a new session never revives an old one).
    pub epoch: u8,
}

/// A process's session record at the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Session {
    /// Which session this is (0: the process never had one); each new session of the process
    /// takes the next number.
    pub epoch: u8,
    /// When the store lets it run out (on the store's clock).
    pub expiry: Tick,
    /// The leases attached to it, per slot, with the end each was last granted or renewed to:
    /// what the store remembers of the leases it renews (the memory of held leases of the real
    /// stores).
    pub leases: [Option<Attached>; SLOTS],
    /// Per slot, the token an operator's forced release revoked and the holder has not been told
    /// of yet (the next renewal tells it and empties the list).
    pub revoked: [Option<Token>; SLOTS],
}

/// A lease attached to a session, as the session remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attached {
    /// The lease's token.
    pub token: Token,
    /// Its end as last granted or renewed: a lease not renewed by then is deleted at the
    /// session's next renewal.
    pub end: Tick,
}

/// The ledger's latest claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// The period number claimed, under the claim's own length.
    pub number: u8,
    /// When the claim was granted.
    pub at: Tick,
    /// The token of the lease granted with it.
    pub token: Token,
    /// Whether its action started.
    pub started: bool,
    /// When the latest claim that started was granted (this one's `at` once it started).
    pub ran: Option<Tick>,
}

/// A request an elector sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Request {
    /// Acquire the lock.
    Acquire {
        /// The attempt's token.
        token: Token,
        /// The period length claimed, 0 for none (a plain acquisition).
        period: u8,
        /// The offset of the period claimed.
        offset: u8,
        /// The lease asked for.
        ttl: u8,
        /// How many slots the lock has, as the elector is configured.
        slots: u8,
        /// The slot asked for, when each slot is a lock of its own (sessions); `None`: any.
        lock: Option<u8>,
        /// The process whose session the lease is attached to; `None`: a lease of its own.
        session: Option<u8>,
    },
    /// A process renews its session and, with it, every lease it lists.
    Beat {
        /// The process.
        process: u8,
        /// The session it renews.
        epoch: u8,
        /// The lease asked for.
        ttl: u8,
        /// The tokens of the leases it renews.
        tokens: [Option<Token>; SLOTS],
    },
    /// Renew the lease to `ttl` from now.
    Extend {
        /// The lease's token.
        token: Token,
        /// The lease asked for.
        ttl: u8,
    },
    /// Mark the period claim made with this token started.
    Start(Token),
    /// Release the lease.
    Release(Token),
}

impl Request {
    /// The lease a request asks for, if it asks for one.
    pub fn ttl(&self) -> Option<u8> {
        match *self {
            Self::Acquire { ttl, .. } | Self::Extend { ttl, .. } | Self::Beat { ttl, .. } => {
                Some(ttl)
            }
            Self::Start(_) | Self::Release(_) => None,
        }
    }
}

/// The store's answer to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// Granted (or, for a retried request, granted before).
    Granted {
        /// When the store granted it (the real time, kept for the properties; the elector
        /// does not use it).
        at: Tick,
        /// The slot granted.
        slot: u8,
        /// The fence minted with the grant.
        fence: Fence,
        /// Which grant it is (for the properties).
        grant: u8,
        /// The session the lease is attached to (0: none).
        epoch: u8,
    },
    /// A session renewed: for each token the request listed, whether its lease was renewed.
    Beat {
        /// The session was gone (run out or replaced): nothing was renewed.
        lost: bool,
        /// Per listed token: renewed.
        extended: [bool; SLOTS],
    },
    /// Held by someone else (or, for a period claim, claimed and not started, lease live).
    Held,
    /// The period already ran.
    AlreadyRan,
    /// Renewed.
    Extended,
    /// Marked started.
    Started,
    /// The token does not hold the lease (for extend, start and release).
    NotHeld,
    /// Released.
    Released,
}

/// A request on its way: sent at `sent`, and either still in flight (not applied) or
/// answered (`answer`), or lost (neither).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Exchange {
    /// What was asked.
    pub request: Request,
    /// When the elector sent it (its local deadline is counted from here).
    pub sent: Tick,
    /// Not yet applied by the store.
    pub in_flight: bool,
    /// The store's answer, not yet received.
    pub answer: Option<Answer>,
}

impl Exchange {
    /// True when nothing more will come: the request or its answer was lost.
    pub fn silent(&self) -> bool {
        !self.in_flight && self.answer.is_none()
    }
}

/// What an elector is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Not holding the lock.
    Idle,
    /// Waiting for the answer to an acquisition.
    Acquiring(Token),
    /// Granted a period claim, waiting for the start to be recorded before the action runs.
    Starting(Holding),
    /// The action runs.
    Running(Holding),
}

/// A lease as the elector sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Holding {
    /// The lease's token.
    pub token: Token,
    /// The local deadline: the elector considers the lease valid before it.
    pub deadline: Tick,
    /// When the store granted it (for the properties).
    pub granted: Tick,
    /// When the action started (for `Running`).
    pub since: Tick,
    /// The slot held.
    pub slot: u8,
    /// The lease's fence, which the action's writes carry.
    pub fence: Fence,
    /// Which grant it is (for the properties).
    pub grant: u8,
    /// The action has sent its write to the resource.
    pub wrote: bool,
}

/// A write to the fenced resource on its way: it may land any time later, long after its
/// writer lost the lease (a delayed packet, a paused writer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Write {
    /// The slot whose lease the writer held (fences are compared per slot).
    pub slot: u8,
    /// The writer's fence.
    pub fence: Fence,
    /// Which grant the writer held (for the properties).
    pub grant: u8,
}

/// One elector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Elector {
    /// What it does.
    pub phase: Phase,
    /// Its one request on its way, if any.
    pub exchange: Option<Exchange>,
    /// Its action's write to the fenced resource on its way, if any.
    pub write: Option<Write>,
    /// The start of the period window in which it is done (it ran, or found the period
    /// run): a scheduled elector tries again only in a later window.
    pub done_in: Option<Tick>,
    /// When it last sent an acquisition or a renewal: at most one of each a tick.
    pub sent_at: Option<Tick>,
    /// The process it runs in (0 without sessions).
    pub process: u8,
    /// The slot it asks for, when each slot is a lock of its own (sessions).
    pub lock: Option<u8>,
}

/// A process whose electors share one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Process {
    /// The session it knows of (0: none; it starts one with its next acquisition).
    pub epoch: u8,
    /// Its renewal of the session on its way, if any.
    pub beat: Option<Exchange>,
    /// When it last sent a renewal: at most one a tick.
    pub beat_at: Option<Tick>,
}

/// What the fenced resource accepted last, per slot: the highest fence, and (for the
/// properties) the grant whose write it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Accepted {
    /// The highest fence accepted.
    pub fence: Fence,
    /// The grant of the write accepted last.
    pub grant: u8,
}

/// The whole world.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The real clock.
    pub now: Tick,
    /// The store.
    pub store: Store,
    /// The electors.
    pub electors: Vec<Elector>,
    /// The next token to hand out.
    pub next_token: Token,
    /// How many more requests or answers may be lost.
    pub losses_left: u8,
    /// How many more requests may be duplicated.
    pub duplicates_left: u8,
    /// A duplicated request still on its way to the store; its answer reaches nobody.
    pub stray: Option<Request>,
    /// How many more forced releases an operator may make.
    pub forced_left: u8,
    /// How many more times the store may clean up the lock's idle record.
    pub cleanups_left: u8,
    /// Which of the setup's period lengths the schedule uses now.
    pub period: u8,
    /// When the period length last changed.
    pub changed_at: Tick,
    /// Which of the setup's leases the electors ask for now (0: `Setup::lease`, `n`: the
    /// `n`-th of `Setup::lease_changes`).
    pub lease: u8,
    /// Which of the setup's slot counts the electors use now (as `lease`).
    pub slots: u8,
    /// How many grants the store has made (for the properties; counted only when the setup
    /// models fences).
    pub grants: u8,
    /// The highest fence ever minted per slot, whatever was cleaned up since (for the
    /// properties).
    pub minted: [Fence; SLOTS],
    /// A grant's fence was not above every fence minted before it for its slot.
    pub fence_fell: bool,
    /// What the fenced resource accepted, per slot.
    pub resource: [Option<Accepted>; SLOTS],
    /// The resource accepted a write of a grant after a write of a later grant of its slot.
    pub out_of_order: bool,
    /// When the latest period run started so far was granted.
    pub last_run: Option<Tick>,
    /// Set when a run started in a period that had already run (as the manual defines it).
    pub twice: bool,
    /// A period window `(from, until)` that ended without a run.
    pub missed: Option<(Tick, Tick)>,
    /// The processes (empty without sessions).
    pub processes: Vec<Process>,
    /// Per slot, the token of the last lease an operator forced out (for the properties: its
    /// holder may believe it valid until it hears so).
    pub forced_out: [Option<Token>; SLOTS],
    /// The store granted a slot while a holder of it (not forced out) believed its lease valid.
    pub granted_early: bool,
    /// A renewal answered a lease renewed that the store no longer held for it (forced out,
    /// released, run out, or on a lost session).
    pub renewed_unheld: bool,
    /// A lock was granted over a record whose session had run out while it held two leases
    /// (for the coverage of the session setups).
    pub lost_session_taken_over: bool,
    /// One renewal answered `NotHeld` for a lease forced out and renewed another lease of the
    /// same session (for the coverage of the session setups).
    pub forced_out_beside_a_renewal: bool,
}

impl State {
    /// One line of what matters in this state, for traces: the time, the store's leases and
    /// ledger, the resource, and each elector's phase.
    pub fn summary(&self) -> String {
        let holders: Vec<String> = (0..SLOTS)
            .filter_map(|s| {
                self.store.live(s, self.now).map(|h| {
                    let until = self.store.held_until(s, self.now).unwrap_or(h.expiry);
                    let on = h
                        .session
                        .map_or(String::new(), |on| format!(" on p{}'s session", on.process));
                    format!(
                        "slot {s} held by token {} (fence {}){on} until {until}",
                        h.token, h.fence
                    )
                })
            })
            .collect();
        let holder = if holders.is_empty() {
            "free".to_owned()
        } else {
            holders.join(", ")
        };
        let ledger = self.store.ledger.map_or(String::new(), |r| {
            format!(
                ", ledger: claim by token {} at {} {}",
                r.token,
                r.at,
                if r.started { "started" } else { "not started" }
            )
        });
        let resource = self.resource[0].map_or(String::new(), |a| {
            format!(", resource: fence {} (grant {})", a.fence, a.grant)
        });
        let sessions: String = self
            .store
            .sessions
            .iter()
            .enumerate()
            .filter(|(_, s)| s.epoch > 0)
            .map(|(p, s)| {
                let revoked: Vec<String> = s
                    .revoked
                    .iter()
                    .flatten()
                    .map(|t| format!(" revoked {t}"))
                    .collect();
                format!(
                    ", session of p{p}: #{} until {}{}",
                    s.epoch,
                    s.expiry,
                    revoked.concat()
                )
            })
            .collect();
        let electors: Vec<String> = self
            .electors
            .iter()
            .map(|e| {
                let phase = match e.phase {
                    Phase::Idle => "idle".to_owned(),
                    Phase::Acquiring(t) => format!("asking (token {t})"),
                    Phase::Starting(h) => {
                        format!("starting (token {}, valid until {})", h.token, h.deadline)
                    }
                    Phase::Running(h) => format!(
                        "running (token {}, fence {}, valid until {})",
                        h.token, h.fence, h.deadline
                    ),
                };
                let phase = if self.processes.is_empty() {
                    phase
                } else if usize::from(e.process) < self.processes.len() {
                    format!("p{} {phase}", e.process)
                } else {
                    format!("(own lease) {phase}")
                };
                match e.write {
                    Some(w) => format!("{phase} [write of fence {} on its way]", w.fence),
                    None => phase,
                }
            })
            .collect();
        format!(
            "t={}: lock {holder}{ledger}{resource}{sessions}; electors: {}",
            self.now,
            electors.join(", ")
        )
    }

    /// Calls `f` on every token the state holds, replacing each by what `f` returns.
    pub(crate) fn map_tokens(&mut self, mut f: impl FnMut(Token) -> Token) {
        for h in self.store.holders.iter_mut().flatten() {
            h.token = f(h.token);
        }
        if let Some(r) = self.store.ledger.as_mut() {
            r.token = f(r.token);
        }
        for session in &mut self.store.sessions {
            for a in session.leases.iter_mut().flatten() {
                a.token = f(a.token);
            }
            for t in session.revoked.iter_mut().flatten() {
                *t = f(*t);
            }
        }
        fn map_request(request: Request, f: &mut impl FnMut(Token) -> Token) -> Request {
            match request {
                Request::Acquire {
                    token,
                    period,
                    offset,
                    ttl,
                    slots,
                    lock,
                    session,
                } => Request::Acquire {
                    token: f(token),
                    period,
                    offset,
                    ttl,
                    slots,
                    lock,
                    session,
                },
                Request::Beat {
                    process,
                    epoch,
                    ttl,
                    tokens,
                } => Request::Beat {
                    process,
                    epoch,
                    ttl,
                    tokens: tokens.map(|t| t.map(&mut *f)),
                },
                Request::Extend { token, ttl } => Request::Extend {
                    token: f(token),
                    ttl,
                },
                Request::Start(t) => Request::Start(f(t)),
                Request::Release(t) => Request::Release(f(t)),
            }
        }
        for e in &mut self.electors {
            match &mut e.phase {
                Phase::Idle => {}
                Phase::Acquiring(t) => *t = f(*t),
                Phase::Starting(h) | Phase::Running(h) => h.token = f(h.token),
            }
            if let Some(x) = e.exchange.as_mut() {
                x.request = map_request(x.request, &mut f);
            }
        }
        if let Some(stray) = self.stray {
            self.stray = Some(map_request(stray, &mut f));
        }
        for p in &mut self.processes {
            if let Some(x) = p.beat.as_mut() {
                x.request = map_request(x.request, &mut f);
            }
        }
        for t in self.forced_out.iter_mut().flatten() {
            *t = f(*t);
        }
    }

    /// Applies `f` to every grant number the state holds (the store's leases, answers on their
    /// way, the electors' leases and writes, the resource).
    fn map_grants(&mut self, mut f: impl FnMut(u8) -> u8) {
        for h in self.store.holders.iter_mut().flatten() {
            h.grant = f(h.grant);
        }
        for e in &mut self.electors {
            if let Phase::Starting(h) | Phase::Running(h) = &mut e.phase {
                h.grant = f(h.grant);
            }
            if let Some(Exchange {
                answer: Some(Answer::Granted { grant, .. }),
                ..
            }) = e.exchange.as_mut()
            {
                *grant = f(*grant);
            }
            if let Some(w) = e.write.as_mut() {
                w.grant = f(w.grant);
            }
        }
        for a in self.resource.iter_mut().flatten() {
            a.grant = f(a.grant);
        }
    }

    /// Renumbers the grants the state still holds `1..=n` in their order (0, where fences are
    /// not modelled, stays 0): only their order
    /// matters to the properties, so states that differ in the numbers alone are one.
    fn rank_grants(&mut self) {
        let mut held = Vec::new();
        self.map_grants(|g| {
            if g > 0 {
                held.push(g);
            }
            g
        });
        held.sort_unstable();
        held.dedup();
        self.map_grants(|g| match held.binary_search(&g) {
            Ok(at) => u8::try_from(at + 1).unwrap_or(u8::MAX),
            Err(_) => g, // 0: no fences modelled
        });
        self.grants = u8::try_from(held.len()).unwrap_or(u8::MAX);
    }

    /// One representative of the states that differ only in the order of the electors and the
    /// names of the tokens (neither matters to the protocol), or in the numbers of the grants
    /// beyond their order: the checker then explores each once.
    pub(crate) fn canonical(mut self) -> Self {
        self.rank_grants();
        for _ in 0..2 {
            let mut seen: Vec<Token> = Vec::new();
            self.map_tokens(|t| {
                let at = seen.iter().position(|s| *s == t).unwrap_or_else(|| {
                    seen.push(t);
                    seen.len() - 1
                });
                u8::try_from(at + 1).unwrap_or(u8::MAX)
            });
            self.next_token = u8::try_from(seen.len() + 1).unwrap_or(u8::MAX);
            self.electors.sort_unstable();
            for p in &mut self.processes {
                if let Some(x) = p.beat.as_mut() {
                    sort_listed(x);
                }
            }
        }
        self
    }
}

/// Puts the leases a renewal lists (and its answer for each) in the order of their tokens, the
/// empty places last: the order they were listed in does not matter.
fn sort_listed(x: &mut Exchange) {
    let Request::Beat { tokens, .. } = &mut x.request else {
        return;
    };
    let mut listed: Vec<(Option<Token>, bool)> = match x.answer {
        Some(Answer::Beat { extended, .. }) => tokens.iter().copied().zip(extended).collect(),
        _ => tokens.iter().map(|&t| (t, false)).collect(),
    };
    listed.sort_unstable_by_key(|&(t, _)| (t.is_none(), t));
    for (slot, (t, _)) in tokens.iter_mut().zip(&listed) {
        *slot = *t;
    }
    if let Some(Answer::Beat { extended, .. }) = x.answer.as_mut() {
        for (slot, (_, kept)) in extended.iter_mut().zip(&listed) {
            *slot = *kept;
        }
    }
}
