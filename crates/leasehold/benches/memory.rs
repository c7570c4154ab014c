//! Criterion benchmarks of the core on `MemoryStore` (filled in below).
fn main() {}
