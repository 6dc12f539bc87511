//! `xplug-static`: `xplug` ([`xplug_cli::main`]) with the example static
//! plugin `sample_static` linked in, so `static:sample_static`, `resolve
//! --static` and the demo's dynamic-over-static override have a plugin to
//! show. The tests in `tests/` and `cargo xtask demo` run it; the shipped
//! `xplug` (crates/cli) links no plugin.

use std::process::ExitCode;

// `sample_static` registers itself in `xplug_providers::static_plugins()`
// from a constructor the linker keeps only if the crate is named.
use sample_static as _;

// mimalloc's `malloc`, set up as in `xplug`.
#[path = "../../src/allocator.rs"]
mod allocator;

fn main() -> ExitCode {
    xplug_cli::main()
}
