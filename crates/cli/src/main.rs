//! `xplug`: the binary is [`xplug_cli::main`]; see the library's docs.

use std::process::ExitCode;

fn main() -> ExitCode {
    xplug_cli::main()
}
