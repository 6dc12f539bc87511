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
//! | `matmul_relu_workgroup` | `out = max(lhs × rhs, 0)` for the workgroup's rows |
//!
//! The workgroup functions take [`WorkgroupArgs`], the args struct of
//! IREE's custom-dispatch CPU sample: three bindings, each a base pointer
//! plus an element offset, the element count `size`, the workgroup id `tid`
//! and the processor information. Following IREE's dispatch convention
//! (`docs/src/plugins/dispatch.md#slice-convention`), `binding + offset` is the first
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

/// Args of `matmul_relu_workgroup`: `out = max(lhs × rhs, 0)` for a block
/// of `m` rows, as IREE's MLP sample computes it. Row-major matrices, each
/// a base pointer plus an element offset to this call's first row:
/// `lhs` is `m × k`, `rhs` `k × n`, `out` `m × n`.
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct MatmulArgs {
    /// The left matrix.
    pub lhs: Buffer<f32>,
    /// Element offset of this call's first row of `lhs`.
    pub lhs_offset: usize,
    /// The right matrix (all of it, for every call).
    pub rhs: Buffer<f32>,
    /// Element offset of `rhs`'s first element.
    pub rhs_offset: usize,
    /// The result.
    pub out: BufferMut<f32>,
    /// Element offset of this call's first row of `out`.
    pub out_offset: usize,
    /// Rows in this call's block.
    pub m: usize,
    /// Columns of `rhs` and `out`.
    pub n: usize,
    /// Columns of `lhs`, rows of `rhs`: the reduction's length.
    pub k: usize,
    /// The processor running the workgroup (`hal.import.fields`; zero in a
    /// linked call).
    #[import_field]
    pub processor_id: u32,
    /// Processor feature bits (`hal.import.fields`; NULL in a linked call).
    #[import_field]
    pub processor_data: Buffer<u64>,
}

/// `out = max(lhs × rhs, 0)` over one block of rows, each sum taken in
/// order of `k` (written without indexing, so no panic path remains and
/// the kernel can be linked into an executable).
fn matmul_relu(args: &mut MatmulArgs) -> Result<(), ImportError> {
    let (m, n, k) = (args.m, args.n, args.k);
    let (Some(lhs_len), Some(rhs_len), Some(out_len)) =
        (m.checked_mul(k), k.checked_mul(n), m.checked_mul(n))
    else {
        return Err(ImportError::INVALID_ARGUMENT);
    };
    // `n == 0` tested on its own so the compiler sees it before
    // `chunks_exact(n)` and `step_by(n)`, whose zero checks would
    // otherwise stay as panic paths.
    if m == 0 || n == 0 || out_len == 0 {
        return Ok(());
    }
    if args.lhs.is_null() || args.rhs.is_null() || args.out.is_null() {
        return Err(ImportError::INVALID_ARGUMENT);
    }
    if !(args.lhs.is_aligned() && args.rhs.is_aligned() && args.out.is_aligned()) {
        return Err(ImportError::INVALID_ARGUMENT);
    }
    let (Some(lhs_end), Some(rhs_end), Some(out_end)) = (
        args.lhs_offset.checked_add(lhs_len),
        args.rhs_offset.checked_add(rhs_len),
        args.out_offset.checked_add(out_len),
    ) else {
        return Err(ImportError::INVALID_ARGUMENT);
    };
    // SAFETY: IREE's dispatch convention: each binding is valid for its
    // offset plus the block's elements, the inputs are only read during
    // the dispatch, and the output rows belong to this call alone.
    let (lhs, rhs, out) =
        unsafe { (args.lhs.as_slice(lhs_end), args.rhs.as_slice(rhs_end), args.out.as_mut_slice(out_end)) };
    let (Some(lhs), Some(rhs), Some(out)) =
        (lhs.get(args.lhs_offset..), rhs.get(args.rhs_offset..), out.get_mut(args.out_offset..))
    else {
        return Err(ImportError::INVALID_ARGUMENT);
    };
    if k == 0 {
        out.fill(0.0);
        return Ok(());
    }
    // Blocks of ROWS rows: each ROWS × COLUMNS tile of `out` accumulated in
    // registers over `k`, so a row of `rhs` is loaded once for ROWS rows.
    // Every element's sum is still taken in order of `k` from zero, as a
    // plain dot product would (the same bits as IREE's own matmul).
    let mut lhs_rows = lhs.chunks_exact(k);
    let mut out_rows = out.chunks_exact_mut(n);
    loop {
        match (lhs_rows.next(), lhs_rows.next(), lhs_rows.next(), lhs_rows.next()) {
            (Some(l0), Some(l1), Some(l2), Some(l3)) => {
                let (Some(o0), Some(o1), Some(o2), Some(o3)) =
                    (out_rows.next(), out_rows.next(), out_rows.next(), out_rows.next())
                else {
                    return Err(ImportError::INVALID_ARGUMENT);
                };
                matmul_block([o0, o1, o2, o3], [l0, l1, l2, l3], rhs, n);
            }
            rest => {
                for (lhs_row, out_row) in [rest.0, rest.1, rest.2].into_iter().flatten().zip(&mut out_rows) {
                    matmul_columns(out_row, lhs_row, rhs, n, 0);
                }
                return Ok(());
            }
        }
    }
}

