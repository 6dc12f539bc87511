//! The linked deployment of an import: the same kernel, linked into an
//! IREE executable at compile time instead of resolved from a plugin at
//! run time (`docs/src/plugins/dispatch.md#linked-kernels`).
//!
//! A plugin crate built with `--cfg xplug_linked` (what `xplug build
//! --object` and `--bitcode` do) gets, for every stateless import, a global
//! function named after the import's symbol that takes the args struct's
//! fields as separate C arguments, in order, leaving out the fields marked
//! `#[import_field]` (the ones IREE appends for `hal.import.fields`): the
//! calling convention of a `func.func private` declaration with
//! `hal.import.static` and `llvm.bareptr`. That function rebuilds the args
//! struct, with the import fields zeroed, and calls the same author
//! function the import entry calls. No code is written twice.
//!
//! The derive generates the entry as a generic function of the args type
//! (`__xplug_linked_entry::<Marker>`), since only it sees the fields; the
//! `#[plugin]` attribute, which only sees the args type's name, makes the
//! import's symbol an assembler alias of that function's instance
//! (`.set`), so the exported symbol is the instance itself, with no jump
//! in between.

use xplug_abi::AnyBitPattern;

/// An all-zero `T`: the value a linked kernel's `#[import_field]` fields
/// get (IREE passes them only to imports).
#[must_use]
pub fn zeroed<T: AnyBitPattern>() -> T {
    // SAFETY: `T: AnyBitPattern` promises that every bit pattern, all
    // zeros included, is a valid `T`.
    unsafe { core::mem::zeroed() }
}

/// The bytes of one record of the section [`xplug_abi::LINKED_SECTION`]: `symbol`, NUL, `params`,
/// NUL. `N` must be `symbol.len() + params.len() + 2` (the generated code
/// computes it from the same constants); a mismatch fails to compile.
#[must_use]
pub const fn linked_record<const N: usize>(symbol: &str, params: &str) -> [u8; N] {
    assert!(
        N == symbol.len() + params.len() + 2,
        "a linked record's length is its two strings plus two NULs"
    );
    let mut out = [0u8; N];
    let mut at = 0;
    let mut index = 0;
    while index < symbol.len() {
        out[at] = symbol.as_bytes()[index];
        at += 1;
        index += 1;
    }
    at += 1;
    index = 0;
    while index < params.len() {
        out[at] = params.as_bytes()[index];
        at += 1;
        index += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_the_symbol_and_the_parameters_each_nul_terminated() {
        const RECORD: [u8; 11] = linked_record::<11>("mul", "a: f32");
        assert_eq!(&RECORD, b"mul\0a: f32\0");
    }

    #[test]
    fn zeroed_values_are_zero() {
        assert_eq!(zeroed::<u32>(), 0);
        assert!(zeroed::<crate::Buffer<u64>>().is_null());
    }
}
