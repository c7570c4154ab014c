//! A secret a store holds to authenticate (a password, a token), never printed.

use std::fmt;

/// A password or token for a store's driver. Its `Debug` and `Display` show `***` whatever it
/// holds, so a struct that derives `Debug` never prints it; [`expose`](Self::expose) hands the
/// text to the driver.
///
/// ```
/// use leasehold::store::Secret;
/// let password = Secret::new("hunter2");
/// assert_eq!(format!("{password:?} {password}"), "*** ***");
/// assert_eq!(format!("{:?}", ("app", &password)), r#"("app", ***)"#);
/// assert_eq!(password.expose(), "hunter2");
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The secret itself, for the driver.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}
