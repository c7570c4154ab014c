//! Store URLs, in one place: parsing the URL a store is opened from ([`parse`]), opening a store
//! by its scheme ([`open`]), masking the secrets a URL carries wherever it is shown ([`redact`]),
//! and the one percent decoder all three use ([`decode`]).

pub(crate) mod decode;
pub(crate) mod open;
pub(crate) mod parse;
pub(crate) mod redact;

pub use decode::percent_decode;
pub use open::{MemoryOpener, OpenError, StoreOpener, StoreRegistry, UrlOpener, UrlStore};
pub use parse::{StoreUrl, UrlError, UrlOptions, UserInfo, host_port};
pub use redact::{
    MIN_SCRUBBED_SECRET_LEN, redact_url, redact_urls_in, scrub, scrub_secrets, url_secrets,
};
