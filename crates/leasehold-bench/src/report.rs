//! `Report`: everything one run measured, and the command that reproduces each part.

use serde::Serialize;

use crate::outcome::Outcome;
use crate::safety::SafetyRow;
use crate::safety::fenced::FencedRow;
use crate::scenario::Scenario;

/// A backend or scenario that could not be measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Failure {
    pub(crate) backend: &'static str,
    pub(crate) part: String,
    pub(crate) error: String,
}

/// One run's results.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    /// The flags that set the run's size (added to each table's command).
    pub(crate) size_flags: String,
    pub(crate) backends: Vec<&'static str>,
    pub(crate) outcomes: Vec<Outcome>,
    pub(crate) safety: Vec<SafetyRow>,
    /// Fenced sinks under paused stale holders.
    pub(crate) fenced: Vec<FencedRow>,
    pub(crate) failures: Vec<Failure>,
}

impl Report {
    /// The command that measures `part` (a scenario name or `safety`) on every backend of this run.
    pub(crate) fn command(&self, part: &str) -> String {
        let backends = if self.backends.len() == crate::backend::Backend::ALL.len() {
            "all".to_owned()
        } else {
            self.backends.join(",")
        };
        format!(
            "leasehold-bench --backend {backends} --scenario {part} {}",
            self.size_flags
        )
    }

    /// The outcome of `scenario` on `backend`, if it ran.
    pub(crate) fn outcome(&self, backend: &str, scenario: Scenario) -> Option<&Outcome> {
        self.outcomes
            .iter()
            .find(|o| o.backend == backend && o.scenario == scenario.name())
    }

    /// True when every safety run passed and nothing failed to run.
    pub(crate) fn passed(&self) -> bool {
        self.failures.is_empty()
            && self.safety.iter().all(SafetyRow::passed)
            && self.fenced.iter().all(FencedRow::passed)
    }
}
