//! Consuming a stream only while leader: [`GuardedStream`].

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

use crate::elect::elector::Elector;
use crate::error::Error;
use crate::events::LostReason;
use crate::hold::guard::{LeaderContext, LeaderGuard};
use crate::name::LockName;

/// How a [`GuardedStream`] ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamEnd {
    /// The inner stream ended; the lease was released.
    Completed,
    /// Another node held the lock for the whole wait: the inner stream was never made.
    Skipped,
    /// The lease was lost (or, without auto-extend, reached its local deadline) while items
    /// flowed: no item was read after that, the inner stream was dropped and the lease released.
    Lost(LostReason),
    /// The election or the release failed.
    Failed(Error),
}

enum State<S, F> {
    Start {
        elector: Elector,
        lock: LockName,
        make: F,
    },
    Running {
        guard: LeaderGuard,
        inner: Pin<Box<S>>,
    },
}

/// A stream read only while this node holds a lock, made by
/// [`Elector::guarded_stream`](crate::Elector::guarded_stream).
///
/// * The lock is acquired at the first poll (with the elector's `wait`). Not elected: the stream
///   is empty and [`end`](Self::end) is [`StreamEnd::Skipped`].
/// * While items flow the lease is held, and renewed when the elector's options have
///   `auto_extend` on. Without it, the stream is bounded by one lease: it ends when the lease's
///   local deadline passes (the original library's `streamBounded`).
/// * Before each item the lease is checked: once it is lost, the stream ends without reading
///   another item, and [`end`](Self::end) says why.
/// * When the inner stream ends the lease is released before the guarded stream ends.
/// * Dropping the guarded stream at any point drops the inner stream and releases the lease.
pub struct GuardedStream<T> {
    lock: LockName,
    inner: BoxStream<'static, T>,
    end: Arc<Mutex<Option<StreamEnd>>>,
}

impl<T> std::fmt::Debug for GuardedStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedStream")
            .field("lock", &self.lock)
            .finish_non_exhaustive()
    }
}

impl<T: Send + 'static> GuardedStream<T> {
    pub(crate) fn new<S, F>(elector: Elector, lock: LockName, make: F) -> Self
    where
        S: Stream<Item = T> + Send + 'static,
        F: FnOnce(LeaderContext) -> S + Send + 'static,
    {
        let end = Arc::new(Mutex::new(None));
        let record = Arc::clone(&end);
        let start = State::Start {
            elector,
            lock: lock.clone(),
            make,
        };
        let inner = futures::stream::unfold(start, move |state| {
            let record = Arc::clone(&record);
            async move {
                let (item, next) = step(state).await;
                match next {
                    Ok(next) => item.map(|item| (item, next)),
                    Err(end) => {
                        *record.lock().unwrap_or_else(PoisonError::into_inner) = Some(end);
                        None
                    }
                }
            }
        })
        .fuse()
        .boxed();
        Self { lock, inner, end }
    }
}

impl<T> GuardedStream<T> {
    /// The lock guarding the stream.
    pub fn lock(&self) -> &LockName {
        &self.lock
    }

    /// How the stream ended: `None` while it has not (it ends when it yields `None`). Taken:
    /// a second call returns `None`.
    pub fn end(&mut self) -> Option<StreamEnd> {
        self.end
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl<T> Stream for GuardedStream<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.inner.poll_next_unpin(cx)
    }
}

/// One step: the next item and the state after it, or how the stream ended.
async fn step<S, F>(state: State<S, F>) -> (Option<S::Item>, Result<State<S, F>, StreamEnd>)
where
    S: Stream,
    F: FnOnce(LeaderContext) -> S,
{
    let (guard, mut inner) = match state {
        State::Start {
            elector,
            lock,
            make,
        } => match elector.acquire(&lock).await {
            Ok(Some(guard)) => {
                let inner = Box::pin(make(LeaderContext::clone(&guard)));
                (guard, inner)
            }
            Ok(None) => return (None, Err(StreamEnd::Skipped)),
            Err(e) => return (None, Err(StreamEnd::Failed(e))),
        },
        State::Running { guard, inner } => (guard, inner),
    };
    // The lease is checked first: once lost, no further item is read.
    let item = tokio::select! {
        biased;
        reason = guard.lost() => return (None, Err(lose(guard, inner, reason).await)),
        item = inner.next() => item,
    };
    match item {
        Some(item) => (Some(item), Ok(State::Running { guard, inner })),
        None => {
            drop(inner);
            let end = match guard.release().await {
                Ok(_) => StreamEnd::Completed,
                Err(e) => StreamEnd::Failed(e),
            };
            (None, Err(end))
        }
    }
}

/// Ends a stream whose lease was lost: drops the inner stream, then releases (which finds the
/// lease gone, or frees what is left of it).
async fn lose<S>(guard: LeaderGuard, inner: Pin<Box<S>>, reason: LostReason) -> StreamEnd {
    drop(inner);
    let _ = guard.release().await;
    StreamEnd::Lost(reason)
}
