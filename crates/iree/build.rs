//! Builds IREE's runtime, from the IREE tree the eerie-sys package carries,
//! with CMake: `glue/CMakeLists.txt` adds IREE's own CMake project and
//! collects the runtime, IREE's parameter support and result comparison,
//! and `glue/xplug_iree.c` into one static archive. eerie-sys is a
//! dependency for its sources only (no features, so its build script
//! builds nothing): this is the one build of IREE's runtime.
//!
//! The tools come from the build itself (`xplug_iree_build::tools`): CMake
//! (at least 3.26) and Ninja from `PATH`, else pinned PyPI wheels installed
//! once under the target directory; a missing one stops the build here,
//! before the long step, with the command that installs it. The Rust
//! bindings are committed (`src/iree_bindings.rs`, `cargo iree-bindings`),
//! so no libclang is needed. See docs/src/design/publishing.md, "Building xplug-iree".
//!
//! IREE's runtime is always compiled with `NDEBUG`, as IREE's release tools
//! are: with C `assert` on, a damaged module made IREE's runtime abort (for
//! example `IREE_ASSERT_ARGUMENT(symbol_names)` in `executable_loader.c`)
//! where `iree-run-module` returns the error the check stands for. Debug
//! builds keep `-g` and no optimisation (docs/src/embedding/iree.md, "Damaged
//! modules").
//!
//! xplug's patches to IREE's sources (`build/iree_patches.rs`: holes
//! through which a damaged module crashed IREE's runtime) are applied to
//! copies under the CMake build tree, which `glue/CMakeLists.txt` compiles
//! in place of the originals (docs/src/embedding/iree.md, "Building IREE's
//! runtime").
//!
//! The script reruns only when this file, `build/`, `glue/`, or the tools' and
//! compiler's environment variables change (the IREE tree is a registry
//! package, immutable), so a `cargo build` with nothing changed neither
//! runs CMake nor rebuilds the crates above this one.

use std::path::PathBuf;
use std::process::Command;

use xplug_iree_build::tools::{FileLock, ToolCache};

#[path = "build/iree_patches.rs"]
mod iree_patches;

/// IREE's runtime options, as eerie-sys 0.5.0's build script sets them for
/// a hosted target (its `RUNTIME_CMAKE_DEFINITIONS` and driver choices),
/// but for `IREE_RUNTIME_OPTIMIZATION_PROFILE`, which
/// [`compiler_arguments`] chooses.
const IREE_OPTIONS: [(&str, &str); 17] = [
    ("IREE_ENABLE_LIBBACKTRACE", "OFF"),
    ("IREE_BUILD_COMPILER", "OFF"),
    ("IREE_BUILD_PYTHON_BINDINGS", "OFF"),
    ("IREE_HAL_DRIVER_DEFAULTS", "OFF"),
    ("IREE_HAL_DRIVER_AMDGPU", "OFF"),
    ("IREE_HAL_DRIVER_HIP", "OFF"),
    ("IREE_HAL_DRIVER_NULL", "OFF"),
    ("IREE_BUILD_TESTS", "OFF"),
    ("IREE_BUILD_BENCHMARKS", "OFF"),
    ("IREE_BUILD_SAMPLES", "OFF"),
    ("IREE_BUILD_BINDINGS_TFLITE", "OFF"),
    ("IREE_BUILD_BINDINGS_TFLITE_JAVA", "OFF"),
    ("IREE_HAL_DRIVER_LOCAL_SYNC", "ON"),
    ("IREE_HAL_DRIVER_LOCAL_TASK", "ON"),
    ("IREE_HAL_DRIVER_METAL", "OFF"),
    ("IREE_HAL_DRIVER_CUDA", "OFF"),
    ("IREE_HAL_DRIVER_VULKAN", "OFF"),
];

