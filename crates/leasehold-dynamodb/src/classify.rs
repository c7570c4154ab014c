//! Classifying SDK failures as transient or permanent.
//!
//! Conditional-check failures never get here: they are contention (or `NotHeld`) and are handled
//! by the operations themselves.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use leasehold::{ErrorKind, store::StoreError};

/// Service error codes that retrying can help with: throttling, capacity, internal errors,
/// transaction conflicts and expired (refreshable) credentials.
const TRANSIENT_CODES: &[&str] = &[
    "InternalServerError",
    "InternalServerErrorException",
    "InternalFailure",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "RequestLimitExceededException",
    "ThrottlingException",
    "Throttling",
    "ThrottledException",
    "TooManyRequestsException",
    "TransactionConflictException",
    "TransactionInProgressException",
    "LimitExceededException",
    "ExpiredTokenException",
    "RequestTimeout",
    "RequestTimeoutException",
];

/// Whether a service error code (or HTTP status) is worth retrying.
///
/// ```
/// use leasehold::ErrorKind;
/// use leasehold_dynamodb::classify_code;
///
/// assert_eq!(classify_code(Some("ThrottlingException"), 400), ErrorKind::Transient);
/// assert_eq!(classify_code(None, 503), ErrorKind::Transient);
/// assert_eq!(classify_code(Some("AccessDeniedException"), 400), ErrorKind::Permanent);
/// assert_eq!(classify_code(Some("ResourceNotFoundException"), 400), ErrorKind::Permanent);
/// ```
pub fn classify_code(code: Option<&str>, http_status: u16) -> ErrorKind {
    if code.is_some_and(|c| TRANSIENT_CODES.contains(&c)) || http_status >= 500 {
        ErrorKind::Transient
    } else {
        ErrorKind::Permanent
    }
}

/// Turns an SDK failure of `operation` on `table` into a classified store error.
pub(crate) fn classify<E>(operation: &str, table: &str, err: SdkError<E>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let context = format!("DynamoDB {operation} on table {table}");
    match err {
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            let err = service.err();
            let code = err.code();
            let kind = classify_code(code, status);
            let hint = match code {
                Some("ResourceNotFoundException") => {
                    " (does the table exist in this region? create it with create_table or in your infrastructure code)"
                }
                Some("AccessDeniedException") => {
                    " (the credentials need dynamodb:GetItem, BatchGetItem and UpdateItem on the table)"
                }
                Some("UnrecognizedClientException" | "InvalidSignatureException") => {
                    " (check the AWS credentials and region)"
                }
                _ => "",
            };
            StoreError::new(
                kind,
                format!(
                    "{context}: {} (HTTP {status}): {}{hint}",
                    code.unwrap_or("unknown error"),
                    err.message().unwrap_or("no message"),
                ),
            )
        }
        SdkError::TimeoutError(_) => StoreError::transient(format!("{context}: timed out")),
        SdkError::DispatchFailure(failure) => {
            let kind = if failure.is_user() {
                ErrorKind::Permanent
            } else {
                ErrorKind::Transient
            };
            let what = if failure.is_timeout() {
                "timed out"
            } else if failure.is_io() {
                "cannot reach the endpoint"
            } else {
                "the request could not be sent"
            };
            let source = SdkError::<E>::DispatchFailure(failure);
            StoreError::new(kind, format!("{context}: {what}")).with_source(StoreCause::of(&source))
        }
        SdkError::ResponseError(_) => {
            StoreError::transient(format!("{context}: the response could not be read"))
        }
        SdkError::ConstructionFailure(_) => StoreError::permanent(format!(
            "{context}: the request could not be built (check region and credentials configuration)"
        ))
        .with_source(StoreCause::of(&err)),
        other => StoreError::permanent(format!("{context}: unexpected SDK failure"))
            .with_source(StoreCause::of(&other)),
    }
}

/// The full SDK error chain as text, kept as the source of a [`StoreError`] (the SDK's own error
/// types are not all `Send + Sync + 'static` across versions).
#[derive(Debug)]
pub(crate) struct StoreCause(String);

impl StoreCause {
    fn of(err: &(dyn std::error::Error + 'static)) -> Self {
        Self(aws_sdk_dynamodb::error::DisplayErrorContext(err).to_string())
    }
}

impl std::fmt::Display for StoreCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreCause {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_classifier_list_holds() {
        for code in [
            "InternalServerError",
            "ProvisionedThroughputExceededException",
            "RequestLimitExceeded",
            "ThrottlingException",
            "TransactionConflictException",
        ] {
            assert_eq!(
                classify_code(Some(code), 400),
                ErrorKind::Transient,
                "{code}"
            );
        }
        for code in [
            "AccessDeniedException",
            "ResourceNotFoundException",
            "ValidationException",
            "UnrecognizedClientException",
        ] {
            assert_eq!(
                classify_code(Some(code), 400),
                ErrorKind::Permanent,
                "{code}"
            );
        }
        assert_eq!(classify_code(Some("Whatever"), 500), ErrorKind::Transient);
    }
}
