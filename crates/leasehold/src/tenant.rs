//! Tenant namespaces: `tenant:<id>:<lock>`.

use leasehold_rules::check_lock_name;

use crate::limits::DEFAULT_TENANT_PREFIX;
use crate::limits::MAX_LOCK_NAME_LEN;
use crate::name::{LockName, NameError};

/// A tenant namespace that maps a caller's lock name `job` to `<prefix>:<tenant>:job`.
///
/// Prefix and tenant id must each be valid lock names without `:`; the caller's lock name must also
/// be free of `:` and fit in what is left of the 255-byte budget.
///
/// ```
/// use leasehold::Tenant;
///
/// let acme = Tenant::new("acme")?;
/// assert_eq!(acme.scope("report")?.as_str(), "tenant:acme:report");
/// assert!(acme.scope("a:b").is_err());
/// # Ok::<(), leasehold::error::NameError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tenant {
    namespace: String,
}

impl Tenant {
    /// A tenant under the default `tenant` prefix.
    pub fn new(id: impl AsRef<str>) -> Result<Self, NameError> {
        Self::with_prefix(DEFAULT_TENANT_PREFIX, id)
    }

    /// A tenant under a custom prefix.
    ///
    /// ```
    /// # use leasehold::Tenant;
    /// let t = Tenant::with_prefix("org", "42")?;
    /// assert_eq!(t.namespace(), "org:42");
    /// # Ok::<(), leasehold::error::NameError>(())
    /// ```
    pub fn with_prefix(prefix: impl AsRef<str>, id: impl AsRef<str>) -> Result<Self, NameError> {
        let (prefix, id) = (prefix.as_ref(), id.as_ref());
        check_part("tenant prefix", prefix)?;
        check_part("tenant id", id)?;
        let namespace = format!("{prefix}:{id}");
        // Leave room for ':' and at least one character of lock name.
        if namespace.len() + 2 > MAX_LOCK_NAME_LEN {
            return Err(NameError::OverTenantBudget {
                name: String::new(),
                len: 0,
                budget: MAX_LOCK_NAME_LEN.saturating_sub(namespace.len() + 1),
                tenant: namespace,
            });
        }
        Ok(Self { namespace })
    }

    /// `prefix:id`.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The bytes left for a caller's lock name.
    pub fn budget(&self) -> usize {
        MAX_LOCK_NAME_LEN - self.namespace.len() - 1
    }

    /// Maps a caller's lock name into this namespace.
    pub fn scope(&self, name: &str) -> Result<LockName, NameError> {
        check_part("lock name", name)?;
        if name.len() > self.budget() {
            return Err(NameError::OverTenantBudget {
                name: name.to_owned(),
                len: name.len(),
                tenant: self.namespace.clone(),
                budget: self.budget(),
            });
        }
        LockName::new(format!("{}:{name}", self.namespace))
    }
}

fn check_part(part: &'static str, value: &str) -> Result<(), NameError> {
    if value.contains(':') {
        return Err(NameError::ReservedSeparator {
            part,
            value: value.to_owned(),
        });
    }
    check_lock_name(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separator_in_any_part_is_rejected() {
        assert!(matches!(
            Tenant::new("a:b"),
            Err(NameError::ReservedSeparator {
                part: "tenant id",
                ..
            })
        ));
        assert!(matches!(
            Tenant::with_prefix("p:q", "a"),
            Err(NameError::ReservedSeparator {
                part: "tenant prefix",
                ..
            })
        ));
        let t = Tenant::new("acme").map_err(|e| e.to_string());
        assert!(matches!(
            t.as_ref().map(|t| t.scope("x:y")),
            Ok(Err(NameError::ReservedSeparator {
                part: "lock name",
                ..
            }))
        ));
    }

    #[test]
    fn parts_must_be_valid_names() {
        assert!(matches!(Tenant::new(""), Err(NameError::Empty)));
        assert!(matches!(Tenant::new("a b"), Err(NameError::BadChar { .. })));
    }

    #[test]
    fn budget_is_enforced_exactly() -> Result<(), NameError> {
        let t = Tenant::new("acme")?;
        assert_eq!(t.budget(), 255 - "tenant:acme:".len());
        let fits = "x".repeat(t.budget());
        assert_eq!(t.scope(&fits)?.as_str().len(), 255);
        let over = "x".repeat(t.budget() + 1);
        assert!(matches!(
            t.scope(&over),
            Err(NameError::OverTenantBudget { .. })
        ));
        assert!(matches!(
            Tenant::new("y".repeat(250)),
            Err(NameError::OverTenantBudget { .. })
        ));
        Ok(())
    }
}
