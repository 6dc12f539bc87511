//! `xplug`: the binary is [`xplug_cli::main`]; see the library's docs.
//!
//! The binary's `malloc` is mimalloc's: `libmimalloc-sys`, built with its
//! `override` feature, defines `malloc`, `free`, `calloc`, `realloc` and the
//! aligned forms in this executable, so IREE's runtime (its system
//! allocator calls `malloc`), Rust's standard library and every plugin the
//! tool loads share one allocator. IREE's runtime makes some thirty heap
//! calls per dispatch; with glibc's allocator they are a quarter of a small
//! dispatch's instructions (docs/src/design/benchmarks.md). The choice is
//! the binary's, not the libraries': a runtime that embeds `xplug-iree`
//! picks its own allocator the same way.

use std::process::ExitCode;

// Linked for its `malloc` and friends; nothing in Rust calls it by name.
use libmimalloc_sys as _;

fn main() -> ExitCode {
    xplug_cli::main()
}
