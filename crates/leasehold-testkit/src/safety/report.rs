//! `SafetyReport`: what a safety run saw.

use std::fmt;
use std::time::Duration;

use super::violation::Violation;

/// What a safety run saw. Safe means no [`Violation`]; rejected stale writes are the fenced
/// resource doing its job and are not violations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SafetyReport {
    /// The store, as it describes itself.
    pub store: String,
    /// Contenders × rounds.
    pub attempts: u64,
    /// Rounds in which the contender was elected and ran its action.
    pub runs: u64,
    /// Rounds skipped on contention.
    pub skips: u64,
    /// Rounds that ended in an elector error (a store failure).
    pub errors: u64,
    /// The first few error messages.
    pub first_errors: Vec<String>,
    /// Runs whose lease was lost by the end of the action (or that were cancelled on loss).
    pub lost: u64,
    /// Writes the fenced resources accepted.
    pub accepted_writes: u64,
    /// Writes the fenced resources rejected as stale.
    pub rejected_writes: u64,
    /// The highest fence accepted (over all slots).
    pub max_fence: u64,
    /// The most holders inside at once (valid or not; over the whole lock).
    pub max_inside: usize,
    /// Every violation seen.
    pub violations: Vec<Violation>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl SafetyReport {
    /// True when no violation was seen.
    pub fn is_safe(&self) -> bool {
        self.violations.is_empty()
    }

    /// Panics with the whole report if a violation was seen or nothing ran at all.
    pub fn assert_safe(&self) {
        assert!(self.is_safe(), "safety violations:\n{self}");
        assert!(self.runs > 0, "no contender was ever elected:\n{self}");
    }
}

impl fmt::Display for SafetyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "store {}: {} attempts in {:?}: {} runs, {} skips, {} errors, {} lost",
            self.store, self.attempts, self.elapsed, self.runs, self.skips, self.errors, self.lost
        )?;
        writeln!(
            f,
            "writes: {} accepted, {} rejected as stale; max fence {}; at most {} inside at once",
            self.accepted_writes, self.rejected_writes, self.max_fence, self.max_inside
        )?;
        for e in &self.first_errors {
            writeln!(f, "error: {e}")?;
        }
        writeln!(f, "{} violations", self.violations.len())?;
        for v in self.violations.iter().take(20) {
            writeln!(f, "  {v}")?;
        }
        Ok(())
    }
}
