//! `iree_sample_args`: the args of IREE's custom-dispatch sample kernels,
//! shared by xplug's example and test plugins.
//!
//! IREE's CPU custom-dispatch sample passes its workgroup kernels
//! (`simple_mul_workgroup` and friends) one struct, `params_t`: three
//! bindings, each a base pointer plus an element offset, the element count
//! `size`, the workgroup id `tid` and the processor information.
//! [`WorkgroupArgs`] is that struct as an [`ImportArgs`] type, and
//! [`WorkgroupArgs::slices`] turns it into this call's three slices
//! ([`Slices`]),
//! following IREE's dispatch convention (`docs/src/plugins/dispatch.md#slice-convention`):
//! `binding + offset` is the first element of *this call's* slice and
//! `size` its length; `tid` says which workgroup is calling and is never an
//! element position.
//!
//! ```
//! use iree_sample_args::WorkgroupArgs;
//! use xplug_sdk::ImportError;
//!
//! /// `out = lhs * rhs` over this call's slice (a kernel body).
//! fn simple_mul(args: &mut WorkgroupArgs) -> Result<(), ImportError> {
//!     // SAFETY: called by an IREE executable, which passes bindings valid
//!     // for `offset + size` elements and an output slice of its own.
//!     let slices = unsafe { args.slices() }?;
//!     for ((out, lhs), rhs) in slices.out.iter_mut().zip(slices.lhs).zip(slices.rhs) {
//!         *out = lhs * rhs;
//!     }
//!     Ok(())
//! }
//! # let _ = simple_mul;
//! ```
#![no_std]

use xplug_sdk::{Buffer, BufferMut, ImportArgs, ImportError};

/// The args of IREE's sample workgroup kernels: IREE's sample `params_t`.
///
/// C layout: `const float* binding0; size_t binding0_offset; const float*
/// binding1; size_t binding1_offset; float* binding2; size_t
/// binding2_offset; size_t size; size_t tid; uint32_t processor_id; const
/// uint64_t* processor_data;`
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct WorkgroupArgs {
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
    /// Number of elements in this call's slice.
    pub size: usize,
    /// The calling workgroup's id (informational; not an element index).
    pub tid: usize,
    /// The processor running the workgroup (`hal.import.fields`; zero in a
    /// linked call).
    #[import_field]
    pub processor_id: u32,
    /// Processor feature bits (`hal.import.fields`; NULL in a linked call).
    #[import_field]
    pub processor_data: Buffer<u64>,
}

/// One call's slices of a workgroup kernel's bindings, `size` elements each.
#[derive(Debug)]
pub struct Slices<'args> {
    /// The left operand: `binding0[binding0_offset..][..size]`.
    pub lhs: &'args [f32],
    /// The right operand: `binding1[binding1_offset..][..size]`.
    pub rhs: &'args [f32],
    /// The result: `binding2[binding2_offset..][..size]`.
    pub out: &'args mut [f32],
}

impl WorkgroupArgs {
    /// This call's slices of the two inputs and the output, `size` elements
    /// each (all empty when `size` is 0, whatever the pointers).
    ///
    /// # Errors
    /// [`ImportError::INVALID_ARGUMENT`] when `size > 0` and a binding is
    /// NULL or not aligned for `f32`, or an offset plus `size` overflows.
    ///
    /// # Safety
    /// IREE's dispatch convention: each binding is valid for its offset plus
    /// `size` elements, the inputs are only read while the slices live, and
    /// the output slice belongs to this call alone. An IREE executable
    /// calling the kernel keeps it; args made up by other code may not.
    pub unsafe fn slices(&mut self) -> Result<Slices<'_>, ImportError> {
        let size = self.size;
        if size == 0 {
            return Ok(Slices { lhs: &[], rhs: &[], out: &mut [] });
        }
        if self.binding0.is_null() || self.binding1.is_null() || self.binding2.is_null() {
            return Err(ImportError::INVALID_ARGUMENT);
        }
        // Never from an IREE executable; from damaged code, a slice of an
        // unaligned pointer would be undefined (docs/src/embedding/iree.md,
        // offset 6425 of the byte-flip sweep).
        if !(self.binding0.is_aligned() && self.binding1.is_aligned() && self.binding2.is_aligned()) {
            return Err(ImportError::INVALID_ARGUMENT);
        }
        let (Some(end0), Some(end1), Some(end2)) = (
            self.binding0_offset.checked_add(size),
            self.binding1_offset.checked_add(size),
            self.binding2_offset.checked_add(size),
        ) else {
            return Err(ImportError::INVALID_ARGUMENT);
        };
        // SAFETY: the caller's contract: each binding is valid for `end`
        // elements (non-NULL and aligned, checked above), the inputs are only read and
        // the output range is this call's alone.
        unsafe {
            Ok(Slices {
                lhs: &self.binding0.as_slice(end0)[self.binding0_offset..],
                rhs: &self.binding1.as_slice(end1)[self.binding1_offset..],
                out: &mut self.binding2.as_mut_slice(end2)[self.binding2_offset..],
            })
        }
    }
}

/// Args made by a host that calls a kernel itself, as an IREE executable
/// would (tests, benchmarks, the CLI's dispatch demo): with the `host`
/// feature, which turns on `xplug-sdk`'s `std` (the [`Buffer::from_slice`]
/// constructors).
///
/// The args hold plain pointers: the arrays must outlive every call made
/// with them, and `out` must not be touched while a call runs.
#[cfg(any(test, feature = "host"))]
impl WorkgroupArgs {
    /// One call over the whole of `out`: offsets 0, `size = out.len()`,
    /// workgroup 0.
    ///
    /// # Panics
    /// When an input is shorter than `out` ([`WorkgroupArgs::over`]'s check).
    #[must_use]
    pub fn whole(lhs: &[f32], rhs: &[f32], out: &mut [f32]) -> Self {
        let size = out.len();
        Self::over(lhs, rhs, out, [0; 3], size, 0)
    }

