//! # leasehold-docs
//!
//! Not a library: the home of the manual pages whose Rust examples use several leasehold crates
//! at once. Each page is included below as documentation under `cfg(doctest)`, so
//! `cargo test --doc` compiles (and, unless marked `no_run`, runs) every Rust block in it. Pages
//! about one crate are compiled by that crate instead; `scripts/lib/docs_compiled.py` checks that
//! every page with a Rust block is included somewhere.

/// `README.md`: the quick starts.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// `docs/fencing.md`: fencing your writes, across every sink.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/fencing.md")]
pub struct FencingDoctests;
