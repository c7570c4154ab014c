//! Batch answers: what a store that [renews in batches](crate::LeaseStore::renews_in_batches)
//! hands back from one request that carried many leases.

use std::collections::HashMap;
use std::time::Duration;

use crate::error::{StoreError, StoreResult};
use crate::store::{Extension, Lease};

/// Each entry's answer from one request that carried `entries` of them: the request's own
/// answers, one per entry in order; or, when the request failed as a whole (or answered the
/// wrong number of entries), that error for every entry — its kind and message, so that each
/// entry's caller judges it (retry a transient error, give up on a permanent one) as if it had
/// asked alone.
///
/// ```
/// use leasehold::store::{answer_each, StoreError};
///
/// let each = answer_each(Ok(vec![1, 2]), 2);
/// assert_eq!(each.iter().map(|a| *a.as_ref().unwrap()).collect::<Vec<_>>(), [1, 2]);
///
/// let each = answer_each::<u8>(Err(StoreError::transient("connection reset")), 3);
/// assert_eq!(each.len(), 3);
/// assert!(each.iter().all(|a| a.as_ref().is_err_and(|e| e.is_transient())));
///
/// let each = answer_each(Ok(vec![1]), 2);
/// assert!(each.iter().all(|a| a.as_ref().is_err_and(|e| !e.is_transient())));
/// ```
pub fn answer_each<T>(answer: StoreResult<Vec<T>>, entries: usize) -> Vec<StoreResult<T>> {
    let err = match answer {
        Ok(answers) if answers.len() == entries => return answers.into_iter().map(Ok).collect(),
        Ok(answers) => StoreError::permanent(format!(
            "the store answered {} of the {entries} entries of one request",
            answers.len()
        )),
        Err(err) => err,
    };
    (0..entries).map(|_| Err(err.copied())).collect()
}

/// The distinct entries of a batch of extensions: for each entry, the index of the first entry
/// naming the same lease (lock, slot, token and fence) with the same TTL — its own index when it
/// is the first. A store extends each distinct lease once and answers a repetition as its first
/// occurrence ([`answer_repeats`]): two extensions of one lease at once could race each other on
/// a compare-and-set store.
///
/// ```
/// # use std::time::{Duration, SystemTime};
/// use leasehold::store::{first_occurrences, Lease, Token};
///
/// let lease = Lease {
///     lock: leasehold::LockName::new("a")?,
///     slot: 0,
///     owner: "n".into(),
///     token: Token::random(),
///     fence: 1,
///     acquired_at: SystemTime::UNIX_EPOCH,
///     expires_at: SystemTime::UNIX_EPOCH,
///     period: None,
/// };
/// let other = Lease { token: Token::random(), ..lease.clone() };
/// let ttl = Duration::from_secs(3);
/// let batch = [(lease.clone(), ttl), (other, ttl), (lease.clone(), ttl), (lease, ttl * 2)];
/// assert_eq!(first_occurrences(&batch), [0, 1, 0, 3]);
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
pub fn first_occurrences(leases: &[(Lease, Duration)]) -> Vec<usize> {
    let mut first = HashMap::new();
    leases
        .iter()
        .enumerate()
        .map(|(i, (l, ttl))| {
            *first
                .entry((&l.lock, l.slot, l.token, l.fence, *ttl))
                .or_insert(i)
        })
        .collect()
}

/// Every entry's answer from the answers of the distinct entries (keyed by index, see
/// [`first_occurrences`]): a repetition gets its first occurrence's answer (an error: its kind
/// and message). An entry whose first occurrence was left unanswered gets a permanent error
/// saying so.
pub fn answer_repeats(
    first: &[usize],
    distinct: &HashMap<usize, StoreResult<Extension>>,
) -> Vec<StoreResult<Extension>> {
    first
        .iter()
        .map(|f| match distinct.get(f) {
            Some(Ok(extension)) => Ok(*extension),
            Some(Err(e)) => Err(e.copied()),
            None => Err(StoreError::permanent(
                "the store left an entry of the batch unanswered",
            )),
        })
        .collect()
}
