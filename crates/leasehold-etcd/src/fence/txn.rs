//! Fenced transactions: the application's etcd operations, applied only while a lease is held.

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse, TxnResponse};
use leasehold::store::StoreError;

use super::error::{FencedTxnError, LeaseLost};
use super::writer::FencedWriter;
use crate::protocol;

/// A fenced transaction that was applied.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FencedTxnResponse {
    /// The cluster revision the transaction committed at.
    pub revision: i64,
    /// The response of the application's transaction: whether its own comparisons held
    /// ([`TxnResponse::succeeded`]) and the responses of the operations it ran.
    pub txn: TxnResponse,
}

impl FencedWriter<'_> {
    /// Applies the application's transaction `txn` only while the claim's lease is still held,
    /// in one etcd transaction: *if the lease's slot key still has the creation revision that is
    /// its fence, run `txn`* (nested). The slot key is deleted when the lease is released,
    /// expires or is forced, and a successor's grant creates it anew with a higher revision, so
    /// a holder paused past its lease changes nothing once it lost the lease.
    ///
    /// `txn` is any transaction: plain operations (`Txn::new().and_then([...])`) or its own
    /// comparisons with both branches. It must not touch this store's keys. etcd limits the
    /// operations of one transaction (128 by default, `--max-txn-ops`).
    ///
    /// ```no_run
    /// # async fn demo(store: &leasehold_etcd::EtcdStore, ctx: &leasehold::LeaderContext) -> Result<(), Box<dyn std::error::Error>> {
    /// use etcd_client::{Txn, TxnOp};
    ///
    /// let put = TxnOp::put("reports/latest", "2024-06-01.csv", None);
    /// let applied = store.fenced(ctx).txn(Txn::new().and_then([put])).await?;
    /// tracing::info!(revision = applied.revision, "report published");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`FencedTxnError::LeaseLost`] when the lease is no longer held (nothing was applied);
    /// [`FencedTxnError::Store`] when etcd cannot be reached in time or refuses the transaction
    /// (too many operations, a key written twice, permissions).
    ///
    /// # Cancel safety
    ///
    /// The transaction applies whole or not at all; cancelling leaves it unknown which, as for
    /// any request sent before the cancellation. It is sent again only when it was certainly not
    /// applied.
    pub async fn txn(&self, txn: Txn) -> Result<FencedTxnResponse, FencedTxnError> {
        let (store, claim) = (self.store, &self.claim);
        let lost = |holder_fence| LeaseLost {
            lock: claim.lock.clone(),
            slot: claim.slot,
            fence: claim.fence,
            holder_fence,
        };
        // No etcd revision is that high: no key was ever created with this fence.
        let Ok(created) = i64::try_from(claim.fence) else {
            return Err(lost(None).into());
        };
        let key = store.protocol.keys.slot(&claim.lock, claim.slot);
        let fenced = Txn::new()
            .when([Compare::create_revision(
                key.as_str(),
                CompareOp::Equal,
                created,
            )])
            .and_then([TxnOp::txn(txn)])
            .or_else([TxnOp::get(key.as_str(), None)]);
        let resp = protocol::txn(&store.protocol.link, "a fenced transaction", fenced).await?;
        let revision = resp.header().map_or(0, |h| h.revision());
        let succeeded = resp.succeeded();
        let mut responses = resp.op_responses().into_iter();
        if !succeeded {
            let holder = responses.find_map(|r| match r {
                TxnOpResponse::Get(g) => g
                    .kvs()
                    .first()
                    .and_then(|kv| u64::try_from(kv.create_revision()).ok()),
                _ => None,
            });
            return Err(lost(holder).into());
        }
        let txn = responses
            .find_map(|r| match r {
                TxnOpResponse::Txn(t) => Some(t),
                _ => None,
            })
            .ok_or_else(|| {
                StoreError::permanent("etcd answered a fenced transaction without its response")
            })?;
        Ok(FencedTxnResponse { revision, txn })
    }
}