/// The archive `glue/CMakeLists.txt` makes (`lib<name>.a`).
const RUNTIME_LIBRARY: &str = "xplug_iree_runtime";

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // Absolute paths: they also tell `.ci/run` which build-script runs are
    // of the packaged crate (whose fingerprints it drops before packaging).
    println!("cargo::rerun-if-changed={}", manifest_dir.join("build.rs").display());
    println!("cargo::rerun-if-changed={}", manifest_dir.join("glue").display());
    println!("cargo::rerun-if-changed={}", manifest_dir.join("build").display());
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").expect("cargo sets CARGO_CFG_TARGET_OS");
    assert!(
        target_os == "linux",
        "xplug-iree builds IREE's runtime for Linux targets only (this is {target_os}); see docs/src/design/publishing.md"
    );
    let runtime_src = xplug_iree_build::runtime_src_dir();
    if std::env::var_os(xplug_iree_build::RUNTIME_SRC_VAR).is_some() {
        // Another IREE tree than the (immutable) registry package's.
        println!("cargo::rerun-if-changed={}", runtime_src.display());
    }
    let iree_root = xplug_iree_build::iree_root_dir(&runtime_src);
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));

    // The tools first: a missing one stops the build before the long step.
    let tools = ToolCache::for_build_script();
    let cmake = tools.cmake();
    let ninja = tools.ninja();

    let mut arguments = vec![
        "-S".into(),
        manifest_dir.join("glue").display().to_string(),
        format!("-DXPLUG_IREE_ROOT={}", iree_root.display()),
    ];
    arguments.extend(generator_arguments(ninja.as_deref()));
    arguments.extend(IREE_OPTIONS.iter().map(|(name, value)| format!("-D{name}={value}")));
    let (compiler_arguments, lto) = compiler_arguments();
    arguments.extend(compiler_arguments);

    // The build tree is keyed by CMake and its arguments, beside the
    // profile's build/ directory rather than in OUT_DIR: Cargo gives this
    // script a new OUT_DIR whenever the unit differs (`cargo clippy`
    // compiles workspace members with its own wrapper, for one), and each
    // would otherwise build IREE's runtime anew. Builds sharing the tree
    // take turns (a file lock).
    let profile_dir = out_dir.ancestors().nth(3).expect("OUT_DIR = <profile>/build/<unit>/out");
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let host = std::env::var("HOST").expect("cargo sets HOST");
    if target != host {
        arguments.extend(cross_arguments(&cmake, ninja.as_deref(), &iree_root, profile_dir, &host));
    }
    let wanted = format!("{}\n{}", cmake.display(), arguments.join("\n"));
    let build_dir = xplug_iree_build::runtime_tree(profile_dir, &wanted);
    let _lock = FileLock::exclusive(&build_dir.with_extension("lock"));

    // Configure when this tree was never configured to the end (the stamp
    // is written last), else only build: Ninja then has nothing to do for
    // an unchanged tree. xplug's patches to IREE's sources
    // (build/iree_patches.rs) are applied to copies in the tree on every
    // run, before configuring: Ninja recompiles a copy whose text changed,
    // and reconfigures when the list of patched files did.
    let stamp = build_dir.join("xplug-configure-arguments.txt");
    let configure = std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str());
    if configure && build_dir.exists() {
        std::fs::remove_dir_all(&build_dir)
            .unwrap_or_else(|error| panic!("cannot remove {}: {error}", build_dir.display()));
    }
    iree_patches::apply(&runtime_src, &build_dir.join("xplug-patched"));
    if configure {
        run(Command::new(&cmake).args(&arguments).arg("-B").arg(&build_dir), "configure IREE's runtime");
        std::fs::write(&stamp, &wanted)
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", stamp.display()));
    }
    let mut build = Command::new(&cmake);
    build.arg("--build").arg(&build_dir).args(["--target", RUNTIME_LIBRARY]);
    if let Ok(jobs) = std::env::var("NUM_JOBS") {
        build.args(["--parallel", &jobs]);
    }
    run(&mut build, "build IREE's runtime");
    // Tools that build IREE's own targets in this tree find it here.
    xplug_iree_build::record_linked_tree(&build_dir);

    // With LTO, the archive's objects are GCC's intermediate code, which
    // Rust's linker cannot read: one partial link optimises them together
    // into a single object, archived on its own and linked in its place.
    let archive_dir = match &lto {
        Some(lto) => lto.link(&build_dir),
        None => build_dir.clone(),
    };
    println!("cargo::rustc-link-search=native={}", archive_dir.display());
    println!(
        "cargo::rustc-link-search=native={}",
        build_dir.join("iree/build_tools/third_party/flatcc").display()
    );
    println!("cargo::rustc-link-lib=static={RUNTIME_LIBRARY}");
    println!("cargo::rustc-link-lib=static=flatcc_parsing");
    // IREE's result comparison is C++ (no exceptions or RTTI).
    println!("cargo::rustc-link-lib=stdc++");
}

/// CMake's generator: Ninja when there is one, else Makefiles.
fn generator_arguments(ninja: Option<&std::path::Path>) -> Vec<String> {
    match ninja {
        Some(ninja) => {
            vec!["-G".into(), "Ninja".into(), format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display())]
        }
        None => vec!["-G".into(), "Unix Makefiles".into()],
    }
}

/// IREE's generator tools a build of its runtime runs (FlatCC's schema
/// compiler, the data embedder): for a cross build, built for the host
/// first ([`cross_arguments`]).
const HOST_TOOLS: [&str; 2] = ["iree-flatcc-cli", "iree-c-embed-data"];

