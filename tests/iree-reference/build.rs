//! Compiles IREE's executable plugin manager, its plugin loaders and the
//! `base/` files they need from the sources bundled in the `eerie-sys` crate,
//! found by `xplug-iree-build`. This crate uses only those sources (it
//! enables no eerie-sys feature; `xplug-iree` builds the whole runtime), and
//! compiles them with the flags IREE's release builds use (`-O2 -DNDEBUG`).
//! No IREE source is copied into this repository.
//!
//! Every failure panics with what went wrong and what to do: a reference
//! build that silently skipped would make the benchmarks and the
//! differential test meaningless.

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
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    assert!(
        target_os == "linux",
        "xplug-iree-reference builds IREE's runtime for Linux only (target OS `{target_os}`): \
         its file list uses the POSIX dynamic-library loader; exclude this crate on other targets"
    );

    let runtime_src = xplug_iree_build::runtime_src_dir();
    let iree = runtime_src.join("iree");
    let mut build = cc::Build::new();
    build
        .include(&runtime_src)
        .opt_level(2)
        // As IREE releases it: assertions off.
        .define("NDEBUG", None)
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
