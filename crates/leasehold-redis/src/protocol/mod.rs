//! The protocol room: every request this store sends to Redis, in one place.
//!
//! Every change to a lock is one Lua script on the lock's hash (`KEYS[1]` = `<prefix>:{<lock>}`,
//! see the `keys` module; its fields are in the `record` module), sent with `EVALSHA` and loaded
//! on `NOSCRIPT` ([`Scripts`]). Redis runs a script alone, start to end, so each one is atomic;
//! every script but the ledger's clear reads the server's clock (`TIME`) first.
//!
//! | operation | request | atomic because |
//! |---|---|---|
//! | acquire | [`ScriptKind::Acquire`]: one slot without a period on a plain hash, `HMGET` of slot 0's fields; else `HGETALL`; then `HSET` of the slot (and of the ledger with a period), `PEXPIRE`; a refusal `HSETNX w` (or `HSET` of the waiter's `q<w>`) | one script |
//! | extend (one lease, or every lease the process renews on a beat) | [`ScriptKind::Extend`]: per lease `HMGET t<s> e<s>`, `HSET e<s>`, `PEXPIRE` | one script |
//! | release | [`ScriptKind::Release`]: `HMGET t<s> e<s> w`, `HDEL` of the slot's holder fields (with a linger only `HSET e<s>`; with a hand-off `HSET n nu`, the longest waiter found by `HGETALL`), `PUBLISH <prefix>:released <lock>` when `w` is set | one script |
//! | start a period | [`ScriptKind::StartPeriod`]: `HMGET t0 e0 lt`, `HSET ls lr` | one script |
//! | period record | `HMGET lp lf lu la lb ls lt lr` | one read |
//! | clear the ledger | [`ScriptKind::ClearPeriod`]: `HMGET` and `HDEL` of the ledger's fields | one script |
//! | state | [`ScriptKind::State`]: `HGETALL` | one script (a read) |
//! | force release | [`ScriptKind::ForceRelease`]: `HGETALL`, `HDEL` of every live slot's holder fields, `PUBLISH` | one script |
//! | list | `SCAN <cursor> MATCH <prefix>:{*} COUNT n`, then [`ScriptKind::State`] on each hash found (see the `list` module) | each lock read in one script |
//! | open | `PING`, then `CONFIG GET maxmemory-policy` (a warning unless `noeviction`) | — |
//! | notifications | on a connection of their own, `SUBSCRIBE <prefix>:released` and a `PING` every 2 s (see the `watch` module) | — |
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

mod acquire;
mod holders;
mod ledger;
mod open;
mod release;
mod scripts;

pub use scripts::{ScriptKind, Scripts};

use crate::store::RedisStore;

impl RedisStore {
    /// The idle retention in whole milliseconds: how long a lock's hash outlives its latest
    /// expiry (the scripts' `retention` argument).
    fn retention_ms(&self) -> u64 {
        u64::try_from(self.options().idle_retention().as_millis()).unwrap_or(u64::MAX)
    }
}
