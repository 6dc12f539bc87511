//! The build tools IREE's runtime build needs, found or installed by the
//! build itself: CMake >= 3.26 and Ninja, and (for `cargo xtask
//! iree-bindings` only, never for building) libclang. Also the one home of
//! xplug's Python tool environments: the test fixtures' pinned IREE tools
//! go through [`ToolCache::install`] too.
//!
//! Each is taken from the system when it has a suitable one, else from a
//! pinned PyPI wheel installed once into a Python virtual environment in a
//! [`ToolCache`] directory (under Cargo's target directory for a build
//! script). The install holds a file lock, so concurrent builds wait for
//! each other instead of installing twice. When a tool can be had neither
//! way, the build stops at once, before any long step, with the command
//! that installs it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CMake wheel installed when `PATH` has no CMake >= [`CMAKE_MINIMUM`].
pub const CMAKE_PIN: &str = "cmake==3.31.6";
/// The Ninja wheel installed when `PATH` has no `ninja`.
pub const NINJA_PIN: &str = "ninja==1.13.2";
/// The libclang wheel `cargo xtask iree-bindings` generates with.
pub const LIBCLANG_PIN: &str = "libclang==18.1.1";
/// The oldest CMake that configures IREE's runtime (its
/// `cmake_minimum_required`).
pub const CMAKE_MINIMUM: (u32, u32) = (3, 26);
/// The environment variable naming the CMake to run (as the `cmake` crate
/// reads it); it wins over `PATH` and the pinned wheel.
pub const CMAKE_VAR: &str = "CMAKE";

/// A Python virtual environment holding tools installed from PyPI, with
/// its lock file beside it (`<venv>.lock`) and one stamp per set of pins
/// inside it.
#[derive(Debug, Clone)]
pub struct ToolCache {
    venv: PathBuf,
}

