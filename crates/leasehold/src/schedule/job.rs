//! `Job`: one leader-only periodic job and how it is timed.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::error::Result;
use crate::hold::guard::LeaderContext;
use crate::limits::check_duration;
use crate::options::error::OptionsError;
use crate::store::period::Period;

pub(crate) type JobFn =
    Arc<dyn Fn(LeaderContext) -> BoxFuture<'static, std::result::Result<(), String>> + Send + Sync>;

/// The largest default delay of a period-aligned job after each period's start: a random delay
/// up to `min(DEFAULT_MAX_JITTER, period / 10)` spreads the replicas' attempts a little, so they
/// do not all reach the store in the same millisecond. Set another bound with
/// [`Job::jitter`].
pub const DEFAULT_MAX_JITTER: Duration = Duration::from_millis(500);

/// What a period-aligned job does when it could not attempt a period at its start: at startup
/// (the process started in the middle of a period) or because its previous action ran past the
/// next period's start.
///
/// ```
/// use std::time::Duration;
/// use leasehold::{Job, schedule::MissedPeriods};
///
/// // A nightly job that must not run at a random time of day after a deploy:
/// let job = Job::every("nightly", Duration::from_secs(86_400), |_| async { Ok::<_, String>(()) })
///     .offset(Duration::from_secs(2 * 3600))
///     .missed(MissedPeriods::Skip);
/// assert_eq!(job.missed_periods(), MissedPeriods::Skip);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MissedPeriods {
    /// Attempt the current period at once (the ledger still runs it at most once across all
    /// nodes), then go on at period starts. Periods that passed entirely are not made up: one
    /// run catches up, however many were missed.
    #[default]
    RunOnce,
    /// Leave the current period alone and wait for the next period's start.
    Skip,
}

/// One leader-only periodic job.
///
/// **By default a job is period-aligned and runs at most once per period across all nodes.**
/// Its periods are consecutive windows of `period` on the store's clock, counted from the Unix
/// epoch (shifted by an [`offset`](Self::offset)): every replica attempts each period near its
/// start (within a random [jitter](Self::jitter)), and the store's period ledger grants the run
/// to the first of them only — a replica whose timer or clock is late finds the period
/// already run ([`JobEvent::AlreadyRan`](crate::schedule::JobEvent::AlreadyRan)) rather than running it
/// again. The lease is held only while the action runs. At start, the current period is
/// attempted at once ([`MissedPeriods::RunOnce`]) unless [`missed`](Self::missed) says
/// otherwise. Periods are whole milliseconds.
///
/// [`fixed_delay`](Self::fixed_delay) opts out: a timer of this node's own, with a lease per
/// run and no ledger (the ShedLock model), which can run twice in one period across nodes whose
/// timers are out of phase.
///
/// ```
/// use std::time::Duration;
/// use leasehold::Job;
///
/// // At five past every hour (UTC, by the store's clock), on one node:
/// let job = Job::every("report", Duration::from_secs(3600), |_ctx| async { Ok::<_, std::io::Error>(()) })
///     .offset(Duration::from_secs(300));
/// assert_eq!(job.period(), Duration::from_secs(3600));
/// assert!(job.is_period_aligned());
/// ```
#[derive(Clone)]
pub struct Job {
    pub(crate) name: String,
    pub(crate) period: Duration,
    pub(crate) initial_delay: Option<Duration>,
    offset: Duration,
    jitter: Option<Duration>,
    missed: Option<MissedPeriods>,
    fixed_delay: bool,
    pub(crate) action: JobFn,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("name", &self.name)
            .field("period", &self.period)
            .field("initial_delay", &self.initial_delay)
            .field("offset", &self.offset)
            .field("jitter", &self.jitter)
            .field("missed", &self.missed)
            .field("fixed_delay", &self.fixed_delay)
            .finish_non_exhaustive()
    }
}

/// How a validated job is timed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Timing {
    /// At period starts of the store's clock, claiming each period in the ledger.
    Aligned {
        period: Period,
        jitter: Duration,
        missed: MissedPeriods,
    },
    /// `period` after the previous attempt ended, on this node's timer.
    FixedDelay,
}

