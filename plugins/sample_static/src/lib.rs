//! `sample_static`: a plugin meant to be linked into a runtime binary.
//!
//! A runtime depends on it with its `static` feature, so it exports no C
//! symbol and registers itself in `xplug_providers::static_plugins()` under
//! the name `sample_static` (`cargo build --release` of the crate alone makes
//! a loadable shared library, as for any SDK plugin). A binary must name the
//! crate for the registration to survive linking:
//!
//! ```ignore
//! use sample_static as _;
//! ```
//!
//! (see `plugins/static_runtime`). It exports one import,
//! `static_fma_i64`: `result = a * b + c` with overflow reported as a
//! failure.

use xplug_sdk::{ImportArgs, ImportError};

/// Args of `static_fma_i64`.
#[derive(Debug, Default, ImportArgs)]
#[repr(C)]
pub struct FmaArgs {
    /// Output.
    pub result: i64,
    /// Factor.
    pub a: i64,
    /// Factor.
    pub b: i64,
    /// Addend.
    pub c: i64,
}

#[xplug_sdk::plugin(
    name = "sample_static",
    description = "statically linked sample (xplug)",
    features(standalone)
)]
mod plugin {
    use super::*;

    #[import("static_fma_i64")]
    fn fma(args: &mut FmaArgs) -> Result<(), ImportError> {
        args.result = args
            .a
            .checked_mul(args.b)
            .and_then(|p| p.checked_add(args.c))
            .ok_or(ImportError::OUT_OF_RANGE)?;
        Ok(())
    }
}

pub use plugin::PLUGIN;
