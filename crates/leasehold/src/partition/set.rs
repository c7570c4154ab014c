//! `PartitionSet`: what a node joins — a name, a number of shards, a lease, this node's weight.

use std::time::Duration;

use crate::limits::{MAX_LOCK_NAME_LEN, MAX_PARTITION_WEIGHT, MAX_SHARDS, check_duration};
use crate::name::LockName;
use crate::options::{ElectionOptions, OptionsError};
use crate::partition::error::PartitionError;

/// The suffix of the member group's lock name: `<name>.members`.
const MEMBERS_SUFFIX: &str = ".members";
/// What comes between the set's name and a shard's number: `<name>.shard-<k>`.
const SHARD_INFIX: &str = ".shard-";

/// A set of `shards` shards, numbered `0..shards`, spread over the nodes that
/// [join](Self::join) it: each shard is owned by one node at a time, with its own lease and
/// fence.
///
/// The set lives in the store as locks derived from its name: `<name>.members` (a group lock in
/// which each member holds a slot naming its node id and [weight](PartitionSetBuilder::weight)) and
/// `<name>.shard-<k>` for each shard `k`. Keep other locks out of those names. Every node that
/// joins must use the same name and shard count (and the same lease, so that a crashed node's
/// shards come free as the others expect).
///
/// | option | default | rule |
/// |---|---|---|
/// | `name` | required | a lock name whose derived names fit [`MAX_LOCK_NAME_LEN`] |
/// | `shards` | required | 1 to [`MAX_SHARDS`] |
/// | `lease` | the elector's lease (15 s unless set) | as [`ElectionOptions`]' `lease`, with renewal (≥ 75 ms) |
/// | `weight` | 1 | 1 to [`MAX_PARTITION_WEIGHT`]: this node's share, relative to the others' |
/// | `drain` | a third of the lease | how long a hand-over waits for the shard's work to end |
///
/// ```
/// use std::time::Duration;
/// use leasehold::partition::PartitionSet;
///
/// let set = PartitionSet::builder("orders", 64)
///     .lease(Duration::from_secs(10))
///     .weight(2)
///     .build()?;
/// assert_eq!(set.shards(), 64);
/// assert_eq!(set.shard_lock(3).map(|l| l.to_string()).as_deref(), Some("orders.shard-3"));
/// assert_eq!(set.member_lock().as_str(), "orders.members");
/// # Ok::<(), leasehold::partition::PartitionError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSet {
    name: LockName,
    shards: u32,
    lease: Option<Duration>,
    weight: u32,
    drain: Option<Duration>,
}

impl PartitionSet {
    /// A builder for a set named `name` with `shards` shards; the other options start at their
    /// defaults.
    pub fn builder(name: impl Into<String>, shards: u32) -> PartitionSetBuilder {
        PartitionSetBuilder {
            name: name.into(),
            shards,
            lease: None,
            weight: 1,
            drain: None,
        }
    }

