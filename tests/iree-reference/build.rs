//! Compiles IREE's executable plugin manager, its plugin loaders and the
//! `base/` files they need from the sources bundled in the `eerie-sys` crate
//! (a dependency with its default features off, so its own build script does
//! nothing). No IREE source is copied into this repository.
//!
//! Every failure panics with what went wrong and what to do: a reference
//! build that silently skipped would make the benchmarks and the
//! differential test meaningless.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The eerie-sys release whose sources we compile (IREE 3.13).
const EERIE_SYS: &str = "eerie-sys";

/// Files of IREE's runtime (under `runtime/src/iree/`) that make up the
/// manager, the system-library and static plugins, the embedded ELF loader
/// and plugin, and their `base/` and `io/` dependencies.
const SOURCES: &[&str] = &[
    // The manager and the two OS-level plugin kinds.
    "hal/local/executable_plugin_manager.c",
    "hal/local/executable_loader.c",
    "hal/local/plugins/system_library_plugin.c",
    "hal/local/plugins/static_plugin.c",
    // The embedded (portable ELF) plugin and IREE's own ELF loader.
    "hal/local/plugins/embedded_elf_plugin.c",
    "hal/local/elf/elf_module.c",
    "hal/local/elf/fatelf.c",
    "hal/local/elf/arch/arm_32.c",
    "hal/local/elf/arch/arm_64.c",
    "hal/local/elf/arch/riscv.c",
    "hal/local/elf/arch/x86_32.c",
    "hal/local/elf/arch/x86_64.c",
    "hal/local/elf/platform/apple.c",
    "hal/local/elf/platform/generic.c",
    "hal/local/elf/platform/linux.c",
    "hal/local/elf/platform/windows.c",
    "io/file_contents.c",
    "io/file_handle.c",
    // base/
    "base/allocator.c",
    "base/allocator_libc.c",
    "base/status.c",
    "base/status_stack_trace.c",
    "base/printf.c",
    "base/string_view.c",
    "base/string_builder.c",
    "base/time.c",
    "base/internal/time.c",
    "base/internal/dynamic_library_posix.c",
    "base/internal/memory.c",
    "base/internal/path.c",
    "base/threading/mutex.c",
];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=XPLUG_IREE_RUNTIME_SRC");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    assert!(
        target_os == "linux",
        "xplug-iree-reference builds IREE's runtime for Linux only (target OS `{target_os}`): \
         its file list uses the POSIX dynamic-library loader; exclude this crate on other targets"
    );

    let runtime_src = runtime_src_dir();
    let iree = runtime_src.join("iree");
    let mut build = cc::Build::new();
    build
        .include(&runtime_src)
        .opt_level(2)
        .define("IREE_STATUS_MODE", "2")
        .define("IREE_FILE_IO_ENABLE", "1")
        .define("IREE_ALLOCATOR_SYSTEM_CTL", "iree_allocator_libc_ctl")
        // IREE's sources are not ours to fix; their warnings are noise here.
        .warnings(false);
    for file in SOURCES {
        let path = iree.join(file);
        assert!(
            path.is_file(),
            "IREE source {} is missing from {}; the eerie-sys package is incomplete or a different \
             release (this crate expects eerie-sys 0.5.0)",
            file,
            runtime_src.display()
        );
        build.file(path);
    }
    build.compile("xplug_iree_reference");
    println!("cargo::rustc-link-lib=dl");
    println!("cargo::rustc-link-lib=pthread");
}

/// `runtime/src` of the IREE tree bundled in eerie-sys, or of the tree
/// `XPLUG_IREE_RUNTIME_SRC` names (for machines with IREE checked out).
fn runtime_src_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XPLUG_IREE_RUNTIME_SRC") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("iree/hal/local/executable_plugin_manager.c").is_file(),
            "XPLUG_IREE_RUNTIME_SRC={} is not IREE's `runtime/src` directory (no \
             iree/hal/local/executable_plugin_manager.c below it)",
            dir.display()
        );
        return dir;
    }
    let package_dir = eerie_sys_dir();
    let dir = package_dir.join("iree").join("runtime").join("src");
    assert!(
        dir.is_dir(),
        "{} has no iree/runtime/src directory; expected eerie-sys 0.5.0's bundled IREE sources",
        package_dir.display()
    );
    dir
}

/// The directory of the eerie-sys package, from `cargo metadata`.
fn eerie_sys_dir() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let output = Command::new(&cargo)
        .arg("metadata")
        .args(["--format-version", "1", "--filter-platform", &target])
        .arg("--manifest-path")
        .arg(manifest_dir.join("Cargo.toml"))
        // The build that runs us already resolved and downloaded everything.
        .arg("--locked")
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run `{} metadata` to locate the eerie-sys sources: {error}",
                Path::new(&cargo).display()
            )
        });
    assert!(
        output.status.success(),
        "`cargo metadata` failed while locating the eerie-sys sources (set XPLUG_IREE_RUNTIME_SRC to IREE's \
         runtime/src to bypass it):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("`cargo metadata` printed JSON");
    let packages = metadata["packages"].as_array().expect("`cargo metadata` lists packages");
    let manifest = packages
        .iter()
        .find(|package| package["name"] == EERIE_SYS)
        .and_then(|package| package["manifest_path"].as_str())
        .unwrap_or_else(|| {
            panic!("`cargo metadata` does not list the {EERIE_SYS} package; is it still a dependency of xplug-iree-reference?")
        });
    Path::new(manifest).parent().expect("a manifest path has a parent directory").to_path_buf()
}