/// The CMake arguments of a cross build (`TARGET` is not `HOST`): the
/// target's system and processor, so that CMake knows it cross-compiles and
/// IREE picks the target's architecture (`IREE_ARCH`), and
/// `IREE_HOST_BIN_DIR`, IREE's own support for running host-built tools in
/// a cross build (its `flatbuffer_c_library` and `iree_c_embed_data` rules
/// then run `${IREE_HOST_BIN_DIR}/<tool>` instead of the target's build of
/// the tool, which the host cannot execute).
///
/// The host tools ([`HOST_TOOLS`]) are built here, before the cross build,
/// in a CMake tree of IREE's own project configured with the host's
/// compilers (`cc`'s choice for `HOST`: `CC_<host>`, `HOST_CC`, ...),
/// keyed by its arguments ([`xplug_iree_build::host_tools_tree`]:
/// `xplug-iree-runtime/host-tools/<hash>` of the cross profile); its
/// `tools/` directory is the one named.
fn cross_arguments(
    cmake: &std::path::Path,
    ninja: Option<&std::path::Path>,
    iree_root: &std::path::Path,
    profile_dir: &std::path::Path,
    host: &str,
) -> Vec<String> {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets CARGO_CFG_TARGET_ARCH");
    let mut arguments = vec!["-S".to_owned(), iree_root.display().to_string()];
    arguments.extend(generator_arguments(ninja));
    arguments.extend(IREE_OPTIONS.iter().map(|(name, value)| format!("-D{name}={value}")));
    arguments.push("-DCMAKE_BUILD_TYPE=Release".to_owned());
    for (language, cpp) in [("C", false), ("CXX", true)] {
        let compiler = cc::Build::new()
            .cpp(cpp)
            .target(host)
            .host(host)
            .opt_level(2)
            .debug(false)
            .warnings(false)
            .inherit_rustflags(false)
            .get_compiler();
        let flags: Vec<String> =
            compiler.args().iter().map(|flag| flag.to_string_lossy().into_owned()).collect();
        arguments.push(format!("-DCMAKE_{language}_COMPILER={}", compiler.path().display()));
        arguments.push(format!("-DCMAKE_{language}_FLAGS={}", flags.join(" ")));
    }
    let wanted = format!("{}\n{}", cmake.display(), arguments.join("\n"));
    let build_dir = xplug_iree_build::host_tools_tree(profile_dir, &wanted);
    let _lock = FileLock::exclusive(&build_dir.with_extension("lock"));
    let stamp = build_dir.join("xplug-configure-arguments.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        if build_dir.exists() {
            std::fs::remove_dir_all(&build_dir)
                .unwrap_or_else(|error| panic!("cannot remove {}: {error}", build_dir.display()));
        }
        run(
            Command::new(cmake).args(&arguments).arg("-B").arg(&build_dir),
            "configure IREE's host tools for the cross build",
        );
        std::fs::write(&stamp, &wanted)
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", stamp.display()));
    }
    let mut build = Command::new(cmake);
    build.arg("--build").arg(&build_dir).arg("--target").args(HOST_TOOLS);
    if let Ok(jobs) = std::env::var("NUM_JOBS") {
        build.args(["--parallel", &jobs]);
    }
    run(&mut build, "build IREE's host tools for the cross build");
    let bin_dir = build_dir.join("tools");
    for tool in HOST_TOOLS {
        assert!(
            bin_dir.join(tool).is_file(),
            "IREE's host build made no {} (looked in {})",
            tool,
            bin_dir.display()
        );
    }
    vec![
        "-DCMAKE_SYSTEM_NAME=Linux".to_owned(),
        format!("-DCMAKE_SYSTEM_PROCESSOR={arch}"),
        format!("-DIREE_HOST_BIN_DIR={}", bin_dir.display()),
    ]
}

/// The partial link that turns an archive of GCC LTO objects into one
/// optimised object ([`Lto::link`]).
struct Lto {
    /// The C compiler (GCC), which runs the link-time optimiser.
    compiler: PathBuf,
    /// Its flags, as the runtime was compiled with them.
    flags: Vec<String>,
    /// The archiver.
    archiver: PathBuf,
}

