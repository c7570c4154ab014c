//! Fences checked in Redis: fenced writes to an application's own keys, and a store-backed fence
//! register.
//!
//! * [`FencedKeys`] ("write if the fence is current"): `SET`, `DEL` or any single write command
//!   on a key, from the holder's context (`keys.fenced(&ctx)`); a stale write fails with
//!   [`FencedWriteError::Stale`], carrying [`leasehold::fence::StaleFence`]. The fence lives in a
//!   companion key in the same cluster slot ([`key_slot`]).
//! * [`RedisFences`]: a [`leasehold::fence::FenceRegister`] (highest fence per resource) for a
//!   service that checks fences it receives, such as `leasehold-axum`'s fence layer.
//! * [`sinks`]: their [`FencedSink`](leasehold::fence::FencedSink) adapter.
//!
//! Both follow the one rule of [`leasehold::fence::Admission`], in one Lua script per call, so
//! the check and the write are atomic. The whole module is the crate's `fence` feature (on by
//! default).

mod command;
mod error;
mod keys;
mod lua;
mod register;
mod reply;
pub mod sinks;
mod slot;

pub use command::MAX_COMMAND_ARGS;
pub use error::FencedWriteError;
pub use keys::{Accepted, FencedKeys, FencedWriter};
pub use register::RedisFences;
pub use slot::key_slot;
