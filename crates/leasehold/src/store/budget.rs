//! `RequestBudget`: the time one request may take, sends again included, for a store whose
//! connection room sends a request again after a failure that did not apply it (etcd,
//! ZooKeeper).

use std::time::Duration;

use tokio::time::{Instant, Sleep, sleep};

/// The request timeout of one request, counted from when it started: what is left of it, and
/// whether there is still time to send the request again after a failure.
///
/// ```
/// use std::time::Duration;
/// use leasehold::store::RequestBudget;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let budget = RequestBudget::start(Duration::from_millis(100));
/// assert!(budget.allows_resend());
/// budget.pause().await; // a first send failed
/// assert_eq!(budget.left(), Duration::from_millis(80));
/// tokio::time::sleep(Duration::from_millis(50)).await;
/// assert!(!budget.allows_resend(), "two pauses no longer fit");
/// assert_eq!(budget.total(), Duration::from_millis(100));
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RequestBudget {
    start: Instant,
    total: Duration,
}

impl RequestBudget {
    /// The pause before a request is sent again.
    pub const RESEND_PAUSE: Duration = Duration::from_millis(20);

    /// A budget of `total` (the store's request timeout), starting now.
    pub fn start(total: Duration) -> Self {
        Self {
            start: Instant::now(),
            total,
        }
    }

    /// The whole budget, for messages.
    pub fn total(&self) -> Duration {
        self.total
    }

    /// What is left of it now (zero once spent).
    pub fn left(&self) -> Duration {
        self.total.saturating_sub(self.start.elapsed())
    }

    /// Whether sending the request again still leaves it time to answer: what is spent and two
    /// [`RESEND_PAUSE`](Self::RESEND_PAUSE)s fall short of the budget.
    pub fn allows_resend(&self) -> bool {
        self.start.elapsed() + Self::RESEND_PAUSE * 2 < self.total
    }

    /// The wait of [`RESEND_PAUSE`](Self::RESEND_PAUSE) before the request is sent again.
    pub fn pause(&self) -> Sleep {
        sleep(Self::RESEND_PAUSE)
    }
}
