//! `FencedKeys`: "write if the fence is current" for an application's own Redis keys.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::LeaderContext;
use leasehold::fence::{ResourceName, StaleFence};
use redis::{Client, ToRedisArgs, ToSingleRedisArg, Value};

use super::command::{KeySpec, MAX_COMMAND_ARGS, command_name};
use super::error::FencedWriteError;
use super::lua::FenceScripts;
use super::reply::{Outcome, outcome, read_fence};
use super::slot::fence_key;
use crate::link::Link;
use crate::options::{RedisOptions, RedisOptionsError};
use leasehold::store::ceil_millis;

/// Fenced writes to an application's own Redis keys, by the one rule of
/// [`Admission`](leasehold::fence::Admission) (the key is the resource).
///
/// Each write is one Lua script (`EVALSHA`, loaded on `NOSCRIPT`): it reads the key's fence key,
/// refuses a lower fence with [`FencedWriteError::Stale`] (carrying the highest fence), and
/// otherwise runs the command on the key and records the fence — atomically, as Redis runs one
/// script at a time.
///
/// The fence is kept in a companion key in the **same cluster slot** as the key
/// ([`fence_key`](Self::fence_key)): `<key>:<prefix>:fence` for a key with a hash tag
/// (`orders:{42}:total`), `<prefix>:fence:{<key>}` otherwise. Fence keys have no expiry, and
/// outlive their key's deletion (a stale holder must not re-create a deleted key): delete a
/// fence key only when no holder of the lock that writes the key can still be running.
///
/// Get one from a store ([`RedisStore::fenced_keys`](crate::RedisStore::fenced_keys), same
/// server and prefix) or for another server ([`FencedKeys::from_client`]); it is a cheap clone.
///
/// ```no_run
/// # async fn demo(ctx: &leasehold::LeaderContext) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use leasehold_redis::RedisStore;
///
/// let store = RedisStore::connect("redis://127.0.0.1:6379").await?;
/// let keys = store.fenced_keys();
/// // Inside the leader's action, with its context:
/// keys.fenced(ctx).set("report:latest", "2024-06-01.csv", Some(Duration::from_secs(86_400))).await?;
/// keys.fenced(ctx).command("report:runs", "INCRBY", 1).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FencedKeys {
    link: Arc<Link>,
    prefix: Arc<str>,
    scripts: FenceScripts,
    commands: Arc<Mutex<HashMap<String, KeySpec>>>,
}

impl std::fmt::Debug for FencedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedKeys")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A fenced write that ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The key's highest fence before this write (`None` for its first fenced write).
    pub previous: Option<u64>,
    /// The command's reply (`Okay` for `SET`, the count for `DEL`, …).
    pub reply: Value,
}

/// Writes with one fence: from [`FencedKeys::fenced`] (a holder's context) or
/// [`FencedKeys::fenced_by_fence`] (a fence given by hand).
#[derive(Debug, Clone, Copy)]
pub struct FencedWriter<'a> {
    keys: &'a FencedKeys,
    fence: u64,
}

impl FencedKeys {
    pub(crate) fn new(link: Arc<Link>, prefix: &str) -> Self {
        Self {
            link,
            prefix: prefix.into(),
            scripts: FenceScripts::new(),
            commands: Arc::default(),
        }
    }

