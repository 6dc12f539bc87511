//! Cross-crate integration tests for xplug (see `tests/`), plus helpers they
//! share: finding a C compiler and compiling C sources against `include/`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
#[must_use]
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives one level below the workspace root")
        .to_path_buf()
}

/// The directory holding the C headers (`include/`).
#[must_use]
pub fn include_dir() -> PathBuf {
    workspace_root().join("include")
}

/// The C compiler to use: `$CC` if set, else `cc`.
#[must_use]
pub fn c_compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

/// The C++ compiler to use: `$CXX` if set, else `c++`.
#[must_use]
pub fn cxx_compiler() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned())
}

/// Runs `compiler args...`, panicking with the compiler's output on failure.
///
/// # Panics
/// When the compiler cannot be started or exits with an error; the message
/// includes the full command line and the compiler's stderr.
pub fn run_compiler(compiler: &str, args: &[&std::ffi::OsStr]) {
    let output = Command::new(compiler)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run C compiler `{compiler}` (set CC/CXX): {error}"));
    assert!(
        output.status.success(),
        "`{compiler} {}` failed:\n{}",
        args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Compiles the C file `source` into the shared object `dir/lib{name}.so`
/// against `include/` with `-std=c99 -Wall -Wextra -Werror -fPIC
/// -fvisibility=hidden` plus `extra` flags, and returns its path.
///
/// # Panics
/// When the compiler fails (the message carries its stderr).
pub fn build_c_plugin(source: &Path, dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let output = dir.join(format!("lib{name}.so"));
    let include = include_dir();
    let mut args: Vec<&std::ffi::OsStr> =
        ["-std=c99", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-fvisibility=hidden", "-I"]
            .iter()
            .map(std::ffi::OsStr::new)
            .collect();
    args.push(include.as_os_str());
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.push(source.as_os_str());
    args.push(std::ffi::OsStr::new("-o"));
    args.push(output.as_os_str());
    run_compiler(&c_compiler(), &args);
    output
}

/// Writes `code` to `dir/{name}.c` and builds it with [`build_c_plugin`].
///
/// # Panics
/// When the file cannot be written or the compiler fails.
pub fn build_c_plugin_from_code(code: &str, dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, code)
        .unwrap_or_else(|error| panic!("cannot write {}: {error}", source.display()));
    build_c_plugin(&source, dir, name, extra)
}

/// Builds `tests/c/minimal_plugin.c` (exports `c_add_i32` and `c_mul_i32`,
/// honours the `scale` load parameter) into `dir/libc_minimal.so`.
#[must_use]
pub fn build_minimal_c_plugin(dir: &Path) -> PathBuf {
    build_c_plugin(&workspace_root().join("tests/c/minimal_plugin.c"), dir, "c_minimal", &[])
}

/// Extra flags making [`build_c_plugin`] produce a standalone plugin with a
/// plain C toolchain: IREE's compile flags for embedded plugins, no libc, no
/// undefined symbols, `DT_HASH` and immediate binding. The result is both a
/// valid shared library and a valid embedded ELF.
pub const STANDALONE_C_FLAGS: [&str; 16] = [
    "-O2",
    "-ffreestanding",
    "-fno-plt",
    "-fno-exceptions",
    "-fdata-sections",
    "-ffunction-sections",
    "-fno-stack-protector",
    "-fno-asynchronous-unwind-tables",
    "-nostdlib",
    "-Wl,--no-undefined",
    "-Wl,--gc-sections",
    "-Wl,-z,now",
    "-Wl,-z,relro",
    "-Wl,--hash-style=sysv",
    "-Wl,--build-id=none",
    "-Wl,--strip-debug",
];

/// Builds `plugins/c_sample/c_sample.c` as a standalone plugin with the
/// plain C toolchain ([`STANDALONE_C_FLAGS`]) into `dir/libc_sample_standalone.so`.
#[must_use]
pub fn build_standalone_c_sample(dir: &Path) -> PathBuf {
    build_c_plugin(
        &workspace_root().join("plugins/c_sample/c_sample.c"),
        dir,
        "c_sample_standalone",
        &STANDALONE_C_FLAGS,
    )
}

/// The params of IREE's custom-dispatch sample kernels
/// (`simple_mul_workgroup`), as a host declares them
/// (`docs/dispatch.md#sample-params`): three bindings, each a base pointer
/// plus an element offset that together start this call's slice, the
/// slice length, the workgroup id, and the processor fields.
#[repr(C)]
#[derive(Debug)]
pub struct WorkgroupParams {
    /// Left operand.
    pub lhs: *const f32,
    /// Element offset of this call's slice in `lhs`.
    pub lhs_offset: usize,
    /// Right operand.
    pub rhs: *const f32,
    /// Element offset of this call's slice in `rhs`.
    pub rhs_offset: usize,
    /// Result.
    pub out: *mut f32,
    /// Element offset of this call's slice in `out`.
    pub out_offset: usize,
    /// Elements in this call's slice.
    pub size: usize,
    /// The workgroup id (informational).
    pub tid: usize,
    /// The processor running the call.
    pub processor_id: u32,
    /// Processor feature bits.
    pub processor_data: *const u64,
}

impl WorkgroupParams {
    /// One call over the whole of `out` (offsets 0, `size = out.len()`,
    /// workgroup 0); `lhs` and `rhs` must be at least as long.
    ///
    /// # Panics
    /// When an input is shorter than `out`.
    pub fn whole(lhs: &[f32], rhs: &[f32], out: &mut [f32]) -> Self {
        assert!(lhs.len() >= out.len() && rhs.len() >= out.len(), "inputs shorter than the output");
        Self {
            lhs: lhs.as_ptr(),
            lhs_offset: 0,
            rhs: rhs.as_ptr(),
            rhs_offset: 0,
            out: out.as_mut_ptr(),
            out_offset: 0,
            size: out.len(),
            tid: 0,
            processor_id: 0,
            processor_data: std::ptr::null(),
        }
    }
}
