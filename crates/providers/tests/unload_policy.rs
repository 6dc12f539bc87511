//! The unload policy for Rust plugins: a library built with `xplug-sdk`
//! stays mapped after its plugin is dropped, so thread-local destructors it
//! left on live threads can still run; C libraries are closed.

mod common;

use std::ffi::c_void;
use std::path::{Path, PathBuf};

use xplug_providers::{
    ImportProvider, LoadParamList, Loader, Plugin, ResolveRequest, SYSTEM_LIBRARY, SymbolName,
};

fn build_thread_local_plugin() -> PathBuf {
    xplug_fixtures::build_rust_plugin("thread_local_plugin")
}

fn load(path: &Path) -> Plugin {
    // SAFETY: the test plugins are v0 plugins.
    unsafe {
        SYSTEM_LIBRARY
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .expect("the plugin loads")
}

/// Calls the plugin's `u64`-pair import `name` with `value`; returns the
/// second field.
fn call(plugin: &Plugin, name: &'static std::ffi::CStr, value: u64) -> u64 {
    let names = [SymbolName::new(name)];
    let (mut fns, mut contexts) = ([std::ptr::null_mut::<c_void>(); 1], [std::ptr::null_mut::<c_void>(); 1]);
    let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
    plugin.resolve(&mut request).expect("the import resolves");
    let mut args = [value, 0u64];
    // SAFETY: the slot holds a v0 import function of the plugin.
    let function: xplug_providers::abi::ImportFn = unsafe { std::mem::transmute(request.function(0)) };
    // SAFETY: both imports take two `u64` fields (`repr(C)`) and no context.
    let code = unsafe { function(args.as_mut_ptr().cast(), request.context(0), std::ptr::null_mut()) };
    assert_eq!(code, 0, "{name:?} failed");
    if name == c"tls_destroyed" { args[0] } else { args[1] }
}

/// True while the OS loader has the library at `path` open.
#[cfg(unix)]
fn is_mapped(path: &Path) -> bool {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path; `RTLD_NOLOAD` never loads anything, it only
    // returns a handle when the library is already open.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return false;
    }
    // SAFETY: the handle `dlopen` just returned, closed once.
    unsafe { libc::dlclose(handle) };
    true
}

#[test]
#[cfg(unix)]
fn a_thread_local_destructor_outlives_the_unloaded_rust_plugin() {
    let path = build_thread_local_plugin();
    assert!(!is_mapped(&path), "nothing else in this test binary opens the library");

    let worker_path = path.clone();
    let worker = std::thread::spawn(move || {
        let plugin = load(&worker_path);
        assert_eq!(call(&plugin, c"tls_touch", 5), 5);
        assert_eq!(call(&plugin, c"tls_touch", 2), 7);
        assert_eq!(plugin.unload().live_allocations, 0);
        // The plugin is gone, its thread-local still lives on this thread:
        // ending the thread runs its destructor in the library's code.
        assert!(is_mapped(&worker_path), "the Rust library stays mapped after unload (pinned)");
    });
    worker.join().expect("the thread that used the thread-local ended cleanly");

    // The destructor ran in the same, still-mapped copy: loading again
    // sees its count.
    assert!(is_mapped(&path));
    let plugin = load(&path);
    assert_eq!(call(&plugin, c"tls_destroyed", 0), 1, "one thread-local destroyed");
    drop(plugin);
}

#[test]
#[cfg(unix)]
fn a_c_library_is_closed_when_its_plugin_drops() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let plugin = load(&path);
    assert!(is_mapped(&path));
    drop(plugin);
    assert!(!is_mapped(&path), "a C library is closed with its plugin");
}
