//! Result comparison: a call's results against expected values, with
//! IREE's own comparison, as `iree-run-module --expected_output` checks
//! them.

use crate::error::Error;
use crate::input::{self, Argument};
use crate::results::CallResults;
use crate::sys;

/// How [`CallResults::compare`] compares results, as iree-run-module's flags
/// set it (the defaults are IREE's): absolute tolerances per float type,
/// a relative tolerance, and whether floats must be exactly equal.
#[derive(Clone, Debug, PartialEq)]
pub struct Tolerance {
    /// `--expected_f16_threshold` (0.001).
    pub f16: f32,
    /// `--expected_bf16_threshold` (0.01).
    pub bf16: f32,
    /// `--expected_f32_threshold` (0.0001).
    pub f32: f32,
    /// `--expected_f64_threshold` (0.0001).
    pub f64: f64,
    /// `--expected_rtol` (1e-5).
    pub rtol: f64,
    /// `--equality_mode=exact` (default `approximate`).
    pub exact: bool,
}

impl Default for Tolerance {
    fn default() -> Self {
        Self { f16: 0.001, bf16: 0.01, f32: 0.0001, f64: 0.0001, rtol: 1e-5, exact: false }
    }
}

impl Tolerance {
    /// The tolerance as IREE's comparison flags.
    fn iree_flags(&self) -> Vec<std::ffi::CString> {
        [
            format!("--expected_f16_threshold={}", self.f16),
            format!("--expected_bf16_threshold={}", self.bf16),
            format!("--expected_f32_threshold={}", self.f32),
            format!("--expected_f64_threshold={}", self.f64),
            format!("--expected_rtol={}", self.rtol),
            format!("--equality_mode={}", if self.exact { "exact" } else { "approximate" }),
        ]
        .into_iter()
        .map(|flag| std::ffi::CString::new(flag).expect("numbers and words have no NUL"))
        .collect()
    }
}

/// What [`CallResults::compare`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// Whether every result matched.
    pub matched: bool,
    /// IREE's report of what differs (`[FAILED] result[N]: ...` blocks;
    /// empty when everything matched).
    pub report: String,
}

impl CallResults {
    /// Compares these results with `expected`, one per result in
    /// `iree-run-module --expected_output` forms (the [`Argument::Text`]
    /// forms, read against the function's result types; `(ignored)` skips
    /// a result), with IREE's own comparison and `tolerance`.
    ///
    /// IREE keeps its tolerances in process-wide flags: comparisons running at
    /// once on several threads with different tolerances may see each
    /// other's.
    ///
    /// # Errors
    /// The errors of [`Session::prepare`](crate::Session::prepare) for an
    /// expected value that cannot be made; [`Error::Result`] when IREE's
    /// comparison fails.
    pub fn compare<'a, I>(&self, expected: I, tolerance: &Tolerance) -> Result<Comparison, Error>
    where
        I: IntoIterator,
        I::Item: Into<Argument<'a>>,
    {
        let name = format!("{} (expected outputs)", self.name);
        let expected: Vec<Argument<'a>> = expected.into_iter().map(Into::into).collect();
        let expected = input::argument_list(
            &self.device.inner.handles.device,
            &name,
            self.function.result_types(),
            &expected,
        )?;
        let (matched, report) = sys::compare_lists(&expected, &self.list, &tolerance.iree_flags())
            .map_err(|status| Error::Result { function: name.clone(), index: 0, source: status.into() })?;
        Ok(Comparison { matched, report })
    }
}
