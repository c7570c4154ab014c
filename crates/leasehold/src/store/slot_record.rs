//! A lease as a store keeps it in one slot: the record, the rules that judge it (whose it is,
//! whether it is live, which slot is granted next), and the tagged text that stores keeping it
//! as one value write.
//!
//! The etcd, NATS and ZooKeeper stores keep a lease as a text value `leasehold/1 <fields…>
//! <owner>` — the version tag, the store's own fields separated by spaces, and the owner last,
//! since it may contain spaces. [`encode_record`] writes such a value and [`RecordFields`]
//! reads it back, field by field; [`SlotRecord`] is what every lease record holds, whatever
//! else the store keeps beside it (a revision, a sequence, an etcd lease id).
//!
//! ```
//! use leasehold::store::{RecordFields, Token, encode_record};
//!
//! let token = Token::random();
//! let value = encode_record(&[&token.to_hex(), &1_500, &0], "host a (pid 7)");
//! let mut fields = RecordFields::parse(&value, 4).expect("a value of this version");
//! assert_eq!(fields.token(), Some(token));
//! assert_eq!(fields.number::<u64>(), Some(1_500));
//! assert_eq!(fields.flag(), Some(false));
//! assert_eq!(fields.text(), Some("host a (pid 7)"));
//! assert!(RecordFields::parse("something else", 4).is_none());
//! ```

use std::fmt::Display;
use std::str::{FromStr, SplitN};

use crate::name::LockName;
use crate::store::lease::{AcquireRequest, Holder, Lease, Token};
use crate::store::millis::time_at_ms;

/// The version tag at the start of every lease value a store writes with [`encode_record`].
pub const RECORD_TAG: &str = "leasehold/1";

/// The value `leasehold/1 <fields…> <owner>`: the tag, each field's text, and the owner last (it
/// may contain spaces, so nothing may follow it). Write flags as `u8::from(flag)`, which
/// [`RecordFields::flag`] reads back.
///
/// ```
/// let value = leasehold::store::encode_record(&[&7, &"-"], "node a");
/// assert_eq!(value, "leasehold/1 7 - node a");
/// ```
pub fn encode_record(fields: &[&dyn Display], owner: &str) -> String {
    use std::fmt::Write as _;
    // Written in place, in one buffer sized for a typical record (a token alone is 32 hex
    // digits): every acquisition and release of most stores encodes one.
    let mut value = String::with_capacity(RECORD_TAG.len() + 96 + owner.len());
    value.push_str(RECORD_TAG);
    for field in fields {
        // Writing into a String cannot fail.
        let _ = write!(value, " {field}");
    }
    value.push(' ');
    value.push_str(owner);
    value
}

/// The fields of a value [`encode_record`] wrote, read in order; each reader answers `None` for
/// a field that is missing or does not parse, so a decoder reads with `?` and answers `None` for
/// anything this store did not write.
#[derive(Debug, Clone)]
pub struct RecordFields<'a>(SplitN<'a, char>);

impl<'a> RecordFields<'a> {
    /// The fields of `text` after the tag — `fields` of them, the owner included, the last
    /// taking the rest of the text; `None` when `text` does not start with [`RECORD_TAG`].
    ///
    /// ```
    /// let mut f = leasehold::store::RecordFields::parse("leasehold/1 3 a b c", 2).unwrap();
    /// assert_eq!((f.text(), f.text(), f.text()), (Some("3"), Some("a b c"), None));
    /// ```
    pub fn parse(text: &'a str, fields: usize) -> Option<Self> {
        let mut split = text.splitn(fields.saturating_add(1), ' ');
        (split.next()? == RECORD_TAG).then_some(Self(split))
    }

    /// The next field's text.
    pub fn text(&mut self) -> Option<&'a str> {
        self.0.next()
    }

    /// The next field as a number (or anything else read with `FromStr`).
    pub fn number<T: FromStr>(&mut self) -> Option<T> {
        self.text()?.parse().ok()
    }

    /// The next field as a token (hex).
    pub fn token(&mut self) -> Option<Token> {
        Token::from_hex(self.text()?)
    }

    /// The next field as a flag: `1` is true, anything else false.
    pub fn flag(&mut self) -> Option<bool> {
        Some(self.text()? == "1")
    }
}

/// The lowest slot in `0..slots` (at least slot 0) that `taken` does not claim: the slot a grant
/// takes, by the contract's rule of the lowest free slot.
///
/// ```
/// use leasehold::store::lowest_free_slot;
/// assert_eq!(lowest_free_slot(3, |s| s == 0), Some(1));
/// assert_eq!(lowest_free_slot(0, |_| false), Some(0));
/// assert_eq!(lowest_free_slot(2, |_| true), None);
/// ```
pub fn lowest_free_slot(slots: u32, taken: impl Fn(u32) -> bool) -> Option<u32> {
    (0..slots.max(1)).find(|&slot| !taken(slot))
}

