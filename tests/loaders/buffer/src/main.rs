//! `xplug-buffer`: `xplug` ([`xplug_cli::main`]) with the `buffer:` loader
//! linked in, unchanged otherwise.

use std::process::ExitCode;

// The loader registers itself from a constructor the linker keeps only if
// the crate is named.
use xplug_buffer_loader as _;

fn main() -> ExitCode {
    xplug_cli::main()
}
