//! The macros' error messages for common mistakes (`trybuild`). Each
//! `.stderr` file is the exact diagnostic, which must say what to write
//! instead.

#[test]
fn macro_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
