//! Extension: one `UpdateItem` conditioned on the token and on the lease not having ended.

use std::time::Duration;

use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use leasehold::store::StoreResult;
use leasehold::{Lease, store::Extension};

use crate::acquire::conditional_failure;
use crate::clock::{ms, now_ms, time, ttl_seconds};
use crate::expressions::{EXTEND_NAMES, EXTEND_UPDATE, HELD_CONDITION, LOCK_NAME};
use crate::item::{n, s};
use crate::metrics::Operation;
use crate::store::DynamoDbStore;

impl DynamoDbStore {
    /// Moves the lease's end to now + `ttl` (client clock) if the token still holds it.
    pub(crate) async fn extend_lease(
        &self,
        lease: &Lease,
        ttl: Duration,
    ) -> StoreResult<Extension> {
        let key = self.key(&lease.lock, lease.slot);
        let now = now_ms();
        let expiry = now.saturating_add(ms(ttl));
        let sent = self
            .metered(Operation::Extend, |probe| {
                self.client
                    .update_item()
                    .table_name(&self.options.table)
                    .key(LOCK_NAME, s(key))
                    .condition_expression(HELD_CONDITION)
                    .update_expression(EXTEND_UPDATE)
                    .set_expression_attribute_names(Some(Self::names(EXTEND_NAMES)))
                    .expression_attribute_values(":token", s(lease.token.to_hex()))
                    .expression_attribute_values(":now", n(now))
                    .expression_attribute_values(":expiry", n(expiry))
                    .expression_attribute_values(
                        ":ttl",
                        n(ttl_seconds(expiry, self.options.ttl_padding)),
                    )
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .customize()
                    .interceptor(probe)
                    .send()
            })
            .await;
        match sent {
            Ok(_) => Ok(Extension::Extended {
                expires_at: time(expiry),
            }),
            Err(err) => conditional_failure(&self.options.table, err).map(|_| Extension::NotHeld),
        }
    }
}
