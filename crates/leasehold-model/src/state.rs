//! The state of the modelled world: the real clock, the store, the electors and their messages,
//! and what has run.

/// A moment or a duration on the real clock, in ticks.
pub type Tick = u8;

/// A lease's token: unique per acquisition attempt (a retry of the same attempt keeps it).
pub type Token = u8;

/// The store: one lock with one slot and its period ledger. It is linearizable and reads the
/// real clock (the store's clock is the reference). Fences are not modelled: that each grant's
/// fence is above every earlier one is a property of each store, checked by the conformance
/// suite against the real servers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Store {
    /// The lease, if any; free once `expiry` is not after now.
    pub holder: Option<Held>,
    /// The ledger's latest claim.
    pub ledger: Option<Record>,
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
    /// Acquire the lock; `period` is the period length claimed (0: a plain acquisition).
    Acquire {
        /// The attempt's token.
        token: Token,
        /// The period length claimed, 0 for none.
        period: u8,
        /// The offset of the period claimed.
        offset: u8,
    },
    /// Renew the lease.
    Extend(Token),
    /// Mark the period claim made with this token started.
    Start(Token),
    /// Release the lease.
    Release(Token),
}

/// The store's answer to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// Granted (or, for a retried request, granted before), at `at` (the real time, kept for
    /// the properties; the elector does not use it).
    Granted {
        /// When the store granted it.
        at: Tick,
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
}

/// One elector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Elector {
    /// What it does.
    pub phase: Phase,
    /// Its one request on its way, if any.
    pub exchange: Option<Exchange>,
    /// The start of the period window in which it is done (it ran, or found the period
    /// run): a scheduled elector tries again only in a later window.
    pub done_in: Option<Tick>,
    /// When it last sent an acquisition or a renewal: at most one of each a tick.
    pub sent_at: Option<Tick>,
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
    /// Which of the setup's period lengths the schedule uses now.
    pub period: u8,
    /// When the period length last changed.
    pub changed_at: Tick,
    /// When the latest period run started so far was granted.
    pub last_run: Option<Tick>,
    /// Set when a run started in a period that had already run (as the manual defines it).
    pub twice: bool,
    /// A period window `(from, until)` that ended without a run.
    pub missed: Option<(Tick, Tick)>,
}

impl State {
    /// One line of what matters in this state, for traces: the time, the store's lease and
    /// ledger, and each elector's phase.
    pub fn summary(&self) -> String {
        let holder = self
            .store
            .holder
            .filter(|h| h.expiry > self.now)
            .map_or("free".to_owned(), |h| {
                format!("held by token {} until {}", h.token, h.expiry)
            });
        let ledger = self.store.ledger.map_or(String::new(), |r| {
            format!(
                ", ledger: claim by token {} at {} {}",
                r.token,
                r.at,
                if r.started { "started" } else { "not started" }
            )
        });
        let electors: Vec<String> = self
            .electors
            .iter()
            .map(|e| match e.phase {
                Phase::Idle => "idle".to_owned(),
                Phase::Acquiring(t) => format!("asking (token {t})"),
                Phase::Starting(h) => {
                    format!("starting (token {}, valid until {})", h.token, h.deadline)
                }
                Phase::Running(h) => {
                    format!("running (token {}, valid until {})", h.token, h.deadline)
                }
            })
            .collect();
        format!(
            "t={}: lock {holder}{ledger}; electors: {}",
            self.now,
            electors.join(", ")
        )
    }

    /// Calls `f` on every token the state holds, replacing each by what `f` returns.
    pub(crate) fn map_tokens(&mut self, mut f: impl FnMut(Token) -> Token) {
        if let Some(h) = self.store.holder.as_mut() {
            h.token = f(h.token);
        }
        if let Some(r) = self.store.ledger.as_mut() {
            r.token = f(r.token);
        }
        for e in &mut self.electors {
            match &mut e.phase {
                Phase::Idle => {}
                Phase::Acquiring(t) => *t = f(*t),
                Phase::Starting(h) | Phase::Running(h) => h.token = f(h.token),
            }
            if let Some(x) = e.exchange.as_mut() {
                x.request = match x.request {
                    Request::Acquire {
                        token,
                        period,
                        offset,
                    } => Request::Acquire {
                        token: f(token),
                        period,
                        offset,
                    },
                    Request::Extend(t) => Request::Extend(f(t)),
                    Request::Start(t) => Request::Start(f(t)),
                    Request::Release(t) => Request::Release(f(t)),
                };
            }
        }
    }

    /// One representative of the states that differ only in the order of the electors and the
    /// names of the tokens (neither matters to the protocol): the checker then explores each
    /// once.
    pub(crate) fn canonical(mut self) -> Self {
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
        }
        self
    }
}
