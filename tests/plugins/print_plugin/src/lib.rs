//! `print_plugin`: a Rust plugin that talks, as IREE's `system_plugin.c`
//! sample does.
//!
//! Import `simple_mul_workgroup` (args: [`WorkgroupArgs`], IREE's
//! custom-dispatch sample): `out = lhs * rhs` over the call's slice, and
//! one line per element on stdout, `workgroup W: LHS * RHS = OUT`, written
//! with `println!`. Rust's stdout writes each line out at its newline,
//! while a C tool's own lines wait in C's stdout buffer when stdout is a
//! pipe, so this plugin's lines land before the tool's: the piped tests
//! (`crates/cli/tests/piped.rs`) check that `xplug run` puts them where
//! `iree-run-module` does.

pub use iree_sample_args::WorkgroupArgs;
use xplug_sdk::ImportError;

#[xplug_sdk::plugin(name = "print_plugin", description = "prints every product it computes (xplug test)")]
mod plugin {
    use super::*;

    #[import("simple_mul_workgroup")]
    fn simple_mul(args: &mut WorkgroupArgs) -> Result<(), ImportError> {
        let workgroup = args.tid;
        // SAFETY: IREE's dispatch convention: `binding + offset` starts this
        // call's slice of `size` elements, the inputs are only read, and the
        // output slice belongs to this call alone.
        let slices = unsafe { args.slices() }?;
        for ((out, lhs), rhs) in slices.out.iter_mut().zip(slices.lhs).zip(slices.rhs) {
            *out = lhs * rhs;
            println!("workgroup {workgroup}: {lhs} * {rhs} = {out}");
        }
        Ok(())
    }
}

pub use plugin::PLUGIN;
