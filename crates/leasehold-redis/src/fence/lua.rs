//! The fence scripts: the admission rule in Lua, alone (the register) or with the write it guards.
//!
//! A fence key holds the highest fence admitted, as canonical decimal text. Fences are compared
//! as text (shorter is lower, then byte order), so every `u64` compares exactly: Lua numbers are
//! doubles, exact only up to 2^53.

use redis::Script;

/// `admit(fence_key, fence)`: whether `fence` may be admitted, and the fence key's value before
/// (`false` when absent). Returns `nil, value` when the key holds something that is not a fence.
/// `record(fence_key, fence, previous)` stores the admitted fence (nothing when it is the same).
const ADMIT: &str = r"
local function admit(fence_key, fence)
  local v = redis.call('GET', fence_key)
  if not v then return true, false end
  if v ~= '0' and not string.match(v, '^[1-9]%d*$') then return nil, v end
  if #fence < #v or (#fence == #v and fence < v) then return false, v end
  return true, v
end
local function record(fence_key, fence, previous)
  if previous ~= fence then redis.call('SET', fence_key, fence) end
end
local function not_a_fence(fence_key)
  return redis.error_reply('LEASEHOLD the fence key ' .. fence_key ..
    ' holds something other than a fence; delete it or choose another key')
end
";

/// KEYS[1]: the fence key. ARGV[1]: the fence. Returns `{1, previous or nil}` when admitted,
/// `{0, highest}` when a higher fence was admitted before.
const REGISTER: &str = r"
local ok, previous = admit(KEYS[1], ARGV[1])
if ok == nil then return not_a_fence(KEYS[1]) end
if not ok then return {0, previous} end
record(KEYS[1], ARGV[1], previous)
return {1, previous}
";

/// KEYS[1]: the key written, KEYS[2]: its fence key. ARGV[1]: the fence, ARGV[2]: the command,
/// ARGV[3…]: its arguments after the key. Returns `{1, previous or nil, reply}` when admitted
/// (the command ran, then the fence was recorded: a command that fails records nothing),
/// `{0, highest}` when a higher fence was admitted before (nothing ran).
const WRITE: &str = r"
local ok, previous = admit(KEYS[2], ARGV[1])
if ok == nil then return not_a_fence(KEYS[2]) end
if not ok then return {0, previous} end
local reply = redis.call(ARGV[2], KEYS[1], unpack(ARGV, 3))
record(KEYS[2], ARGV[1], previous)
return {1, previous, reply}
";

/// The two fence scripts, sent with `EVALSHA` and loaded on `NOSCRIPT` like the store's own.
#[derive(Debug, Clone)]
pub(crate) struct FenceScripts {
    pub(crate) register: Script,
    pub(crate) write: Script,
}

impl FenceScripts {
    pub(crate) fn new() -> Self {
        Self {
            register: Script::new(&format!("{ADMIT}{REGISTER}")),
            write: Script::new(&format!("{ADMIT}{WRITE}")),
        }
    }
}