    /// Fenced writes on the server of `client` (when the data is not on the lock's server),
    /// with fence keys under `options`' prefix and its timeouts. Nothing is contacted until the
    /// first write.
    ///
    /// # Errors
    ///
    /// [`RedisOptionsError`] for invalid options.
    ///
    /// ```
    /// use leasehold_redis::RedisOptions;
    /// use leasehold_redis::fence::FencedKeys;
    ///
    /// let client = redis::Client::open("redis://data.internal:6379")?;
    /// let keys = FencedKeys::from_client(client, RedisOptions::default().with_prefix("billing"))?;
    /// assert_eq!(keys.fence_key("invoices:7")?, "billing:fence:{invoices:7}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_client(client: Client, options: RedisOptions) -> Result<Self, RedisOptionsError> {
        options.validate()?;
        let link = Link::for_client(client, &options);
        Ok(Self::new(Arc::new(link), &options.prefix))
    }

    /// Writes with the fence of `ctx`, the holder's context: the entry of every fenced write.
    pub fn fenced(&self, ctx: &LeaderContext) -> FencedWriter<'_> {
        self.fenced_by_fence(ctx.fence())
    }

    /// Writes with `fence`, given by hand rather than by a holder's context (a job started with
    /// `$LEASEHOLD_FENCE`, a fence that came with a request, a test).
    pub fn fenced_by_fence(&self, fence: u64) -> FencedWriter<'_> {
        FencedWriter { keys: self, fence }
    }

    /// Writes with the fence of `ctx`.
    #[deprecated(note = "use `FencedKeys::fenced(ctx)`")]
    pub fn holder(&self, ctx: &LeaderContext) -> FencedWriter<'_> {
        self.fenced(ctx)
    }

    /// Writes with `fence`, given by hand.
    #[deprecated(note = "use `FencedKeys::fenced_by_fence(fence)`")]
    pub fn with_fence(&self, fence: u64) -> FencedWriter<'_> {
        self.fenced_by_fence(fence)
    }

    /// The key that keeps `key`'s highest fence, in `key`'s cluster slot.
    ///
    /// # Errors
    ///
    /// [`FencedWriteError::Key`] when `key` is not a valid resource name,
    /// [`FencedWriteError::NoSharedSlot`] when it has no hash tag but contains `}`.
    ///
    /// ```
    /// # let store = leasehold_redis::RedisStore::connect_lazy("redis://h", Default::default())?;
    /// let keys = store.fenced_keys();
    /// assert_eq!(keys.fence_key("orders:42")?, "leasehold:fence:{orders:42}");
    /// assert_eq!(keys.fence_key("orders:{42}:total")?, "orders:{42}:total:leasehold:fence");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fence_key(&self, key: &str) -> Result<String, FencedWriteError> {
        self.target(key).map(|(_, fence)| fence)
    }

    /// The highest fence written to `key` so far (`None` before its first fenced write).
    ///
    /// # Errors
    ///
    /// As [`fence_key`](Self::fence_key) for the key; [`FencedWriteError::Store`] when Redis
    /// cannot be reached or the fence key holds something else.
    ///
    /// # Cancel safety
    ///
    /// A read only; cancelling it changes nothing.
    pub async fn highest(&self, key: &str) -> Result<Option<u64>, FencedWriteError> {
        let (_, fence_key) = self.target(key)?;
        Ok(read_fence(&self.link, &fence_key).await?)
    }

    /// The validated key and its fence key.
    fn target(&self, key: &str) -> Result<(ResourceName, String), FencedWriteError> {
        let resource = ResourceName::new(key)?;
        let fence = fence_key(&self.prefix, key).ok_or_else(|| FencedWriteError::NoSharedSlot {
            key: key.to_owned(),
        })?;
        Ok((resource, fence))
    }

    /// Runs a plain command on the keys' connection (for the sink adapter's reads).
    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
    ) -> leasehold::store::StoreResult<T> {
        self.link.query(cmd).await
    }

    /// What the server says about `name` (asked once per name and remembered).
    async fn key_spec(&self, name: &str) -> Result<KeySpec, FencedWriteError> {
        let known = self
            .commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned();
        if let Some(spec) = known {
            return Ok(spec);
        }
        let mut info = redis::cmd("COMMAND");
        info.arg("INFO").arg(name);
        let reply: Value = self.link.query(&info).await?;
        let spec = KeySpec::from_reply(&reply)
            .ok_or_else(|| FencedWriteError::command(name, "Redis does not know this command"))?;
        self.commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned(), spec.clone());
        Ok(spec)
    }
}

