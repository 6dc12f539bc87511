//! Resolve requests against function-table providers: any names (with or
//! without `?`), any pre-filled slots. A manager over two tables must keep
//! pre-filled slots, fill only names some table exports, and fail exactly
//! when a required name stays empty.

#![no_main]

use std::collections::BTreeSet;
use std::ffi::{CString, c_int, c_void};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use xplug_manager::Manager;
use xplug_manager::providers::{FnTableEntry, FnTableProvider, ResolveRequest, SymbolName};

unsafe extern "C" fn first(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    1
}

unsafe extern "C" fn second(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    2
}

const FIRST: [&str; 4] = ["add", "mul", "a", "kernel_0001"];
const SECOND: [&str; 3] = ["mul", "sub", "kernel_0002"];
const PREFILLED: usize = 0x5eed;

fuzz_target!(|data: &[u8]| {
    // First byte: which slots are pre-filled (bit i for name i < 8). The
    // rest: names separated by NUL bytes.
    let Some((&prefill, rest)) = data.split_first() else { return };
    let names: Vec<CString> = rest.split(|&b| b == 0).take(64).map(|n| CString::new(n).unwrap()).collect();

    let manager = Manager::new();
    let table = |name: &str, exports: &[&str], f| {
        let entries = exports.iter().map(|export| FnTableEntry::new(*export, f));
        Arc::new(FnTableProvider::new(name.to_owned(), entries).unwrap())
    };
    manager.register_provider(table("first", &FIRST, first)).unwrap();
    manager.register_provider(table("second", &SECOND, second)).unwrap();
    let exported: BTreeSet<&[u8]> = FIRST.iter().chain(&SECOND).map(|n| n.as_bytes()).collect();

    let symbols: Vec<SymbolName<'_>> = names.iter().map(|n| SymbolName::new(n)).collect();
    let mut fns = vec![std::ptr::null_mut::<c_void>(); names.len()];
    let mut contexts = vec![std::ptr::null_mut::<c_void>(); names.len()];
    for (slot, function) in fns.iter_mut().enumerate().take(8) {
        if prefill & (1 << slot) != 0 {
            *function = PREFILLED as *mut c_void;
        }
    }
    let before = fns.clone();
    let result = {
        let mut request = ResolveRequest::new(&symbols, &mut fns, &mut contexts).unwrap();
        manager.resolve(&mut request)
    };
    let mut required_missing = false;
    for (slot, symbol) in symbols.iter().enumerate() {
        if !before[slot].is_null() {
            assert_eq!(fns[slot], before[slot], "slot {slot} was pre-filled and changed");
            continue;
        }
        let bare = symbol.bare();
        let known = exported.contains(bare);
        assert_eq!(!fns[slot].is_null(), known, "slot {slot} ({:?})", symbol.as_c_str());
        if known && SECOND.iter().any(|n| n.as_bytes() == bare) {
            // The newest provider is asked first.
            assert_eq!(fns[slot] as usize, second as *const () as usize);
        }
        if !known && !symbol.is_optional() {
            required_missing = true;
        }
    }
    assert_eq!(result.is_err(), required_missing, "{result:?}");
});
