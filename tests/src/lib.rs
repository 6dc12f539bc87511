//! Cross-crate integration tests for xplug (see `tests/`), plus what they
//! share with the benchmarks and examples: IREE's sample dispatch args as
//! a host declares them. The plugins the tests load are built by
//! `xplug-fixtures`.

/// The args of IREE's custom-dispatch sample kernels
/// (`simple_mul_workgroup`), as a host declares them
/// (`docs/dispatch.md#sample-args`): three bindings, each a base pointer
/// plus an element offset that together start this call's slice, the
/// slice length, the workgroup id, and the processor fields.
#[repr(C)]
#[derive(Debug)]
pub struct WorkgroupArgs {
    /// Left operand.
    pub lhs: *const f32,
    /// Element offset of this call's slice in `lhs`.
    pub lhs_offset: usize,
    /// Right operand.
    pub rhs: *const f32,
    /// Element offset of this call's slice in `rhs`.
    pub rhs_offset: usize,
    /// Result.
    pub out: *mut f32,
    /// Element offset of this call's slice in `out`.
    pub out_offset: usize,
    /// Elements in this call's slice.
    pub size: usize,
    /// The workgroup id (informational).
    pub tid: usize,
    /// The processor running the call.
    pub processor_id: u32,
    /// Processor feature bits.
    pub processor_data: *const u64,
}

impl WorkgroupArgs {
    /// One call over the whole of `out` (offsets 0, `size = out.len()`,
    /// workgroup 0); `lhs` and `rhs` must be at least as long.
    ///
    /// # Panics
    /// When an input is shorter than `out`.
    pub fn whole(lhs: &[f32], rhs: &[f32], out: &mut [f32]) -> Self {
        assert!(lhs.len() >= out.len() && rhs.len() >= out.len(), "inputs shorter than the output");
        Self {
            lhs: lhs.as_ptr(),
            lhs_offset: 0,
            rhs: rhs.as_ptr(),
            rhs_offset: 0,
            out: out.as_mut_ptr(),
            out_offset: 0,
            size: out.len(),
            tid: 0,
            processor_id: 0,
            processor_data: std::ptr::null(),
        }
    }
}
