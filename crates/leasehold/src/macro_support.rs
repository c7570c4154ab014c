//! What the expansion of `#[leasehold::leader_only]` calls at run time: the attribute's options
//! applied on top of the elector's. Reached through the hidden `leasehold::__private`; not
//! public API.

use std::time::Duration;

use crate::elect::elector::Elector;
use crate::error::Result;

/// The options one `#[leader_only]` gives, each applied on top of the elector's options for
/// that call (absent ones keep the elector's). Built in a `const` item of the expansion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overrides {
    lease: Option<Duration>,
    wait: Option<Duration>,
    min_lease: Option<Duration>,
    auto_extend: Option<bool>,
    cancel_on_lost: Option<bool>,
}

impl Overrides {
    /// No override: the elector's options as they are.
    pub const NONE: Self = Self {
        lease: None,
        wait: None,
        min_lease: None,
        auto_extend: None,
        cancel_on_lost: None,
    };

    /// Sets `lease`.
    pub const fn lease(self, lease: Duration) -> Self {
        Self {
            lease: Some(lease),
            ..self
        }
    }

    /// Sets `wait`.
    pub const fn wait(self, wait: Duration) -> Self {
        Self {
            wait: Some(wait),
            ..self
        }
    }

    /// Sets `min_lease`.
    pub const fn min_lease(self, min_lease: Duration) -> Self {
        Self {
            min_lease: Some(min_lease),
            ..self
        }
    }

    /// Sets `auto_extend`.
    pub const fn auto_extend(self, on: bool) -> Self {
        Self {
            auto_extend: Some(on),
            ..self
        }
    }

    /// Sets `cancel_on_lost`.
    pub const fn cancel_on_lost(self, on: bool) -> Self {
        Self {
            cancel_on_lost: Some(on),
            ..self
        }
    }
}

/// The elector to run one guarded call with: `elector` itself when there is nothing to
/// override, otherwise [`Elector::reconfigured`] with its options plus `overrides` — sharing its
/// store, events, waiting line, held leases and cleanup tasks.
///
/// # Errors
///
/// [`Error::Options`](crate::Error::Options) when the combination is invalid, for example a
/// `min_lease` override longer than the elector's lease (what the checks of the literals while
/// the attribute expands cannot know).
pub fn configure(elector: &Elector, overrides: &Overrides) -> Result<Elector> {
    if *overrides == Overrides::NONE {
        return Ok(elector.clone());
    }
    let mut builder = elector.options().to_builder();
    if let Some(lease) = overrides.lease {
        builder = builder.lease(lease);
    }
    if let Some(wait) = overrides.wait {
        builder = builder.wait(wait);
    }
    if let Some(min_lease) = overrides.min_lease {
        builder = builder.min_lease(min_lease);
    }
    if let Some(on) = overrides.auto_extend {
        builder = builder.auto_extend(on);
    }
    if let Some(on) = overrides.cancel_on_lost {
        builder = builder.cancel_on_lost(on);
    }
    Ok(elector.reconfigured(builder.build()?))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{ElectionOptions, MemoryStore, error::OptionsError};

    #[test]
    fn overrides_apply_on_top_of_the_elector_options() -> Result<()> {
        let base = ElectionOptions::builder()
            .node_id("node-a")
            .max_leaders(2)
            .wait(Duration::from_secs(3))
            .build()?;
        let elector = Elector::with_options(Arc::new(MemoryStore::new()), base.clone());
        assert_eq!(configure(&elector, &Overrides::NONE)?.options(), &base);

        let set = Overrides::NONE
            .lease(Duration::from_secs(30))
            .min_lease(Duration::from_secs(5))
            .auto_extend(false)
            .cancel_on_lost(false);
        let o = configure(&elector, &set)?.options().clone();
        assert_eq!(o.lease(), Duration::from_secs(30));
        assert_eq!(o.min_lease(), Duration::from_secs(5));
        assert!(!o.auto_extend() && !o.cancel_on_lost(), "turned off");
        let on = Overrides::NONE.auto_extend(true).cancel_on_lost(true);
        let o = configure(&elector, &on)?.options().clone();
        assert!(o.auto_extend() && o.cancel_on_lost());
        // Not overridden: the elector's.
        assert_eq!(o.wait(), Duration::from_secs(3));
        assert_eq!((o.node_id(), o.max_leaders()), ("node-a", 2));

        let wait = configure(&elector, &Overrides::NONE.wait(Duration::ZERO))?;
        assert_eq!(wait.options().wait(), Duration::ZERO);
        Ok(())
    }

    /// The builder applies the lease bounds that `#[leader_only]` applies to its literals while
    /// it expands (`leasehold_rules::check_lease`): the same verdict, and the same message, for
    /// every combination.
    #[test]
    fn the_lease_rule_is_the_builders() {
        use leasehold_rules::check_lease;

        let ms = Duration::from_millis;
        let mut refused = 0;
        for lease in [ms(0), ms(1), ms(74), ms(75), ms(1000)] {
            for min_lease in [ms(0), ms(1), ms(75), ms(1001)] {
                for auto_extend in [false, true] {
                    let built = ElectionOptions::builder()
                        .lease(lease)
                        .min_lease(min_lease)
                        .auto_extend(auto_extend)
                        .build()
                        .map(|_| ());
                    let checked = check_lease(lease, min_lease, auto_extend);
                    let case = format!("{lease:?} {min_lease:?} {auto_extend}");
                    assert_eq!(built, checked.map_err(OptionsError::Lease), "{case}");
                    if let (Err(built), Err(checked)) = (built, checked) {
                        assert_eq!(built.to_string(), checked.to_string(), "{case}");
                        refused += 1;
                    }
                }
            }
        }
        assert!(refused > 10, "{refused}");
    }

    #[test]
    fn an_invalid_combination_is_a_typed_error() {
        let elector = Elector::new(Arc::new(MemoryStore::new())); // lease 60 s
        let got = configure(
            &elector,
            &Overrides::NONE.min_lease(Duration::from_secs(61)),
        );
        assert!(
            matches!(
                got,
                Err(crate::Error::Options(OptionsError::Lease(
                    crate::error::LeaseError::MinLeaseExceedsLease { .. }
                )))
            ),
            "{got:?}"
        );
    }
}
