//! The period ledger as text, for stores that keep it as one value (etcd, NATS, ZooKeeper): one
//! format, written and read in one place.

use crate::store::lease::Token;
use crate::store::period::{
    ClaimVerdict, PeriodRecord, PeriodStart, PeriodWindow, from_epoch_ms, judge_claim,
};

/// The version tag that begins a ledger value.
const LEDGER_TAG: &str = "leasehold-ledger/1";
/// The first word of the value's second line (the claim's window, token and state).
const CLAIM_TAG: &str = "claim";

/// A lock's latest period claim, as a text value of two lines:
///
/// ```text
/// leasehold-ledger/1 <period> <at ms> <owner>
/// claim <from ms> <until ms> <token> <started 0|1> [<ran at ms>]
/// ```
///
/// The first line is the whole value earlier versions wrote and read (they judge claims by that
/// period id and read the rest of the value as the owner, which only their messages show): it
/// is kept so that a fleet in the middle of an upgrade still refuses a period the new version
/// ran. Owners hold no control characters ([`validate_node_id`](crate::options::validate_node_id)), so
/// the line break is unambiguous. A value without the second line reads as a claim that started
/// (a claim was a run then), its window unknown. The last field, when the latest claim that
/// started was granted, is written once a claim of the lock has started; versions that wrote
/// five fields did not keep it (they read a sixth field as nothing).
///
/// ```
/// use leasehold::store::{LedgerText, Period, Token};
/// let window = Period::every(std::time::Duration::from_secs(60))?.window_at_ms(90_000);
/// let mut claim = LedgerText::claim(window, 90_000, "host-a", Token::random(), None);
/// assert_eq!(LedgerText::decode(&claim.encode()), Some(claim.clone()));
/// claim.start();
/// assert_eq!(LedgerText::decode(&claim.encode()).and_then(|c| c.ran_at_ms), Some(90_000));
/// let next = LedgerText::claim(window, 95_000, "host-b", Token::random(), claim.last_run_ms());
/// assert_eq!(LedgerText::decode(&next.encode()).and_then(|c| c.ran_at_ms), Some(90_000));
/// let old = LedgerText::decode("leasehold-ledger/1 1 90000 host-a").expect("an older value");
/// assert!(old.started && old.window.is_none());
/// # Ok::<(), leasehold::error::PeriodError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerText {
    /// The period id claimed, under the claim's own length and offset.
    pub period: i64,
    /// When the claim was granted, ms since the epoch (the store's clock).
    pub at_ms: i64,
    /// The owner it was granted to.
    pub by: String,
    /// The window claimed, `[from, until)` in ms; `None` in a value of an older version.
    pub window: Option<(i64, i64)>,
    /// The token the claim was granted to; `None` in a value of an older version.
    pub token: Option<Token>,
    /// True once the claim's action started.
    pub started: bool,
    /// When the latest claim that started was granted, ms since the epoch (this claim's
    /// `at_ms` once it started); `None` when none is known to have started.
    pub ran_at_ms: Option<i64>,
}

impl LedgerText {
    /// A claim of `window` granted at `at_ms` to `owner` with `token`, not started; `ran_at_ms`
    /// is the previous record's [`last_run_ms`](Self::last_run_ms), which the new claim keeps.
    pub fn claim(
        window: PeriodWindow,
        at_ms: i64,
        owner: &str,
        token: Token,
        ran_at_ms: Option<i64>,
    ) -> Self {
        Self {
            period: window.id,
            at_ms,
            by: owner.to_owned(),
            window: Some((window.from_ms, window.until_ms)),
            token: Some(token),
            started: false,
            ran_at_ms,
        }
    }

    /// Marks the claim's action started: it is now the lock's latest run.
    pub fn start(&mut self) {
        self.started = true;
        self.ran_at_ms = Some(self.at_ms);
    }

    /// When the latest run was granted: this claim's grant once it started, else
    /// [`ran_at_ms`](Self::ran_at_ms).
    pub fn last_run_ms(&self) -> Option<i64> {
        self.started.then_some(self.at_ms).max(self.ran_at_ms)
    }

    /// The ledger's verdict on a claim of the window starting at `window_from_ms`
    /// ([`judge_claim`](crate::store::judge_claim)), with `lock_live` whether slot 0 holds a live
    /// lease.
    pub fn judge(record: Option<&Self>, window_from_ms: i64, lock_live: bool) -> ClaimVerdict {
        judge_claim(
            record.map(|r| (r.at_ms, r.started)),
            record.and_then(|r| r.ran_at_ms),
            window_from_ms,
            lock_live,
        )
    }

    /// The value (see the type).
    pub fn encode(&self) -> String {
        let mut text = format!("{LEDGER_TAG} {} {} {}", self.period, self.at_ms, self.by);
        if let (Some((from, until)), Some(token)) = (self.window, self.token) {
            text.push_str(&format!(
                "\n{CLAIM_TAG} {from} {until} {} {}",
                token.to_hex(),
                u8::from(self.started)
            ));
            if let Some(ran) = self.ran_at_ms {
                text.push_str(&format!(" {ran}"));
            }
        }
        text
    }

