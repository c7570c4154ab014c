//! The scripts as one public value: [`Scripts`] builds each script from the shared prelude, the
//! helpers it uses and its body, and [`ScriptKind`] names them.

use leasehold::store::{HAND_OFF_HOLD, MAX_WAITERS, WAITING_FRESH};
use redis::Script;

use super::acquire::{ACQUIRE, ACQUIRE_ONE, WAIT_LINE};
use super::holders::{FORCE_RELEASE, STATE};
use super::ledger::{CLEAR_PERIOD, START_PERIOD};
use super::release::{EXTEND, LONGEST_WAITER, RELEASE};

/// Shared prelude: the server clock in ms, and integer formatting (Lua numbers are doubles; `%d`
/// prints them without an exponent). Writing after `TIME` needs effects replication, the default
/// since Redis 5.0 (and Valkey); older servers reject the scripts.
const PRELUDE: &str = r"
local clock = redis.call('TIME')
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
local function int(n) return string.format('%d', n) end
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

/// The seven scripts a [`RedisStore`](crate::RedisStore) runs, each with `KEYS[1]` = the lock's
/// hash ([`RedisStore::key`](crate::RedisStore::key)); the extend script takes one such key per
/// lease it renews. They are sent with `EVALSHA` and loaded on `NOSCRIPT` (after a server restart or `SCRIPT FLUSH`) by [`redis::Script`].
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
    /// KEYS: one lock hash per lease; ARGV: retention ms, then slot, token, ttl ms per key →
    /// the new expiry ms of each lease, 0 where it is not held. One call renews every lease a
    /// process holds.
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
