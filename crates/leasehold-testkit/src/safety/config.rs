//! `SafetyConfig`: the shape of a safety run, and the errors that stop one.

use std::time::Duration;

use leasehold::{ElectionOptions, error::OptionsError};

/// The shape of a safety run.
///
/// The defaults (8 contenders × 200 rounds, actions up to 2 ms, lease 2 s, wait 20 ms) finish in a
/// few seconds on a memory store. Set `max_action` above `lease` with `auto_extend` off to make
/// holders lose their leases mid-action: the run must then show rejected stale writes but still
/// no violation.
///
/// ```
/// use std::time::Duration;
/// use leasehold_testkit::safety::SafetyConfig;
///
/// let config = SafetyConfig { contenders: 4, max_action: Duration::from_millis(5), ..SafetyConfig::default() };
/// assert_eq!(config.rounds, 200);
/// assert!(config.options("node-1").is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafetyConfig {
    /// Concurrent contenders, each with its own store client and elector.
    pub contenders: usize,
    /// Rounds per contender: each round is one `run_if_leader`.
    pub rounds: usize,
    /// The longest action; each action sleeps a random time in `0..=max_action`.
    pub max_action: Duration,
    /// The longest random pause between a contender's rounds (zero: just yield).
    pub max_pause: Duration,
    /// The lease of each acquisition.
    pub lease: Duration,
    /// How long each contender waits for the lock before skipping.
    pub wait: Duration,
    /// Whether leases are renewed while actions run.
    pub auto_extend: bool,
    /// Whether actions are cancelled when their lease is lost.
    pub cancel_on_lost: bool,
}

impl Default for SafetyConfig {
    fn default() -> Self {
        Self {
            contenders: 8,
            rounds: 200,
            max_action: Duration::from_millis(2),
            max_pause: Duration::ZERO,
            lease: Duration::from_secs(2),
            wait: Duration::from_millis(20),
            auto_extend: false,
            cancel_on_lost: false,
        }
    }
}

impl SafetyConfig {
    /// The election options of contender `node_id` (a single leader).
    pub fn options(&self, node_id: &str) -> Result<ElectionOptions, OptionsError> {
        self.group_options(node_id, 1)
    }

    /// The election options of contender `node_id` on a lock with `max_leaders` slots.
    pub fn group_options(
        &self,
        node_id: &str,
        max_leaders: u32,
    ) -> Result<ElectionOptions, OptionsError> {
        ElectionOptions::builder()
            .max_leaders(max_leaders)
            .wait(self.wait)
            .lease(self.lease)
            .auto_extend(self.auto_extend)
            .cancel_on_lost(self.cancel_on_lost)
            .node_id(node_id)
            .build()
    }

    pub(crate) fn validate(&self) -> Result<(), SafetyError> {
        if self.contenders == 0 {
            return Err(SafetyError::NoContenders);
        }
        Ok(())
    }
}

/// Why a safety run could not be carried out (violations are not errors: they are in the report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SafetyError {
    /// The configuration gave invalid election options.
    #[error("safety config gives invalid election options: {0}")]
    Options(#[from] OptionsError),
    /// `contenders` was zero.
    #[error("safety config needs at least one contender")]
    NoContenders,
    /// A contender task panicked (a bug in the code under test or in the checker).
    #[error("contender {contender} panicked: {message}")]
    ContenderPanicked {
        /// The contender's node id.
        contender: String,
        /// The panic message.
        message: String,
    },
}
