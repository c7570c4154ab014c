//! `FenceRegister`: the highest fence accepted per resource, and the one rule that uses it.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::resource::ResourceName;
use crate::error::StoreResult;

/// A write refused because a higher fence was accepted for its resource before: the writer's
/// lease ended (it may not know yet) and a successor has written since.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "stale fence {fence} for resource {resource:?}: fence {highest} was already accepted \
     (the writer's lease ended and a successor has written since)"
)]
pub struct StaleFence {
    /// The resource written.
    pub resource: ResourceName,
    /// The refused writer's fence.
    pub fence: u64,
    /// The highest fence the resource had accepted.
    pub highest: u64,
}

/// The one fencing rule: a write carrying `fence` is accepted unless a higher fence (`highest`,
/// the highest accepted so far, `None` before the first write) was accepted before. Equal fences
/// are the same holder writing again.
///
/// ```
/// use leasehold::fence::admits;
/// assert!(admits(5, None) && admits(5, Some(5)) && admits(6, Some(5)));
/// assert!(!admits(4, Some(5)));
/// ```
pub fn admits(fence: u64, highest: Option<u64>) -> bool {
    highest.is_none_or(|highest| fence >= highest)
}

/// What a [`FenceRegister`] answered to a write, by the one rule every fenced sink follows:
///
/// > a write carrying fence *f* to resource *r* is accepted only if no write with a fence higher
/// > than *f* was accepted by *r* before; an accepted write records *f* as *r*'s highest.
///
/// Equal fences are the same holder writing again and are accepted. [`Admission::decide`] applies
/// it; every sink leasehold ships (SQL rows, Redis keys, DynamoDB items, etcd keys, HTTP
/// resources) links here rather than restating it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a stale admission means the write must not happen"]
pub enum Admission {
    /// The fence was at least the highest seen; it is now the resource's highest.
    Admitted {
        /// The highest fence before this one (`None` for the resource's first write).
        previous: Option<u64>,
    },
    /// A higher fence was accepted before: the write must be refused.
    Stale(StaleFence),
}

impl Admission {
    /// The rule every register applies ([`admits`]), with what a refusal reports.
    pub fn decide(resource: &ResourceName, fence: u64, highest: Option<u64>) -> Self {
        match highest {
            Some(highest) if !admits(fence, Some(highest)) => Self::Stale(StaleFence {
                resource: resource.clone(),
                fence,
                highest,
            }),
            previous => Self::Admitted { previous },
        }
    }

    /// `Ok(())` when admitted, the [`StaleFence`] otherwise.
    ///
    /// # Errors
    ///
    /// The [`StaleFence`] of a refused write.
    pub fn into_result(self) -> Result<(), StaleFence> {
        match self {
            Self::Admitted { .. } => Ok(()),
            Self::Stale(stale) => Err(stale),
        }
    }

    /// Whether the write was admitted.
    pub fn is_admitted(&self) -> bool {
        matches!(self, Self::Admitted { .. })
    }
}

/// Remembers the highest fence accepted per resource and admits writes by the rule of
/// [`Admission::decide`].
///
/// [`MemoryFences`] keeps it in process; `leasehold-sql` (`SqlFences`) and `leasehold-redis`
/// (`RedisFences`) keep it in a store, so that every replica of a receiving service, and its
/// restarts, share it. `leasehold-axum`'s fence layer takes any register.
#[async_trait]
pub trait FenceRegister: Send + Sync + fmt::Debug {
    /// Admits a write with `fence` to `resource` and records `fence` as its highest, unless a
    /// higher fence was admitted before (then nothing changes and the answer is
    /// [`Admission::Stale`]). Admission and record are one atomic step.
    ///
    /// # Errors
    ///
    /// [`StoreError`](crate::store::StoreError) when a store-backed register cannot reach its store; the
    /// write must then be refused too.
    ///
    /// # Cancel safety
    ///
    /// Cancelling may leave the fence recorded or not, never half-recorded: a higher fence
    /// recorded without its write only refuses writes that were stale anyway.
    async fn admit(&self, resource: &ResourceName, fence: u64) -> StoreResult<Admission>;

