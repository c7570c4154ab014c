//! The Lua scripts: one atomic script per store operation, timed by the server's `TIME`.
//!
//! A lock is one hash, `<prefix>:{<lock>}`, with five fields per slot `s`:
//!
//! | field | meaning |
//! |---|---|
//! | `t<s>` | token of the holder (32 hex digits); absent when free |
//! | `o<s>` | owner (node id) of the holder |
//! | `f<s>` | last fence issued for the slot; kept on release |
//! | `a<s>` | acquisition time, epoch ms (server clock) |
//! | `e<s>` | expiry, epoch ms (server clock); a slot whose `e<s>` is not after now is free |
//!
//! and, for the **period ledger** (slot 0 only, set by acquisitions that claim a period and kept
//! across release, expiry and forced release):
//!
//! | field | meaning |
//! |---|---|
//! | `lp` | the latest period id claimed, `floor((now − offset) / length)` of the server clock under the claim's own length and offset |
//! | `lf`, `lu` | that period's window, epoch ms: its start (included) and end (excluded) |
//! | `la` | when it was granted, epoch ms (server clock) |
//! | `lb` | the owner it was granted to |
//! | `lt` | the token of the lease granted with it |
//! | `ls` | `1` once the claim's action started ([`ScriptKind::StartPeriod`]), `0` before |
//! | `lr` | when the latest claim that started was granted, epoch ms (`la` once this one started; kept by a new claim until it starts) |
//!
//! A claim is judged by time, as [`leasehold::store::judge_claim`] says: the record refuses a
//! claim only if a run (`lr`, or `la` of a started claim) was granted at or after the start of
//! the window claimed now; a claim granted there but not started holds the period only while
//! slot 0's lease is live. A record written before `lt`/`ls` existed counts as started (claims
//! then meant runs).
//! While the ledger records a period, the hash's cleanup TTL lasts at least until that period
//! ends (plus the idle retention), so the record cannot vanish while it still refuses claims.
//!
//! and one field for the whole lock: `w`, set by an acquire that found no free slot (`HSETNX`, so
//! repeated failures write, and replicate, nothing new). A release
//! publishes its notification only when `w` is set, and clears it: an uncontended lock never
//! publishes, and a contender that failed before a release always hears of it (scripts run one
//! at a time, so its failed attempt either came before the release, and set `w`, or after it,
//! and set `w` for the next one).
//!
//! and, for **hand-off** (single-slot requests, see [`leasehold::store::HandOff`]):
//!
//! | field | meaning |
//! |---|---|
//! | `q<w>` | elector `w` (16 hex digits) waits: `<since>:<seen>`, epoch ms of its first refusal and of a recent one (refreshed when older than a quarter of [`WAITING_FRESH`](leasehold::store::WAITING_FRESH)) |
//! | `n` | the elector a free lock is kept for |
//! | `nu` | until when, epoch ms (server clock): a single-slot acquire by anyone else before then is refused |
//!
//! A refused single-slot acquire of a waiting elector writes its `q<w>` (only while the hash has
//! fewer than [`MAX_WAITERS`](leasehold::store::MAX_WAITERS) fields, its own fields included, so
//! the line and the release's scan of it stay bounded); a grant deletes the grantee's `q<w>`,
//! `n` and `nu`, and the `q<w>` of an elector whose keep lapsed. A release that keeps the lock
//! for its own elector (`k`) writes `n`/`nu` and does not publish; a release to the longest
//! waiter (`l`), when `w` says someone was refused, reads the hash once, drops stale `q<w>`s,
//! and keeps the lock for the earliest `since` among the others. Versions without hand-off ignore
//! these fields (their scripts read only the slot fields, `w` and the ledger), so a mixed fleet is
//! as safe as before, only less fair.
//!
//! Fences are minted as `max(f<s> + 1, server time in µs)`: they rise by one against the stored
//! counter, and never fall below the server clock in microseconds (ms × 1000 and then some). So a
//! counter that vanished — the idle hash expired, the server restarted without persistence, or an
//! older snapshot was restored — still continues above every fence issued before, as long as the
//! server clock has not stepped back by more than the time since. Lua numbers are doubles, exact up
//! to 2^53, which microseconds since 1970 reach in the year 2255.
//!
//! The hash's own TTL is cleanup only (the latest expiry plus an idle retention); correctness
//! never depends on key expiry.
//!
//! Scripts that look at several slots (group acquire, state, forced release) read the hash once
//! (`HGETALL`) and walk its fields, so their work follows the fields present — the live holders and
//! the slots used before — never the slot count asked for, which is bounded by
//! [`leasehold::limits::MAX_SLOTS`] anyway. A group acquire then takes the lowest slot not held by a live
//! lease, counting up from 0 past the live ones only. The common acquire — one slot, no period, on
//! a hash that never had a second slot nor a period ledger — reads only slot 0's fields
//! (`HMGET`) and skips the scan: about 15 % less Redis CPU per acquire + release (the
//! `server-cpu` benchmark). The layout is the same either way, so hashes written by earlier
//! versions keep working.