impl ToolCache {
    /// The cache in `dir` (created when first used): the environment is
    /// `dir/venv`.
    #[must_use]
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { venv: dir.into().join("venv") }
    }

    /// The cache whose environment is the directory `venv` itself.
    #[must_use]
    pub fn with_venv(venv: impl Into<PathBuf>) -> Self {
        Self { venv: venv.into() }
    }

    /// The cache of a build script: `xplug-tools/` in the directory above
    /// the profile's `build/` directory that holds `OUT_DIR` (so
    /// `target/xplug-tools` for a build of the host target), shared by
    /// every crate built into that target directory and removed with it by
    /// `cargo clean`.
    ///
    /// # Panics
    /// When `OUT_DIR` is unset or not below a `build/` directory, that is,
    /// outside a build script.
    #[must_use]
    pub fn for_build_script() -> Self {
        let out_dir =
            PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts"));
        // OUT_DIR = <target>/<profile>/build/<package>-<hash>/out
        let build =
            out_dir.ancestors().nth(2).expect("OUT_DIR lies three levels below the profile directory");
        assert!(
            build.file_name().is_some_and(|name| name == "build"),
            "OUT_DIR {} is not <target>/<profile>/build/<package>/out",
            out_dir.display()
        );
        let target = build.parent().and_then(Path::parent).expect("build/ lies below <target>/<profile>");
        Self::new(target.join("xplug-tools"))
    }

    /// The virtual environment's directory.
    #[must_use]
    pub fn venv(&self) -> &Path {
        &self.venv
    }

    /// Brings the environment to `pins` (one `pip install` of them all,
    /// creating the environment first when it has no Python), unless the
    /// stamp `name` already records exactly these pins and `ready` (given
    /// the environment's directory) holds. Runs under the cache's lock, so
    /// concurrent callers wait instead of installing twice. `what` says
    /// what the pins are for, in errors.
    ///
    /// # Errors
    /// When Python, `venv` or `pip` fails: the message names the command,
    /// its output and what to install instead.
    pub fn install(
        &self,
        name: &str,
        pins: &[&str],
        what: &str,
        ready: impl Fn(&Path) -> bool,
    ) -> Result<&Path, String> {
        let _lock = self.lock();
        let wanted = pins.join("\n");
        if self.stamped(name, &wanted) && ready(&self.venv) {
            return Ok(&self.venv);
        }
        self.pip_install(pins, what)?;
        self.stamp(name, &wanted);
        Ok(&self.venv)
    }

    /// The CMake to run: `$CMAKE` when set (checked to be >= 3.26), else the
    /// first `cmake` on `PATH` that is at least 3.26, else [`CMAKE_PIN`]
    /// installed once into this cache.
    ///
    /// # Panics
    /// When `$CMAKE` is too old or does not run, or no CMake can be had.
    #[must_use]
    pub fn cmake(&self) -> PathBuf {
        directive(&format!("rerun-if-env-changed={CMAKE_VAR}"));
        if let Some(explicit) = std::env::var_os(CMAKE_VAR) {
            let explicit = PathBuf::from(explicit);
            match cmake_version(&explicit) {
                Some(version) if version >= CMAKE_MINIMUM => return explicit,
                found => panic!(
                    "{CMAKE_VAR}={} is {}; IREE's runtime build needs CMake >= {}.{}. Point {CMAKE_VAR} at \
                     a newer CMake or unset it (the build then finds or installs one)",
                    explicit.display(),
                    found.map_or_else(
                        || "not a CMake that runs".to_owned(),
                        |(major, minor)| format!("CMake {major}.{minor}")
                    ),
                    CMAKE_MINIMUM.0,
                    CMAKE_MINIMUM.1,
                ),
            }
        }
        if let Some(found) = on_path("cmake")
            .into_iter()
            .find(|cmake| cmake_version(cmake).is_some_and(|v| v >= CMAKE_MINIMUM))
        {
            return found;
        }
        self.pinned("cmake", CMAKE_PIN, &format!("CMake >= {}.{}", CMAKE_MINIMUM.0, CMAKE_MINIMUM.1))
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// The Ninja to build with: the first `ninja` on `PATH`, else
    /// [`NINJA_PIN`] installed once into this cache; `None` (build with
    /// Make) when neither can be had.
    #[must_use]
    pub fn ninja(&self) -> Option<PathBuf> {
        if let Some(found) = on_path("ninja").into_iter().next() {
            return Some(found);
        }
        match self.pinned("ninja", NINJA_PIN, "Ninja") {
            Ok(ninja) => Some(ninja),
            Err(error) => {
                directive(&format!("warning=no Ninja, building IREE's runtime with Make: {error}"));
                None
            }
        }
    }

    /// The directory holding the `libclang.so` of [`LIBCLANG_PIN`],
    /// installed once into this cache: the libclang `cargo xtask
    /// iree-bindings` hands bindgen. Always the wheel, never the system's,
    /// so that every machine generates the same bindings.
    ///
    /// # Panics
    /// When the wheel cannot be installed.
    #[must_use]
    pub fn libclang_wheel_dir(&self) -> PathBuf {
        let _lock = self.lock();
        if let Some(found) = self.wheel_libclang().filter(|_| self.stamped("libclang", LIBCLANG_PIN)) {
            return found;
        }
        self.pip_install(&[LIBCLANG_PIN], "IREE's bindings generator needs libclang")
            .unwrap_or_else(|error| panic!("{error}"));
        let found = self.wheel_libclang().unwrap_or_else(|| {
            panic!("{LIBCLANG_PIN} installed into {} holds no clang/native/libclang.so", self.venv.display())
        });
        self.stamp("libclang", LIBCLANG_PIN);
        found
    }

    fn wheel_libclang(&self) -> Option<PathBuf> {
        let lib = self.venv.join("lib");
        std::fs::read_dir(lib)
            .ok()?
            .flatten()
            .map(|python| python.path().join("site-packages/clang/native"))
            .find(|native| native.join("libclang.so").is_file())
    }

    /// `venv/bin/<program>` at `pin`, installed first when missing.
    fn pinned(&self, program: &str, pin: &str, what: &str) -> Result<PathBuf, String> {
        let path = self.venv.join("bin").join(program);
        let _lock = self.lock();
        if path.is_file() && self.stamped(program, pin) {
            return Ok(path);
        }
        self.pip_install(&[pin], &format!("IREE's runtime build needs {what}"))?;
        self.stamp(program, pin);
        Ok(path)
    }

    fn stamp_path(&self, program: &str) -> PathBuf {
        self.venv.join(format!("xplug-{program}-pin.txt"))
    }

    fn stamped(&self, program: &str, pin: &str) -> bool {
        std::fs::read_to_string(self.stamp_path(program)).is_ok_and(|stamp| stamp == pin)
    }

    fn stamp(&self, program: &str, pin: &str) {
        let path = self.stamp_path(program);
        std::fs::write(&path, pin).unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
    }

    /// Creates the virtual environment when it has no Python and installs
    /// `pins` into it; the error says what failed and what to run instead.
    fn pip_install(&self, pins: &[&str], what: &str) -> Result<(), String> {
        self.pip_install_with(&python3(), pins, what)
    }

    /// [`ToolCache::pip_install`] with the environment made by `python3`.
    fn pip_install_with(&self, python3: &std::ffi::OsStr, pins: &[&str], what: &str) -> Result<(), String> {
        let venv = &self.venv;
        let python = venv.join("bin").join("python");
        let pin = pins.join(" ");
        let instead = format!(
            "{what}, which xplug installs from PyPI ({pin}) when the system has none; give it Python 3 with \
             venv and pip (Debian: `apt-get install python3-venv`; $PYTHON3 names another interpreter) and \
             access to PyPI, or install it yourself (`pip install {pin}`, or your system's package) and put \
             it on PATH"
        );
        let runs =
            Command::new(&python).arg("-c").arg("").output().is_ok_and(|output| output.status.success());
        if !runs && venv.exists() {
            // A stale environment (its Python gone or moved) is made afresh.
            std::fs::remove_dir_all(venv)
                .map_err(|error| format!("{instead}. Cannot remove the stale {}: {error}", venv.display()))?;
        }
        if !runs {
            let created = Command::new(python3).arg("-m").arg("venv").arg(venv).output();
            match created {
                Ok(output) if output.status.success() => {}
                Ok(output) => {
                    return Err(format!(
                        "{instead}. `python3 -m venv {}` failed: {}",
                        venv.display(),
                        String::from_utf8_lossy(&output.stderr).trim()
                    ));
                }
                Err(error) => {
                    return Err(format!("{instead}. Cannot run {}: {error}", python3.to_string_lossy()));
                }
            }
        }
        eprintln!("xplug-iree-build: installing {pin} from PyPI into {} (once)", venv.display());
        let output = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar",
                "off",
                "-q",
            ])
            .args(pins)
            .output()
            .map_err(|error| format!("{instead}. Cannot run {}: {error}", python.display()))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{instead}. `pip install {pin}` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }

    /// An exclusive lock on the cache (`<venv>.lock`), held until the
    /// value is dropped.
    fn lock(&self) -> FileLock {
        FileLock::exclusive(&self.venv.with_extension("lock"))
    }
}

