//! `PartitionError`: why a partition set was refused.

use crate::name::NameError;
use crate::options::OptionsError;

/// Why a [`PartitionSet`](crate::partition::PartitionSet) was refused, by its builder or when a
/// node joins it.
///
/// ```
/// use leasehold::partition::{PartitionError, PartitionSet};
///
/// assert!(matches!(PartitionSet::builder("orders", 0).build(), Err(PartitionError::NoShards)));
/// let e = PartitionSet::builder("orders", 70_000).build().unwrap_err();
/// assert!(e.to_string().contains("MAX_SHARDS"), "{e}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PartitionError {
    /// The set's name is not a valid lock name (or does not fit the elector's tenant).
    #[error(transparent)]
    Name(#[from] NameError),
    /// The set has no shards.
    #[error("a partition set needs at least 1 shard, got 0")]
    NoShards,
    /// More shards than [`MAX_SHARDS`](crate::limits::MAX_SHARDS).
    #[error("{shards} shards requested; at most {max} are allowed (leasehold::limits::MAX_SHARDS)")]
    TooManyShards {
        /// The shard count asked for.
        shards: u32,
        /// [`MAX_SHARDS`](crate::limits::MAX_SHARDS).
        max: u32,
    },
    /// A weight of zero, or above
    /// [`MAX_PARTITION_WEIGHT`](crate::limits::MAX_PARTITION_WEIGHT).
    #[error("weight {weight} is outside 1..={max} (leasehold::limits::MAX_PARTITION_WEIGHT)")]
    BadWeight {
        /// The weight asked for.
        weight: u32,
        /// [`MAX_PARTITION_WEIGHT`](crate::limits::MAX_PARTITION_WEIGHT).
        max: u32,
    },
    /// A lock name the set derives from its name (its member group, its last shard's lock)
    /// would be longer than [`MAX_LOCK_NAME_LEN`](crate::limits::MAX_LOCK_NAME_LEN): shorten the
    /// set's name (or the tenant's namespace).
    #[error(
        "partition set {name:?}: the derived lock name {longest:?} is {len} bytes long; at most \
         {max} bytes are allowed (leasehold::limits::MAX_LOCK_NAME_LEN)"
    )]
    NameTooLong {
        /// The set's name as given.
        name: String,
        /// The longest lock name derived from it (with the tenant's namespace, if any).
        longest: String,
        /// Its length in bytes.
        len: usize,
        /// [`MAX_LOCK_NAME_LEN`](crate::limits::MAX_LOCK_NAME_LEN).
        max: usize,
    },
    /// The lease (or drain) broke the election options' rules (see
    /// [`ElectionOptions`](crate::ElectionOptions)).
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The member group was full: every one of its
    /// [`MAX_SLOTS`](crate::limits::MAX_SLOTS) slots is held, so this node could not join.
    #[error(
        "partition set {name:?}: its member group is full (it has \
         leasehold::limits::MAX_SLOTS members)"
    )]
    Full {
        /// The set's name.
        name: String,
    },
}
