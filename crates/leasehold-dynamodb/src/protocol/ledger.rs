//! The period ledger's own requests: marking a claim started (one conditional `UpdateItem`),
//! reading the record (one consistent `GetItem` of slot 0's item) and clearing it (one
//! conditional `UpdateItem` returning the item as it was). Claims themselves are made by the
//! acquiring `UpdateItem` (see the `acquire` module).

use aws_sdk_dynamodb::types::ReturnValue;
use leasehold::store::host_epoch_ms;
use leasehold::store::{PeriodStart, StoreResult};
use leasehold::{Lease, LockName, PeriodRecord};

use super::conditional_failure;
use super::expressions::{
    CLEAR_CONDITION, CLEAR_NAMES, CLEAR_UPDATE, START_CONDITION, START_NAMES, START_UPDATE,
};

use crate::metrics::Operation;
use crate::record::{Item, Ledger, n, s};
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
            .send_update(
                Operation::StartPeriod,
                self.update_item(key, START_CONDITION, START_UPDATE, START_NAMES)
                    .expression_attribute_values(":token", s(lease.token.to_hex()))
                    .expression_attribute_values(":now", n(host_epoch_ms()))
                    .expression_attribute_values(":one", n(1)),
            )
            .await;
        match sent {
            Ok(_) => Ok(PeriodStart::Started),
            Err(err) => conditional_failure(&self.options.table, err).map(|_| PeriodStart::NotHeld),
        }
    }

    /// Removes the ledger's attributes from `lock`'s slot 0 item in one conditional
    /// `UpdateItem` that returns the item as it was (`ALL_OLD`): the record deleted, `None` if
    /// the item has no ledger (or no item exists: the condition fails, nothing is written).
    pub(crate) async fn clear_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let key = self.key(lock, 0);
        let sent = self
            .send_update(
                Operation::ClearLedger,
                self.update_item(key.as_str(), CLEAR_CONDITION, CLEAR_UPDATE, CLEAR_NAMES)
                    .return_values(ReturnValue::AllOld),
            )
            .await;
        match sent {
            Ok(out) => {
                let Some(attrs) = out.attributes else {
                    return Ok(None);
                };
                let old = Item::parse(&key, &attrs)?;
                Ok(old.ledger.as_ref().map(Ledger::record))
            }
            // The condition failed: no ledger to clear.
            Err(err) => conditional_failure(&self.options.table, err).map(|_| None),
        }
    }

    /// The ledger's record on `lock`'s slot 0 item, `None` if it has none.
    pub(crate) async fn ledger_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let item = self.read_item(&self.key(lock, 0)).await?;
        Ok(item.and_then(|i| i.ledger).as_ref().map(Ledger::record))
    }
}
