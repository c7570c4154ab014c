//! The toolkit for store authors: the [`LeaseStore`] trait a backend implements, the request and
//! answer types it speaks, the period ledger's types, error classification, release signals,
//! URL parsing for its opener, and the checks every store makes at its edge. Users of the library
//! import from the crate root; a backend imports from here (`docs/writing-a-store.md` walks
//! through a store, room by room).
//!
//! ```
//! use leasehold::store::{
//!     AcquireRequest, Acquisition, ErrorKind, LeaseStore, StoreError, StoreOpener, StoreResult,
//!     StoreUrl, check_slots,
//! };
//! assert!(check_slots(leasehold::limits::MAX_SLOTS).is_ok());
//! assert_eq!(StoreError::transient("timed out").kind(), ErrorKind::Transient);
//! ```

pub(crate) mod batch;
pub(crate) mod budget;
pub(crate) mod connection_keys;
pub(crate) mod connection_options;
pub(crate) mod constructors;
pub(crate) mod contract;
pub(crate) mod hand_off;
pub(crate) mod layer;
pub(crate) mod lease;
pub(crate) mod ledger_text;
pub(crate) mod list;
pub(crate) mod listener;
pub(crate) mod memory;
pub(crate) mod millis;
pub(crate) mod observe;
pub(crate) mod option_accessors;
pub(crate) mod option_error;
pub(crate) mod option_key;
pub(crate) mod own_writes;
pub(crate) mod period;
pub(crate) mod protocol_store;
pub(crate) mod rounds;
pub(crate) mod secret;
pub(crate) mod server_notifications;
pub(crate) mod signal;
pub(crate) mod slot_record;
pub(crate) mod store_debug;
pub(crate) mod timeout;
pub(crate) mod unsupported;
pub(crate) mod url;

pub use async_trait::async_trait;

pub use crate::connection_option_keys;
pub use crate::option_accessors;
pub use crate::period_ledger;
pub use crate::protocol_store;
pub use crate::protocol_store_methods;
pub use crate::store_constructors;
pub use crate::store_debug;

pub use crate::error::{ErrorKind, StoreError, StoreResult};
pub use crate::limits::{
    LimitError, MAX_LIST_CURSOR_LEN, MAX_LIST_LOCKS, MAX_LIST_SCAN, MAX_SLOTS, MIN_PERIOD,
    check_duration, check_slots, deadline_after,
};
pub use crate::name::LockName;
pub use batch::{answer_each, answer_repeats, first_occurrences};
pub use budget::RequestBudget;
pub use connection_options::ConnectionOptions;
pub use contract::{ClockSource, LeaseStore};
pub use hand_off::{HAND_OFF_HOLD, HandOff, MAX_WAITERS, WAITING_FRESH, WaiterId};
pub use layer::{StoreAnswer, StoreCall, StoreLayer};
pub use lease::{
    AcquireRequest, Acquisition, Extension, Holder, Lease, LockState, Release, ReleasedTo, Token,
};
pub use ledger_text::{LedgerText, StoredLedger};
pub use list::{CursorError, ListCursor, ListedLock, LockPage, group_holders};
pub use listener::{ListenSessions, Listener, ReconnectPause};
pub use memory::MemoryStore;
pub use millis::{ceil_millis, ceil_secs, host_epoch_ms, time_at_ms};
pub use observe::{ObservedStore, StoreObserver};
pub use option_error::InvalidOption;
pub use option_key::{OptionKey, OptionKind, OptionValue, StoreOptions};
pub use own_writes::{OWN_WRITES_PRUNE_FROM, OwnWrite, OwnWrites};
pub use period::{
    ClaimVerdict, Period, PeriodError, PeriodRecord, PeriodStart, PeriodWindow, check_period_slots,
    epoch_ms, format_utc, from_epoch_ms, judge_claim,
};
pub use rounds::{CasRounds, ForceRound, ForcedRound, forced_release};
pub use secret::Secret;
pub use server_notifications::ServerNotifications;
pub use signal::{ReleaseNotifier, ReleaseSignal, SignalReach};
pub use slot_record::{
    RECORD_TAG, RecordFields, SlotRecord, encode_record, holders_below, lowest_free_slot,
};
pub use timeout::{MAX_TIMEOUT, check_timeout};
pub use unsupported::Unsupported;
pub use url::{
    MIN_SCRUBBED_SECRET_LEN, MemoryOpener, OpenError, StoreOpener, StoreRegistry, StoreUrl,
    UrlError, UrlOpener, UrlOptions, UrlStore, UserInfo, host_port, percent_decode, redact_url,
    redact_urls_in, scrub, scrub_secrets, url_secrets,
};
