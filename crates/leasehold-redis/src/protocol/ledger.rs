//! The period ledger: the scripts that mark a claim started and clear the ledger, the read of
//! its record, and their calls.

use leasehold::store::{PeriodStart, StoreResult};
use leasehold::{Lease, LockName, PeriodRecord};

use crate::record::{LEDGER_FIELDS, LedgerFields, period_record};
use crate::store::RedisStore;

/// ARGV: token. Marks the period claim made with this token started, if the token still holds
/// slot 0's live lease and made the lock's latest claim. Returns 1 (started, also again), else 0.
pub(super) const START_PERIOD: &str = r"
local key, token = KEYS[1], ARGV[1]
local h = redis.call('HMGET', key, 't0', 'e0', 'lt')
if h[1] ~= token or (tonumber(h[2]) or 0) <= now or h[3] ~= token then return 0 end
redis.call('HSET', key, 'ls', '1', 'lr', redis.call('HGET', key, 'la'))
return 1
";

/// No ARGV. Deletes the period ledger's fields (and only those: the slots, their fences, `w`
/// and the hand-off's fields stay) and returns them as they were, in the order of
/// `HMGET lp lf lu la lb ls lt lr` (nil where a field was absent): one script, so the record
/// returned is the record deleted.
pub(super) const CLEAR_PERIOD: &str = r"
local key = KEYS[1]
local fields = {'lp', 'lf', 'lu', 'la', 'lb', 'ls', 'lt', 'lr'}
local old = redis.call('HMGET', key, unpack(fields))
redis.call('HDEL', key, unpack(fields))
return old
";

impl RedisStore {
    /// One start script: marks the claim made with slot 0's `lease` started (`NotHeld`, without
    /// a script, for a lease of another slot).
    pub(crate) async fn start_claim(&self, lease: &Lease) -> StoreResult<PeriodStart> {
        if lease.slot != 0 {
            return Ok(PeriodStart::NotHeld);
        }
        let key = self.key(&lease.lock);
        let mut call = self.scripts().start_period().key(&key);
        call.arg(lease.token.to_hex());
        let started: u8 = self.link().invoke(&call).await?;
        Ok(if started == 1 {
            PeriodStart::Started
        } else {
            PeriodStart::NotHeld
        })
    }

    /// One `HMGET` of the ledger's fields.
    pub(crate) async fn ledger_record(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.key(lock)).arg(&LEDGER_FIELDS[..]);
        let fields: LedgerFields = self.link().query(&cmd).await?;
        Ok(period_record(fields))
    }

    /// One clear script: the ledger's fields read and deleted (`HMGET`, `HDEL`); the slots,
    /// their fences and the hash's TTL stay.
    pub(crate) async fn clear_ledger(&self, lock: &LockName) -> StoreResult<Option<PeriodRecord>> {
        let key = self.key(lock);
        let call = self.scripts().clear_period().key(&key);
        let fields: LedgerFields = self.link().invoke(&call).await?;
        Ok(period_record(fields))
    }
}
