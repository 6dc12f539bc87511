//! A provider must skip filled slots; one that rewrites them (as a buggy C
//! plugin can, through the raw arrays) has its change undone and reported.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use xplug_manager::{Manager, SlotRewrite, SlotSource};
use xplug_providers::abi::Resolution;
use xplug_providers::{Error, FnTableEntry, FnTableProvider, ImportProvider, ResolveRequest, SymbolName};

unsafe extern "C" fn honest(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    1
}

unsafe extern "C" fn rogue(_: *mut c_void, _: *mut c_void, _: *mut c_void) -> c_int {
    2
}

/// Writes its function into every slot through the raw arrays, filled or
/// not, or NULL into slot 0 when `clears` is set.
struct Rogue {
    clears: bool,
}

impl ImportProvider for Rogue {
    fn name(&self) -> &str {
        "rogue"
    }

    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        let params = request.as_params();
        for index in 0..params.count {
            let value = if self.clears && index == 0 { std::ptr::null_mut() } else { rogue as *mut c_void };
            // SAFETY: `params` points at the request's arrays of `count`
            // slots, borrowed mutably through `request` for this call.
            unsafe {
                *params.out_fn_ptrs.add(index) = value;
                *params.out_fn_contexts.add(index) = 0x0bad as *mut c_void;
            }
        }
        Ok(Resolution::NONE)
    }
}

fn manager(clears: bool) -> Manager {
    let manager = Manager::new();
    // Registered first, so asked last: it runs after the honest table
    // filled `a`, because `b` is still missing.
    manager.register_provider(Arc::new(Rogue { clears })).unwrap();
    let table = FnTableProvider::new("honest", [FnTableEntry::new("a", honest)]).unwrap();
    manager.register_provider(Arc::new(table)).unwrap();
    manager
}

#[test]
fn a_rewritten_slot_is_restored_and_traced() {
    for clears in [false, true] {
        let manager = manager(clears);
        let names = [SymbolName::new(c"a"), SymbolName::new(c"b")];
        let (mut fns, mut contexts) =
            ([std::ptr::null_mut::<c_void>(); 2], [std::ptr::null_mut::<c_void>(); 2]);
        let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
        let (trace, result) = manager.resolve_traced(&mut request);
        assert_eq!(result.unwrap(), Resolution::NONE);
        // `a` keeps the honest function and its (NULL) context.
        assert_eq!(request.function(0), honest as *mut c_void, "clears = {clears}");
        assert!(request.context(0).is_null());
        // `b` was empty: the rogue may fill it.
        assert_eq!(request.function(1), rogue as *mut c_void);
        assert_eq!(
            trace.rewrites,
            [SlotRewrite { slot: 0, provider_index: 0, provider: Arc::from("rogue") }]
        );
        assert!(matches!(&trace.slots[0], SlotSource::Provider { index: 1, .. }), "{:?}", trace.slots);
        assert!(matches!(&trace.slots[1], SlotSource::Provider { index: 0, .. }), "{:?}", trace.slots);
    }
}

#[test]
fn the_untraced_resolve_restores_too() {
    let manager = manager(false);
    let names = [SymbolName::new(c"a"), SymbolName::new(c"b")];
    let (mut fns, mut contexts) = ([std::ptr::null_mut::<c_void>(); 2], [std::ptr::null_mut::<c_void>(); 2]);
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    manager.resolve(&mut request).unwrap();
    assert_eq!(request.function(0), honest as *mut c_void);
    assert!(request.context(0).is_null());
}

#[test]
fn slots_the_caller_filled_are_protected() {
    let manager = Manager::new();
    manager.register_provider(Arc::new(Rogue { clears: false })).unwrap();
    // 40 names, the last one filled by the caller.
    let owned: Vec<std::ffi::CString> =
        (0..40).map(|i| std::ffi::CString::new(format!("n{i}")).unwrap()).collect();
    let names: Vec<SymbolName<'_>> = owned.iter().map(|name| SymbolName::new(name)).collect();
    let mut fns = vec![std::ptr::null_mut::<c_void>(); 40];
    let mut contexts = vec![std::ptr::null_mut::<c_void>(); 40];
    fns[39] = honest as *mut c_void;
    contexts[39] = 0x600d as *mut c_void;
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    let (trace, result) = manager.resolve_traced(&mut request);
    result.unwrap();
    assert_eq!(request.function(39), honest as *mut c_void);
    assert_eq!(request.context(39), 0x600d as *mut c_void);
    assert_eq!(request.function(0), rogue as *mut c_void);
    assert_eq!(trace.rewrites.len(), 1);
    assert_eq!(trace.rewrites[0].slot, 39);
}
