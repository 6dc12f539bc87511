//! `cargo iree-bindings` (an alias of `cargo run -p xplug-iree-bindgen --`):
//! generates `crates/iree/src/iree_bindings.rs`, xplug-iree's Rust
//! declarations of IREE's runtime API, with bindgen.
//!
//! The bindings are committed so that building `xplug-iree` needs no
//! libclang (docs/src/design/publishing.md, "Building xplug-iree"). They hold exactly
//! the IREE items `crates/iree/src` names as `iree::<item>` (and what those
//! items need), generated from the headers of the IREE tree in eerie-sys
//! plus the headers IREE's CMake build generates (the bytecode ISA table,
//! taken from xplug-iree's own build, which this command runs first). The
//! libclang is always the pinned `libclang` wheel
//! ([`xplug_iree_build::tools::LIBCLANG_PIN`]), installed once under
//! `target/xplug-tools`, so every machine generates the same text; its
//! missing C headers are the C compiler's. `--check` fails when the
//! committed file differs from a fresh one (CI runs it).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xplug_build::command::CommandError;

/// The committed bindings, relative to the workspace root.
const BINDINGS_PATH: &str = "crates/iree/src/iree_bindings.rs";

/// The sources whose `iree::<item>` names choose what is generated.
const SOURCES_DIR: &str = "crates/iree/src";

/// The IREE headers the bindings are generated from (relative to IREE's
/// `runtime/src`): those of eerie-sys's own runtime bindings, and the
/// plugin manager's.
const HEADERS: [&str; 15] = [
    "iree/base/api.h",
    "iree/async/frontier_tracker.h",
    "iree/async/util/proactor_pool.h",
    "iree/hal/api.h",
    "iree/hal/driver_registry.h",
    "iree/hal/drivers/init.h",
    "iree/hal/local/executable_plugin_manager.h",
    "iree/hal/local/loaders/embedded_elf_loader.h",
    "iree/modules/hal/debugging.h",
    "iree/modules/hal/module.h",
    "iree/modules/hal/inline/module.h",
    "iree/modules/hal/loader/module.h",
    "iree/modules/hal/types.h",
    "iree/vm/api.h",
    "iree/vm/bytecode/module.h",
];

/// Why the bindings could not be generated or checked.
#[derive(Debug)]
#[non_exhaustive]
enum BindingsError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A tool (cargo, the C compiler, rustfmt) could not run or failed.
    Command {
        /// Which, and how.
        source: CommandError,
    },
    /// `cargo metadata` gave no answer, or listed no eerie-sys package.
    Metadata {
        /// Why.
        detail: String,
    },
    /// xplug-iree's build did not report its build script's output
    /// directory (the generated IREE headers are there).
    NoBuildOutput,
    /// bindgen failed.
    Bindgen {
        /// bindgen's message.
        message: String,
    },
}

impl fmt::Display for BindingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, .. } => write!(f, "cannot read or write {}", path.display()),
            Self::Command { .. } => write!(f, "a tool the bindings need could not run or failed"),
            Self::Metadata { detail } => write!(f, "`cargo metadata` cannot locate eerie-sys: {detail}"),
            Self::NoBuildOutput => write!(
                f,
                "`cargo check -p xplug-iree` reported no build-script output for xplug-iree (its build of IREE's \
                 runtime failed? run it to see)"
            ),
            Self::Bindgen { message } => write!(f, "bindgen failed: {message}"),
        }
    }
}

impl std::error::Error for BindingsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Command { source } => Some(source),
            _ => None,
        }
    }
}

/// The IREE items `crates/iree/src` uses (every `iree::<name>` outside the
/// bindings), sorted.
///
/// # Errors
/// When a source file cannot be read.
fn used_items(root: &Path) -> Result<Vec<String>, BindingsError> {
    let dir = root.join(SOURCES_DIR);
    let mut items = std::collections::BTreeSet::new();
    let entries =
        std::fs::read_dir(&dir).map_err(|source| BindingsError::Io { path: dir.clone(), source })?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "rs") || path.ends_with("iree_bindings.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|source| BindingsError::Io { path: path.clone(), source })?;
        items.extend(iree_paths(&text));
    }
    Ok(items.into_iter().collect())
}

/// The `<name>` of every `iree::<name>` in `text` not preceded by an
/// identifier character (so `xplug_iree::X` is not one).
fn iree_paths(text: &str) -> Vec<String> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for (at, _) in text.match_indices("iree::") {
        if text[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let name: String = text[at + "iree::".len()..].chars().take_while(|&c| is_ident(c)).collect();
        if name.starts_with("iree_") || name.starts_with("IREE_") {
            found.push(name);
        }
    }
    found
}