use leasehold::store::{HAND_OFF_HOLD, MAX_WAITERS, WAITING_FRESH};
use redis::Script;

/// Shared prelude: the server clock in ms, and integer formatting (Lua numbers are doubles; `%d`
/// prints them without an exponent). Writing after `TIME` needs effects replication, the default
/// since Redis 5.0 (and Valkey); older servers reject the scripts.
const PRELUDE: &str = r"
local clock = redis.call('TIME')
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
local function int(n) return string.format('%d', n) end
";

/// Shared by both acquire paths: the hand-off's line (see the module's table). `ARGV[8]` is the
/// waiting elector's id (`''`: the caller does not wait, and is never recorded).
const WAIT_LINE: &str = r"
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

/// Shared by every script that looks at several slots: `live_slots(key)` reads the hash once and
/// returns its fields as a table, and its live holders as `{{slot, owner, fence, acquired,
/// expires, token}, …}` ordered by slot. The work follows the hash's fields, not any slot count.
const LIVE_SLOTS: &str = r"
local function live_slots(key)
  local flat = redis.call('HGETALL', key)
  local fields = {}
  for i = 1, #flat, 2 do fields[flat[i]] = flat[i + 1] end
  local live = {}
  for name, token in pairs(fields) do
    local s = string.sub(name, 1, 1) == 't' and tonumber(string.sub(name, 2)) or nil
    if s then
      local expires = tonumber(fields['e' .. s]) or 0
      if expires > now then
        live[#live + 1] = {s, fields['o' .. s] or '', tonumber(fields['f' .. s]) or 0,
          tonumber(fields['a' .. s]) or 0, expires, token}
      end
    end
  end
  table.sort(live, function(x, y) return x[1] < y[1] end)
  return live, fields
