//! Counting stale items: lease items of this store that no longer hold a lease but are still in
//! the table, and those of them that DynamoDB TTL may delete but has not yet.
//!
//! Two `Scan`s with `Select = COUNT`, run side by side, each filtered on the server
//! ([`STALE_FILTER`], [`PAST_TTL_FILTER`] and their prefixed forms) and read in pages of
//! [`STALE_SCAN_PAGE_ITEMS`] items, at most [`MAX_STALE_SCAN_PAGES`] pages each. `Limit` bounds
//! the items a page reads *before* the filter, so a count costs the same whatever it finds, and
//! never more than the cap.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity, Select};
use leasehold::store::StoreError;
use leasehold::store::host_epoch_ms;
use leasehold::store::{InvalidOption, StoreResult};

use super::expressions::{
    PAST_TTL_FILTER, PAST_TTL_FILTER_PREFIXED, PAST_TTL_NAMES, STALE_FILTER, STALE_FILTER_PREFIXED,
    STALE_NAMES,
};
use crate::classify::classify;
use crate::clock::ms;
use crate::keys::KeyScope;
use crate::metrics::Operation;
use crate::record::{Attributes, n};
use crate::store::DynamoDbStore;

/// The items one page of a stale count reads: the `Scan`'s `Limit`.
///
/// ```
/// assert_eq!(leasehold_dynamodb::STALE_SCAN_PAGE_ITEMS, 1_000);
/// ```
pub const STALE_SCAN_PAGE_ITEMS: u32 = 1_000;

/// The most pages each of the two scans of [`DynamoDbStore::stale_items`] reads: a count reads
/// at most `MAX_STALE_SCAN_PAGES × STALE_SCAN_PAGE_ITEMS` = 100 000 items per scan, then stops
/// and reports [`truncated`](StaleCount::truncated).
///
/// ```
/// assert_eq!(leasehold_dynamodb::MAX_STALE_SCAN_PAGES, 100);
/// ```
pub const MAX_STALE_SCAN_PAGES: u32 = 100;

/// What [`DynamoDbStore::stale_items`] counted among this store's items (those under its key
/// prefix; see [`stale_items`](DynamoDbStore::stale_items) for the scope).
///
/// ```
/// let count = leasehold_dynamodb::StaleCount::default();
/// assert_eq!((count.expired, count.past_ttl, count.kept()), (0, 0, 0));
/// assert!(!count.truncated);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct StaleCount {
    /// Lease items that hold no lease: released (or force-released), or expired without a
    /// release — their lease ended more than the clock-skew tolerance ago, as for `state`. Each
    /// stays in the table until DynamoDB TTL deletes it, at the earliest `ttl_padding` after its
    /// lease ended.
    pub expired: u64,
    /// Lease items whose `ttl` has passed: DynamoDB TTL may delete them at any time, and has not
    /// yet. TTL deletes lazily (typically within a few days); a number that only grows means TTL
    /// is not enabled on `ttl`. These items are among [`expired`](Self::expired).
    pub past_ttl: u64,
    /// Items DynamoDB read for the count, both scans together (matching or not): what the count
    /// cost, item by item.
    pub scanned: u64,
    /// `Scan` requests sent, both scans together.
    pub pages: u32,
    /// Read capacity units DynamoDB reports the scans consumed (`ReturnConsumedCapacity =
    /// TOTAL`); 0 where the endpoint does not report them.
    pub read_units: f64,
    /// True when a scan stopped at its page cap with items left unread: the counts are then
    /// lower bounds.
    pub truncated: bool,
}

impl StaleCount {
    /// The expired items whose `ttl` has not passed: **kept on purpose**. A free item keeps the
    /// lock's fence, so the next grant continues above every fence it issued, and slot 0's item
    /// keeps the period ledger, so a period that already ran is not run again; TTL may delete
    /// the item only `ttl_padding` after its lease ended.
    ///
    /// ```
    /// assert_eq!(leasehold_dynamodb::StaleCount::default().kept(), 0);
    /// ```
    pub fn kept(&self) -> u64 {
        self.expired.saturating_sub(self.past_ttl)
    }
}