/// The bindgen pattern for a used item: the item itself, or for an enum
/// constant (`<enum type>_IREE_<NAME>`, bindgen's constified enums) its
/// enum type, which brings all its constants.
fn allowlist_pattern(item: &str) -> String {
    match item.find("_IREE_") {
        Some(at) if item.starts_with("iree_") => format!("^{}$", &item[..at]),
        _ => format!("^{item}$"),
    }
}

/// Generates the bindings text, formatted as `cargo fmt` formats it.
///
/// # Errors
/// When xplug-iree's build, the tools or bindgen fail.
fn generate(root: &Path) -> Result<String, BindingsError> {
    let runtime_src = runtime_src(root)?;
    let iree_root =
        runtime_src.parent().and_then(Path::parent).expect("runtime/src lies two levels below IREE's root");
    let generated = generated_headers(root)?;
    let libclang =
        xplug_iree_build::tools::ToolCache::new(root.join("target").join("xplug-tools")).libclang_wheel_dir();
    // SAFETY: this program is single-threaded here (its only other thread,
    // in `rustfmt`, starts later), so no other thread reads the environment
    // while it changes; clang-sys reads LIBCLANG_PATH when bindgen loads
    // libclang below.
    unsafe { std::env::set_var("LIBCLANG_PATH", &libclang) };

    let mut builder = bindgen::Builder::default()
        .header_contents(
            "xplug_iree_bindings.h",
            &HEADERS.iter().map(|header| format!("#include \"{header}\"\n")).collect::<String>(),
        )
        .clang_arg(format!("-I{}", runtime_src.display()))
        .clang_arg(format!("-I{}", generated.display()))
        .clang_arg(format!("-I{}", iree_root.join("third_party/flatcc/include").display()))
        .detect_include_paths(false)
        .derive_default(true)
        .size_t_is_usize(true)
        .generate_comments(false)
        .layout_tests(true)
        .rust_edition(bindgen::RustEdition::Edition2024)
        .formatter(bindgen::Formatter::None);
    if let Ok(target) = bindgen::RustTarget::stable(85, 0) {
        builder = builder.rust_target(target);
    }
    for dir in c_include_dirs()? {
        builder = builder.clang_arg(format!("-isystem{}", dir.display()));
    }
    for item in used_items(root)? {
        builder = builder.allowlist_item(allowlist_pattern(&item));
    }
    let bindings =
        builder.generate().map_err(|error| BindingsError::Bindgen { message: error.to_string() })?;
    let text = format!(
        "// IREE's runtime API as xplug-iree uses it, for 64-bit Linux: generated by\n\
         // `cargo iree-bindings` with bindgen and {} from the headers of\n\
         // eerie-sys {}'s IREE tree. Do not edit; regenerate after naming a new\n\
         // `iree::` item in crates/iree/src (CI checks this file is current).\n\n{}",
        xplug_iree_build::tools::LIBCLANG_PIN,
        xplug_iree_build::EERIE_SYS_VERSION,
        bindings
    );
    rustfmt(root, &text)
}

/// IREE's `runtime/src` in the eerie-sys package the workspace uses.
fn runtime_src(root: &Path) -> Result<PathBuf, BindingsError> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .cargo_path(cargo())
        .current_dir(root)
        .manifest_path(root.join("Cargo.toml"))
        .other_options(vec!["--locked".to_owned()])
        .exec()
        .map_err(|error| BindingsError::Metadata { detail: error.to_string() })?;
    let manifest = metadata
        .packages
        .iter()
        .find(|package| package.name.as_str() == xplug_iree_build::EERIE_SYS)
        .map(|package| package.manifest_path.clone().into_std_path_buf())
        .ok_or_else(|| BindingsError::Metadata { detail: "it lists no eerie-sys package".into() })?;
    Ok(manifest.parent().expect("a manifest has a directory").join("iree/runtime/src"))
}

/// The headers IREE's CMake build generates, from xplug-iree's build
/// (`cargo check -p xplug-iree` runs its build script; a stale bindings
/// file may fail the crate's own compilation afterwards, which is fine).
fn generated_headers(root: &Path) -> Result<PathBuf, BindingsError> {
    let mut command = Command::new(cargo());
    command
        .current_dir(root)
        .args(["check", "-p", "xplug-iree", "--locked", "--message-format", "json"])
        .stderr(Stdio::inherit());
    // Its exit status is not checked: see above.
    let output = command.output().map_err(|source| start_error(&command, source))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The build tree is the first library directory the build script
    // names (crates/iree/build.rs).
    let build_dir = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "build-script-executed")
        .filter(|message| message["package_id"].as_str().is_some_and(|id| id.contains("#xplug-iree@")))
        .find_map(|message| message["linked_paths"][0].as_str()?.strip_prefix("native=").map(PathBuf::from))
        .ok_or(BindingsError::NoBuildOutput)?;
    Ok(build_dir.join("iree/runtime/src"))
}

