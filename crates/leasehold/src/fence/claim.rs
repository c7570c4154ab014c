//! `FenceClaim`: who writes with which fence, and its one text form (the HTTP header's value).

use std::fmt;
use std::str::FromStr;

use crate::hold::guard::LeaderContext;
use crate::name::{LockName, NameError};
use crate::store::lease::Lease;

/// The HTTP header that carries a [`FenceClaim`]: `Leasehold-Fence` (header names are
/// case-insensitive; this is the lowercase form HTTP/2 sends).
pub const FENCE_HEADER: &str = "leasehold-fence";

/// The longest claim text [`FenceClaim::from_str`] reads, in bytes: enough for the longest lock
/// name and every field, short enough that a hostile header costs nothing to refuse.
const MAX_CLAIM_TEXT: usize = 512;

/// A write's credentials as a resource sees them: the lock and slot it is written under, the
/// holder's fence, and a tag of the holder's token.
///
/// The text form (the value of the [`FENCE_HEADER`] header) is
/// `lock=<name>; slot=<n>; fence=<n>; token-tag=<8 hex digits>`. Fields may come in any order;
/// `slot` defaults to 0 and `token-tag` is optional. The token tag is the token's first 32 bits,
/// the same abbreviation logs show: it tells two acquisitions apart in a resource's logs, but the
/// token itself (the capability to extend or release the lease) never leaves the process.
///
/// ```
/// use leasehold::fence::FenceClaim;
///
/// let claim: FenceClaim = "lock=nightly-report; fence=42".parse()?;
/// assert_eq!((claim.lock.as_str(), claim.slot, claim.fence), ("nightly-report", 0, 42));
/// assert_eq!(claim.to_string(), "lock=nightly-report; slot=0; fence=42");
/// assert!("lock=nightly-report; fence=-1".parse::<FenceClaim>().is_err());
/// # Ok::<(), leasehold::fence::ClaimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FenceClaim {
    /// The lock the writer holds.
    pub lock: LockName,
    /// The slot of the lock (0 for a single-leader lock).
    pub slot: u32,
    /// The writer's fence.
    pub fence: u64,
    /// The first 32 bits of the writer's token, when known.
    pub token_tag: Option<u32>,
}

/// Why a claim text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClaimError {
    /// The text was longer than the 512 bytes a claim can need.
    #[error("fence claim is {len} bytes long; at most 512 are allowed")]
    TooLong {
        /// The text's length in bytes.
        len: usize,
    },
    /// A required field was missing.
    #[error(
        "fence claim lacks `{field}` (expected `lock=<name>; slot=<n>; fence=<n>`, slot optional)"
    )]
    Missing {
        /// The missing field.
        field: &'static str,
    },
    /// A field appeared twice.
    #[error("fence claim names `{field}` twice")]
    Duplicate {
        /// The repeated field.
        field: String,
    },
    /// A part was not `key=value`, or named an unknown field.
    #[error(
        "fence claim part {part:?} is not one of lock=<name>, slot=<n>, fence=<n>, token-tag=<8 hex digits>"
    )]
    BadPart {
        /// The part (at most its first 64 characters).
        part: String,
    },
    /// A number did not parse.
    #[error("fence claim field `{field}` is {value:?}; expected {expected}")]
    BadValue {
        /// The field.
        field: &'static str,
        /// The value (at most its first 64 characters).
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// The lock name was not a valid lock name.
    #[error("fence claim's lock: {0}")]
    Lock(#[from] NameError),
}

impl FenceClaim {
    /// The claim of a held lease: its lock, slot, fence and token tag.
    pub fn of(ctx: &LeaderContext) -> Self {
        Self::of_lease(&ctx.lease())
    }

    /// The claim of `lease`.
    pub fn of_lease(lease: &Lease) -> Self {
        Self {
            lock: lease.lock.clone(),
            slot: lease.slot,
            fence: lease.fence,
            token_tag: Some((lease.token.as_u128() >> 96) as u32),
        }
    }

    /// A claim with no token tag (for a writer that only knows lock, slot and fence, such as a
    /// shell script given `$LEASEHOLD_LOCK`, `$LEASEHOLD_SLOT` and `$LEASEHOLD_FENCE`).
    pub fn new(lock: LockName, slot: u32, fence: u64) -> Self {
        Self {
            lock,
            slot,
            fence,
            token_tag: None,
        }
    }
}

impl fmt::Display for FenceClaim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lock={}; slot={}; fence={}",
            self.lock, self.slot, self.fence
        )?;
        if let Some(tag) = self.token_tag {
            write!(f, "; token-tag={tag:08x}")?;
        }
        Ok(())
    }
}

fn short(text: &str) -> String {
    text.chars().take(64).collect()
}