end
local function among(live, slots)
  local out = {}
  for _, h in ipairs(live) do
    if h[1] < slots then out[#out + 1] = {h[1], h[2], h[3], h[4], h[5]} end
  end
  return out
end
";

/// The lean front of [`ACQUIRE`], for the common case: one slot (`ARGV[4]` = `1`), no period
/// (`ARGV[6]` empty), and a hash that has never had a second slot nor a period ledger (`f1` and
/// `lp` absent; a slot above 0 is only ever granted while slot 0 is live, so any hash that had one
/// has `f1`, which release keeps). Then slot 0 is the whole lock: one `HMGET` of its fields
/// replaces the full scan, and the cleanup TTL can be set from this lease alone. Any other hash
/// falls through to the full script, which decides the same way from all its fields.
const ACQUIRE_ONE: &str = r"
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
const ACQUIRE: &str = r"
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

/// ARGV: token. Marks the period claim made with this token started, if the token still holds
/// slot 0's live lease and made the lock's latest claim. Returns 1 (started, also again), else 0.
const START_PERIOD: &str = r"
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
const CLEAR_PERIOD: &str = r"
local key = KEYS[1]
local fields = {'lp', 'lf', 'lu', 'la', 'lb', 'ls', 'lt', 'lr'}
local old = redis.call('HMGET', key, unpack(fields))
redis.call('HDEL', key, unpack(fields))
return old
";

/// ARGV: slot, token, ttl ms, retention ms. Returns the new expiry, or nil when not held.
const EXTEND: &str = r"
local key, s, token = KEYS[1], ARGV[1], ARGV[2]
local ttl, retention = tonumber(ARGV[3]), tonumber(ARGV[4])
local h = redis.call('HMGET', key, 't' .. s, 'e' .. s)
if h[1] ~= token or (tonumber(h[2]) or 0) <= now then return false end
local expires = now + ttl
redis.call('HSET', key, 'e' .. s, int(expires))
if redis.call('PTTL', key) < ttl + retention then redis.call('PEXPIRE', key, int(ttl + retention)) end
return expires
";

/// ARGV: slot, token, linger ms, channel, lock name, hand-off (`''` anyone, `k` keep for the
/// elector `ARGV[7]`, `l` keep for the longest waiter other than `ARGV[7]`; slot 0 only) and the
/// releasing elector's id. Returns 2 if released and kept for another elector, 1 if released
/// (or shortened), else 0.
const RELEASE: &str = r"
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
const LONGEST_WAITER: &str = r"
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

/// ARGV: slots. Returns `{{slot, owner, fence, acquired, expires}, …}` for live slots.
const STATE: &str = r"
return among(live_slots(KEYS[1]), tonumber(ARGV[1]))
";

/// ARGV: slots, channel, lock name. Frees every live slot; returns them as `STATE` does.
const FORCE_RELEASE: &str = r"
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

/// The seven scripts a [`RedisStore`](crate::RedisStore) runs, each with `KEYS[1]` = the lock's
/// hash ([`RedisStore::key`](crate::RedisStore::key)). They are sent with `EVALSHA` and loaded
/// on `NOSCRIPT` (after a server restart or `SCRIPT FLUSH`) by [`redis::Script`].
///
/// Exposed so benchmarks and operators can issue exactly what the store issues.
///
/// ```
/// let scripts = leasehold_redis::Scripts::new();
/// assert_eq!(scripts.acquire().get_hash().len(), 40);
/// assert!(scripts.source(leasehold_redis::ScriptKind::Release).contains("PUBLISH"));
/// ```
#[derive(Debug, Clone)]
pub struct Scripts {
    acquire: Script,
    extend: Script,
    release: Script,
    state: Script,
    force_release: Script,
    start_period: Script,
    clear_period: Script,
}

/// Names one of the [`Scripts`].
///
/// ```
/// use leasehold_redis::{ScriptKind, Scripts};
/// assert!(Scripts::new().source(ScriptKind::Acquire).contains("TIME"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScriptKind {
    /// ARGV: token, owner, ttl ms, slots, retention ms, period length ms, period offset ms,
    /// waiting elector → `{slot, fence, acquired ms, expires ms, ''}` or nil.
    Acquire,
    /// ARGV: slot, token, ttl ms, retention ms → new expiry ms, or nil when not held.
    Extend,
    /// ARGV: slot, token, linger ms, channel, lock name, hand-off (`''`, `k`, `l`), releasing
    /// elector → 2 released and kept for another elector, 1 released (or shortened), 0 not held.
    Release,
    /// ARGV: slots → `{{slot, owner, fence, acquired ms, expires ms}, …}` of live slots.
    State,
    /// ARGV: slots, channel, lock name → the live slots as they were, now freed.
    ForceRelease,
    /// ARGV: token → 1 when the period claim made with this live lease is now marked started
    /// (also again), 0 when the token no longer holds it.
    StartPeriod,
    /// No ARGV → the period ledger's fields as they were (`lp lf lu la lb ls lt lr`, nil where
    /// absent), now deleted; nothing else of the hash changes.
    ClearPeriod,
}

impl Default for Scripts {
    fn default() -> Self {
        Self::new()
    }
}