/// One scan's tally.
#[derive(Debug, Default)]
struct Tally {
    count: u64,
    scanned: u64,
    pages: u32,
    read_units: f64,
    truncated: bool,
}

/// One counting scan: its filter, placeholders and the value besides the key scope's.
struct Counting {
    filter: &'static str,
    names: &'static [&'static str],
    value: (&'static str, AttributeValue),
}

impl DynamoDbStore {
    /// Counts this store's stale items: lease items that hold no lease but are still in the
    /// table, and those of them whose `ttl` has passed but that DynamoDB TTL has not deleted yet
    /// (see [`StaleCount`]). Reads at most [`MAX_STALE_SCAN_PAGES`] pages per scan; use
    /// [`stale_items_within`](Self::stale_items_within) for a lower cap.
    ///
    /// Two `Scan`s with `Select = COUNT` and a filter (`expressions::STALE_FILTER` and
    /// `expressions::PAST_TTL_FILTER`, or their prefixed forms), eventually consistent, in pages
    /// of [`STALE_SCAN_PAGE_ITEMS`] items. A `Scan` reads the whole table whatever it counts:
    /// about 0.5 read capacity units per 4 KB of items read, per scan. Needs IAM `dynamodb:Scan`.
    ///
    /// Scope: the items keyed under this store's key prefix (`PREFIX/…`, which includes the
    /// items of stores whose prefix starts with `PREFIX/`), or, without a prefix, the items whose
    /// key has no `/`; only items with a `leaseExpiry` attribute count.
    ///
    /// # Errors
    ///
    /// The classified error of a `Scan`: a missing table or a missing `dynamodb:Scan`
    /// permission is permanent; throttling, server and network failures are transient (retried
    /// by the SDK with the store's back-off first).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads. Dropping the future stops the scans; nothing is changed.
    ///
    /// ```no_run
    /// # async fn demo(store: leasehold_dynamodb::DynamoDbStore) -> leasehold::store::StoreResult<()> {
    /// let stale = store.stale_items().await?;
    /// tracing::info!(
    ///     expired = stale.expired,
    ///     kept = stale.kept(),
    ///     past_ttl = stale.past_ttl,
    ///     truncated = stale.truncated,
    ///     read_units = stale.read_units,
    ///     "lease table items"
    /// );
    /// # Ok(()) }
    /// ```
    pub async fn stale_items(&self) -> StoreResult<StaleCount> {
        self.stale_items_within(MAX_STALE_SCAN_PAGES).await
    }

    /// As [`stale_items`](Self::stale_items), reading at most `max_pages` pages
    /// ([`STALE_SCAN_PAGE_ITEMS`] items each) per scan: a smaller, cheaper bound on a large
    /// table. A count that stops at the cap says so in [`StaleCount::truncated`].
    ///
    /// # Errors
    ///
    /// A permanent error whose source is an [`InvalidOption`] naming `max_pages` when it is 0 or
    /// above [`MAX_STALE_SCAN_PAGES`] (nothing is sent); otherwise as
    /// [`stale_items`](Self::stale_items).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads. Dropping the future stops the scans; nothing is changed.
    ///
    /// ```no_run
    /// # async fn demo(store: leasehold_dynamodb::DynamoDbStore) -> leasehold::store::StoreResult<()> {
    /// let first = store.stale_items_within(1).await?; // at most 1 000 items read per scan
    /// if first.truncated {
    ///     tracing::info!(at_least = first.expired, "stale lease items");
    /// }
    /// assert!(store.stale_items_within(0).await.is_err());
    /// # Ok(()) }
    /// ```
    pub async fn stale_items_within(&self, max_pages: u32) -> StoreResult<StaleCount> {
        check_pages(max_pages)?;
        let now = host_epoch_ms();
        let stale = now.saturating_sub(ms(self.options.clock_skew_tolerance));
        let scope = KeyScope::new(&self.options.key_prefix);
        let expired = Counting {
            filter: scope.filter(STALE_FILTER_PREFIXED, STALE_FILTER),
            names: STALE_NAMES,
            value: (":stale", n(stale)),
        };
        let past_ttl = Counting {
            filter: scope.filter(PAST_TTL_FILTER_PREFIXED, PAST_TTL_FILTER),
            names: PAST_TTL_NAMES,
            value: (":epoch", n(now / 1000)),
        };
        let (expired, past_ttl) = tokio::try_join!(
            self.count(expired, &scope, max_pages),
            self.count(past_ttl, &scope, max_pages)
        )?;
        Ok(StaleCount {
            expired: expired.count,
            past_ttl: past_ttl.count,
            scanned: expired.scanned.saturating_add(past_ttl.scanned),
            pages: expired.pages.saturating_add(past_ttl.pages),
            read_units: expired.read_units + past_ttl.read_units,
            truncated: expired.truncated || past_ttl.truncated,
        })
    }

