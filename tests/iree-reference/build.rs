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

/// The static library `cc` builds (`lib{LIBRARY}.a` in `OUT_DIR`).
const LIBRARY: &str = "xplug_iree_reference";

/// What every global symbol the library defines is renamed with
/// (`src/sys.rs` declares the renamed names).
const PREFIX: &str = "xplug_ref_";

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
    let compiler = build.get_compiler();
    build.compile(LIBRARY);
    prefix_symbols(compiler.path());
    println!("cargo::rustc-link-lib=dl");
    println!("cargo::rustc-link-lib=pthread");
}

/// Renames every global symbol the library defines to `PREFIX` + its name,
/// in its definitions and in every reference to it inside the library.
///
/// `xplug-iree` links IREE's whole runtime (in optimised builds as one
/// link-time-optimised object), which defines the same functions; a binary
/// that links both crates (the benchmarks) would otherwise hold two
/// definitions of each. Uses the binutils (`nm`, `objcopy`) beside the C
/// compiler `cc` chose (`aarch64-linux-gnu-gcc` -> `aarch64-linux-gnu-nm`).
fn prefix_symbols(compiler: &std::path::Path) {
    let out_dir = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let archive = out_dir.join(format!("lib{LIBRARY}.a"));
    let name = compiler.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let tool_prefix = ["gcc", "cc", "clang"]
        .iter()
        .find_map(|suffix| {
            name.strip_suffix(suffix).filter(|prefix| prefix.is_empty() || prefix.ends_with('-'))
        })
        .unwrap_or("");
    let tool = |tool: &str| {
        let tool = format!("{tool_prefix}{tool}");
        match compiler.parent().filter(|dir| dir.join(&tool).is_file()) {
            Some(dir) => dir.join(tool),
            None => std::path::PathBuf::from(tool),
        }
    };
    let (nm, objcopy) = (tool("nm"), tool("objcopy"));
    let listed = std::process::Command::new(&nm)
        .args(["--defined-only", "--extern-only", "--format=posix"])
        .arg(&archive)
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run `{}` (binutils; Debian: `apt-get install binutils`): {error}", nm.display())
        });
    assert!(
        listed.status.success(),
        "`{} {}` failed: {}",
        nm.display(),
        archive.display(),
        String::from_utf8_lossy(&listed.stderr)
    );
    // POSIX format: `NAME TYPE VALUE SIZE`, and `ARCHIVE[MEMBER]:` lines.
    let mut symbols: Vec<&str> = std::str::from_utf8(&listed.stdout)
        .expect("nm prints symbol names as text")
        .lines()
        .filter(|line| !line.ends_with(':'))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    symbols.sort_unstable();
    symbols.dedup();
    assert!(
        symbols.contains(&"iree_hal_executable_plugin_manager_create"),
        "`{}` lists no IREE symbol in {}",
        nm.display(),
        archive.display()
    );
    let map: String = symbols.iter().map(|symbol| format!("{symbol} {PREFIX}{symbol}\n")).collect();
    let map_file = out_dir.join("prefix-symbols.txt");
    std::fs::write(&map_file, map)
        .unwrap_or_else(|error| panic!("cannot write {}: {error}", map_file.display()));
    let status = std::process::Command::new(&objcopy)
        .arg(format!("--redefine-syms={}", map_file.display()))
        .arg(&archive)
        .status()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run `{}` (binutils; Debian: `apt-get install binutils`): {error}",
                objcopy.display()
            )
        });
    assert!(
        status.success(),
        "`{}` could not rename the symbols of {}",
        objcopy.display(),
        archive.display()
    );
}
