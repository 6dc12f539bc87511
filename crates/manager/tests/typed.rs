//! `ResolvedImports::typed`: the name, the resolved check and the args
//! type settled once, then safe calls.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use xplug_manager::providers::{FnTableEntry, FnTableProvider};
use xplug_manager::{AnyBitPattern, Error, Manager};

#[repr(C)]
#[derive(Debug, Default)]
struct ScaleArgs {
    value: f64,
    factor: u32,
    _pad: u32,
}
// SAFETY: `#[repr(C)]` of an `f64` and two `u32`s, no implicit padding.
unsafe impl AnyBitPattern for ScaleArgs {}

unsafe extern "C" fn scale(args: *mut c_void, _context: *mut c_void, _reserved: *mut c_void) -> c_int {
    // SAFETY: the import's contract: callers pass a `ScaleArgs`.
    let args = unsafe { &mut *args.cast::<ScaleArgs>() };
    args.value *= f64::from(args.factor);
    0
}

fn manager() -> Manager {
    let manager = Manager::new();
    let provider = FnTableProvider::new("scaler", [FnTableEntry::new("scale_f64", scale)]).unwrap();
    manager.register_provider(Arc::new(provider)).unwrap();
    manager
}

#[test]
fn a_typed_import_calls_safely_and_repeatedly() {
    let imports = manager().resolve_imports(["?missing_fn", "scale_f64"]).unwrap();
    // SAFETY: `scale_f64` takes a `ScaleArgs`.
    let typed = unsafe { imports.typed::<ScaleArgs>("scale_f64") }.unwrap();
    let mut args = ScaleArgs { value: 1.5, factor: 2, _pad: 0 };
    for _ in 0..3 {
        assert_eq!(typed.call(&mut args), 0);
    }
    assert_eq!(args.value, 12.0);
    // The `?` of an optional declaration does not matter for the lookup.
    // SAFETY: as above.
    let again = unsafe { imports.typed::<ScaleArgs>("?scale_f64") }.unwrap();
    assert_eq!(again.untyped().function() as usize, typed.untyped().function() as usize);
}

#[test]
fn typed_lookups_fail_with_typed_errors() {
    let imports = manager().resolve_imports(["?missing_fn", "scale_f64"]).unwrap();
    // SAFETY: never called: the lookups fail.
    let error = unsafe { imports.typed::<ScaleArgs>("scale_f46") }.unwrap_err();
    assert!(
        matches!(&error, Error::ImportNotInTable { suggestion: Some(s), .. } if s == "scale_f64"),
        "{error}"
    );
    assert!(error.to_string().contains("did you mean `scale_f64`?"), "{error}");
    // SAFETY: as above.
    let error = unsafe { imports.typed::<ScaleArgs>("missing_fn") }.unwrap_err();
    assert!(matches!(error, Error::UnresolvedImport { .. }), "{error:?}");
}