impl Scripts {
    /// Builds the scripts (hashing them; nothing is sent).
    pub fn new() -> Self {
        let make = |kind| Script::new(&full_source(kind));
        Self {
            acquire: make(ScriptKind::Acquire),
            extend: make(ScriptKind::Extend),
            release: make(ScriptKind::Release),
            state: make(ScriptKind::State),
            force_release: make(ScriptKind::ForceRelease),
            start_period: make(ScriptKind::StartPeriod),
            clear_period: make(ScriptKind::ClearPeriod),
        }
    }

    /// The acquire script ([`ScriptKind::Acquire`]).
    ///
    /// ```
    /// assert_eq!(leasehold_redis::Scripts::new().acquire().get_hash().len(), 40);
    /// ```
    pub fn acquire(&self) -> &Script {
        &self.acquire
    }
    /// The extend script ([`ScriptKind::Extend`]).
    ///
    /// ```
    /// assert_eq!(leasehold_redis::Scripts::new().extend().get_hash().len(), 40);
    /// ```
    pub fn extend(&self) -> &Script {
        &self.extend
    }
    /// The release script ([`ScriptKind::Release`]).
    ///
    /// ```
    /// assert_eq!(leasehold_redis::Scripts::new().release().get_hash().len(), 40);
    /// ```
    pub fn release(&self) -> &Script {
        &self.release
    }
    /// The state script ([`ScriptKind::State`]).
    ///
    /// ```
    /// assert_eq!(leasehold_redis::Scripts::new().state().get_hash().len(), 40);
    /// ```
    pub fn state(&self) -> &Script {
        &self.state
    }
    /// The forced-release script ([`ScriptKind::ForceRelease`]).
    ///
    /// ```
    /// assert_eq!(leasehold_redis::Scripts::new().force_release().get_hash().len(), 40);
    /// ```
    pub fn force_release(&self) -> &Script {
        &self.force_release
    }
    /// The script marking a period claim started ([`ScriptKind::StartPeriod`]).
    ///
    /// ```
    /// assert_eq!(leasehold_redis::Scripts::new().start_period().get_hash().len(), 40);
    /// ```
    pub fn start_period(&self) -> &Script {
        &self.start_period
    }
    /// The script deleting a lock's period ledger ([`ScriptKind::ClearPeriod`]).
    ///
    /// ```
    /// assert_eq!(leasehold_redis::Scripts::new().clear_period().get_hash().len(), 40);
    /// ```
    pub fn clear_period(&self) -> &Script {
        &self.clear_period
    }

    /// The full Lua source of a script (prelude and helpers included), e.g. to load it by hand.
    ///
    /// ```
    /// use leasehold_redis::{ScriptKind, Scripts};
    /// assert!(Scripts::new().source(ScriptKind::Extend).contains("redis.call('TIME')"));
    /// ```
    pub fn source(&self, kind: ScriptKind) -> String {
        full_source(kind)
    }
}

/// The hand-off's constants, from the core's: the hold and the freshness in ms, the line's bound.
fn hand_off_constants() -> String {
    format!(
        "local HOLD, FRESH, MAX_WAITERS = {}, {}, {}\n",
        HAND_OFF_HOLD.as_millis(),
        WAITING_FRESH.as_millis(),
        MAX_WAITERS
    )
}

/// The prelude, the helpers a script uses, and its body.
fn full_source(kind: ScriptKind) -> String {
    let hand_off = hand_off_constants();
    match kind {
        ScriptKind::Acquire => {
            format!("{PRELUDE}{hand_off}{WAIT_LINE}{ACQUIRE_ONE}{LIVE_SLOTS}{ACQUIRE}")
        }
        ScriptKind::Extend => format!("{PRELUDE}{EXTEND}"),
        ScriptKind::Release => format!("{PRELUDE}{hand_off}{LONGEST_WAITER}{RELEASE}"),
        ScriptKind::State => format!("{PRELUDE}{LIVE_SLOTS}{STATE}"),
        ScriptKind::ForceRelease => format!("{PRELUDE}{LIVE_SLOTS}{FORCE_RELEASE}"),
        ScriptKind::StartPeriod => format!("{PRELUDE}{START_PERIOD}"),
        // No clock: the clear reads and writes nothing timed.
        ScriptKind::ClearPeriod => CLEAR_PERIOD.to_owned(),
    }
}
