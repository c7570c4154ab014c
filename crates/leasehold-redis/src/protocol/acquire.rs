//! Acquisition: the acquire script, with its lean front for one slot, and its call.

use leasehold::store::{AcquireRequest, Acquisition, StoreResult, WaiterId};

use crate::record::{AcquireReply, acquisition, ms_at_least_1};
use crate::store::RedisStore;

/// Shared by both acquire paths: the hand-off's line (see the `record` module's table). `ARGV[8]` is the
/// waiting elector's id (`''`: the caller does not wait, and is never recorded).
pub(super) const WAIT_LINE: &str = r"
local function kept_from(n, nu, who)
  return n and n ~= who and (tonumber(nu) or 0) > now
end
local function refuse(key, who, rec)
  if who == '' then
    redis.call('HSETNX', key, 'w', '1')
    return false
  end
  local since, seen
  if rec then
    local a, b = string.match(rec, '^(%d+):(%d+)$')
    since, seen = tonumber(a), tonumber(b)
  end
  if since and now - seen < FRESH / 4 then
    redis.call('HSETNX', key, 'w', '1')
    return false
  end
  if not since or now - seen >= FRESH then since = now end
  if rec or redis.call('HLEN', key) < MAX_WAITERS then
    redis.call('HSET', key, 'w', '1', 'q' .. who, int(since) .. ':' .. int(now))
  else
    redis.call('HSETNX', key, 'w', '1')
  end
  return false
