//! The one shape of a fenced sink: write a value under a holder's fence, read back the last value.

use async_trait::async_trait;

use crate::LeaderContext;
use crate::fence::ResourceName;

/// Any error of a [`FencedSink`] other than a refusal.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// A [`FencedSink`]'s answer to a write: `Ok(true)` accepted, `Ok(false)` refused as stale,
/// `Err` anything else.
pub type SinkAnswer = Result<bool, SinkError>;

/// A resource that checks the writer's fence, seen through one small interface.
///
/// Every store's fenced writes (`leasehold-sql`, `leasehold-redis`, `leasehold-dynamodb`,
/// `leasehold-etcd`) and the HTTP ones of `leasehold-axum` offer an adapter of this shape behind
/// their `fence` feature, so that one scenario — the testkit's paused stale holder, the
/// benchmark's fenced-sinks safety runs — can drive any of them: a holder frozen past its lease
/// writes after its successor, and the sink must refuse it.
///
/// `write` answers `Ok(true)` when the sink accepted the write, `Ok(false)` when it refused it as
/// stale (the rule of [`Admission`](crate::fence::Admission)), and `Err` for anything else — an
/// error is never a refusal.
///
/// ```
/// use leasehold::fence::{FencedSink, ResourceName, SinkAnswer, SinkError};
/// use leasehold::LeaderContext;
///
/// struct Nowhere;
///
/// #[async_trait::async_trait]
/// impl FencedSink for Nowhere {
///     async fn write(&self, _: &ResourceName, _: &LeaderContext, _: u64) -> SinkAnswer {
///         Err("nowhere to write".into())
///     }
///     async fn read(&self, _: &ResourceName) -> Result<Option<u64>, SinkError> {
///         Ok(None)
///     }
///     fn describe(&self) -> String {
///         "nowhere".to_owned()
///     }
/// }
/// assert_eq!(Nowhere.describe(), "nowhere");
/// ```
#[async_trait]
pub trait FencedSink: Send + Sync {
    /// Writes `value` to `resource` under the fence of `ctx`.
    ///
    /// # Errors
    ///
    /// Anything that kept the sink from judging the write (a connection, a malformed answer);
    /// a stale fence is `Ok(false)`, not an error.
    ///
    /// # Cancel safety
    ///
    /// An adapter's choice; the ones leasehold ships send one atomic request, so a dropped future
    /// either wrote under the fence or did not.
    async fn write(&self, resource: &ResourceName, ctx: &LeaderContext, value: u64) -> SinkAnswer;

    /// The value of the last accepted write to `resource` (`None` before the first).
    ///
    /// # Errors
    ///
    /// Anything that kept the sink from reading.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe in the adapters leasehold ships: a read changes nothing.
    async fn read(&self, resource: &ResourceName) -> Result<Option<u64>, SinkError>;

    /// The sink's name in reports ("sql table", "http", …).
    fn describe(&self) -> String;
}

/// The answer of a [`FencedSink::write`] for the outcome of a fenced write: `Ok(true)` when it
/// was applied, `Ok(false)` when `refused` says its error is a refusal (a stale fence, a lease
/// that ended), and the error otherwise — an error is never a refusal.
///
/// ```
/// use leasehold::fence::{FenceRefusal, ResourceName, StaleFence, sink_answer};
///
/// let stale = StaleFence { resource: ResourceName::new("orders/42")?, fence: 6, highest: 7 };
/// assert!(sink_answer(Ok::<_, StaleFence>(()), StaleFence::is_stale)?);
/// assert!(!sink_answer(Err::<(), _>(stale), StaleFence::is_stale)?);
/// assert!(sink_answer(Err::<(), _>(std::fmt::Error), |_| false).is_err());
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
///
/// # Errors
///
/// The write's error, when `refused` does not call it a refusal.
pub fn sink_answer<T, E: Into<SinkError>>(
    written: Result<T, E>,
    refused: impl FnOnce(&E) -> bool,
) -> SinkAnswer {
    match written {
        Ok(_) => Ok(true),
        Err(e) if refused(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
