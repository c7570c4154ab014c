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
