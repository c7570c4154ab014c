"""Every Rust block in README.md and docs/*.md is compiled: each page that has one must be
included as documentation (`#[doc = include_str!(".../<page>")]`) by some crate, so that
`cargo test --doc` compiles its blocks.

    python3 scripts/lib/docs_compiled.py
"""

import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[2]
pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
with_rust = [p for p in pages if re.search(r"^\s*```rust", p.read_text(), re.M)]
included = set()
for source in (root / "crates").glob("*/src/**/*.rs"):
    for m in re.finditer(r'include_str!\("([^"]+\.md)"\)', source.read_text()):
        included.add((source.parent / m.group(1)).resolve())
missing = [p.relative_to(root) for p in with_rust if p.resolve() not in included]
for p in missing:
    print(f"{p}: has Rust blocks but no crate includes it as doc tests", file=sys.stderr)
print(f"{len(with_rust) - len(missing)} of {len(with_rust)} pages with Rust blocks are compiled")
sys.exit(1 if missing else 0)