impl Job {
    /// A job named `name` (its lock name) that runs `action` once per `period` across all
    /// nodes, period-aligned (see [`Job`]).
    pub fn every<F, Fut, E>(name: impl Into<String>, period: Duration, action: F) -> Self
    where
        F: Fn(LeaderContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: Display + 'static,
    {
        let action: JobFn = Arc::new(move |ctx| {
            let fut = action(ctx);
            async move { fut.await.map_err(|e| e.to_string()) }.boxed()
        });
        Self {
            name: name.into(),
            period,
            initial_delay: None,
            offset: Duration::ZERO,
            jitter: None,
            missed: None,
            fixed_delay: false,
            action,
        }
    }

    /// Make no attempt during the first `delay` after start (default: none). A period-aligned
    /// job then attempts the current period at once or waits for the next one, as
    /// [`missed`](Self::missed) says.
    #[must_use]
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = Some(delay);
        self
    }

    /// Shift the periods by `offset` (below the period; default 0): `every(24h).offset(2h)`
    /// runs daily periods that start at 02:00 UTC by the store's clock.
    #[must_use]
    pub fn offset(mut self, offset: Duration) -> Self {
        self.offset = offset;
        self
    }

    /// The largest random delay after each period's start (default
    /// `min(`[`DEFAULT_MAX_JITTER`]`, period / 10)`; at most half the period; zero for none).
    #[must_use]
    pub fn jitter(mut self, max: Duration) -> Self {
        self.jitter = Some(max);
        self
    }

    /// What to do about a period whose start was missed (default
    /// [`MissedPeriods::RunOnce`]).
    #[must_use]
    pub fn missed(mut self, policy: MissedPeriods) -> Self {
        self.missed = Some(policy);
        self
    }

    /// Opt out of period alignment and the ledger: the next attempt starts `period` after the
    /// previous one ended (run or skipped), on this node's own timer, and each run holds a
    /// lease only while it runs. Nodes whose timers are out of phase can then **run the job
    /// twice in one period**; set the elector's `min_lease` to the period (ShedLock's
    /// `lockAtLeastFor`) to narrow that, or keep the default. The first attempt is immediate
    /// unless [`initial_delay`](Self::initial_delay) says otherwise; `offset`, `jitter` and
    /// `missed` do not apply (combining them is an error at start).
    #[must_use]
    pub fn fixed_delay(mut self) -> Self {
        self.fixed_delay = true;
        self
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The lock name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True unless [`fixed_delay`](Self::fixed_delay) was chosen.
    pub fn is_period_aligned(&self) -> bool {
        !self.fixed_delay
    }

    /// The missed-period policy.
    pub fn missed_periods(&self) -> MissedPeriods {
        self.missed.unwrap_or_default()
    }

    /// Checks the job's settings and works out its timing.
    pub(crate) fn timing(&self) -> Result<Timing> {
        if self.period.is_zero() {
            return Err(OptionsError::ZeroPeriod(self.name.clone()).into());
        }
        check_duration("period", self.period)?;
        if let Some(delay) = self.initial_delay {
            check_duration("initial_delay", delay)?;
        }
        if self.fixed_delay {
            let conflicting = [
                (!self.offset.is_zero(), "offset"),
                (self.jitter.is_some(), "jitter"),
                (self.missed.is_some(), "missed"),
            ];
            if let Some((_, option)) = conflicting.into_iter().find(|(set, _)| *set) {
                return Err(OptionsError::NotWithFixedDelay {
                    job: self.name.clone(),
                    option,
                }
                .into());
            }
            return Ok(Timing::FixedDelay);
        }
        let period = Period::every(self.period)?.offset(self.offset)?;
        let half = self.period / 2;
        let jitter = match self.jitter {
            Some(jitter) if jitter > half => {
                return Err(OptionsError::JitterTooLarge {
                    job: self.name.clone(),
                    jitter,
                    max: half,
                }
                .into());
            }
            Some(jitter) => jitter,
            None => DEFAULT_MAX_JITTER.min(self.period / 10),
        };
        Ok(Timing::Aligned {
            period,
            jitter,
            missed: self.missed_periods(),
        })
    }
}
