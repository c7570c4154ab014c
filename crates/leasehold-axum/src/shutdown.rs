//! Waiting for the operating system's request to stop: SIGINT (Ctrl-C) and SIGTERM (what systemd,
//! Kubernetes and docker send) on Unix, Ctrl-C elsewhere.

use std::fmt;
use std::future::Future;

use crate::Error;

/// Which signal asked the process to stop.
///
/// ```
/// assert_eq!(leasehold_axum::StopSignal::Terminate.to_string(), "SIGTERM");
/// assert_eq!(leasehold_axum::StopSignal::Interrupt.to_string(), "SIGINT");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopSignal {
    /// SIGINT: Ctrl-C in a terminal (on non-Unix systems, the console's Ctrl-C).
    Interrupt,
    /// SIGTERM: the polite stop request of systemd, Kubernetes, docker and `kill`.
    Terminate,
}

impl StopSignal {
    /// The conventional exit code of a process ended by this signal: 128 + its number
    /// (130 for SIGINT, 143 for SIGTERM).
    ///
    /// ```
    /// assert_eq!(leasehold_axum::StopSignal::Terminate.exit_code(), 143);
    /// ```
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
        }
    }
}

impl fmt::Display for StopSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
        })
    }
}

/// Handlers for the signals that ask a server to stop: SIGINT and SIGTERM on Unix, Ctrl-C
/// elsewhere. From [`install`](Self::install) until it is dropped these signals no longer end the
/// process at once; [`recv`](Self::recv) yields each one, so a program can start a graceful
/// shutdown on the first and give up waiting on the second.
///
/// For the common case — one future for `axum::serve(..).with_graceful_shutdown(..)` — use
/// [`shutdown_signal`].
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), leasehold_axum::Error> {
/// use leasehold_axum::ShutdownSignal;
/// let mut signals = ShutdownSignal::install()?; // as early as possible
/// let first = signals.recv().await;
/// tracing::info!(signal = %first, "stopping; send it again to stop at once");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ShutdownSignal {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignal {
    /// Installs the handlers now, so a signal that arrives before anything waits for it is
    /// kept for the next [`recv`](Self::recv) instead of killing the process. (On non-Unix systems
    /// the Ctrl-C handler is registered when `recv` is first polled.)
    ///
    /// # Errors
    ///
    /// [`Error::Signals`] if there is no tokio runtime on this thread (the handlers need its
    /// I/O driver) or the operating system refuses the handlers.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), leasehold_axum::Error> {
    /// let _signals = leasehold_axum::ShutdownSignal::install()?;
    /// # Ok(()) }
    /// ```
    /// ```
    /// // Outside a runtime: a typed error, not a panic.
    /// assert!(matches!(
    ///     leasehold_axum::ShutdownSignal::install(),
    ///     Err(leasehold_axum::Error::Signals(_))
    /// ));
    /// ```
    pub fn install() -> Result<Self, Error> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::Signals(std::io::Error::other(
                "no tokio runtime is running on this thread",
            )));
        }
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt()).map_err(Error::Signals)?,
                terminate: signal(SignalKind::terminate()).map_err(Error::Signals)?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// Waits for the next SIGINT or SIGTERM (Ctrl-C on non-Unix systems) and says which it was.
    /// Signals received since [`install`](Self::install) or the previous `recv` are not lost.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: if it is dropped before resolving, no signal is consumed.
    pub async fn recv(&mut self) -> StopSignal {
        #[cfg(unix)]
        {
            tokio::select! {
                Some(()) = self.interrupt.recv() => StopSignal::Interrupt,
                Some(()) = self.terminate.recv() => StopSignal::Terminate,
                else => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => StopSignal::Interrupt,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for Ctrl-C");
                    std::future::pending().await
                }
            }
        }
    }
}

/// A future that resolves on the first SIGINT or SIGTERM (Ctrl-C on non-Unix systems): give it to
/// `axum::serve(..).with_graceful_shutdown(..)`, or cancel the application's
/// [`CancellationToken`](leasehold::CancellationToken) when it resolves so that the server,
/// [`LeaderJobs`](crate::LeaderJobs) and [`LeaderOnly`](crate::LeaderOnly) stop together and
/// release their leases at once.
///
/// Container platforms stop a process with SIGTERM, not Ctrl-C: waiting for
/// `tokio::signal::ctrl_c()` alone leaves the process to be killed after the platform's timeout,
/// with its leases held until they expire.
///
/// Called inside a tokio runtime it installs the handlers at once (from then on these signals
/// no longer kill the process), otherwise when first polled. If they cannot be installed it logs
/// a warning and never resolves. Use [`ShutdownSignal`] to react to a second signal too.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use leasehold::CancellationToken;
///
/// let shutdown = CancellationToken::new();
/// // ... start LeaderJobs / LeaderOnly with shutdown.clone() ...
/// let signal = leasehold_axum::shutdown_signal();
/// let stop = shutdown.clone();
/// tokio::spawn(async move {
///     signal.await;
///     stop.cancel();
/// });
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// axum::serve(listener, axum::Router::new())
///     .with_graceful_shutdown(shutdown.cancelled_owned())
///     .await?;
/// # Ok(()) }
/// ```
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    let early = ShutdownSignal::install();
    async move {
        let signals = match early {
            Ok(signals) => Ok(signals),
            Err(_) => ShutdownSignal::install(),
        };
        match signals {
            Ok(mut signals) => {
                let signal = signals.recv().await;
                tracing::info!(%signal, "leasehold: shutdown requested");
            }
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "leasehold: cannot listen for SIGINT/SIGTERM; this shutdown signal never fires"
                );
                std::future::pending::<()>().await;
            }
        }
    }
}
