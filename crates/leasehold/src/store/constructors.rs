//! `store_constructors!`: the `connect` and `connect_with` constructors of a networked store,
//! written once for every store that opens lazily and then checks that its servers answer.

/// Writes a store's `connect(url)` (from the options' `Default`) and `connect_with(url, options)`
/// (the store's own `connect_lazy(url, options)`, then its `ping()`; a failed ping is
/// [`OpenError::connect`](crate::store::OpenError::connect) naming `url`).
///
/// `connect` is documented by the docs given before its name (what it opens, an example),
/// followed by its `# Errors` and `# Cancel safety` sections, written here the same for every
/// store from two phrases: `connect_error`, when the servers count as unreachable (`Connect`;
/// a malformed URL or option is `Invalid` in every store), and `cancel`, what dropping the future
/// leaves behind. `connect_with`'s docs are written here too (like `connect`, starting from
/// `options`; its errors and cancel safety are `connect`'s), followed by any docs given before
/// `connect_with` (an example, say), which may be left out. Call it inside the store's `impl`
/// block, which must have `fn connect_lazy(&str, Options) -> Result<Self, OpenError>` and
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
///         connect_error: "the store is down";
///         cancel: "dropping the future only abandons the connection attempt";
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
        connect_error: $($connect_error:literal)+;
        cancel: $($cancel:literal)+;
        $(
            $(#[$with_doc:meta])*
            connect_with;
        )?
    ) => {
        $(#[$connect_doc])*
        ///
        /// # Errors
        ///
        /// [`OpenError::Invalid`](leasehold::store::OpenError::Invalid) for a malformed URL or
        /// option (the message lists what is allowed),
        /// [`OpenError::Connect`](leasehold::store::OpenError::Connect) when
        #[doc = concat!($($connect_error,)+ ".")]
        ///
        /// # Cancel safety
        ///
        /// Cancel-safe:
        #[doc = concat!($($cancel,)+ ".")]
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