    /// A value, or `None` for text this format did not write.
    pub fn decode(text: &str) -> Option<Self> {
        let (first, claim) = match text.split_once('\n') {
            Some((first, claim)) => (first, Some(claim)),
            None => (text, None),
        };
        let mut f = first.splitn(4, ' ');
        if f.next()? != LEDGER_TAG {
            return None;
        }
        let mut ledger = Self {
            period: f.next()?.parse().ok()?,
            at_ms: f.next()?.parse().ok()?,
            by: f.next()?.to_owned(),
            window: None,
            token: None,
            started: true,
            ran_at_ms: None,
        };
        if let Some(claim) = claim {
            let mut f = claim.split(' ');
            if f.next()? != CLAIM_TAG {
                return None;
            }
            ledger.window = Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?));
            ledger.token = Some(Token::from_hex(f.next()?)?);
            ledger.started = f.next()? == "1";
            ledger.ran_at_ms = match f.next() {
                Some(ran) => Some(ran.parse().ok()?),
                None => None,
            };
        }
        Some(ledger)
    }

    /// The record as the core shows it (an older value's window is its grant time).
    pub fn record(&self) -> PeriodRecord {
        let (from, until) = self.window.unwrap_or((self.at_ms, self.at_ms));
        PeriodRecord {
            period: self.period,
            from: from_epoch_ms(from),
            until: from_epoch_ms(until),
            at: from_epoch_ms(self.at_ms),
            by: self.by.clone(),
            started: self.started,
            ran_at: self.last_run_ms().map(from_epoch_ms),
        }
    }
}
/// A ledger value as a store read it, with the store's version of it — a key's revision, a
/// message's sequence — which the compare-and-swap that replaces it expects.
///
/// ```
/// use leasehold::store::{LedgerText, Period, StoredLedger, Token};
/// let window = Period::every(std::time::Duration::from_secs(60))?.window_at_ms(90_000);
/// let claim = StoredLedger::claim(window, 90_000, "host-a", Token::random(), None, 0_u64);
/// let read = StoredLedger::decode(claim.text.encode().as_bytes(), 7_u64).expect("a ledger");
/// assert_eq!((read.version, read.text.started), (7, false));
/// let started = read.started();
/// assert_eq!((started.version, started.text.ran_at_ms), (7, Some(90_000)));
/// # Ok::<(), leasehold::error::PeriodError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLedger<V> {
    /// The ledger.
    pub text: LedgerText,
    /// The store's version of the value read.
    pub version: V,
}

impl<V: Copy> StoredLedger<V> {
    /// The ledger of a claim of `window` granted at `at_ms` to `owner` with `token`, not
    /// started, keeping the latest run of `previous` (the ledger it replaces); `version` is the
    /// one it will be written at, if known.
    pub fn claim(
        window: PeriodWindow,
        at_ms: u64,
        owner: &str,
        token: Token,
        previous: Option<&Self>,
        version: V,
    ) -> Self {
        let at = i64::try_from(at_ms).unwrap_or(i64::MAX);
        let ran = previous.and_then(|l| l.text.last_run_ms());
        Self {
            text: LedgerText::claim(window, at, owner, token, ran),
            version,
        }
    }

    /// This claim, marked started (at the same version: the write that marks it is to expect
    /// it).
    #[must_use]
    pub fn started(&self) -> Self {
        let mut text = self.text.clone();
        text.start();
        Self {
            text,
            version: self.version,
        }
    }

    /// The ledger in a value read at `version`; `None` for anything that is not a ledger (a
    /// value without the second line, an older version's, reads as a claim that started, its
    /// window unknown).
    pub fn decode(value: &[u8], version: V) -> Option<Self> {
        let text = LedgerText::decode(std::str::from_utf8(value).ok()?)?;
        Some(Self { text, version })
    }

    /// The record the core reports.
    pub fn record(&self) -> PeriodRecord {
        self.text.record()
    }

    /// The ledger whose claim a start by `token` marks started, or the answer without a write:
    /// `NotHeld` when there is no ledger or its claim is another token's, `Started` when the
    /// claim already started (a start is idempotent for its token). The caller checks first
    /// that the token's lease holds slot 0.
    ///
    /// ```
    /// use leasehold::store::{Period, PeriodStart, StoredLedger, Token};
    /// let window = Period::every(std::time::Duration::from_secs(60))?.window_at_ms(0);
    /// let token = Token::random();
    /// let claim = StoredLedger::claim(window, 0, "host-a", token, None, 1_u64);
    /// assert!(StoredLedger::to_start(Some(&claim), token).is_ok());
    /// assert_eq!(StoredLedger::to_start(Some(&claim), Token::random()).err(), Some(PeriodStart::NotHeld));
    /// assert_eq!(StoredLedger::to_start(Some(&claim.started()), token).err(), Some(PeriodStart::Started));
    /// assert_eq!(StoredLedger::<u64>::to_start(None, token).err(), Some(PeriodStart::NotHeld));
    /// # Ok::<(), leasehold::error::PeriodError>(())
    /// ```
    pub fn to_start(ledger: Option<&Self>, token: Token) -> Result<&Self, PeriodStart> {
        match ledger.filter(|l| l.text.token == Some(token)) {
            None => Err(PeriodStart::NotHeld),
            Some(l) if l.text.started => Err(PeriodStart::Started),
            Some(l) => Ok(l),
        }
    }
}
