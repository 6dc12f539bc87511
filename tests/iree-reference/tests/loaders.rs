//! IREE's loaders and manager through the wrapper: a real plugin loads and
//! resolves, bad input comes back as typed errors carrying IREE's status.

use std::ffi::{c_int, c_void};

use xplug_abi::{Resolution, StatusCode};
use xplug_iree_reference::{Error, IreeManager, IreePlugin};
use xplug_manager::providers::SymbolName;

#[repr(C)]
struct BinopArgs {
    a: i32,
    b: i32,
    out: i32,
}

#[test]
fn system_library_plugin_resolves_and_its_imports_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    // SAFETY: the repository's minimal C plugin, a v0 plugin.
    let plugin = unsafe { IreePlugin::system_library(&path, &[(b"scale", b"3")]) }.unwrap();
    let names = [SymbolName::new(c"c_add_i32"), SymbolName::new(c"c_mul_i32"), SymbolName::new(c"?absent")];
    let mut fns = [std::ptr::null_mut::<c_void>(); 3];
    let mut contexts = [std::ptr::null_mut::<c_void>(); 3];
    let outcome = plugin.resolve(&names, &mut fns, &mut contexts).unwrap();
    assert_eq!((outcome.code, outcome.resolution), (StatusCode::OK, Resolution::MISSING_OPTIONAL));
    assert!(fns[2].is_null());
    let mut args = BinopArgs { a: 4, b: 5, out: 0 };
    // SAFETY: `c_mul_i32` takes `BinopArgs` and its context from the slot.
    let result = unsafe {
        let mul = std::mem::transmute::<
            *mut c_void,
            unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void) -> c_int,
        >(fns[1]);
        mul(std::ptr::from_mut(&mut args).cast(), contexts[1], std::ptr::null_mut())
    };
    assert_eq!((result, args.out), (0, 60), "4 * 5 * scale 3");

    // Through the manager, a required name nobody has is NOT_FOUND with
    // IREE's listing.
    let manager = IreeManager::new(1).unwrap();
    manager.register_plugin(plugin).unwrap();
    let names = [SymbolName::new(c"c_add_i32"), SymbolName::new(c"nowhere")];
    let (mut fns, mut contexts) = ([std::ptr::null_mut(); 2], [std::ptr::null_mut(); 2]);
    let outcome = manager.resolve(&names, &mut fns, &mut contexts).unwrap();
    assert_eq!(outcome.code, StatusCode::NOT_FOUND);
    let message = outcome.message.unwrap();
    assert!(message.contains("missing 1 required executable imports: [nowhere]"), "{message}");
    assert!(!fns[0].is_null() && fns[1].is_null());
}

#[test]
fn a_full_manager_refuses_with_resource_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_fixtures::build_minimal_c_plugin(dir.path());
    let manager = IreeManager::new(1).unwrap();
    for expected in [None, Some(StatusCode::RESOURCE_EXHAUSTED)] {
        // SAFETY: as above.
        let plugin = unsafe { IreePlugin::system_library(&path, &[]) }.unwrap();
        match (manager.register_plugin(plugin), expected) {
            (Ok(()), None) => {}
            (Err(Error::Register { code, message, .. }), Some(expected)) => {
                assert_eq!(code, expected);
                assert!(message.contains("capacity of 1"), "{message}");
            }
            (other, _) => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn loaders_report_bad_files_with_iree_status() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.so");
    // SAFETY: the file does not exist; nothing is loaded.
    let error = unsafe { IreePlugin::system_library(&missing, &[]) }.unwrap_err();
    let Error::LoadPlugin { loader, plugin, code, .. } = &error else { panic!("{error:?}") };
    assert_eq!((*loader, plugin.as_str()), ("system library", missing.to_str().unwrap()));
    assert_ne!(*code, StatusCode::OK);

    let garbage = dir.path().join("garbage.sos");
    std::fs::write(&garbage, b"not an ELF file at all, just text padding it out a little").unwrap();
    // SAFETY: IREE's ELF loader refuses the file before running anything.
    let error = unsafe { IreePlugin::embedded_elf(&garbage, &[]) }.unwrap_err();
    let Error::LoadPlugin { loader, code, .. } = &error else { panic!("{error:?}") };
    assert_eq!(*loader, "embedded ELF");
    assert_ne!(*code, StatusCode::OK);
    assert!(error.to_string().contains("garbage.sos"), "{error}");
}
