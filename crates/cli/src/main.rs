//! `xplug`: the binary is [`xplug_cli::main`]; see the library's docs. Its
//! `malloc` is mimalloc's ([`allocator`]).

use std::process::ExitCode;

mod allocator;

fn main() -> ExitCode {
    xplug_cli::main()
}
