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
}

impl Store {
    /// The live lease of slot `slot` at `now`.
    pub fn live(&self, slot: usize, now: Tick) -> Option<Held> {
        self.holders
            .get(slot)
            .copied()
            .flatten()
            .filter(|h| h.expiry > now)
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
            Self::Acquire { ttl, .. } | Self::Extend { ttl, .. } => Some(ttl),
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
}

impl State {
    /// One line of what matters in this state, for traces: the time, the store's leases and
    /// ledger, the resource, and each elector's phase.
    pub fn summary(&self) -> String {
        let holders: Vec<String> = (0..SLOTS)
            .filter_map(|s| {
                self.store.live(s, self.now).map(|h| {
                    format!(
                        "slot {s} held by token {} (fence {}) until {}",
                        h.token, h.fence, h.expiry
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
                match e.write {
                    Some(w) => format!("{phase} [write of fence {} on its way]", w.fence),
                    None => phase,
                }
            })
            .collect();
        format!(
            "t={}: lock {holder}{ledger}{resource}; electors: {}",
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
        fn map_request(request: Request, f: &mut impl FnMut(Token) -> Token) -> Request {
            match request {
                Request::Acquire {
                    token,
                    period,
                    offset,
                    ttl,
                    slots,
                } => Request::Acquire {
                    token: f(token),
                    period,
                    offset,
                    ttl,
                    slots,
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
        }
        self
    }
}