impl Lto {
    /// Optimises `libxplug_iree_runtime.a` of `build_dir` as one program
    /// (GCC's `-flto` with `-r`: a relocatable object, all of the
    /// archive's global symbols kept) and archives the result alone in
    /// `build_dir/lto/`, which it returns. Skipped when that archive is
    /// newer than the runtime's.
    fn link(&self, build_dir: &std::path::Path) -> PathBuf {
        let archive = build_dir.join(format!("lib{RUNTIME_LIBRARY}.a"));
        let lto_dir = build_dir.join("lto");
        let lto_archive = lto_dir.join(format!("lib{RUNTIME_LIBRARY}.a"));
        let modified = |path: &std::path::Path| std::fs::metadata(path).and_then(|meta| meta.modified()).ok();
        if let (Some(linked), Some(built)) = (modified(&lto_archive), modified(&archive))
            && linked > built
        {
            return lto_dir;
        }
        std::fs::create_dir_all(&lto_dir)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", lto_dir.display()));
        let object = lto_dir.join(format!("{RUNTIME_LIBRARY}.o"));
        let jobs = std::env::var("NUM_JOBS").unwrap_or_else(|_| "auto".to_owned());
        run(
            Command::new(&self.compiler)
                .args(&self.flags)
                .arg(format!("-flto={jobs}"))
                .args(["-r", "-nostdlib", "-flinker-output=nolto-rel", "-Wl,--whole-archive"])
                .arg(&archive)
                .arg("-Wl,--no-whole-archive")
                .arg("-o")
                .arg(&object),
            "optimise IREE's runtime at link time",
        );
        let _ = std::fs::remove_file(&lto_archive);
        run(Command::new(&self.archiver).arg("crs").arg(&lto_archive).arg(&object), "archive IREE's runtime");
        lto_dir
    }
}

/// The C and C++ compilers and flags `cc` picks for this target and
/// profile (honouring `CC`, `CFLAGS` and the like), the CMake build type
/// the profile stands for, `NDEBUG` (see the module docs), and IREE's
/// optimisation profile; with the partial link LTO needs, when it is on.
///
/// Optimised builds are CMake's `Release` (`-O3`), as IREE's pip packages
/// build the runtime (`RelWithDebInfo` would append `-O2` after the
/// profile's flags); their debug info comes from the profile's flags (`cc`
/// adds `-g` when the profile has any), so crash reports keep file and
/// line, but not the frame pointers `cc` would force with it (IREE's
/// `Release` omits them; unwind tables still walk the stack). With GCC
/// they are also IREE's `lto` optimisation profile (`-flto` on the
/// runtime's sources), as the pip packages are with Clang: the VM's
/// per-call helpers (reference counting, stack frames, argument
/// marshalling) live in other files than their callers, and only
/// link-time optimisation inlines them.
fn compiler_arguments() -> (Vec<String>, Option<Lto>) {
    let opt_level = std::env::var("OPT_LEVEL").unwrap_or_default();
    let build_type = match opt_level.as_str() {
        "0" => "Debug",
        "s" | "z" => "MinSizeRel",
        _ => "Release",
    };
    let mut arguments = vec![format!("-DCMAKE_BUILD_TYPE={build_type}")];
    let mut lto = None;
    for (language, cpp) in [("C", false), ("CXX", true)] {
        // No `-Wall -Wextra`: IREE chooses its own warnings (and `-Werror`).
        let mut build = cc::Build::new();
        build.cpp(cpp).warnings(false).inherit_rustflags(false);
        if opt_level != "0" {
            // `cc` forces frame pointers wherever there is debug info;
            // IREE's `Release` omits them (its CFI unwinds the stack).
            build.force_frame_pointer(false);
        }
        let compiler = build.get_compiler();
        let flags: Vec<String> = compiler
            .args()
            .iter()
            .map(|flag| flag.to_string_lossy().into_owned())
            .chain(["-DNDEBUG".to_owned()])
            .collect();
        // IREE's CMake project needs both; say which is missing before it
        // starts, with the command that installs it.
        let runs =
            Command::new(compiler.path()).arg("--version").output().is_ok_and(|out| out.status.success());
        assert!(
            runs,
            "IREE's runtime build needs a {} compiler and `{}` does not run: install one (Debian: `apt-get \
             install {}`) or name it in {}",
            if cpp { "C++" } else { "C" },
            compiler.path().display(),
            if cpp { "g++" } else { "gcc" },
            if cpp { "CXX" } else { "CC" },
        );
        arguments.push(format!("-DCMAKE_{language}_COMPILER={}", compiler.path().display()));
        if !cpp && opt_level != "0" && compiler.is_like_gnu() && !compiler.is_like_clang() {
            let archiver = build.get_archiver().get_program().into();
            lto = Some(Lto { compiler: compiler.path().to_owned(), flags: flags.clone(), archiver });
        }
        arguments.push(format!("-DCMAKE_{language}_FLAGS={}", flags.join(" ")));
    }
    let profile = if lto.is_some() { "lto" } else { "" };
    arguments.push(format!("-DIREE_RUNTIME_OPTIMIZATION_PROFILE={profile}"));
    (arguments, lto)
}

/// Runs a CMake step, stopping the build with its output when it fails.
fn run(command: &mut Command, what: &str) {
    let status =
        command.status().unwrap_or_else(|error| panic!("cannot {what}: running {command:?}: {error}"));
    assert!(status.success(), "cannot {what}: {command:?} failed ({status}); its output is above");
}
