//! The cost of a pin (`docs/src/reference/loading.md#pinned-plugins`): the same plugin
//! file loaded and unloaded through `Manager::load_spec`, by its plain spec
//! and by its pinned spec (`?sha256=HEX`: read once, hashed, checked, and a
//! `.so` opened from a sealed in-memory file), as a shared library and as
//! an embedded ELF. Measured interleaved ([`xplug_benches::pair`]), so both
//! sides see the same machine load; `cargo xtask bench` prints the ratios.
//!
//! Group and function names are read back by `xtask/src/bench.rs`; keep
//! them in sync.

#![expect(missing_docs, reason = "`criterion_group!` generates an undocumented public function")]

use criterion::{Criterion, criterion_group, criterion_main};
use xplug_benches::pair;
use xplug_manager::Manager;
use xplug_providers::Sha256Digest;

/// Loads `spec` into a fresh manager and drops it (the plugin is unloaded,
/// a C library closed).
fn load_and_unload(spec: &str) {
    let manager = Manager::new();
    // SAFETY: the repository's standalone C sample, built below.
    unsafe { manager.load_spec(spec) }.expect("loads");
    drop(manager);
}

fn pinned_load(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    // One file, a valid shared library and a valid embedded ELF.
    let path = xplug_fixtures::build_standalone_c_sample(dir.path());
    let digest = Sha256Digest::of(&std::fs::read(&path).expect("the standalone sample"));
    for (group, plain) in [
        ("pinned_load_so", path.display().to_string()),
        ("pinned_load_embedded", format!("embedded:{}", path.display())),
    ] {
        let pinned = format!("{plain}?sha256={digest}");
        pair(
            c,
            group,
            None,
            ("unpinned", &mut || load_and_unload(&plain)),
            ("pinned", &mut || load_and_unload(&pinned)),
        );
    }
}

criterion_group!(benches, pinned_load);
criterion_main!(benches);
