//! What an elector shares with its clones (tenants, reconfigured copies) and with the leases it
//! holds: one value, handed to each lease cell whole.

use std::sync::Arc;

use crate::cleanup::Cleanup;
use crate::events::Events;
use crate::hold::heartbeat::Heartbeat;
use crate::hold::held::HeldLeases;
use crate::metrics::MetricsCache;
use crate::options::ElectionOptions;
use crate::store::contract::LeaseStore;
use crate::turns::Turns;

/// The state of one elector and everything made from it.
pub(crate) struct ElectorShared {
    pub(crate) store: Arc<dyn LeaseStore>,
    /// The store's description, read once: the `store` field of the spans.
    pub(crate) store_label: Arc<str>,
    pub(crate) events: Events,
    pub(crate) metrics: MetricsCache,
    /// The elector's tasks waiting per lock, and its rounds with other processes.
    pub(crate) turns: Arc<Turns>,
    /// The counted background tasks that leave no lease behind.
    pub(crate) cleanup: Cleanup,
    /// The leases held now.
    pub(crate) held: HeldLeases,
    /// When and how the held leases renew: together, on one beat, where the store can.
    pub(crate) heartbeat: Heartbeat,
}

impl ElectorShared {
    /// The shared state of a new elector on `store` with `options` (which decide whether its
    /// turns with other processes go through the store's line of waiters, where it keeps one).
    pub(crate) fn new(store: Arc<dyn LeaseStore>, options: &ElectionOptions) -> Self {
        let hand_off =
            options.fair_turns && options.hand_off.unwrap_or_else(|| store.is_process_local());
        Self {
            store_label: store.describe().into(),
            turns: Arc::new(Turns::new(hand_off && store.hands_off())),
            heartbeat: Heartbeat::new(Arc::clone(&store)),
            store,
            events: Events::default(),
            metrics: MetricsCache::default(),
            cleanup: Cleanup::default(),
            held: HeldLeases::default(),
        }
    }
}
