//! The background task behind a store's release signals: started on the current Tokio runtime,
//! stopped with the store, and paced between reconnections.
//!
//! A store with server notifications runs one listener (a watch, a subscription) per store,
//! started by its first `release_signal` call. [`Listener`] holds that task and aborts it when
//! dropped; [`ReconnectPause`] says how long to wait before listening again after the server
//! went away.
//!
//! ```
//! use std::time::Duration;
//! use leasehold::store::{Listener, ReconnectPause};
//!
//! assert!(Listener::spawn(async {}).is_none(), "outside a Tokio runtime");
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! runtime.block_on(async {
//!     let listener = Listener::spawn(async {
//!         let mut pauses = ReconnectPause::new(Duration::from_millis(1), Duration::from_millis(4));
//!         loop {
//!             // One session of listening would run here, until it fails.
//!             tokio::time::sleep(pauses.next(false)).await;
//!         }
//!     });
//!     assert!(listener.is_some());
//!     drop(listener); // the task is aborted
//! });
//! # Ok::<(), std::io::Error>(())
//! ```

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::error::StoreError;

/// A background task, aborted when dropped (with the store that holds it).
#[derive(Debug)]
pub struct Listener(JoinHandle<()>);

impl Listener {
    /// Starts `task` on the current Tokio runtime; `None` outside one (the store's waiters then
    /// poll).
    pub fn spawn<F>(task: F) -> Option<Self>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(Self(runtime.spawn(task)))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The sessions of a listener that listens until it is aborted (with the store that holds its
/// [`Listener`]): each session sets the flag [`next`](Self::next) hands it once it listens, and
/// returns only when it fails; [`ended`](Self::ended) takes its outcome and answers what to
/// report; the next session starts after the pause [`ReconnectPause`] says (from the first pause
/// again after a session that listened).
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::{ListenSessions, ReconnectPause, StoreError};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let ms = Duration::from_millis;
/// let mut sessions = ListenSessions::new(ReconnectPause::new(ms(100), ms(300)));
/// let mut reported = Vec::new();
/// for n in 1..=5 {
///     let listening = sessions.next().await;
///     *listening = n == 3; // the third session listens for a while, then fails too
///     if let Some((_error, pause)) = sessions.ended(Err(StoreError::transient("gone"))) {
///         reported.push(pause);
///     }
/// }
/// assert_eq!(reported, [ms(100), ms(200), ms(100), ms(200), ms(300)]);
/// # }
/// ```
#[derive(Debug)]
pub struct ListenSessions {
    pauses: ReconnectPause,
    listening: bool,
    pause: Option<Duration>,
}

impl ListenSessions {
    /// Sessions paced by `pauses`.
    pub fn new(pauses: ReconnectPause) -> Self {
        Self {
            pauses,
            listening: false,
            pause: None,
        }
    }

    /// Waits the pause after the last session (none before the first) and starts the next: the
    /// flag its session sets once it listens.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only sleeps.
    pub async fn next(&mut self) -> &mut bool {
        if let Some(pause) = self.pause.take() {
            tokio::time::sleep(pause).await;
        }
        self.listening = false;
        &mut self.listening
    }

    /// Ends the session with its `outcome`: the error it failed with and the pause before the
    /// next session, for the store to report (`None` for a session that ended without one).
    pub fn ended(&mut self, outcome: Result<(), StoreError>) -> Option<(StoreError, Duration)> {
        let pause = self.pauses.next(self.listening);
        self.pause = Some(pause);
        outcome.err().map(|e| (e, pause))
    }
}

/// The pauses between a listener's sessions: `first`, doubling up to `max`, and `first` again
/// after a session that connected.
///
/// ```
/// use std::time::Duration;
/// let ms = Duration::from_millis;
/// let mut pauses = leasehold::store::ReconnectPause::new(ms(100), ms(300));
/// assert_eq!([pauses.next(false), pauses.next(false), pauses.next(false)], [ms(100), ms(200), ms(300)]);
/// assert_eq!(pauses.next(true), ms(100));
/// ```
#[derive(Debug, Clone)]
pub struct ReconnectPause {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Default for ReconnectPause {
    /// From 100 ms, doubling up to 2 s: a server's watch back soon after a blip, and asked at
    /// most every 2 s while it is away.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut pauses = leasehold::store::ReconnectPause::default();
    /// assert_eq!(pauses.next(false), Duration::from_millis(100));
    /// ```
    fn default() -> Self {
        Self::new(Duration::from_millis(100), Duration::from_secs(2))
    }
}

impl ReconnectPause {
    /// Pauses from `first` up to `max`.
    pub fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max,
            next: first,
        }
    }

    /// The pause before the next session, after one that `connected` (or did not).
    pub fn next(&mut self, connected: bool) -> Duration {
        if connected {
            self.next = self.first;
        }
        let pause = self.next;
        self.next = pause.saturating_mul(2).min(self.max);
        pause
    }
}
