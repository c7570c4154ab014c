//! `store_debug!`: the `Debug` impl of a store, written once for every store: its type name, its
//! description (which never shows a secret) and at most one field that tells two stores apart.

/// Writes `impl Debug` for a store type that has a `description: String` field (the redacted URL
/// [`describe`](crate::LeaseStore::describe) answers): the type's name, `store` with the
/// description, and optionally one more field by its path (`"prefix" => options.prefix`), with
/// the rest left out (`..`), so that no option holding a secret is ever printed.
///
/// ```
/// pub struct KvStore {
///     description: String,
///     prefix: String,
///     password: String,
/// }
/// leasehold::store::store_debug!(KvStore, "prefix" => prefix);
///
/// let store = KvStore { description: "kv://app:***@h".into(), prefix: "jobs".into(), password: "hunter2".into() };
/// let shown = format!("{store:?}");
/// assert_eq!(shown, r#"KvStore { store: "kv://app:***@h", prefix: "jobs", .. }"#);
/// # let _ = store.password;
/// ```
#[macro_export]
macro_rules! store_debug {
    ($store:ident $(, $name:literal => $($field:ident).+)?) => {
        impl ::std::fmt::Debug for $store {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($store))
                    .field("store", &self.description)
                    $(.field($name, &self.$($field).+))?
                    .finish_non_exhaustive()
            }
        }
    };
}