    /// The set's name (before any tenant namespace).
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The number of shards.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The lease set for the shards and memberships, if one was set (else the elector's).
    pub fn lease(&self) -> Option<Duration> {
        self.lease
    }

    /// This node's weight.
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// The longest a hand-over waits for a shard's work to end, if set (else a third of the
    /// lease).
    pub fn drain(&self) -> Option<Duration> {
        self.drain
    }

    /// The lock of shard `shard` (before any tenant namespace), or `None` past the last shard.
    pub fn shard_lock(&self, shard: u32) -> Option<LockName> {
        (shard < self.shards)
            .then(|| LockName::new(shard_name(self.name.as_str(), shard)).ok())
            .flatten()
    }

    /// The member group's lock (before any tenant namespace).
    pub fn member_lock(&self) -> LockName {
        // Checked by `build`: the derived name is valid.
        LockName::new(members_name(self.name.as_str())).unwrap_or_else(|_| self.name.clone())
    }
}

/// `<name>.shard-<k>`.
pub(crate) fn shard_name(name: &str, shard: u32) -> String {
    format!("{name}{SHARD_INFIX}{shard}")
}

/// `<name>.members`.
pub(crate) fn members_name(name: &str) -> String {
    format!("{name}{MEMBERS_SUFFIX}")
}

/// The shard number in `lock` if it is one of the shard locks of the set whose (scoped) name is
/// `name`: the exact decimal form `shard_name` writes, below `shards`.
pub(crate) fn shard_of(name: &str, shards: u32, lock: &str) -> Option<u32> {
    let digits = lock.strip_prefix(name)?.strip_prefix(SHARD_INFIX)?;
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u32>().ok().filter(|k| *k < shards)
}

/// Checks that every name derived from `name` fits [`MAX_LOCK_NAME_LEN`] and is a valid lock
/// name; `given` is the name as the caller wrote it (for the error).
pub(crate) fn check_derived(given: &str, name: &str, shards: u32) -> Result<(), PartitionError> {
    let last = shard_name(name, shards.saturating_sub(1));
    let members = members_name(name);
    let longest = if last.len() > members.len() {
        last
    } else {
        members.clone()
    };
    if longest.len() > MAX_LOCK_NAME_LEN {
        return Err(PartitionError::NameTooLong {
            name: given.to_owned(),
            len: longest.len(),
            longest,
            max: MAX_LOCK_NAME_LEN,
        });
    }
    LockName::new(&longest)?;
    LockName::new(&members)?;
    Ok(())
}

/// Builds a [`PartitionSet`]; see its table for the options.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until built"]
pub struct PartitionSetBuilder {
    name: String,
    shards: u32,
    lease: Option<Duration>,
    weight: u32,
    drain: Option<Duration>,
}

impl PartitionSetBuilder {
    /// The lease of this node's shards and membership (default: the elector's
    /// [`lease`](crate::ElectionOptionsBuilder::lease)). A crashed node's shards move after
    /// about one lease; the renewals cost one request per third of it (one in all on a store
    /// that [renews in batches](crate::LeaseStore::renews_in_batches)).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// This node's share of the shards relative to the other members' (default 1): a member of
    /// weight 2 owns twice as many shards as one of weight 1, within one shard.
    pub fn weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// How long a hand-over waits for the work on a shard to end before its lease is released
    /// (default: a third of the lease). The shard's
    /// [`ShardLease::ending`](crate::partition::ShardLease::ending) resolves when the wait
    /// starts; dropping the [`ShardLease`](crate::partition::ShardLease) ends the wait at once.
    pub fn drain(mut self, drain: Duration) -> Self {
        self.drain = Some(drain);
        self
    }