    /// The highest fence admitted for `resource`, if any.
    ///
    /// # Errors
    ///
    /// [`StoreError`](crate::store::StoreError) when a store-backed register cannot reach its store.
    ///
    /// # Cancel safety
    ///
    /// A read only; cancelling it changes nothing.
    async fn highest(&self, resource: &ResourceName) -> StoreResult<Option<u64>>;

    /// A short description for logs (never a secret).
    fn describe(&self) -> String;
}

/// An in-process [`FenceRegister`]: a map from resource to highest fence behind a mutex.
///
/// It forgets everything when the process ends, and each process has its own: use it for a
/// resource served by one process, or in tests. It keeps one entry per resource ever written
/// (forgetting one would let a stale write through), so a service with unbounded resource names
/// wants a store-backed register instead.
///
/// ```
/// use leasehold::fence::{Admission, MemoryFences, ResourceName};
///
/// let fences = MemoryFences::new();
/// let r = ResourceName::new("orders/42")?;
/// assert!(fences.admit_now(&r, 7).is_admitted());
/// assert!(fences.admit_now(&r, 7).is_admitted()); // the same holder again
/// let Admission::Stale(stale) = fences.admit_now(&r, 6) else { panic!("6 < 7") };
/// assert_eq!((stale.fence, stale.highest), (6, 7));
/// assert_eq!(fences.highest_now(&r), Some(7));
/// # Ok::<(), leasehold::fence::ResourceNameError>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryFences {
    highest: Mutex<HashMap<ResourceName, u64>>,
}

impl MemoryFences {
    /// An empty register.
    pub fn new() -> Self {
        Self::default()
    }

    fn map(&self) -> MutexGuard<'_, HashMap<ResourceName, u64>> {
        self.highest.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// [`FenceRegister::admit`] without the `async`.
    pub fn admit_now(&self, resource: &ResourceName, fence: u64) -> Admission {
        let mut map = self.map();
        let admission = Admission::decide(resource, fence, map.get(resource).copied());
        if admission.is_admitted() {
            map.insert(resource.clone(), fence);
        }
        admission
    }

    /// [`FenceRegister::highest`] without the `async`.
    pub fn highest_now(&self, resource: &ResourceName) -> Option<u64> {
        self.map().get(resource).copied()
    }

    /// How many resources it remembers.
    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// Whether it remembers no resource yet.
    pub fn is_empty(&self) -> bool {
        self.map().is_empty()
    }
}

#[async_trait]
impl FenceRegister for MemoryFences {
    async fn admit(&self, resource: &ResourceName, fence: u64) -> StoreResult<Admission> {
        Ok(self.admit_now(resource, fence))
    }

    async fn highest(&self, resource: &ResourceName) -> StoreResult<Option<u64>> {
        Ok(self.highest_now(resource))
    }

    fn describe(&self) -> String {
        "in-process fence register".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_independent_and_a_refusal_changes_nothing() {
        let fences = MemoryFences::new();
        let (a, b) = (
            ResourceName::new("a").unwrap(),
            ResourceName::new("b").unwrap(),
        );
        assert_eq!(
            fences.admit_now(&a, 10),
            Admission::Admitted { previous: None }
        );
        assert_eq!(
            fences.admit_now(&b, 1),
            Admission::Admitted { previous: None }
        );
        assert!(!fences.admit_now(&a, 9).is_admitted());
        assert_eq!(fences.highest_now(&a), Some(10));
        assert_eq!(
            fences.admit_now(&a, 11),
            Admission::Admitted { previous: Some(10) }
        );
        assert_eq!(fences.len(), 2);
        let stale = fences.admit_now(&a, 0).into_result().unwrap_err();
        assert!(stale.to_string().contains("stale fence 0"), "{stale}");
    }
}
