//! The ZooKeeper floor: the store's own requests issued raw with its zookeeper-client session —
//! a `get_data` of the slot node, then `create` (absent) or `set_data` at the version read (a
//! free slot) to acquire; `set_data` at the grant's version marking the slot free to release.
//! (The store reads with a multi-read of every slot it may grant, and reads the slot again before
//! a release to check the holder's token.)

use std::time::Duration;

use leasehold::{LockName, store::Token};
use leasehold_zookeeper::ZooKeeperStore;
use zookeeper_client::{Acls, CreateMode, Error};

use crate::BoxError;

/// The data version of a granted floor lock, the expected version of its release.
pub(super) type ZkVersion = i32;

const FREE: &[u8] = b"free";

pub(super) async fn acquire(
    store: &ZooKeeperStore,
    lock: &LockName,
    token: Token,
    _ttl: Duration,
) -> Result<Option<ZkVersion>, BoxError> {
    let client = store.client().await?;
    let path = store.slot_path(lock, 0);
    let data = format!("floor {}", token.to_hex()).into_bytes();
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    match client.get_data(&path).await {
        Ok((held, stat)) => {
            if held != FREE {
                return Ok(None);
            }
            match client.set_data(&path, &data, Some(stat.version)).await {
                Ok(stat) => Ok(Some(stat.version)),
                Err(Error::BadVersion) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        Err(Error::NoNode) => {
            if let Some((parent, _)) = path.rsplit_once('/') {
                match client.mkdir(parent, &options).await {
                    Ok(()) | Err(Error::NodeExists) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            match client.create(&path, &data, &options).await {
                Ok((stat, _)) => Ok(Some(stat.version)),
                Err(Error::NodeExists) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn release(
    store: &ZooKeeperStore,
    lock: &LockName,
    version: ZkVersion,
) -> Result<(), BoxError> {
    let client = store.client().await?;
    match client
        .set_data(&store.slot_path(lock, 0), FREE, Some(version))
        .await
    {
        Ok(_) => Ok(()),
        Err(Error::BadVersion) => Err("floor release found the lock not held".into()),
        Err(e) => Err(e.into()),
    }
}
