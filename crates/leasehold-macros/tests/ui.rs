//! Compile-time behaviour of `#[leasehold::leader_only]` (trybuild): every mistake is a compile
//! error at the offending token with a message that says what is allowed, and the valid forms
//! compile and run.
//!
//! The expected messages are in `tests/ui/fail/*.stderr`; after a deliberate change of a message,
//! regenerate them with `TRYBUILD=overwrite cargo test -p leasehold-macros --test ui` and review
//! the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
