//! `sample_standalone`: IREE's standalone custom-dispatch sample, in Rust.
//!
//! A stateless, `standalone` plugin (no state, no allocation, no system
//! calls; `#![no_std]`) exporting float kernels an executable can import:
//!
//! | symbol | computes |
//! |---|---|
//! | `simple_mul_workgroup` | `out[i] = lhs[i] * rhs[i]` for the workgroup's elements |
//! | `simple_add_workgroup` | `out[i] = lhs[i] + rhs[i]` for the workgroup's elements |
//! | `saxpy` | `y[i] = alpha * x[i] + y[i]` for `i < n` |
//! | `dot` | `result = sum(x[i] * y[i])` for `i < n` |
//!
//! The workgroup functions take [`WorkgroupArgs`], the args struct of
//! IREE's custom-dispatch CPU sample: three bindings, each a base pointer
//! plus an element offset, the element count `size`, the workgroup id `tid`
//! and the processor information. Following IREE's dispatch convention
//! (`docs/dispatch.md#slice-convention`), `binding + offset` is the first
//! element of *this call's* slice and `size` its length; `tid` says which
//! workgroup is calling and is never used as an element position.
//!
//! Build the shared library with `cargo build --release -p sample_standalone`
//! (or `cargo xtask build-plugins --release`, which copies it to
//! `target/plugins/release/libsample_standalone.so`) and load it with IREE's
//! `--executable_plugin=` or xplug's manager. With the `static` feature the
//! crate is an ordinary library that registers the plugin statically.
//!
//! Without default features the crate builds without `std` (the SDK's
//! no-`std` path); panics then abort instead of being reported.
#![no_std]

use xplug_sdk::{Buffer, BufferMut, ImportArgs, ImportError};

/// Args of the workgroup kernels: IREE's sample `params_t`, shared with
/// the other example plugins.
pub use iree_sample_args::WorkgroupArgs;

/// Args of `saxpy`: `y = alpha * x + y` over `n` elements.
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct SaxpyArgs {
    /// The scale.
    pub alpha: f32,
    /// Input vector.
    pub x: Buffer<f32>,
    /// Input/output vector.
    pub y: BufferMut<f32>,
    /// Number of elements.
    pub n: usize,
}

/// Args of `dot`: the result first (IREE puts results before arguments).
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct DotArgs {
    /// Output: the dot product.
    pub result: f32,
    /// First vector.
    pub x: Buffer<f32>,
    /// Second vector.
    pub y: Buffer<f32>,
    /// Number of elements.
    pub n: usize,
}

/// Applies `op` to the `size` elements of this call's slice:
/// `out[o2 + i] = op(lhs[o0 + i], rhs[o1 + i])` for `i < size`.
fn workgroup(args: &mut WorkgroupArgs, op: impl Fn(f32, f32) -> f32) -> Result<(), ImportError> {
    // SAFETY: IREE's dispatch convention: each binding is valid for
    // `offset + size` elements, the inputs are only read during the
    // dispatch, and the output slice belongs to this call alone.
    let slices = unsafe { args.slices() }?;
    for ((out, lhs), rhs) in slices.out.iter_mut().zip(slices.lhs).zip(slices.rhs) {
        *out = op(*lhs, *rhs);
    }
    Ok(())
}

#[xplug_sdk::plugin(
    name = "sample_standalone",
    description = "standalone float kernels (xplug sample, Rust)",
    features(standalone)
)]
mod plugin {
    use super::*;

    #[import("simple_mul_workgroup")]
    fn simple_mul(args: &mut WorkgroupArgs) -> Result<(), ImportError> {
        workgroup(args, |a, b| a * b)
    }

    #[import("simple_add_workgroup")]
    fn simple_add(args: &mut WorkgroupArgs) -> Result<(), ImportError> {
        workgroup(args, |a, b| a + b)
    }

    #[import]
    fn saxpy(args: &mut SaxpyArgs) -> Result<(), ImportError> {
        if args.n != 0 && (args.x.is_null() || args.y.is_null()) {
            return Err(ImportError::INVALID_ARGUMENT);
        }
        // SAFETY: the caller passes `n` valid elements in each vector; `x`
        // is only read and `y` is accessed only here.
        let (x, y) = unsafe { (args.x.as_slice(args.n), args.y.as_mut_slice(args.n)) };
        let alpha = args.alpha;
        for (y, x) in y.iter_mut().zip(x) {
            *y += alpha * *x;
        }
        Ok(())
    }

    #[import]
    fn dot(args: &mut DotArgs) -> Result<(), ImportError> {
        if args.n != 0 && (args.x.is_null() || args.y.is_null()) {
            return Err(ImportError::INVALID_ARGUMENT);
        }
        // SAFETY: the caller passes `n` valid, read-only elements in each.
        let (x, y) = unsafe { (args.x.as_slice(args.n), args.y.as_slice(args.n)) };
        args.result = x.iter().zip(y).map(|(a, b)| a * b).sum();
        Ok(())
    }
}

pub use plugin::PLUGIN;
