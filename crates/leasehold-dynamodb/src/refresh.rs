//! The stale-item gauge's refresher: a background task that counts the stale items every
//! [`stale_refresh`](crate::DynamoDbOptions::stale_refresh) and sets the gauge, one count at a
//! time, until the store is dropped.

use tokio::sync::oneshot;
use tracing::{debug, warn};

use crate::options::DynamoDbOptionsError;
use crate::store::DynamoDbStore;

/// The running refresher of a store: dropping it (with the store) stops the task.
#[derive(Debug)]
pub(crate) struct Refresher {
    /// Never sent on: the task stops when this is dropped.
    _stop: oneshot::Sender<()>,
}

impl Refresher {
    /// Starts the refresher of `store` if its options ask for one, on the tokio runtime the
    /// caller runs in.
    pub(crate) fn start(store: &DynamoDbStore) -> Result<Option<Self>, DynamoDbOptionsError> {
        let Some(interval) = store.options.stale_refresh else {
            return Ok(None);
        };
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            <crate::DynamoDbOptionKey as leasehold::store::OptionKey>::invalid(
                "stale_refresh",
                "the stale-item refresher runs on tokio: create the store within a tokio runtime",
            )
        })?;
        let pages = store.options.stale_refresh_pages;
        let counter = store.sibling();
        let (stop, mut stopped) = oneshot::channel::<()>();
        runtime.spawn(async move {
            loop {
                // The stop signal first: a count that ends as the store is dropped is not
                // recorded.
                tokio::select! {
                    biased;
                    _ = &mut stopped => break,
                    counted = counter.stale_items_within(pages) => match counted {
                        Ok(count) => {
                            if count.truncated {
                                warn!(
                                    pages,
                                    expired = count.expired,
                                    "the stale-item count stopped at its page cap: a lower bound"
                                );
                            }
                            counter.metrics.stale_refreshed(Some(&count));
                        }
                        Err(e) => {
                            warn!(error = %e, "counting the stale items failed");
                            counter.metrics.stale_refreshed(None);
                        }
                    },
                }
                tokio::select! {
                    biased;
                    _ = &mut stopped => break,
                    () = tokio::time::sleep(interval) => {}
                }
            }
            debug!("the stale-item refresher stopped with its store");
        });
        Ok(Some(Self { _stop: stop }))
    }
}
