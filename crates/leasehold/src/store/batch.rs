//! Batch answers: what a store that [renews in batches](crate::LeaseStore::renews_in_batches)
//! hands back from one request that carried many leases.

use crate::error::{StoreError, StoreResult};

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
