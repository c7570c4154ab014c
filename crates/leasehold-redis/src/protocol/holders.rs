//! Every live holder of a lock: the state script that reads them, the forced release that frees
//! them, and their calls.

use leasehold::store::StoreResult;
use leasehold::{Holder, LockName};

use crate::record::{HolderRow, holders};
use crate::store::RedisStore;

/// ARGV: slots. Returns `{{slot, owner, fence, acquired, expires}, …}` for live slots.
pub(super) const STATE: &str = r"
return among(live_slots(KEYS[1]), tonumber(ARGV[1]))
";

/// ARGV: slots, channel, lock name. Frees every live slot; returns them as `STATE` does.
pub(super) const FORCE_RELEASE: &str = r"
local key = KEYS[1]
local out = among(live_slots(key), tonumber(ARGV[1]))
for _, held in ipairs(out) do
  local s = held[1]
  redis.call('HDEL', key, 't' .. s, 'o' .. s, 'a' .. s, 'e' .. s)
end
if #out > 0 then
  redis.call('HDEL', key, 'w', 'n', 'nu')
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return out
";

impl RedisStore {
    /// One state script: the live holders of `lock` among `slots` slots, ordered by slot.
    pub(crate) async fn live_holders(
        &self,
        lock: &LockName,
        slots: u32,
    ) -> StoreResult<Vec<Holder>> {
        let key = self.key(lock);
        let mut call = self.scripts().state().key(&key);
        call.arg(slots);
        let rows: Vec<HolderRow> = self.link().invoke(&call).await?;
        Ok(holders(rows))
    }

    /// One forced-release script: frees every live slot of `lock` among `slots`, and returns
    /// their holders as they were.
    pub(crate) async fn force_slots(
        &self,
        lock: &LockName,
        slots: u32,
    ) -> StoreResult<Vec<Holder>> {
        let key = self.key(lock);
        let mut call = self.scripts().force_release().key(&key);
        call.arg(slots).arg(self.channel()).arg(lock.as_str());
        let rows: Vec<HolderRow> = self.link().invoke(&call).await?;
        Ok(holders(rows))
    }
}