impl FromStr for FenceClaim {
    type Err = ClaimError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.len() > MAX_CLAIM_TEXT {
            return Err(ClaimError::TooLong { len: text.len() });
        }
        let (mut lock, mut slot, mut fence, mut tag) = (None, None, None, None);
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(ClaimError::BadPart { part: short(part) });
            };
            let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
            let seen = match key.as_str() {
                "lock" => lock.replace(LockName::new(value)?).is_some(),
                "slot" => slot
                    .replace(number(value, "slot", "an integer 0-4294967295")?)
                    .is_some(),
                "fence" => fence
                    .replace(number(value, "fence", "an integer 0-18446744073709551615")?)
                    .is_some(),
                "token-tag" => tag.replace(token_tag(value)?).is_some(),
                _ => return Err(ClaimError::BadPart { part: short(part) }),
            };
            if seen {
                return Err(ClaimError::Duplicate { field: key });
            }
        }
        Ok(Self {
            lock: lock.ok_or(ClaimError::Missing { field: "lock" })?,
            slot: slot.unwrap_or(0),
            fence: fence.ok_or(ClaimError::Missing { field: "fence" })?,
            token_tag: tag,
        })
    }
}

fn number<T: FromStr>(
    value: &str,
    field: &'static str,
    expected: &'static str,
) -> Result<T, ClaimError> {
    // Digits only: `+7`, ` 7` or `0x7` are not fences.
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    digits
        .then(|| value.parse().ok())
        .flatten()
        .ok_or_else(|| ClaimError::BadValue {
            field,
            value: short(value),
            expected,
        })
}

fn token_tag(value: &str) -> Result<u32, ClaimError> {
    let hex = value.len() == 8 && value.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then(|| u32::from_str_radix(value, 16).ok())
        .flatten()
        .ok_or_else(|| ClaimError::BadValue {
            field: "token-tag",
            value: short(value),
            expected: "8 hex digits",
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::lease::Token;

    #[test]
    fn a_claim_round_trips_through_its_text() {
        let token = Token::from_hex("0123abcd000000000000000000000000").unwrap();
        let lease = Lease {
            lock: LockName::new("billing:nightly").unwrap(),
            slot: 3,
            owner: "node-a".into(),
            token,
            fence: u64::MAX,
            acquired_at: std::time::SystemTime::UNIX_EPOCH,
            expires_at: std::time::SystemTime::UNIX_EPOCH,
            period: None,
        };
        let claim = FenceClaim::of_lease(&lease);
        let text = claim.to_string();
        assert_eq!(
            text,
            "lock=billing:nightly; slot=3; fence=18446744073709551615; token-tag=0123abcd"
        );
        assert!(
            !text.contains(&token.to_hex()),
            "the token itself must not be in the claim"
        );
        assert_eq!(text.parse::<FenceClaim>(), Ok(claim));
    }

    #[test]
    fn fields_come_in_any_order_with_any_spacing_and_case() {
        let claim: FenceClaim = " FENCE = 9 ;lock=a;;Slot=2 ".parse().unwrap();
        assert_eq!(
            (
                claim.lock.as_str(),
                claim.slot,
                claim.fence,
                claim.token_tag
            ),
            ("a", 2, 9, None)
        );
    }

    #[test]
    fn every_malformed_claim_is_a_typed_error() {
        type Expect = fn(&ClaimError) -> bool;
        let cases: [(&str, Expect); 9] = [
            ("fence=1", |e| {
                matches!(e, ClaimError::Missing { field: "lock" })
            }),
            ("lock=a", |e| {
                matches!(e, ClaimError::Missing { field: "fence" })
            }),
            ("lock=a; fence=1; fence=2", |e| {
                matches!(e, ClaimError::Duplicate { .. })
            }),
            ("lock=a; fence=+1", |e| {
                matches!(e, ClaimError::BadValue { field: "fence", .. })
            }),
            ("lock=a; fence=18446744073709551616", |e| {
                matches!(e, ClaimError::BadValue { field: "fence", .. })
            }),
            ("lock=a; fence=1; slot=-1", |e| {
                matches!(e, ClaimError::BadValue { field: "slot", .. })
            }),
            ("lock=a b; fence=1", |e| matches!(e, ClaimError::Lock(_))),
            ("lock=a; fence=1; owner=x", |e| {
                matches!(e, ClaimError::BadPart { .. })
            }),
            ("lock=a; fence=1; token-tag=xyz", |e| {
                matches!(
                    e,
                    ClaimError::BadValue {
                        field: "token-tag",
                        ..
                    }
                )
            }),
        ];
        for (text, expected) in cases {
            let e = text.parse::<FenceClaim>().unwrap_err();
            assert!(expected(&e), "{text:?} gave {e:?}");
        }
        let long = format!("lock=a; fence=1; {}", " ".repeat(600));
        assert!(matches!(
            long.parse::<FenceClaim>(),
            Err(ClaimError::TooLong { .. })
        ));
    }
}