    /// One counting scan, page by page, up to `max_pages` pages.
    async fn count(
        &self,
        counting: Counting,
        scope: &KeyScope,
        max_pages: u32,
    ) -> StoreResult<Tally> {
        let table = &self.options.table;
        let (scope, scoped) = scope.binding();
        let (name, value) = counting.value;
        let mut tally = Tally::default();
        let mut start: Option<Attributes> = None;
        loop {
            let request = self
                .client
                .scan()
                .table_name(table)
                .select(Select::Count)
                .limit(i32::try_from(STALE_SCAN_PAGE_ITEMS).unwrap_or(i32::MAX))
                .filter_expression(counting.filter)
                .set_expression_attribute_names(Some(Self::names(counting.names)))
                .expression_attribute_values(name, value.clone())
                .expression_attribute_values(scope, scoped.clone())
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total);
            let out = self
                .metered(Operation::StaleCount, |probe| {
                    request.customize().interceptor(probe).send()
                })
                .await
                .map_err(|e| classify("Scan", table, e))?;
            let counted = |n: i32| u64::try_from(n).unwrap_or(0);
            tally.count = tally.count.saturating_add(counted(out.count));
            tally.scanned = tally.scanned.saturating_add(counted(out.scanned_count));
            tally.pages = tally.pages.saturating_add(1);
            tally.read_units += out
                .consumed_capacity
                .as_ref()
                .and_then(|c| c.capacity_units)
                .unwrap_or(0.0);
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => {
                    if tally.pages >= max_pages {
                        tally.truncated = true;
                        return Ok(tally);
                    }
                    start = Some(key);
                }
                _ => return Ok(tally),
            }
        }
    }
}

/// `max_pages` is 1 to [`MAX_STALE_SCAN_PAGES`].
fn check_pages(max_pages: u32) -> StoreResult<()> {
    if (1..=MAX_STALE_SCAN_PAGES).contains(&max_pages) {
        return Ok(());
    }
    let invalid = InvalidOption::new(
        "DynamoDB",
        "max_pages",
        format!(
            "{max_pages} pages requested; 1 to {MAX_STALE_SCAN_PAGES} are allowed \
             (leasehold_dynamodb::MAX_STALE_SCAN_PAGES, {STALE_SCAN_PAGE_ITEMS} items each)"
        ),
    );
    Err(StoreError::permanent(invalid.to_string()).with_source(invalid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_caps_outside_the_limit_are_refused_naming_it() {
        assert!(check_pages(1).is_ok() && check_pages(MAX_STALE_SCAN_PAGES).is_ok());
        for bad in [0, MAX_STALE_SCAN_PAGES + 1, u32::MAX] {
            let err = check_pages(bad)
                .err()
                .map(|e| (e.is_transient(), e.to_string()));
            let Some((transient, text)) = err else {
                panic!("{bad} pages accepted");
            };
            assert!(!transient, "{text}");
            assert!(
                text.contains("max_pages") && text.contains("1 to 100"),
                "{text}"
            );
        }
    }

    #[test]
    fn kept_items_are_the_expired_ones_not_yet_past_their_ttl() {
        let count = StaleCount {
            expired: 7,
            past_ttl: 2,
            ..StaleCount::default()
        };
        assert_eq!(count.kept(), 5);
        let racing = StaleCount {
            expired: 1,
            past_ttl: 2,
            ..StaleCount::default()
        };
        assert_eq!(racing.kept(), 0);
    }
}