    /// One call of workgroup `tid` over `size` elements starting at
    /// `offsets` (left, right, result) in the three arrays, as IREE's
    /// compiler slices a dispatch (`docs/src/plugins/dispatch.md#slice-convention`).
    ///
    /// # Panics
    /// When an offset plus `size` runs past its array (or overflows).
    #[must_use]
    pub fn over(
        lhs: &[f32],
        rhs: &[f32],
        out: &mut [f32],
        offsets: [usize; 3],
        size: usize,
        tid: usize,
    ) -> Self {
        let fits = |offset: usize, len: usize| offset.checked_add(size).is_some_and(|end| end <= len);
        assert!(
            fits(offsets[0], lhs.len()) && fits(offsets[1], rhs.len()) && fits(offsets[2], out.len()),
            "offsets {offsets:?} plus size {size} run past arrays of {}, {} and {} elements",
            lhs.len(),
            rhs.len(),
            out.len()
        );
        Self {
            binding0: Buffer::from_slice(lhs),
            binding0_offset: offsets[0],
            binding1: Buffer::from_slice(rhs),
            binding1_offset: offsets[1],
            binding2: BufferMut::from_mut_slice(out),
            binding2_offset: offsets[2],
            size,
            tid,
            processor_id: 0,
            processor_data: Buffer::from_slice(&[]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_slice_starts_at_its_offset_and_holds_size_elements() {
        let lhs = [0.0, 1.0, 2.0, 3.0, 4.0];
        let rhs = [10.0, 11.0, 12.0, 13.0];
        let mut out = [0.0; 6];
        let mut args = WorkgroupArgs::over(&lhs, &rhs, &mut out, [2, 1, 3], 3, 7);
        // SAFETY: each array holds at least offset + size elements and
        // outlives the slices.
        let slices = unsafe { args.slices() }.unwrap();
        assert_eq!(slices.lhs, [2.0, 3.0, 4.0]);
        assert_eq!(slices.rhs, [11.0, 12.0, 13.0]);
        assert_eq!(slices.out.len(), 3);
        slices.out.fill(1.0);
        assert_eq!(out, [0.0, 0.0, 0.0, 1.0, 1.0, 1.0], "the workgroup id is not an element position");
    }

    #[test]
    fn size_zero_gives_empty_slices_and_an_overflowing_offset_is_refused() {
        let data = [1.0_f32; 4];
        let mut out = [0.0_f32; 4];
        // What any executable may pass, past what `over` checks.
        let mut empty = WorkgroupArgs::over(&data, &data, &mut out, [0; 3], 0, 0);
        (empty.binding0_offset, empty.binding1_offset, empty.binding2_offset) =
            (usize::MAX, usize::MAX, usize::MAX);
        // SAFETY: nothing is read when `size` is 0.
        let slices = unsafe { empty.slices() }.unwrap();
        assert!(slices.lhs.is_empty() && slices.rhs.is_empty() && slices.out.is_empty());
        let mut overflowing = WorkgroupArgs::over(&data, &data, &mut out, [0; 3], 2, 0);
        overflowing.binding1_offset = usize::MAX;
        // SAFETY: refused before any pointer is read.
        let refused = unsafe { overflowing.slices() }.unwrap_err();
        assert_eq!(refused, ImportError::INVALID_ARGUMENT);
    }

    #[test]
    fn an_unaligned_binding_is_refused_before_any_slice_is_made() {
        let data = [1.0_f32; 4];
        let mut out = [0.0_f32; 4];
        let mut args = WorkgroupArgs::over(&data, &data, &mut out, [0; 3], 4, 0);
        // What damaged code passed in the byte-flip sweep (offset 6425).
        // SAFETY: `BufferMut<f32>` is a transparent pointer; nothing reads it.
        args.binding2 = unsafe {
            core::mem::transmute::<*mut f32, xplug_sdk::BufferMut<f32>>(core::ptr::without_provenance_mut(1))
        };
        assert!(!args.binding2.is_aligned() && args.binding0.is_aligned());
        // SAFETY: refused before a slice is made.
        assert_eq!(unsafe { args.slices() }.err(), Some(ImportError::INVALID_ARGUMENT));
    }

    #[test]
    fn a_host_call_over_the_whole_output_starts_at_zero() {
        let (lhs, rhs, mut out) = ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [0.0; 3]);
        let args = WorkgroupArgs::whole(&lhs, &rhs, &mut out);
        let fields = (args.binding0_offset, args.binding1_offset, args.binding2_offset, args.size, args.tid);
        assert_eq!(fields, (0, 0, 0, 3, 0));
    }

    #[test]
    #[should_panic(expected = "run past arrays of 2, 3 and 3 elements")]
    fn a_host_call_with_a_short_input_is_refused() {
        let (lhs, rhs, mut out) = ([1.0; 2], [1.0; 3], [0.0; 3]);
        let _ = WorkgroupArgs::whole(&lhs, &rhs, &mut out);
    }

    #[test]
    #[should_panic(expected = "run past arrays of 4, 4 and 4 elements")]
    fn a_host_call_past_an_array_is_refused() {
        let data = [1.0_f32; 4];
        let mut out = [0.0_f32; 4];
        let _ = WorkgroupArgs::over(&data, &data, &mut out, [0, 2, 0], 3, 0);
    }
}
