//! The kernel of the embedding example, written with `xplug-sdk` and
//! linked into the example's binary (`src/main.rs`): `scaled_add_workgroup`
//! computes `out = a + k * b` over its workgroup's slice, with `k` a
//! declared load parameter. The program `scaled_add.mlir` imports it.
//!
//! With this crate's `static` feature (on by default), `#[plugin]`
//! registers the plugin for the binary it is linked into instead of
//! exporting C entry points, so `Manager::load_static("scaled_add", ...)`
//! finds it, with the diagnostics its shared library would give (declared
//! parameters, its own load-error message, suggested import names).

use xplug_sdk::{Buffer, BufferMut, Environment, Error, ImportArgs, ImportError, LoadParams, PluginState};

/// The args IREE passes to `scaled_add_workgroup` for one workgroup: each
/// operand as base pointer + element offset, the slice length, the
/// workgroup id, then the fields `hal.import.fields` asks for.
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct ScaledAddArgs {
    /// `a`'s base pointer.
    pub a: Buffer<f32>,
    /// Element offset of this call's slice in `a`.
    pub a_offset: usize,
    /// `b`'s base pointer.
    pub b: Buffer<f32>,
    /// Element offset of this call's slice in `b`.
    pub b_offset: usize,
    /// The result's base pointer.
    pub out: BufferMut<f32>,
    /// Element offset of this call's slice in `out`.
    pub out_offset: usize,
    /// Elements in this call's slice.
    pub size: usize,
    /// The calling workgroup's id (informational, not an element index).
    pub tid: usize,
    /// The processor running the workgroup.
    pub processor_id: u32,
    /// That processor's feature bits.
    pub processor_data: Buffer<u64>,
}

/// The plugin's state: the scale `k`, read once by `load`.
#[derive(Debug)]
pub struct ScaledAdd {
    k: f32,
}

impl PluginState for ScaledAdd {
    fn load(_env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, Error> {
        // Declared below with a default: `load` has already refused unknown
        // keys and values that are not numbers.
        Ok(Self { k: params.require("k")? })
    }
}

/// The plugin `scaled_add` and its one import; `plugin::PLUGIN` describes
/// it.
#[xplug_sdk::plugin(
    name = "scaled_add",
    description = "a + k * b per workgroup (xplug's embedding example)",
    state = ScaledAdd,
    params(k: f32 = 1.0 "the scale applied to b")
)]
pub mod plugin {
    use super::*;

    /// `out[i] = a[i] + k * b[i]` over this call's slice.
    #[import("scaled_add_workgroup")]
    fn scaled_add(args: &mut ScaledAddArgs, state: &ScaledAdd) -> Result<(), ImportError> {
        let size = args.size;
        if size == 0 {
            return Ok(());
        }
        if args.a.is_null() || args.b.is_null() || args.out.is_null() {
            return Err(ImportError::INVALID_ARGUMENT);
        }
        if !(args.a.is_aligned() && args.b.is_aligned() && args.out.is_aligned()) {
            return Err(ImportError::INVALID_ARGUMENT);
        }
        let (Some(a_end), Some(b_end), Some(out_end)) = (
            args.a_offset.checked_add(size),
            args.b_offset.checked_add(size),
            args.out_offset.checked_add(size),
        ) else {
            return Err(ImportError::INVALID_ARGUMENT);
        };
        // SAFETY: IREE's dispatch convention: each binding is valid for
        // `offset + size` elements, the inputs are only read during the
        // dispatch, and `out[out_offset..out_offset + size]` is this call's
        // alone.
        let (a, b, out) = unsafe {
            (
                &args.a.as_slice(a_end)[args.a_offset..],
                &args.b.as_slice(b_end)[args.b_offset..],
                &mut args.out.as_mut_slice(out_end)[args.out_offset..],
            )
        };
        for ((out, &a), &b) in out.iter_mut().zip(a).zip(b) {
            *out = a + state.k * b;
        }
        Ok(())
    }
}

/// The inputs the example runs on: `n` elements of `a` and `b`, negative
/// and positive, not all integers.
#[must_use]
pub fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let a = (0..n).map(|i| i as f32 * 0.5 - 100.0).collect();
    let b = (0..n).map(|i| (i % 7) as f32 - 3.25).collect();
    (a, b)
}
