//! Fenced work partitioning: `N` shards spread over the nodes that join a
//! [`PartitionSet`], each shard owned by one node at a time, with its own lease and fence.
//!
//! One leader answers "which node does this"; a partition set answers "which node does *which*
//! part": a consumer per partition, a reconciler per tenant, a job per region. Every node
//! [joins](PartitionSet::join) the set; the set's shards are spread over its members in
//! proportion to their weights, and each member hears about its own shards as they come and
//! go ([`ShardEvent`]).
//!
//! * **One owner per shard at any instant.** Each shard is a lock (`<name>.shard-<k>`): a
//!   member takes it only when the assignment gives it that shard and the lock is free, and a
//!   shard moves only after its old owner released it (a hand-over, after the work on it
//!   ended) or its lease ended — lost first on the old owner's side, as for any lease.
//!   Fences strictly increase per shard across moves.
//! * **Balanced, moving as little as possible.** Each member owns its weighted share within
//!   one shard; a join takes only what the new member needs from the members above their new
//!   share, and a leave spreads only the leaver's shards.
//! * **Coverage.** After a join or a graceful leave every shard is owned again within about two
//!   periods (a period is a third of the lease), plus the time its work takes to stop; after a
//!   crash within about one lease and a period.
//! * **Cost.** A member reads the member group once per period; it reads the shards' owners
//!   (one listing) only while the set is changing. Its leases renew in the elector's
//!   heartbeat: on a store that renews in batches, one request per period however many shards
//!   it owns.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() -> leasehold::Result<()> {
//! use std::sync::Arc;
//! use leasehold::{ElectionOptions, Elector, MemoryStore, partition::{PartitionSet, ShardEvent}};
//!
//! let store = Arc::new(MemoryStore::new());
//! let node = |id: &str| -> leasehold::Result<Elector> {
//!     let options = ElectionOptions::builder().node_id(id).build()?;
//!     Ok(Elector::with_options(store.clone(), options))
//! };
//! let set = PartitionSet::builder("tenants", 6).build()?;
//! let mut a = set.join(&node("a")?).await?;
//! a.wait_settled().await; // alone: a owns all six
//! let mut b = set.join(&node("b")?).await?;
//! // b's arrival: a hands three shards over, b takes them.
//! while b.owned().len() < 3 {
//!     tokio::select! {
//!         Some(event) = a.next() => if let ShardEvent::Acquired(_, lease) = event {
//!             tokio::spawn(async move { lease.ending().await; }); // the shard's work
//!         },
//!         Some(_) = b.next() => {}
//!     }
//! }
//! assert_eq!(a.owned().len() + b.owned().len(), 6);
//! # a.leave().await?; b.leave().await?;
//! # Ok(()) }
//! ```

pub(crate) mod assign;
mod error;
mod event;
mod handle;
mod member;
mod read;
mod set;
mod view;
mod wake;

pub use error::PartitionError;
pub use event::{ShardEnd, ShardEvent, ShardLease};
pub use handle::Partition;
pub use set::{PartitionSet, PartitionSetBuilder};
pub use view::{Assignment, Member};
