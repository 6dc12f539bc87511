//! The failure path stays bounded: 100 000 missing names against a
//! provider exporting 4 096 names finish, and at most
//! `suggest::MAX_SUGGESTED_NAMES` suggestions are made.

use std::ffi::{CString, c_int, c_void};
use std::sync::Arc;

use xplug_manager::providers::{FnTableEntry, FnTableProvider, RequestSlots};
use xplug_manager::{Error, Manager, suggest};

unsafe extern "C" fn nothing(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    0
}

#[test]
fn a_hundred_thousand_missing_names_against_4096_exports_finish() {
    let entries = (0..4096).map(|i| FnTableEntry::new(format!("kernel_{i:05}"), nothing));
    let table = FnTableProvider::new("wide", entries).unwrap();
    let manager = Manager::new();
    manager.register_provider(Arc::new(table)).unwrap();

    // Each missing name is one edit from an export: every one of them
    // would get a suggestion if the work were unbounded.
    let owned: Vec<CString> =
        (0..100_000).map(|i| CString::new(format!("kernel_{:05}x", i % 4096)).unwrap()).collect();
    let error = manager.resolve(&mut RequestSlots::for_names(&owned).request()).unwrap_err();
    let Error::MissingImports { missing, .. } = error else { panic!("{error:?}") };
    assert_eq!(missing.len(), 100_000, "every missing name is listed");
    let suggested: Vec<&str> = missing.iter().filter_map(|m| m.suggestion.as_deref()).collect();
    assert_eq!(suggested.len(), suggest::MAX_SUGGESTED_NAMES);
    assert_eq!(suggested[0], "kernel_00000");
    assert!(missing[..suggest::MAX_SUGGESTED_NAMES].iter().all(|m| m.suggestion.is_some()));
}
