//! Fenced puts: a key of the application written only if no higher fence wrote it before.

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use leasehold::fence::{ResourceName, StaleFence};
use leasehold::store::StoreError;

use super::error::FencedPutError;
use super::writer::FencedWriter;
use crate::protocol::txn;
use crate::store::EtcdStore;

/// A fence as a fence key holds it: 20 decimal digits, so that etcd's byte-wise comparison of
/// values is the numeric one over the whole `u64` range.
fn fence_value(fence: u64) -> String {
    format!("{fence:020}")
}

/// The fence in a fence key's value, as read back by a transaction's `get`.
fn fence_in(resp: Option<TxnOpResponse>, key: &str) -> Result<Option<u64>, StoreError> {
    let Some(TxnOpResponse::Get(got)) = resp else {
        return Err(StoreError::permanent(
            "etcd answered a fenced put without its read",
        ));
    };
    got.kvs()
        .first()
        .map(|kv| {
            std::str::from_utf8(kv.value())
                .ok()
                .filter(|v| v.len() == 20)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| {
                    StoreError::permanent(format!(
                        "the fence key {key} holds something other than a fence"
                    ))
                })
        })
        .transpose()
}

impl FencedWriter<'_> {
    /// Puts `value` in the application's key `key` only if no write with a higher fence put it
    /// before, and records the claim's fence as the key's highest, in one etcd transaction, by
    /// the rule of [`Admission`](leasehold::fence::Admission) (the key is the resource). The
    /// highest fence lives in [`EtcdStore::fence_key`] (`<prefix>/.fences/<key>`). Returns the
    /// key's highest fence before (`None` for its first fenced put).
    ///
    /// Unlike [`txn`](Self::txn), this needs no lease of this store: the fence may come from any
    /// leasehold store, as long as the key is written under one lock (and slot).
    ///
    /// ```no_run
    /// # async fn demo(store: &leasehold_etcd::EtcdStore, ctx: &leasehold::LeaderContext) -> Result<(), Box<dyn std::error::Error>> {
    /// store.fenced(ctx).put("reports/latest", "2024-06-01.csv").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`FencedPutError::Stale`] when a higher fence put the key before (nothing was written);
    /// [`FencedPutError::Key`] when `key` is not a valid resource name (1-255 bytes of UTF-8
    /// without control characters); [`FencedPutError::Store`] when etcd cannot be reached in time
    /// or refuses the transaction, or the fence key holds something else.
    ///
    /// # Cancel safety
    ///
    /// The transaction applies whole or not at all; cancelling leaves it unknown which. It is
    /// sent again only when it was certainly not applied.
    pub async fn put(
        &self,
        key: &str,
        value: impl Into<Vec<u8>>,
    ) -> Result<Option<u64>, FencedPutError> {
        put(self.store, self.claim.fence, key, value.into()).await
    }
}

/// The fenced put of `value` to `key` with `fence`.
pub(super) async fn put(
    store: &EtcdStore,
    fence: u64,
    key: &str,
    value: Vec<u8>,
) -> Result<Option<u64>, FencedPutError> {
    let resource = ResourceName::new(key)?;
    let fence_key = store.protocol.keys.fence(key);
    let recorded = fence_value(fence);
    let t = Txn::new()
        .when([Compare::value(
            fence_key.as_str(),
            CompareOp::Greater,
            recorded.as_str(),
        )])
        .and_then([TxnOp::get(fence_key.as_str(), None)])
        .or_else([
            TxnOp::get(fence_key.as_str(), None),
            TxnOp::put(fence_key.as_str(), recorded, None),
            TxnOp::put(key, value, None),
        ]);
    let resp = txn(&store.protocol.link, "a fenced put", t).await?;
    let stale = resp.succeeded();
    let before = fence_in(resp.op_responses().into_iter().next(), &fence_key)?;
    match (stale, before) {
        (false, previous) => Ok(previous),
        (true, Some(highest)) => Err(StaleFence {
            resource,
            fence,
            highest,
        }
        .into()),
        (true, None) => Err(StoreError::permanent(
            "etcd refused a fenced put on a fence key it then did not return",
        )
        .into()),
    }
}

impl EtcdStore {
    /// The key that keeps the highest fence a fenced put ([`FencedWriter::put`]) wrote to `key`:
    /// `<prefix>/.fences/<key>`. Lock names start with a letter or digit, so it never meets a
    /// lock's keys.
    ///
    /// ```
    /// # let store = leasehold_etcd::EtcdStore::connect_lazy("etcd://h", Default::default())?;
    /// assert_eq!(store.fence_key("reports/latest"), "leasehold/.fences/reports/latest");
    /// # Ok::<(), leasehold::store::OpenError>(())
    /// ```
    pub fn fence_key(&self, key: &str) -> String {
        self.protocol.keys.fence(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_values_order_as_text_as_they_do_as_numbers() {
        let fences = [0, 9, 10, 99, 1 << 53, (1 << 53) + 1, u64::MAX - 1, u64::MAX];
        for pair in fences.windows(2) {
            let (a, b) = (fence_value(pair[0]), fence_value(pair[1]));
            assert_eq!(a.len(), 20);
            assert!(a < b, "{a} < {b}");
        }
    }
}
