//! The `xplug` binaries' `malloc`: mimalloc's
//! (docs/src/embedding/iree.md#the-allocator).
//!
//! `libmimalloc-sys`, built with its `override` feature, defines `malloc`,
//! `free`, `calloc`, `realloc` and the aligned forms in the executable, so
//! IREE's runtime (its system allocator calls `malloc`), Rust's standard
//! library and every plugin the tool loads share one allocator. IREE's
//! runtime makes some thirty heap calls per dispatch; in glibc's allocator
//! they were a quarter of a small dispatch's instructions. This module is
//! the binaries' (`src/main.rs` and `static/src/main.rs` name it), not the
//! library's: a program that links `xplug_cli` or `xplug-iree` keeps the
//! allocator it chose.
//!
//! One setting differs from mimalloc's defaults: its arenas are committed
//! as they are used (`arena_eager_commit` 0; mimalloc's default, 2, commits
//! them at once where the OS overcommits). Committed eagerly, the 1 GiB
//! arena mimalloc reserves at start is backed by transparent huge pages
//! from the first allocation on: 3.8 MiB more resident and 0.4 ms more per
//! start of `xplug --version` (medians of 200 starts), and per dispatch no
//! difference.
//! `MIMALLOC_ARENA_EAGER_COMMIT` in the environment still decides when set.
//! mimalloc reads its options when it starts, before `main` and before the
//! first allocation, so the default is set in a constructor that runs
//! ahead of mimalloc's own.

use libmimalloc_sys::{mi_option_set_default, mi_option_t};

/// `mi_option_arena_eager_commit` of mimalloc 2's `mimalloc.h` (the enum's
/// fifth entry; the crate does not name it).
const ARENA_EAGER_COMMIT: mi_option_t = 4;

/// Sets mimalloc's default for [`ARENA_EAGER_COMMIT`] to 0. Run by the C
/// runtime from `.init_array` before mimalloc's constructor (priority 101:
/// the runtime calls them in ascending order of priority).
extern "C" fn commit_arenas_lazily() {
    // SAFETY: `mi_option_set_default` takes no pointer; for an option in
    // range (4 < `_mi_option_last`) it writes one entry of mimalloc's static
    // option table, and only while that option is not yet initialised. It
    // runs once, in the constructors, while the process has one thread.
    unsafe { mi_option_set_default(ARENA_EAGER_COMMIT, 0) };
}

/// The constructor's entry in `.init_array`, priority 100.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array.00100")]
static COMMIT_ARENAS_LAZILY: extern "C" fn() = commit_arenas_lazily;
