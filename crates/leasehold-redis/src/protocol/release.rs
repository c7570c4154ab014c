//! A holder's own changes: the extend and release scripts (release with a linger, and with a
//! hand-off to a waiting elector), and their calls.

use std::time::Duration;

use leasehold::Lease;
use leasehold::store::{Extension, HandOff, Release, ReleasedTo, StoreResult, WaiterId};

use leasehold::store::{ceil_millis, time_at_ms};

use crate::record::ms_at_least_1;
use crate::store::RedisStore;

/// KEYS: the hash of each lease; ARGV: retention ms, then slot, token and ttl ms for each key in
/// turn. Returns the new expiry of each lease, or 0 where it is not held (a key may repeat).
pub(super) const EXTEND: &str = r"
local retention = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local s, token, ttl = ARGV[3 * i - 1], ARGV[3 * i], tonumber(ARGV[3 * i + 1])
  local h = redis.call('HMGET', key, 't' .. s, 'e' .. s)
  if h[1] ~= token or (tonumber(h[2]) or 0) <= now then
    out[i] = 0
  else
    local expires = now + ttl
    redis.call('HSET', key, 'e' .. s, int(expires))
    if redis.call('PTTL', key) < ttl + retention then redis.call('PEXPIRE', key, int(ttl + retention)) end
    out[i] = expires
  end
end
return out
";

/// ARGV: slot, token, linger ms, channel, lock name, hand-off (`''` anyone, `k` keep for the
/// elector `ARGV[7]`, `l` keep for the longest waiter other than `ARGV[7]`; slot 0 only) and the
/// releasing elector's id. Returns 2 if released and kept for another elector, 1 if released
/// (or shortened), else 0.
pub(super) const RELEASE: &str = r"
local key, s, token = KEYS[1], ARGV[1], ARGV[2]
local linger = tonumber(ARGV[3])
local h = redis.call('HMGET', key, 't' .. s, 'e' .. s, 'w')
local e = tonumber(h[2]) or 0
if h[1] ~= token or e <= now then return 0 end
if linger > 0 then
  if now + linger < e then redis.call('HSET', key, 'e' .. s, int(now + linger)) end
  return 1
end
local to, me = s == '0' and (ARGV[6] or '') or '', ARGV[7] or ''
if to == 'k' then
  redis.call('HDEL', key, 't0', 'o0', 'a0', 'e0')
  redis.call('HSET', key, 'n', me, 'nu', int(now + HOLD))
  return 1
end
local next, others = nil, 0
if to == 'l' and h[3] then next, others = longest_waiter(key, me) end
if others > 0 then
  -- Waiters besides the one kept for still wait: the next release looks for them again.
  redis.call('HDEL', key, 't' .. s, 'o' .. s, 'a' .. s, 'e' .. s)
else
  redis.call('HDEL', key, 't' .. s, 'o' .. s, 'a' .. s, 'e' .. s, 'w')
end
if h[3] then redis.call('PUBLISH', ARGV[4], ARGV[5]) end
if next then
  redis.call('HSET', key, 'n', next, 'nu', int(now + HOLD))
  return 2
end
return 1
";

/// The release's choice of the longest waiter: one read of the hash; drops the `q<w>` fields
/// gone stale; returns the id with the earliest `since` other than `me` (or nil), and how many
/// other fresh waiters there are besides it.
pub(super) const LONGEST_WAITER: &str = r"
local function longest_waiter(key, me)
  local flat = redis.call('HGETALL', key)
  local best, first, stale, fresh = nil, nil, {}, 0
  for i = 1, #flat, 2 do
    local name = flat[i]
    if string.byte(name, 1) == 113 and #name > 1 then
      local a, b = string.match(flat[i + 1], '^(%d+):(%d+)$')
      local since, seen = tonumber(a), tonumber(b)
      local who = string.sub(name, 2)
      if not seen or now - seen >= FRESH then
        stale[#stale + 1] = name
      else
        fresh = fresh + 1
        if who ~= me and (not first or since < first) then best, first = who, since end
      end
    end
  end
  if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
  return best, fresh - (best and 1 or 0)
end
";

impl RedisStore {
    /// One extend script for every entry: each lease ends its `ttl` after the server's now, if
    /// it is still held (one `EVALSHA`, however many leases).
    pub(crate) async fn extend_leases(
        &self,
        leases: &[(Lease, Duration)],
    ) -> StoreResult<Vec<Extension>> {
        if leases.is_empty() {
            return Ok(Vec::new());
        }
        let mut call = self.scripts().extend().prepare_invoke();
        call.arg(self.retention_ms());
        for (lease, ttl) in leases {
            call.key(self.key(&lease.lock))
                .arg(lease.slot)
                .arg(lease.token.to_hex())
                .arg(ms_at_least_1(*ttl));
        }
        let expires: Vec<u64> = self.link().invoke(&call).await?;
        Ok(expires
            .into_iter()
            .map(|e| match e {
                0 => Extension::NotHeld,
                e => Extension::Extended {
                    expires_at: time_at_ms(e),
                },
            })
            .collect())
    }

    /// One release script: frees `lease` (or shortens it to `linger`), keeping the lock for the
    /// elector `to` names.
    pub(crate) async fn release_lease(
        &self,
        lease: &Lease,
        linger: Duration,
        to: HandOff,
    ) -> StoreResult<ReleasedTo> {
        let key = self.key(&lease.lock);
        let mut call = self.scripts().release().key(&key);
        let mode = match to {
            HandOff::Keep(_) => "k",
            HandOff::Longest(_) => "l",
            _ => "",
        };
        call.arg(lease.slot)
            .arg(lease.token.to_hex())
            .arg(ceil_millis(linger))
            .arg(self.channel())
            .arg(lease.lock.as_str())
            .arg(mode)
            .arg(to.waiter().map(WaiterId::to_hex).unwrap_or_default());
        let released: u8 = self.link().invoke(&call).await?;
        Ok(match released {
            0 => ReleasedTo::new(Release::NotHeld, false),
            kept => ReleasedTo::new(Release::Released, kept == 2),
        })
    }
}