/// The holders among `records` whose slot is below `slots`, in the order given: what `state`
/// reports of the live records a store read.
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::{AcquireRequest, LockName, SlotRecord, Token, holders_below};
/// let req = AcquireRequest::new(LockName::new("a")?, 3, "n", Token::random(), Duration::from_secs(1));
/// let records = [SlotRecord::granted(&req, 0, 0), SlotRecord::granted(&req, 2, 0)];
/// assert_eq!(holders_below(&records, 2).len(), 1);
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
pub fn holders_below<'a>(
    records: impl IntoIterator<Item = &'a SlotRecord>,
    slots: u32,
) -> Vec<Holder> {
    records
        .into_iter()
        .filter(|r| r.slot < slots)
        .map(SlotRecord::holder)
        .collect()
}

/// What every lease record keeps, in the store's clock (ms since the Unix epoch): the slot, whose
/// grant it is, its fence, when it began and ends, and whether it was released with a linger
/// (still held until it ends, but no longer extendable).
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::{AcquireRequest, LockName, SlotRecord, Token};
///
/// let lock = LockName::new("report")?;
/// let req = AcquireRequest::new(lock.clone(), 1, "node a", Token::random(), Duration::from_secs(10));
/// let mut record = SlotRecord::granted(&req, 0, 1_000);
/// record.fence = 41;
/// assert_eq!(record.expires_ms, 11_000);
/// assert!(record.answers(&req, 5_000) && !record.answers(&req, 11_000));
/// let lease = record.lease(&lock);
/// assert!(record.is(&lease) && record.live_at(10_999));
/// assert_eq!(record.holder().fence, 41);
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRecord {
    /// The slot.
    pub slot: u32,
    /// The token of the grant.
    pub token: Token,
    /// The owner it was granted to.
    pub owner: String,
    /// The grant's fence.
    pub fence: u64,
    /// When it was granted, ms.
    pub acquired_ms: u64,
    /// When it ends, ms.
    pub expires_ms: u64,
    /// Released with a linger: held until it ends, no longer extendable.
    pub released: bool,
}

impl SlotRecord {
    /// The record of a grant of `slot` to `req` at `acquired_ms`, ending `req.ttl` (rounded up to
    /// whole milliseconds) later, its fence `0` until the store knows it.
    pub fn granted(req: &AcquireRequest, slot: u32, acquired_ms: u64) -> Self {
        Self {
            slot,
            token: req.token,
            owner: req.owner.to_string(),
            fence: 0,
            acquired_ms,
            expires_ms: acquired_ms.saturating_add(crate::store::ceil_millis(req.ttl)),
            released: false,
        }
    }

    /// True if `lease` is this grant (token and fence), not released.
    pub fn is(&self, lease: &Lease) -> bool {
        self.token == lease.token && self.fence == lease.fence && !self.released
    }

    /// True until the lease ends at `now_ms`.
    pub fn live_at(&self, now_ms: u64) -> bool {
        now_ms < self.expires_ms
    }

    /// True if this is `req`'s own live grant at `now_ms` within its slots: a retried request
    /// that was applied, answered with this lease rather than another slot.
    pub fn answers(&self, req: &AcquireRequest, now_ms: u64) -> bool {
        self.token == req.token
            && !self.released
            && self.live_at(now_ms)
            && self.slot < req.slots.max(1)
    }

    /// This grant as a lease of `lock` (without a period).
    pub fn lease(&self, lock: &LockName) -> Lease {
        Lease {
            lock: lock.clone(),
            slot: self.slot,
            owner: self.owner.clone(),
            token: self.token,
            fence: self.fence,
            acquired_at: time_at_ms(self.acquired_ms),
            expires_at: time_at_ms(self.expires_ms),
            period: None,
        }
    }

    /// This grant as a holder.
    pub fn holder(&self) -> Holder {
        Holder {
            slot: self.slot,
            owner: self.owner.clone(),
            fence: self.fence,
            acquired_at: time_at_ms(self.acquired_ms),
            expires_at: time_at_ms(self.expires_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_with_spaces_in_the_owner() {
        let token = Token::random();
        let value = encode_record(&[&token.to_hex(), &u8::from(true), &-3], "a b  c");
        let mut f = RecordFields::parse(&value, 4).unwrap_or_else(|| panic!("{value}"));
        assert_eq!(f.token(), Some(token));
        assert_eq!(f.flag(), Some(true));
        assert_eq!(f.number::<i64>(), Some(-3));
        assert_eq!(f.text(), Some("a b  c"));
        assert_eq!(f.text(), None);
        assert!(RecordFields::parse("leasehold/2 x", 1).is_none());
        let mut short = RecordFields::parse("leasehold/1 x", 3).unwrap_or_else(|| panic!());
        assert_eq!((short.number::<u32>(), short.text()), (None, None));
    }
}