end
local function granted_to(key, n, nu, who)
  local gone = {'n', 'nu'}
  if who ~= '' then gone[#gone + 1] = 'q' .. who end
  if n and n ~= who and (tonumber(nu) or 0) <= now then gone[#gone + 1] = 'q' .. n end
  redis.call('HDEL', key, unpack(gone))
end
";

/// The lean front of [`ACQUIRE`], for the common case: one slot (`ARGV[4]` = `1`), no period
/// (`ARGV[6]` empty), and a hash that has never had a second slot nor a period ledger (`f1` and
/// `lp` absent; a slot above 0 is only ever granted while slot 0 is live, so any hash that had one
/// has `f1`, which release keeps). Then slot 0 is the whole lock: one `HMGET` of its fields
/// replaces the full scan, and the cleanup TTL can be set from this lease alone. Any other hash
/// falls through to the full script, which decides the same way from all its fields.
pub(super) const ACQUIRE_ONE: &str = r"
if ARGV[4] == '1' and ARGV[6] == '' then
  local key, token, who = KEYS[1], ARGV[1], ARGV[8] or ''
  local h = redis.call('HMGET', key, 't0', 'e0', 'f0', 'a0', 'f1', 'lp', 'n', 'nu', 'q' .. who)
  if not (h[5] or h[6]) then
    local e = tonumber(h[2]) or 0
    if h[1] and e > now then
      if h[1] == token then return {0, tonumber(h[3]) or 0, tonumber(h[4]) or 0, e, '', 0, 0, 0} end
      return refuse(key, who, h[9])
    end
    if kept_from(h[7], h[8], who) then return refuse(key, who, h[9]) end
    local ttl = tonumber(ARGV[3])
    local fence = math.max((tonumber(h[3]) or 0) + 1, clock[1] * 1000000 + clock[2])
    redis.call('HSET', key, 't0', token, 'o0', ARGV[2], 'f0', int(fence), 'a0', int(now),
      'e0', int(now + ttl))
    redis.call('PEXPIRE', key, int(ttl + tonumber(ARGV[5])))
    if h[7] or (who ~= '' and h[9]) then granted_to(key, h[7], h[8], who) end
    return {0, fence, now, now + ttl, '', 0, 0, 0}
  end
end
";

/// ARGV: token, owner, ttl ms, slots, retention ms, for a period claim period length ms and
/// offset ms (empty strings otherwise), and the waiting elector's id (`''` if none; used for
/// single-slot requests only). Returns `{slot, fence, acquired, expires, '', 0, 0, 0}`, nil when
/// held, or `{-1, period, at, from, by, until, started, ran}` (the ledger's record) when the
/// period claimed already ran.
///
/// One read of the hash finds a live slot this token already holds (a retried request: the
/// same lease back, unchanged), the ledger, the lowest slot no live lease holds and its last
/// fence, and the latest live expiry (for the cleanup TTL).
pub(super) const ACQUIRE: &str = r"
local key, token, owner = KEYS[1], ARGV[1], ARGV[2]
local ttl, slots, retention = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local plen, poff = tonumber(ARGV[6]), tonumber(ARGV[7])
local who = slots == 1 and (ARGV[8] or '') or ''
local expires = now + ttl
local live, fields = live_slots(key)
local latest, busy = expires, {}
for _, h in ipairs(live) do
  if h[1] < slots then
    if h[6] == token then return {h[1], h[3], h[4], h[5], '', 0, 0, 0} end
    busy[h[1]] = true
  end
  if h[5] > latest then latest = h[5] end
end
local p, ran
if plen then
  -- floor((now - offset) / length), corrected to be exact (products are exact below 2^53)
  local x = now - poff
  p = math.floor(x / plen)
  if p * plen > x then p = p - 1 elseif (p + 1) * plen <= x then p = p + 1 end
  local from, at = p * plen + poff, tonumber(fields['la'])
  local started = at and (fields['ls'] == '1' or not fields['lt'])
  ran = tonumber(fields['lr'])
  if started and (not ran or at > ran) then ran = at end
  if ran and ran >= from then
    return {-1, tonumber(fields['lp']) or 0, at or ran, tonumber(fields['lf']) or at or ran,
      fields['lb'] or '', tonumber(fields['lu']) or at or ran, started and 1 or 0, ran}
  end
  local ends = (p + 1) * plen + poff
  if ends > latest then latest = ends end
end
local free = 0
while busy[free] do free = free + 1 end
if free >= slots or (slots == 1 and kept_from(fields['n'], fields['nu'], who)) then
  return refuse(key, who, fields['q' .. who])
end
local last = tonumber(fields['f' .. free]) or 0
local fence = math.max(last + 1, clock[1] * 1000000 + clock[2])
redis.call('HSET', key, 't' .. free, token, 'o' .. free, owner, 'f' .. free, int(fence),
  'a' .. free, int(now), 'e' .. free, int(expires))
if p then
  redis.call('HSET', key, 'lp', int(p), 'lf', int(p * plen + poff), 'lu', int((p + 1) * plen + poff),
    'la', int(now), 'lb', owner, 'lt', token, 'ls', '0')
  if ran then redis.call('HSET', key, 'lr', int(ran)) end
end
if slots == 1 and (fields['n'] or (who ~= '' and fields['q' .. who])) then
  granted_to(key, fields['n'], fields['nu'], who)
end
-- The TTL must outlive the ledger's periods: a claim makes it last past its period's end, and
-- on a hash with a ledger (an earlier claim, maybe of a longer period that ends later, whose
-- run the new claim keeps in `lr`) it only ever lengthens it.
local keep = latest - now + retention
if not fields['lp'] or redis.call('PTTL', key) < keep then
  redis.call('PEXPIRE', key, int(keep))
end
return {free, fence, now, expires, '', 0, 0, 0}
";

impl RedisStore {
    /// One acquire script for `req`, over `slots` slots (at least 1).
    pub(crate) async fn acquire_slot(
        &self,
        req: &AcquireRequest,
        slots: u32,
    ) -> StoreResult<Acquisition> {
        let key = self.key(&req.lock);
        let mut call = self.scripts().acquire().key(&key);
        call.arg(req.token.to_hex())
            .arg(req.owner.as_ref())
            .arg(ms_at_least_1(req.ttl))
            .arg(slots)
            .arg(self.retention_ms());
        match req.period {
            Some(p) => call.arg(p.length_ms()).arg(p.offset_ms()),
            None => call.arg("").arg(""),
        };
        call.arg(req.waiter.map(WaiterId::to_hex).unwrap_or_default());
        let answer: Option<AcquireReply> = self.link().invoke(&call).await?;
        Ok(acquisition(req, answer))
    }
}
