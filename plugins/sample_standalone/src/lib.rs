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
//! The workgroup functions take [`WorkgroupParams`], the params struct of
//! IREE's `samples/custom_dispatch/cpu/plugin` (three bindings with element
//! offsets, the total `size`, the workgroup's first element `tid` and the
//! processor information), and process the 64 elements starting at `tid`
//! (fewer at the end), as the sample's 64x1x1 workgroups do.
//!
//! Build the shared library with `cargo xtask build-plugins` (it turns on
//! the `export` feature) and load `target/plugins/libsample_standalone.so`
//! with IREE's `--executable_plugin=` or xplug's manager. Without `export`
//! the crate is an ordinary library that registers the plugin statically.
//!
//! Without default features the crate builds without `std` (the SDK's
//! no-`std` path); panics then abort instead of being reported.
#![no_std]

// The .sos build links the support a no_std static library needs.
#[cfg(feature = "sos")]
extern crate standalone_builtins as _;

use xplug_sdk::{Buffer, BufferMut, ImportError, ImportParams};

/// Elements one workgroup processes (the sample's workgroup size).
pub const WORKGROUP_SIZE: usize = 64;

/// Params of the workgroup kernels: IREE's sample `params_t`.
///
/// C layout: `const float* binding0; size_t binding0_offset; const float*
/// binding1; size_t binding1_offset; float* binding2; size_t
/// binding2_offset; size_t size; size_t tid; uint32_t processor_id; const
/// uint64_t* processor_data;`
#[derive(Debug, ImportParams)]
#[repr(C)]
pub struct WorkgroupParams {
    /// Left operand buffer.
    pub binding0: Buffer<f32>,
    /// Element offset into `binding0`.
    pub binding0_offset: usize,
    /// Right operand buffer.
    pub binding1: Buffer<f32>,
    /// Element offset into `binding1`.
    pub binding1_offset: usize,
    /// Result buffer.
    pub binding2: BufferMut<f32>,
    /// Element offset into `binding2`.
    pub binding2_offset: usize,
    /// Total number of elements.
    pub size: usize,
    /// First element of this workgroup.
    pub tid: usize,
    /// The processor running the workgroup.
    pub processor_id: u32,
    /// Processor feature bits (unused here).
    pub processor_data: Buffer<u64>,
}

/// Params of `saxpy`: `y = alpha * x + y` over `n` elements.
#[derive(Debug, ImportParams)]
#[repr(C)]
pub struct SaxpyParams {
    /// The scale.
    pub alpha: f32,
    /// Input vector.
    pub x: Buffer<f32>,
    /// Input/output vector.
    pub y: BufferMut<f32>,
    /// Number of elements.
    pub n: usize,
}

/// Params of `dot`: the result first (IREE puts results before arguments).
#[derive(Debug, ImportParams)]
#[repr(C)]
pub struct DotParams {
    /// Output: the dot product.
    pub result: f32,
    /// First vector.
    pub x: Buffer<f32>,
    /// Second vector.
    pub y: Buffer<f32>,
    /// Number of elements.
    pub n: usize,
}

/// Applies `op` to the workgroup's elements.
fn workgroup(params: &mut WorkgroupParams, op: impl Fn(f32, f32) -> f32) -> Result<(), ImportError> {
    if params.tid >= params.size {
        return Ok(());
    }
    let end = params.size.min(params.tid.saturating_add(WORKGROUP_SIZE));
    let range = params.tid..end;
    if params.binding0.is_null() || params.binding1.is_null() || params.binding2.is_null() {
        return Err(ImportError::INVALID_ARGUMENT);
    }
    // SAFETY: IREE's dispatch ABI: each binding is valid for `offset + size`
    // elements, inputs are read-only during the dispatch, and the elements
    // `[tid, tid + 64)` of the output belong to this workgroup alone.
    let (lhs, rhs, out) = unsafe {
        (
            &params.binding0.as_slice(params.binding0_offset + end)[params.binding0_offset..],
            &params.binding1.as_slice(params.binding1_offset + end)[params.binding1_offset..],
            &mut params.binding2.as_mut_slice(params.binding2_offset + end)[params.binding2_offset..],
        )
    };
    for i in range {
        out[i] = op(lhs[i], rhs[i]);
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
    fn simple_mul(params: &mut WorkgroupParams) -> Result<(), ImportError> {
        workgroup(params, |a, b| a * b)
    }

    #[import("simple_add_workgroup")]
    fn simple_add(params: &mut WorkgroupParams) -> Result<(), ImportError> {
        workgroup(params, |a, b| a + b)
    }

    #[import]
    fn saxpy(params: &mut SaxpyParams) -> Result<(), ImportError> {
        if params.n != 0 && (params.x.is_null() || params.y.is_null()) {
            return Err(ImportError::INVALID_ARGUMENT);
        }
        // SAFETY: the caller passes `n` valid elements in each vector; `x`
        // is only read and `y` is accessed only here.
        let (x, y) = unsafe { (params.x.as_slice(params.n), params.y.as_mut_slice(params.n)) };
        let alpha = params.alpha;
        for (y, x) in y.iter_mut().zip(x) {
            *y += alpha * *x;
        }
        Ok(())
    }

    #[import]
    fn dot(params: &mut DotParams) -> Result<(), ImportError> {
        if params.n != 0 && (params.x.is_null() || params.y.is_null()) {
            return Err(ImportError::INVALID_ARGUMENT);
        }
        // SAFETY: the caller passes `n` valid, read-only elements in each.
        let (x, y) = unsafe { (params.x.as_slice(params.n), params.y.as_slice(params.n)) };
        params.result = x.iter().zip(y).map(|(a, b)| a * b).sum();
        Ok(())
    }
}

pub use plugin::PLUGIN;