/// The C compiler's system header directories (the libclang wheel has no
/// headers of its own).
fn c_include_dirs() -> Result<Vec<PathBuf>, BindingsError> {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let mut command = Command::new(&compiler);
    command.args(["-E", "-x", "c", "-v", "-"]).env("LC_ALL", "C").stdin(Stdio::null());
    // Preprocessing nothing: only the search list it prints matters.
    let output = command.output().map_err(|source| start_error(&command, source))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    Ok(stderr
        .lines()
        .skip_while(|line| line.trim() != "#include <...> search starts here:")
        .skip(1)
        .take_while(|line| line.trim() != "End of search list.")
        .map(|line| PathBuf::from(line.trim()))
        .collect())
}

/// `text` formatted by rustfmt with the workspace's configuration.
fn rustfmt(root: &Path, text: &str) -> Result<String, BindingsError> {
    use std::io::Write;
    let mut command = Command::new("rustfmt");
    command
        .args(["--edition", "2024", "--emit", "stdout", "--config-path"])
        .arg(root.join("rustfmt.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|source| start_error(&command, source))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = text.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().map_err(|source| start_error(&command, source))?;
    let written = writer.join().expect("the writer thread does not panic");
    if !output.status.success() || written.is_err() {
        let source = CommandError::Failed {
            command: format!("{command:?}"),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim_end().to_owned(),
        };
        return Err(BindingsError::Command { source });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A [`BindingsError::Command`] of `command`, which could not start.
fn start_error(command: &Command, source: std::io::Error) -> BindingsError {
    BindingsError::Command { source: CommandError::start(command, source) }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// Writes fresh bindings; returns their path.
///
/// # Errors
/// As [`generate`], or when the file cannot be written.
fn write() -> Result<PathBuf, BindingsError> {
    let root = workspace_root();
    let text = generate(&root)?;
    let path = root.join(BINDINGS_PATH);
    std::fs::write(&path, text).map_err(|source| BindingsError::Io { path: path.clone(), source })?;
    Ok(path)
}

/// Whether the committed bindings equal fresh ones: `Ok(true)` when they
/// do.
///
/// # Errors
/// As [`generate`], or when the committed file cannot be read.
fn check_bindings() -> Result<bool, BindingsError> {
    let root = workspace_root();
    let fresh = generate(&root)?;
    let path = root.join(BINDINGS_PATH);
    let committed = std::fs::read_to_string(&path).map_err(|source| BindingsError::Io { path, source })?;
    Ok(committed == fresh)
}

/// The workspace root: two levels above this crate's manifest.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("build-support/iree-bindgen")
        .to_path_buf()
}

fn main() -> std::process::ExitCode {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => {
            eprintln!("usage: cargo iree-bindings [--check] (unknown argument {other:?})");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = if check {
        check_bindings().map(|current| (current, None))
    } else {
        write().map(|path| (true, Some(path)))
    };
    match outcome {
        Ok((true, Some(path))) => println!("wrote {}", path.display()),
        Ok((true, None)) => println!("{BINDINGS_PATH} is up to date"),
        Ok((false, _)) => {
            eprintln!(
                "error: {BINDINGS_PATH} differs from a fresh generation; run `cargo iree-bindings` and commit the result"
            );
            return std::process::ExitCode::FAILURE;
        }
        Err(error) => {
            eprintln!("error: {error}");
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            return std::process::ExitCode::FAILURE;
        }
    }
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_iree_paths_not_other_crates() {
        let text = "use x::iree; iree::iree_vm_list_t; xplug_iree::Tensor; (iree::IREE_VM_X) iree::Other";
        assert_eq!(iree_paths(text), ["iree_vm_list_t", "IREE_VM_X"]);
    }

    #[test]
    fn enum_constants_allow_their_type() {
        assert_eq!(
            allowlist_pattern("iree_vm_function_linkage_e_IREE_VM_FUNCTION_LINKAGE_EXPORT"),
            "^iree_vm_function_linkage_e$"
        );
        assert_eq!(allowlist_pattern("IREE_VM_TYPE_CAPACITY_DEFAULT"), "^IREE_VM_TYPE_CAPACITY_DEFAULT$");
        assert_eq!(allowlist_pattern("iree_vm_invoke"), "^iree_vm_invoke$");
    }
}
