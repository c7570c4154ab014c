//! `store_constructors!`: the `connect` and `connect_with` constructors of a networked store,
//! written once for every store that opens lazily and then checks that its servers answer.

/// Writes a store's `connect(url)` (from the options' `Default`) and `connect_with(url, options)`
/// (the store's own `connect_lazy(url, options)`, then its `ping()`; a failed ping is
/// [`OpenError::connect`](crate::store::OpenError::connect) naming `url`). `connect` is
/// documented by the docs given before its name; `connect_with`'s docs are written here, the
/// same for every store (like `connect`, starting from `options`; its errors and cancel safety
/// are `connect`'s), followed by any docs given before `connect_with` (an example, say), which
/// may be left out. Call it inside the store's `impl` block, which must have
/// `fn connect_lazy(&str, Options) -> Result<Self, OpenError>` and
/// `async fn ping(&self) -> StoreResult<()>`.
///
/// ```
/// use leasehold::store::{OpenError, StoreError, StoreResult};
///
/// #[derive(Default)]
/// pub struct Options { up: bool }
/// pub struct Store { up: bool }
///
/// impl Store {
///     leasehold::store::store_constructors! {
///         options: Options;
///         /// Opens the store and checks that it answers.
///         connect;
///     }
///     pub fn connect_lazy(_url: &str, options: Options) -> Result<Self, OpenError> {
///         Ok(Self { up: options.up })
///     }
///     pub async fn ping(&self) -> StoreResult<()> {
///         if self.up { Ok(()) } else { Err(StoreError::transient("down")) }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// assert!(matches!(Store::connect("x://h").await, Err(OpenError::Connect { .. })));
/// assert!(Store::connect_with("x://h", Options { up: true }).await.is_ok());
/// # }
/// ```
#[macro_export]
macro_rules! store_constructors {
    (
        options: $options:ty;
        $(#[$connect_doc:meta])*
        connect;
        $(
            $(#[$with_doc:meta])*
            connect_with;
        )?
    ) => {
        $(#[$connect_doc])*
        pub async fn connect(url: &str) -> Result<Self, $crate::store::OpenError> {
            Self::connect_with(url, <$options>::default()).await
        }

        /// Like [`connect`](Self::connect), starting from `options` (URL parameters override them).
        ///
        /// # Errors
        ///
        /// As [`connect`](Self::connect).
        ///
        /// # Cancel safety
        ///
        /// Cancel-safe, as [`connect`](Self::connect).
        $($(#[$with_doc])*)?
        pub async fn connect_with(
            url: &str,
            options: $options,
        ) -> Result<Self, $crate::store::OpenError> {
            let store = Self::connect_lazy(url, options)?;
            store
                .ping()
                .await
                .map_err(|source| $crate::store::OpenError::connect(url, source))?;
            Ok(store)
        }
    };
}
