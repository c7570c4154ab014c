//! The period ledger's own requests: marking a claim started (one conditional `UpdateItem`) and
//! reading the record (one consistent `GetItem` of slot 0's item). Claims themselves are made by
//! the acquiring `UpdateItem` (see the `acquire` module).

use leasehold::store::{PeriodStart, StoreResult};
use leasehold::{Lease, LockName, PeriodRecord};

use crate::acquire::conditional_failure;
use crate::clock::now_ms;
use crate::expressions::{LOCK_NAME, START_CONDITION, START_NAMES, START_UPDATE};
use crate::item::{Ledger, n, s};
use crate::store::DynamoDbStore;

impl DynamoDbStore {
    /// Marks the period claim made with `lease`'s token started, if that token still holds slot
    /// 0's live lease and made the latest claim.
    pub(crate) async fn start_claim(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        if lease.slot != 0 {
            return Ok(PeriodStart::NotHeld);
        }
        let key = self.key(&lease.lock, 0);
        let sent = self
            .client
            .update_item()
            .table_name(&self.options.table)
            .key(LOCK_NAME, s(key))
            .condition_expression(START_CONDITION)
            .update_expression(START_UPDATE)
            .set_expression_attribute_names(Some(Self::names(START_NAMES)))
            .expression_attribute_values(":token", s(lease.token.to_hex()))
            .expression_attribute_values(":now", n(now_ms()))
            .expression_attribute_values(":one", n(1))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(PeriodStart::Started),
            Err(err) => conditional_failure(&self.options.table, err).map(|_| PeriodStart::NotHeld),
        }
    }

    /// The ledger's record on `lock`'s slot 0 item, `None` if it has none.
    pub(crate) async fn ledger_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let item = self.read_item(&self.key(lock, 0)).await?;
        Ok(item.and_then(|i| i.ledger).as_ref().map(Ledger::record))
    }
}
