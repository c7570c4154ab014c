//! `FencedWriter`: the entry of every fenced write in etcd, made from the holder's context.

use etcd_client::Txn;
use leasehold::LeaderContext;
use leasehold::fence::FenceClaim;

use super::error::{FencedPutError, FencedTxnError};
use super::txn::FencedTxnResponse;
use crate::store::EtcdStore;

/// Writes to etcd under one holder's fence: from [`EtcdStore::fenced`] (the holder's context) or
/// [`EtcdStore::fenced_by_claim`] (a claim given by hand). It is a snapshot of the claim (lock, slot,
/// fence), cheap to keep for the holder's whole run.
///
/// * [`txn`](Self::txn): the application's transaction, applied only while the lease's slot key
///   in this store is still the holder's.
/// * [`put`](Self::put): a put of the application's key, applied only if no higher fence put it
///   before (the fence may come from any leasehold store).
///
/// ```no_run
/// # async fn demo(store: &leasehold_etcd::EtcdStore, ctx: &leasehold::LeaderContext) -> Result<(), Box<dyn std::error::Error>> {
/// use etcd_client::{Txn, TxnOp};
///
/// let fenced = store.fenced(ctx);
/// fenced.put("reports/latest", "2024-06-01.csv").await?;
/// let put = TxnOp::put("reports/count", "7", None);
/// fenced.txn(Txn::new().and_then([put])).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FencedWriter<'a> {
    pub(super) store: &'a EtcdStore,
    pub(super) claim: FenceClaim,
}

impl FencedWriter<'_> {
    /// The claim these writes carry (lock, slot, fence).
    pub fn claim(&self) -> &FenceClaim {
        &self.claim
    }
}

impl EtcdStore {
    /// Writes under the fence of `ctx`, the holder's context: the entry of every fenced write.
    /// For [`FencedWriter::txn`] the lease must be one of this store (or of a store with the same
    /// endpoints and prefix); [`FencedWriter::put`] takes a lease of any store.
    pub fn fenced(&self, ctx: &LeaderContext) -> FencedWriter<'_> {
        self.fenced_by_claim(&FenceClaim::of(ctx))
    }

    /// Writes under `claim`, given by hand rather than by a holder's context, such as a claim a
    /// job received as `$LEASEHOLD_LOCK`, `$LEASEHOLD_SLOT` and `$LEASEHOLD_FENCE`.
    ///
    /// ```no_run
    /// # async fn demo(store: &leasehold_etcd::EtcdStore) -> Result<(), Box<dyn std::error::Error>> {
    /// use etcd_client::{Txn, TxnOp};
    /// use leasehold::fence::FenceClaim;
    ///
    /// let claim: FenceClaim = "lock=nightly-report; slot=0; fence=7412".parse()?;
    /// let put = TxnOp::put("reports/latest", "2024-06-01.csv", None);
    /// store.fenced_by_claim(&claim).txn(Txn::new().and_then([put])).await?;
    /// # Ok(()) }
    /// ```
    pub fn fenced_by_claim(&self, claim: &FenceClaim) -> FencedWriter<'_> {
        FencedWriter {
            store: self,
            claim: claim.clone(),
        }
    }

    /// The application's transaction `txn`, applied only while `ctx`'s lease is still held.
    ///
    /// # Errors
    ///
    /// As [`FencedWriter::txn`].
    ///
    /// # Cancel safety
    ///
    /// As [`FencedWriter::txn`].
    #[deprecated(note = "use `store.fenced(ctx).txn(txn)`")]
    pub async fn fenced_txn(
        &self,
        ctx: &LeaderContext,
        txn: Txn,
    ) -> Result<FencedTxnResponse, FencedTxnError> {
        self.fenced(ctx).txn(txn).await
    }

    /// The application's transaction `txn`, applied only while the lease of `claim` is held.
    ///
    /// # Errors
    ///
    /// As [`FencedWriter::txn`].
    ///
    /// # Cancel safety
    ///
    /// As [`FencedWriter::txn`].
    #[deprecated(note = "use `store.fenced_by_claim(claim).txn(txn)`")]
    pub async fn fenced_txn_as(
        &self,
        claim: &FenceClaim,
        txn: Txn,
    ) -> Result<FencedTxnResponse, FencedTxnError> {
        self.fenced_by_claim(claim).txn(txn).await
    }

    /// Puts `value` in `key` only if no higher fence than `fence` put it before.
    ///
    /// # Errors
    ///
    /// As [`FencedWriter::put`].
    ///
    /// # Cancel safety
    ///
    /// As [`FencedWriter::put`].
    #[deprecated(note = "use `store.fenced(ctx).put(key, value)`")]
    pub async fn fenced_put(
        &self,
        fence: u64,
        key: &str,
        value: impl Into<Vec<u8>>,
    ) -> Result<Option<u64>, FencedPutError> {
        super::put::put(self, fence, key, value.into()).await
    }
}