    /// Validates the set.
    ///
    /// # Errors
    ///
    /// [`PartitionError::Name`] for an invalid name, [`PartitionError::NameTooLong`] when a
    /// derived lock name would pass [`MAX_LOCK_NAME_LEN`], [`PartitionError::NoShards`],
    /// [`PartitionError::TooManyShards`], [`PartitionError::BadWeight`], and
    /// [`PartitionError::Options`] for a lease or drain out of bounds.
    ///
    /// ```
    /// use leasehold::partition::{PartitionError, PartitionSet};
    ///
    /// let long = "n".repeat(250); // fits alone, but "<name>.shard-9" does not
    /// assert!(matches!(
    ///     PartitionSet::builder(long, 10).build(),
    ///     Err(PartitionError::NameTooLong { len: 258, max: 255, .. })
    /// ));
    /// assert!(matches!(PartitionSet::builder("a b", 10).build(), Err(PartitionError::Name(_))));
    /// assert!(matches!(
    ///     PartitionSet::builder("jobs", 4).weight(0).build(),
    ///     Err(PartitionError::BadWeight { weight: 0, .. })
    /// ));
    /// ```
    pub fn build(self) -> Result<PartitionSet, PartitionError> {
        let name = LockName::new(&self.name)?;
        if self.shards == 0 {
            return Err(PartitionError::NoShards);
        }
        if self.shards > MAX_SHARDS {
            return Err(PartitionError::TooManyShards {
                shards: self.shards,
                max: MAX_SHARDS,
            });
        }
        check_derived(&self.name, name.as_str(), self.shards)?;
        if self.weight == 0 || self.weight > MAX_PARTITION_WEIGHT {
            return Err(PartitionError::BadWeight {
                weight: self.weight,
                max: MAX_PARTITION_WEIGHT,
            });
        }
        if let Some(lease) = self.lease {
            ElectionOptions::builder().lease(lease).build()?;
        }
        if let Some(drain) = self.drain {
            check_duration("drain", drain).map_err(OptionsError::from)?;
        }
        Ok(PartitionSet {
            name,
            shards: self.shards,
            lease: self.lease,
            weight: self.weight,
            drain: self.drain,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_numbers_are_read_back_only_in_the_form_they_are_written() {
        let name = "tenant:a:orders";
        assert_eq!(shard_of(name, 10, &shard_name(name, 0)), Some(0));
        assert_eq!(shard_of(name, 10, &shard_name(name, 9)), Some(9));
        assert_eq!(
            shard_of(name, 10, &shard_name(name, 10)),
            None,
            "past the last"
        );
        assert_eq!(shard_of(name, 10, "tenant:a:orders.shard-07"), None);
        assert_eq!(shard_of(name, 10, "tenant:a:orders.shard-"), None);
        assert_eq!(shard_of(name, 10, "tenant:a:orders.shard-+1"), None);
        assert_eq!(shard_of(name, 10, "tenant:a:orders.members"), None);
        assert_eq!(shard_of(name, 10, "tenant:a:orders2.shard-1"), None);
        assert_eq!(shard_of(name, 10, "tenant:a:orders.shard-1/x"), None);
    }

    #[test]
    fn the_longest_derived_name_is_checked_at_the_edge() {
        // "<name>.shard-65535" is the name plus 12 bytes.
        let fits = "n".repeat(MAX_LOCK_NAME_LEN - 12);
        assert!(
            PartitionSet::builder(fits.clone(), MAX_SHARDS)
                .build()
                .is_ok()
        );
        let over = format!("{fits}n");
        assert!(matches!(
            PartitionSet::builder(over.clone(), MAX_SHARDS).build(),
            Err(PartitionError::NameTooLong { len: 256, .. })
        ));
        // With few shards, the member group's name (".members", 8 bytes) is the longest.
        let short = "n".repeat(MAX_LOCK_NAME_LEN - 8);
        assert!(PartitionSet::builder(short.clone(), 10).build().is_ok());
        let e = PartitionSet::builder(format!("{short}n"), 10).build();
        assert!(
            matches!(&e, Err(PartitionError::NameTooLong { longest, len: 256, .. }) if longest.ends_with(".members")),
            "{e:?}"
        );
    }

    #[test]
    fn shards_and_weights_are_bounded() {
        assert!(PartitionSet::builder("s", MAX_SHARDS).build().is_ok());
        assert_eq!(
            PartitionSet::builder("s", MAX_SHARDS + 1).build(),
            Err(PartitionError::TooManyShards {
                shards: MAX_SHARDS + 1,
                max: MAX_SHARDS
            })
        );
        assert!(
            PartitionSet::builder("s", 1)
                .weight(MAX_PARTITION_WEIGHT)
                .build()
                .is_ok()
        );
        assert!(matches!(
            PartitionSet::builder("s", 1)
                .weight(MAX_PARTITION_WEIGHT + 1)
                .build(),
            Err(PartitionError::BadWeight {
                weight: 65,
                max: 64
            })
        ));
        assert!(matches!(
            PartitionSet::builder("s", 1)
                .lease(Duration::from_millis(10))
                .build(),
            Err(PartitionError::Options(_))
        ));
        assert!(matches!(
            PartitionSet::builder("s", 1).drain(Duration::MAX).build(),
            Err(PartitionError::Options(OptionsError::Limit(_)))
        ));
    }
}
