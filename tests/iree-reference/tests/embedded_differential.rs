//! Differential test of the embedded ELF loaders: every valid `.sos` the
//! project builds, a `.sos` made by a plain C toolchain, and valid generated
//! variants (the host record extracted as a plain ELF; a FatELF whose first
//! record is for another machine) are loaded by IREE's embedded-ELF plugin
//! loader and by xplug's. Both must load them, resolve the same names to
//! filled and empty slots with the same resolution bits, and the resolved
//! `simple_mul_workgroup` of each must compute the same result on the same
//! data. (Hostile files are not given to IREE: its loader does not
//! range-check relocation targets, `docs/src/reference/embedded-elf.md#iree-loader-gaps`.)

use std::ffi::{CString, c_void};
use std::path::{Path, PathBuf};

use iree_sample_args::WorkgroupArgs;
use xplug_abi::{Resolution, StatusCode};
use xplug_iree_reference::IreePlugin;
use xplug_manager::providers::embedded_elf::{fatelf, validate};
use xplug_manager::providers::{
    EMBEDDED_ELF, ImportProvider, LoadParamList, Loader, ResolveRequest, SymbolName,
};

/// Calls a resolved `simple_mul_workgroup` on a fixed slice and returns its
/// result code and output.
fn run_mul(function: *mut c_void, context: *mut c_void) -> (i32, Vec<f32>) {
    // SAFETY: the slot was filled by a plugin's resolve for
    // `simple_mul_workgroup`; the plugin is alive while the caller holds it.
    let function = unsafe { xplug_abi::import_fn_from_ptr(function) }.expect("a filled slot");
    let lhs: Vec<f32> = (0..200).map(|i| i as f32 * 0.25 - 7.0).collect();
    let rhs: Vec<f32> = (0..200).map(|i| 3.5 - i as f32 * 0.125).collect();
    let mut out = vec![f32::NAN; 200];
    let mut args = WorkgroupArgs::over(&lhs, &rhs, &mut out, [5, 9, 11], 150, 2);
    // SAFETY: IREE's sample args; each binding holds offset + size
    // elements and outlives the call.
    let result = unsafe { function(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut()) };
    (result, out)
}

/// The files to compare, each with the name its header gives.
fn cases(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let root = xplug_fixtures::workspace_root();
    let profile = xplug_fixtures::plugins::PluginProfile::Debug;
    let built = xplug_fixtures::plugins::build(&root, profile).expect("the example plugins build");
    assert!(built.iter().all(|plugin| plugin.path.is_some()), "a plugin was skipped: {built:?}");
    let plugins = xplug_fixtures::plugins::output_dir(&root, profile);
    let rust = plugins.join("sample_standalone.sos");
    let mut cases = vec![
        (rust.clone(), "sample_standalone"),
        (plugins.join("c_sample.sos"), "c_sample"),
        (xplug_fixtures::build_standalone_c_sample(dir), "c_sample"),
    ];
    // Generated variants of the Rust plugin.
    let bytes = std::fs::read(&rust).unwrap();
    let host = bytes[validate(&bytes).unwrap().elf()].to_vec();
    let plain = dir.join("sample_standalone_plain.sos");
    std::fs::write(&plain, &host).unwrap();
    cases.push((plain, "sample_standalone"));
    let mut foreign = host.clone();
    foreign[18..20].copy_from_slice(&258u16.to_le_bytes()); // loongarch: skipped by both
    let foreign_first = dir.join("sample_standalone_foreign_first.sos");
    std::fs::write(&foreign_first, fatelf::join(&[&foreign, &host]).unwrap()).unwrap();
    cases.push((foreign_first, "sample_standalone"));
    cases
}

#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn iree_and_xplug_load_resolve_and_run_the_same_sos_files_alike() {
    let dir = tempfile::tempdir().unwrap();
    let names_owned =
        [CString::new("simple_mul_workgroup").unwrap(), CString::new("?xplug_no_such_import").unwrap()];
    let names: Vec<SymbolName<'_>> = names_owned.iter().map(|name| SymbolName::new(name)).collect();
    for (path, name) in cases(dir.path()) {
        // SAFETY: the project's own standalone plugins and valid variants.
        let iree = unsafe { IreePlugin::embedded_elf(&path, &[]) }
            .unwrap_or_else(|error| panic!("IREE refuses {}: {error}", path.display()));
        // SAFETY: as above.
        let xplug = unsafe {
            EMBEDDED_ELF
                .open(&std::path::Path::new(&path).to_string_lossy())
                .and_then(|code| code.load(&LoadParamList::new()))
        }
        .unwrap_or_else(|error| panic!("xplug refuses {}: {error}", path.display()));
        assert_eq!(xplug.name(), name, "{}", path.display());

        let (mut iree_fns, mut iree_contexts) = ([std::ptr::null_mut(); 2], [std::ptr::null_mut(); 2]);
        let iree_outcome = iree.resolve(&names, &mut iree_fns, &mut iree_contexts).unwrap();
        let (mut fns, mut contexts) = ([std::ptr::null_mut(); 2], [std::ptr::null_mut(); 2]);
        let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
        let resolution = xplug.resolve(&mut request).unwrap();
        assert_eq!(iree_outcome.code, StatusCode::OK, "{}: {:?}", path.display(), iree_outcome.message);
        assert_eq!(iree_outcome.resolution, resolution, "{}", path.display());
        assert_eq!(resolution, Resolution::MISSING_OPTIONAL, "{}", path.display());
        assert_eq!(
            iree_fns.map(|slot| slot.is_null()),
            fns.map(|slot| slot.is_null()),
            "{}: the same slots are filled",
            path.display()
        );
        assert!(!fns[0].is_null() && fns[1].is_null(), "{}", path.display());

        let (iree_result, iree_out) = run_mul(iree_fns[0], iree_contexts[0]);
        let (result, out) = run_mul(fns[0], contexts[0]);
        assert_eq!((iree_result, result), (0, 0), "{}", path.display());
        assert_eq!(
            iree_out.iter().map(|value| value.to_bits()).collect::<Vec<_>>(),
            out.iter().map(|value| value.to_bits()).collect::<Vec<_>>(),
            "{}: both loaders' code computes the same elements",
            path.display()
        );
        // The call wrote the slice (IREE's convention: pointer + offset is
        // the slice start, `size` its length) and nothing else.
        assert!(out[11..11 + 150].iter().all(|value| !value.is_nan()), "{}", path.display());
        assert!(out[..11].iter().chain(&out[161..]).all(|value| value.is_nan()), "{}", path.display());
        assert_eq!(xplug.unload().live_allocations, 0);
    }
}