/// An exclusive `flock(2)` lock on a file, held until the value is dropped
/// (closing the file releases it): the tool cache's install lock, and the
/// lock xplug-iree's build script holds on a shared IREE build tree.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Blocks until `path` (created, with its directory, when missing) is
    /// locked exclusively.
    ///
    /// # Panics
    /// When the file cannot be created or locked.
    #[must_use]
    pub fn exclusive(path: &Path) -> Self {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .unwrap_or_else(|error| panic!("cannot create {}: {error}", dir.display()));
        }
        let file =
            File::create(path).unwrap_or_else(|error| panic!("cannot create {}: {error}", path.display()));
        lock_exclusive(&file).unwrap_or_else(|error| panic!("cannot lock {}: {error}", path.display()));
        Self { _file: file }
    }
}

/// Blocks until `file` is locked exclusively (`flock(2)`).
fn lock_exclusive(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // flock(2) as the C library declares it, and LOCK_EX (2 on Linux). Not
    // through the `libc` crate: this crate has no dependencies, so its
    // build (and xplug-iree's build-script unit above it) is the same
    // whatever features a command unifies (see sources.rs).
    unsafe extern "C" {
        fn flock(fd: std::ffi::c_int, operation: std::ffi::c_int) -> std::ffi::c_int;
    }
    const LOCK_EX: std::ffi::c_int = 2;
    loop {
        // SAFETY: `flock` takes an open descriptor, which `file` owns and
        // keeps open for the call; it reads or writes no memory of ours.
        let result = unsafe { flock(file.as_raw_fd(), LOCK_EX) };
        if result == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// The Python that creates the tools' virtual environment: `$PYTHON3` or
/// `python3`.
fn python3() -> std::ffi::OsString {
    directive("rerun-if-env-changed=PYTHON3");
    std::env::var_os("PYTHON3").unwrap_or_else(|| "python3".into())
}

/// Prints `cargo::<line>` for Cargo when running in a build script
/// (`OUT_DIR` set); elsewhere (`cargo iree-bindings`) it means nothing.
fn directive(line: &str) {
    if std::env::var_os("OUT_DIR").is_some() {
        println!("cargo::{line}");
    }
}

/// Every executable called `program` on `PATH`, in order.
fn on_path(program: &str) -> Vec<PathBuf> {
    let Some(path) = std::env::var_os("PATH") else { return Vec::new() };
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .filter(|candidate| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
        .collect()
}

/// The version `cmake --version` reports, as (major, minor).
#[must_use]
pub fn cmake_version(cmake: &Path) -> Option<(u32, u32)> {
    let output = Command::new(cmake).arg("--version").output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text.split_whitespace().nth(2)?;
    let mut parts = version.split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_python_is_an_error_that_says_what_to_do() {
        let dir = std::env::temp_dir().join(format!("xplug-tools-no-python-{}", std::process::id()));
        let cache = ToolCache::new(&dir);
        let error = cache
            .pip_install_with(
                "/nonexistent/python3".as_ref(),
                &["filecheck==1.0.6"],
                "the test needs filecheck",
            )
            .unwrap_err();
        assert!(error.starts_with("the test needs filecheck, which xplug installs from PyPI"), "{error}");
        assert!(error.contains("$PYTHON3") && error.contains("/nonexistent/python3"), "{error}");
        assert!(!cache.venv().exists(), "nothing half-made is left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