/// Rows of `lhs` (and `out`) a matmul tile holds.
const ROWS: usize = 4;
/// Columns of `rhs` (and `out`) a matmul tile holds: with [`ROWS`], 32
/// sums, in eight 128-bit registers.
const COLUMNS: usize = 8;

/// `out_rows = max(lhs_rows × rhs, 0)` for [`ROWS`] rows of `n` columns,
/// tile by tile.
fn matmul_block(mut out_rows: [&mut [f32]; ROWS], lhs_rows: [&[f32]; ROWS], rhs: &[f32], n: usize) {
    let [l0, l1, l2, l3] = lhs_rows;
    let mut first = 0;
    while first + COLUMNS <= n {
        let mut sums = [[0.0_f32; COLUMNS]; ROWS];
        for ((((a0, a1), a2), a3), rhs_row) in l0.iter().zip(l1).zip(l2).zip(l3).zip(rhs.chunks_exact(n)) {
            let Some(b) =
                rhs_row.get(first..first + COLUMNS).and_then(|b| <&[f32; COLUMNS]>::try_from(b).ok())
            else {
                return;
            };
            for column in 0..COLUMNS {
                sums[0][column] += a0 * b[column];
                sums[1][column] += a1 * b[column];
                sums[2][column] += a2 * b[column];
                sums[3][column] += a3 * b[column];
            }
        }
        for (out_row, sums) in out_rows.iter_mut().zip(&sums) {
            if let Some(out) = out_row.get_mut(first..first + COLUMNS) {
                for (out, sum) in out.iter_mut().zip(sums) {
                    *out = sum.max(0.0);
                }
            }
        }
        first += COLUMNS;
    }
    for (out_row, lhs_row) in out_rows.into_iter().zip(lhs_rows) {
        matmul_columns(out_row, lhs_row, rhs, n, first);
    }
}

/// `out_row[first..] = max(lhs_row × rhs[.., first..], 0)`: one row,
/// accumulated over `rhs`'s rows in order of `k` along contiguous rows
/// (vectorised).
fn matmul_columns(out_row: &mut [f32], lhs_row: &[f32], rhs: &[f32], n: usize, first: usize) {
    let Some(out_row) = out_row.get_mut(first..) else {
        return;
    };
    out_row.fill(0.0);
    for (a, rhs_row) in lhs_row.iter().zip(rhs.chunks_exact(n)) {
        if let Some(rhs_row) = rhs_row.get(first..) {
            for (out, b) in out_row.iter_mut().zip(rhs_row) {
                *out += a * b;
            }
        }
    }
    for out in out_row.iter_mut() {
        *out = out.max(0.0);
    }
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

    #[import("matmul_relu_workgroup")]
    fn matmul_relu_rows(args: &mut MatmulArgs) -> Result<(), ImportError> {
        matmul_relu(args)
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
