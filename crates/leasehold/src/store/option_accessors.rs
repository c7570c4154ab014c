//! `option_accessors!`: the builder and getter pair of each plain option of a store's options
//! type, written once for every store.

/// Writes the builder (`with_x`) and the getter (`x`) of each plain option of a store's options
/// type.
///
/// A store's options type keeps its options in fields named after them; for each one it states,
/// in one line after the builder's documentation, the builder's name, the field (which is also
/// the getter's name), its type — `text` for a `String` set from `impl Into<String>` and read as
/// `&str`, any `Copy` type otherwise, with `= path.to.field` when the field lies deeper (in a
/// [`ConnectionOptions`](crate::store::ConnectionOptions), say) — and the getter's one-line
/// documentation. The macro writes
/// the `#[must_use]` builder that sets the field and the getter that reads it, as inherent
/// methods (call it inside the type's `impl` block). Options with rules of their own (a pair of
/// files, an optional path) keep hand-written methods.
///
/// ```
/// use std::time::Duration;
///
/// #[derive(Debug, Default)]
/// pub struct Options {
///     prefix: String,
///     request_timeout: Duration,
///     notifications: bool,
/// }
///
/// impl Options {
///     leasehold::store::option_accessors! {
///         /// The key prefix.
///         fn with_prefix / prefix: text => "The key prefix.";
///         /// How long one request may take.
///         fn with_request_timeout / request_timeout: Duration => "The request timeout.";
///         /// Whether waiters are woken on release.
///         fn with_notifications / notifications: bool => "Whether release notifications are on.";
///     }
/// }
///
/// let o = Options::default().with_prefix("jobs").with_request_timeout(Duration::from_secs(1));
/// assert_eq!((o.prefix(), o.request_timeout(), o.notifications()), ("jobs", Duration::from_secs(1), false));
/// ```
#[macro_export]
macro_rules! option_accessors {
    () => {};
    (
        $(#[$doc:meta])*
        fn $setter:ident / $field:ident: text => $get_doc:literal;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[must_use]
        pub fn $setter(mut self, $field: impl Into<String>) -> Self {
            self.$field = $field.into();
            self
        }

        #[doc = $get_doc]
        pub fn $field(&self) -> &str {
            &self.$field
        }

        $crate::option_accessors! { $($rest)* }
    };
    (
        $(#[$doc:meta])*
        fn $setter:ident / $getter:ident: $ty:ty = $($path:ident).+ => $get_doc:literal;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[must_use]
        pub fn $setter(mut self, $getter: $ty) -> Self {
            self.$($path).+ = $getter;
            self
        }

        #[doc = $get_doc]
        pub fn $getter(&self) -> $ty {
            self.$($path).+
        }

        $crate::option_accessors! { $($rest)* }
    };
    (
        $(#[$doc:meta])*
        fn $setter:ident / $field:ident: $ty:ty => $get_doc:literal;
        $($rest:tt)*
    ) => {
        $(#[$doc])*
        #[must_use]
        pub fn $setter(mut self, $field: $ty) -> Self {
            self.$field = $field;
            self
        }

        #[doc = $get_doc]
        pub fn $field(&self) -> $ty {
            self.$field
        }

        $crate::option_accessors! { $($rest)* }
    };
}