impl FencedWriter<'_> {
    /// The fence these writes carry.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// `SET key value`, with `PX` when `expiry` is given (rounded up to whole milliseconds), if
    /// the fence is current.
    ///
    /// # Errors
    ///
    /// [`FencedWriteError::Stale`] when a higher fence was written to the key before (nothing is
    /// written); [`FencedWriteError::Command`] for an expiry of zero; as
    /// [`FencedKeys::fence_key`] for the key; [`FencedWriteError::Store`] when Redis cannot be
    /// reached or refuses the command (`WRONGTYPE`, …).
    ///
    /// # Cancel safety
    ///
    /// The script runs whole or not at all; cancelling leaves it unknown which, as for any
    /// command sent before the cancellation.
    pub async fn set(
        &self,
        key: &str,
        value: impl ToSingleRedisArg,
        expiry: Option<Duration>,
    ) -> Result<Accepted, FencedWriteError> {
        let mut args = value.to_redis_args();
        if let Some(expiry) = expiry {
            if expiry.is_zero() {
                return Err(FencedWriteError::command(
                    "SET",
                    "an expiry must be at least 1 ms (or None for no expiry)",
                ));
            }
            args.push(b"PX".to_vec());
            args.push(ceil_millis(expiry).to_string().into_bytes());
        }
        self.run(key, "SET", args).await
    }

    /// `DEL key`, if the fence is current. The key's fence stays recorded, so a stale holder
    /// cannot re-create the key.
    ///
    /// # Errors
    ///
    /// As [`set`](Self::set).
    ///
    /// # Cancel safety
    ///
    /// As [`set`](Self::set).
    pub async fn del(&self, key: &str) -> Result<Accepted, FencedWriteError> {
        self.run(key, "DEL", Vec::new()).await
    }

    /// `<command> key <args…>`, if the fence is current: any write command whose one key is its
    /// first argument (`HSET`, `INCRBY`, `LPUSH`, `XADD`, `EXPIRE`, `JSON.SET`, …). The server's
    /// `COMMAND INFO` is asked once per command name: read-only commands, commands with other
    /// keys among these arguments and wrong argument counts are refused before anything runs.
    ///
    /// ```no_run
    /// # async fn demo(keys: &leasehold_redis::fence::FencedKeys) -> Result<(), Box<dyn std::error::Error>> {
    /// let accepted = keys.fenced_by_fence(42).command("invoice:7", "HSET", ("status", "sent")).await?;
    /// assert_eq!(accepted.reply, redis::Value::Int(1));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`FencedWriteError::Command`] when the command cannot be a fenced write (the reason says
    /// why), or has more than [`MAX_COMMAND_ARGS`] arguments; otherwise as [`set`](Self::set).
    ///
    /// # Cancel safety
    ///
    /// As [`set`](Self::set).
    pub async fn command(
        &self,
        key: &str,
        command: &str,
        args: impl ToRedisArgs,
    ) -> Result<Accepted, FencedWriteError> {
        let name = command_name(command).map_err(|r| FencedWriteError::command(command, r))?;
        let args = args.to_redis_args();
        if args.len() > MAX_COMMAND_ARGS {
            return Err(FencedWriteError::command(
                command,
                format!(
                    "{} arguments after the key; at most {MAX_COMMAND_ARGS} are allowed",
                    args.len()
                ),
            ));
        }
        self.keys.target(key)?;
        self.keys
            .key_spec(&name)
            .await?
            .check(args.len())
            .map_err(|r| FencedWriteError::command(command, r))?;
        self.run(key, &name, args).await
    }

    /// Runs the write script.
    async fn run(
        &self,
        key: &str,
        command: &str,
        args: Vec<Vec<u8>>,
    ) -> Result<Accepted, FencedWriteError> {
        let (resource, fence_key) = self.keys.target(key)?;
        let mut call = self.keys.scripts.write.key(key);
        call.key(&fence_key)
            .arg(self.fence.to_string())
            .arg(command)
            .arg(args);
        let reply: Vec<Value> = self.keys.link.invoke(&call).await?;
        match outcome(reply)? {
            Outcome::Admitted { previous, reply } => Ok(Accepted { previous, reply }),
            Outcome::Stale { highest } => Err(StaleFence {
                resource,
                fence: self.fence,
                highest,
            }
            .into()),
        }
    }
}
