//! # leasehold-rules
//!
//! The rules [leasehold](https://docs.rs/leasehold) applies to what a user writes, each written
//! once with one typed error:
//!
//! * [`check_lock_name`]: the lock-name rule ([`LOCK_NAME_RULE`], at most
//!   [`MAX_LOCK_NAME_LEN`] bytes), answering a [`NameError`];
//! * [`parse_duration`]: the duration texts (`500ms`, `1m30s`, `2d`, ISO-8601 `PT10S`, at most
//!   [`MAX_DURATION`]), answering a [`DurationError`];
//! * [`check_lease`]: the bounds between a lease, its minimum hold and renewal ([`MIN_LEASE`],
//!   [`MIN_AUTO_EXTEND_LEASE`]), answering a [`LeaseError`].
//!
//! `leasehold` applies them at run time (`LockName::new`, `leasehold::parse_duration`,
//! `ElectionOptionsBuilder::build`) and re-exports every item here under its own name;
//! `#[leasehold::leader_only]` applies them while it expands, to the literals it is given, and
//! reports a refusal as a compile error at the literal with the same message. So a literal the
//! attribute accepts is exactly one the library accepts, said the same way when it is not.
//!
//! Use this crate through `leasehold`; it has no dependencies and no run time of its own.
//!
//! ```
//! use std::time::Duration;
//! use leasehold_rules::{check_lease, check_lock_name, parse_duration};
//!
//! assert!(check_lock_name("billing.nightly").is_ok());
//! assert_eq!(parse_duration("1m30s")?, Duration::from_secs(90));
//! let lease = parse_duration("50ms")?;
//! let refused = check_lease(lease, Duration::ZERO, true).unwrap_err();
//! assert!(refused.to_string().starts_with("auto_extend (on by default) needs a lease of at least 75ms"));
//! # Ok::<(), leasehold_rules::DurationError>(())
//! ```

mod duration;
mod lease;
mod name;

pub use duration::{DurationError, MAX_DURATION, parse_duration};
pub use lease::{LeaseError, MIN_AUTO_EXTEND_LEASE, MIN_LEASE, MIN_RENEWAL_PERIOD, check_lease};
pub use name::{LOCK_NAME_RULE, MAX_LOCK_NAME_LEN, NameError, check_lock_name};

/// The crate's README, compiled as doc tests so its example stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
