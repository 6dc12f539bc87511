//! Builds a plugin crate's kernels for the linked deployment: a relocatable
//! object and LLVM bitcode that IREE's compiler links into the executable
//! (`hal.executable.objects`), instead of a plugin resolved at run time.
//!
//! For each record target whose standard library is installed (as for a
//! `.sos`), `cargo rustc` builds the crate's library exactly as a `.sos`
//! record (its `sos` feature, `no_std`, `panic = "abort"`, fat LTO,
//! position-independent code), with `--cfg xplug_linked` so that
//! `#[xplug_sdk::plugin]` emits, for every stateless import, a global
//! function named after the import's symbol taking the args' fields as
//! separate C arguments, and none of the plugin's C entry points. rustc
//! emits the LTO'd crate, dependencies included, as one object and one
//! bitcode file.
//!
//! The object is then checked for what IREE's embedded linker cannot take,
//! by linking it the way IREE does ([`crate::LINK_FLAGS`], with every kernel
//! kept) and reading what the link kept ([`verify_linked`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionKind};
use xplug_abi::LINKED_SECTION;

use crate::linked_program;
use crate::metadata::PluginCrate;
use crate::toolchain::{RecordTarget, Toolchain};
use crate::{BuildError, LINK_FLAGS, SkippedRecord, create_dir, run, staticlib_command};

/// What to build.
#[derive(Clone, Debug)]
pub struct LinkedOptions {
    /// The plugin crate's `Cargo.toml` (or its workspace's, with
    /// [`LinkedOptions::package`]).
    pub manifest_path: PathBuf,
    /// The package to build when the manifest is a workspace with several.
    pub package: Option<String>,
    /// Where the objects and bitcode go (default `<target-dir>/linked`).
    pub out_dir: Option<PathBuf>,
}

impl LinkedOptions {
    /// Builds the crate of `manifest_path` into `<target-dir>/linked`.
    #[must_use]
    pub fn new(manifest_path: impl Into<PathBuf>) -> Self {
        Self { manifest_path: manifest_path.into(), package: None, out_dir: None }
    }
}

/// One kernel the build links: what a program declares to call it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedKernel {
    /// The function's symbol (the import's symbol).
    pub symbol: String,
    /// Its MLIR parameters, `%name: type, ...` (`?` and the Rust type
    /// where a field has no MLIR type).
    pub params: String,
}

impl LinkedKernel {
    /// The `func.func private` declaration a dispatch's module needs to call
    /// the kernel (`docs/src/plugins/dispatch.md#linked-kernels`).
    #[must_use]
    pub fn declaration(&self) -> String {
        format!(
            "func.func private @{}({}) attributes {{hal.import.static, llvm.bareptr = true}}",
            self.symbol, self.params
        )
    }
}

/// The files built for one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedFiles {
    /// The Rust target triple.
    pub target: String,
    /// The rustc that compiled them.
    pub rustc: PathBuf,
    /// The relocatable object, `<lib>.<target>.o`.
    pub object: PathBuf,
    /// The LLVM bitcode, `<lib>.<target>.bc`.
    pub bitcode: PathBuf,
    /// The object of the functions the kernels call that live outside
    /// the LTO'd crate (the C memory functions of `xplug-sdk-builtins`,
    /// `compiler_builtins`' helpers), `<lib>.<target>.support.o`, when
    /// they call any: [`LinkedFiles::object`] includes it already, the
    /// bitcode needs it beside it.
    pub support: Option<PathBuf>,
}

/// What [`build_linked`] made.
#[derive(Clone, Debug)]
pub struct LinkedReport {
    /// The package built.
    pub package: String,
    /// The kernels, in symbol order.
    pub kernels: Vec<LinkedKernel>,
    /// The files, host target first.
    pub files: Vec<LinkedFiles>,
    /// The record targets not built.
    pub skipped: Vec<SkippedRecord>,
}

/// Which of the two files a program links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkedFormat {
    /// The relocatable object (`.o`).
    Object,
    /// LLVM bitcode (`.bc`), optimised together with the generated code.
    Bitcode,
}

impl LinkedFormat {
    /// Its name in file names and reports: `object` or `bitcode`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Object => "object",
            Self::Bitcode => "bitcode",
        }
    }
}

impl LinkedReport {
    /// The MLIR a program needs to link the kernels in `format`: the
    /// `hal.executable.objects` attribute of the executable, one object per
    /// architecture (paths relative to the output directory: pass it as
    /// `--iree-hal-executable-object-search-path`), and the declarations.
    #[must_use]
    pub fn mlir(&self, format: LinkedFormat) -> String {
        let mut out = format!(
            "// The executable's attribute (on `stream.executable` or `hal.executable`):\n{}\n\
             // The declarations, in the executable's inner module:\n",
            self.objects_attribute(format)
        );
        for kernel in &self.kernels {
            out.push_str(&kernel.declaration());
            out.push('\n');
        }
        out
    }

    /// The executable attribute `hal.executable.objects = ...` listing the
    /// files of `format`, one entry per architecture.
    fn objects_attribute(&self, format: LinkedFormat) -> String {
        let entries: Vec<String> = self
            .files
            .iter()
            .filter_map(|files| {
                let (iree_arch, triple) = iree_target(&files.target)?;
                let path = match format {
                    LinkedFormat::Object => &files.object,
                    LinkedFormat::Bitcode => &files.bitcode,
                };
                let mut paths = vec![path];
                if format == LinkedFormat::Bitcode {
                    paths.extend(files.support.as_ref());
                }
                let objects: Vec<String> = paths
                    .iter()
                    .filter_map(|path| path.file_name())
                    .map(|name| format!("    #hal.executable.object<{{path = \"{}\"}}>", name.to_string_lossy()))
                    .collect();
                Some(format!(
                    "  #hal.executable.target<\"llvm-cpu\", \"embedded-elf-{iree_arch}\", {{target_triple = \"{triple}\"}}> = [\n{}\n  ]",
                    objects.join(",\n")
                ))
            })
            .collect();
        format!("hal.executable.objects = #hal.executable.objects<{{\n{}\n}}>", entries.join(",\n"))
    }

    /// The program at `program`, which calls the kernels as imports (a
    /// `func.func private` declaration per kernel in a `stream.executable`,
    /// as for a plugin), rewritten to link them in `format` instead: each
    /// declaration a static import, each executable holding one given the
    /// objects attribute. Compile it with the output directory as
    /// `--iree-hal-executable-object-search-path`.
    ///
    /// # Errors
    /// [`BuildError::Io`] when the file cannot be read,
    /// [`BuildError::ProgramNotLinkable`] when it declares none of the
    /// kernels, declares one with another number of parameters, or holds
    /// the declaration where the objects cannot be added.
    pub fn link_program(&self, program: &Path, format: LinkedFormat) -> Result<String, BuildError> {
        let source = std::fs::read_to_string(program).map_err(|source| BuildError::Io {
            action: "read",
            path: program.to_path_buf(),
            source,
        })?;
        let kernels: Vec<(&str, usize)> = self
            .kernels
            .iter()
            .map(|kernel| (kernel.symbol.as_str(), linked_program::top_level(&kernel.params, b',').len()))
            .collect();
        linked_program::rewrite(&source, &kernels, &self.objects_attribute(format))
            .map_err(|reason| BuildError::ProgramNotLinkable { program: program.to_path_buf(), reason })
    }
}

/// IREE's name for a record target's architecture and the triple its
/// CPU targets use (the key of `hal.executable.objects`).
fn iree_target(target: &str) -> Option<(&'static str, &'static str)> {
    match target.split('-').next()? {
        "x86_64" => Some(("x86_64", "x86_64-unknown-unknown-eabi-elf")),
        "aarch64" => Some(("arm_64", "aarch64-unknown-unknown-eabi-elf")),
        "riscv64gc" => Some(("riscv_64", "riscv64-unknown-unknown-eabi-elf")),
        _ => None,
    }
}

/// Builds the crate `options` names as an object and bitcode per record
/// target, checks each object ([`verify_linked`]) and reads its kernels.
///
/// # Errors
/// As [`crate::build_sos`], plus [`BuildError::NotLinkable`] when IREE's
/// linker could not take an object, [`BuildError::NoLinkedKernels`] when
/// the crate has no stateless `#[xplug_sdk::plugin]` import, and
/// [`BuildError::Object`] when an object cannot be read.
pub fn build_linked(options: &LinkedOptions) -> Result<LinkedReport, BuildError> {
    let krate = PluginCrate::locate(&options.manifest_path, options.package.as_deref())?;
    let toolchain = Toolchain::detect()?;
    let work = krate.target_dir.join("linked-build");
    let out_dir = options.out_dir.clone().unwrap_or_else(|| krate.target_dir.join("linked"));
    create_dir(&work)?;
    create_dir(&out_dir)?;

    let (targets, skipped) = toolchain.record_targets()?;
    let mut files = Vec::new();
    let mut kernels: Option<Vec<LinkedKernel>> = None;
    for RecordTarget { target, rustc } in targets {
        let scratch = work.join(target);
        create_dir(&scratch)?;
        let crate_object = scratch.join(format!("{}.o", krate.lib_name));
        let bitcode = out_dir.join(format!("{}.{target}.bc", krate.lib_name));
        build_files(&krate, &work, target, &rustc, &crate_object, &bitcode)?;
        let crate_bytes = read(&crate_object)?;
        let found = linked_kernels(&crate_object, &crate_bytes)?;
        // What the LTO'd crate calls but does not define comes from the
        // static library's other members (the `#![no_builtins]` memory
        // functions, compiler_builtins), linked into one support object.
        let missing = undefined_symbols(&crate_object, &crate_bytes)?;
        let archive = work.join(target).join("release").join(format!("lib{}.a", krate.lib_name));
        let object = out_dir.join(format!("{}.{target}.o", krate.lib_name));
        let support = if missing.is_empty() {
            std::fs::copy(&crate_object, &object).map_err(|source| BuildError::Io {
                action: "write",
                path: object.clone(),
                source,
            })?;
            None
        } else {
            let support = out_dir.join(format!("{}.{target}.support.o", krate.lib_name));
            let mut command = Command::new(&toolchain.linker);
            command.args(["-flavor", "gnu", "-r", "-o"]).arg(&support);
            command.args(missing.iter().map(|symbol| format!("--undefined={symbol}"))).arg(&archive);
            run("link", command)?;
            let mut command = Command::new(&toolchain.linker);
            command.args(["-flavor", "gnu", "-r", "-o"]).arg(&object).arg(&crate_object).arg(&support);
            run("link", command)?;
            Some(support)
        };
        let bytes = read(&object)?;
        let symbols: Vec<&str> = found.iter().map(|kernel| kernel.symbol.as_str()).collect();
        verify_linked(&toolchain.linker, &object, &bytes, &symbols, &scratch)?;
        kernels.get_or_insert(found);
        files.push(LinkedFiles { target: target.to_owned(), rustc, object, bitcode, support });
    }
    Ok(LinkedReport { package: krate.package, kernels: kernels.unwrap_or_default(), files, skipped })
}

/// `cargo rustc` of the crate's library for `target` with `--cfg
/// xplug_linked`, emitting the LTO'd object and bitcode at the given paths.
fn build_files(
    krate: &PluginCrate,
    work: &Path,
    target: &str,
    rustc: &Path,
    object: &Path,
    bitcode: &Path,
) -> Result<(), BuildError> {
    let mut command = staticlib_command(krate, work, target, rustc, "3", &["--cfg", "xplug_linked"]);
    // The crate's own compilation only: the LTO'd crate, dependencies
    // included, as one object and one bitcode module.
    command.arg("--").arg(format!("--emit=obj={},llvm-bc={}", object.display(), bitcode.display()));
    run("cargo", command).map(drop)
}

/// The global symbols the object at `path` (bytes `bytes`) uses but does
/// not define, sorted.
fn undefined_symbols(path: &Path, bytes: &[u8]) -> Result<Vec<String>, BuildError> {
    let file = object::File::parse(bytes)
        .map_err(|source| BuildError::Object { path: path.to_path_buf(), source })?;
    let mut symbols: Vec<String> = file
        .symbols()
        .filter(|symbol| symbol.is_undefined() && symbol.is_global())
        .filter_map(|symbol| symbol.name().ok().filter(|name| !name.is_empty()).map(str::to_owned))
        .collect();
    symbols.sort();
    symbols.dedup();
    Ok(symbols)
}

fn read(path: &Path) -> Result<Vec<u8>, BuildError> {
    std::fs::read(path).map_err(|source| BuildError::Io { action: "read", path: path.to_path_buf(), source })
}

/// The kernels recorded in `bytes` (the object at `path`), in symbol
/// order.
///
/// # Errors
/// [`BuildError::Object`] when `bytes` is not an object file,
/// [`BuildError::NoLinkedKernels`] when it records no kernel.
pub fn linked_kernels(path: &Path, bytes: &[u8]) -> Result<Vec<LinkedKernel>, BuildError> {
    let file = object::File::parse(bytes)
        .map_err(|source| BuildError::Object { path: path.to_path_buf(), source })?;
    let mut kernels = Vec::new();
    for section in file.sections().filter(|section| section.name() == Ok(LINKED_SECTION)) {
        let data =
            section.data().map_err(|source| BuildError::Object { path: path.to_path_buf(), source })?;
        let mut fields = data.split(|&byte| byte == 0);
        while let (Some(symbol), Some(params)) = (fields.next(), fields.next()) {
            if symbol.is_empty() {
                break;
            }
            kernels.push(LinkedKernel {
                symbol: String::from_utf8_lossy(symbol).into_owned(),
                params: String::from_utf8_lossy(params).into_owned(),
            });
        }
    }
    if kernels.is_empty() {
        return Err(BuildError::NoLinkedKernels { object: path.to_path_buf() });
    }
    kernels.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    kernels.dedup();
    Ok(kernels)
}

/// Checks that IREE's embedded linker can take `object` (whose bytes are
/// `bytes`) with `symbols` as the functions a program calls: links it
/// with IREE's flags ([`LINK_FLAGS`], symbols kept, every kernel a root)
/// into `work/check.so` and refuses, naming the symbol and, where the
/// object says, the function that reaches it:
///
/// * undefined symbols other than the kernels (the link fails, and the
///   linker's message names them and their users);
/// * thread-local storage (`.tdata`, `.tbss`);
/// * constructors or destructors (`.init_array`, `.fini_array`, `.ctors`,
///   `.dtors`): an embedded ELF runs none;
/// * writable globals (`.data`, `.bss`): an executable's code is shared by
///   every dispatch and must hold no state;
/// * formatting or `std` code (`core::fmt`, `core::panicking`, `std::`),
///   which only a panic path pulls in: a linked kernel has no host to
///   report a panic to, and its handler traps.
///
/// # Errors
/// [`BuildError::Step`] (step `link`) with the linker's output, or
/// [`BuildError::NotLinkable`] listing what the link kept that it must
/// not.
pub fn verify_linked(
    linker: &Path,
    object: &Path,
    bytes: &[u8],
    symbols: &[&str],
    work: &Path,
) -> Result<(), BuildError> {
    create_dir(work)?;
    let output = work.join("check.so");
    let mut command = Command::new(linker);
    command
        .args(LINK_FLAGS.iter().filter(|flag| !matches!(**flag, "--discard-all" | "--strip-debug")))
        .args(symbols.iter().map(|symbol| format!("--undefined={symbol}")))
        .arg("-o")
        .arg(&output)
        .arg(object);
    run("link", command)?;
    let linked = std::fs::read(&output).map_err(|source| BuildError::Io {
        action: "read",
        path: output.clone(),
        source,
    })?;
    let problems = linked_problems(&output, &linked, object, bytes)?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(BuildError::NotLinkable { object: object.to_path_buf(), problems })
    }
}

/// What the link at `output` (bytes `linked`) kept that an embedded ELF
/// must not have; users of a refused symbol are looked up in the object.
fn linked_problems(
    output: &Path,
    linked: &[u8],
    object: &Path,
    bytes: &[u8],
) -> Result<Vec<String>, BuildError> {
    let file = object::File::parse(linked)
        .map_err(|source| BuildError::Object { path: output.to_path_buf(), source })?;
    let mut problems = Vec::new();
    for section in file.sections() {
        let name = section.name().unwrap_or("");
        let what = match (section.kind(), name) {
            (SectionKind::Tls | SectionKind::UninitializedTls, _) => "thread-local storage",
            (_, ".init_array" | ".fini_array" | ".preinit_array" | ".ctors" | ".dtors") => {
                "a constructor or destructor (an embedded ELF runs none)"
            }
            (SectionKind::Data | SectionKind::UninitializedData, _)
                if name == ".data"
                    || name == ".bss"
                    || (name.starts_with(".data.") && !name.contains("rel.ro")) =>
            {
                "a writable global (an executable holds no state)"
            }
            _ => continue,
        };
        if section.size() == 0 {
            continue;
        }
        let held: Vec<String> = file
            .symbols()
            .filter(|symbol| symbol.section_index() == Some(section.index()))
            .filter_map(|symbol| symbol.name().ok().map(demangled))
            .collect();
        problems.push(format!(
            "{what}: section `{name}` ({} bytes{})",
            section.size(),
            if held.is_empty() { String::new() } else { format!(", holding {}", held.join(", ")) }
        ));
    }
    let users = Users::read(object, bytes)?;
    for symbol in file.symbols().filter(|symbol| symbol.kind() == object::SymbolKind::Text) {
        let Ok(raw) = symbol.name() else { continue };
        let name = demangled(raw);
        if ["core::fmt::", "core::panicking::", "std::"].iter().any(|prefix| name.starts_with(prefix)) {
            let by = users.of(raw);
            problems.push(format!(
                "formatting or `std` code, which a panic path pulls in: `{name}`{}",
                if by.is_empty() { String::new() } else { format!(", reached from {}", by.join(", ")) }
            ));
        }
    }
    problems.sort();
    problems.dedup();
    Ok(problems)
}

/// The functions of an object that refer to each symbol (through the
/// relocations of their sections, one function per section as rustc
/// emits them).
struct Users {
    /// (referenced symbol's raw name, demangled name of the referring function).
    edges: Vec<(String, String)>,
}

impl Users {
    fn read(path: &Path, bytes: &[u8]) -> Result<Self, BuildError> {
        let file = object::File::parse(bytes)
            .map_err(|source| BuildError::Object { path: path.to_path_buf(), source })?;
        let mut edges = Vec::new();
        for section in file.sections().filter(|section| section.kind() == SectionKind::Text) {
            // The section's function; a kernel's entry also carries the
            // kernel's own symbol (a global alias at the same address),
            // which names it best.
            let functions: Vec<_> = file
                .symbols()
                .filter(|symbol| {
                    symbol.section_index() == Some(section.index())
                        && symbol.kind() == object::SymbolKind::Text
                })
                .collect();
            let Some(function) = functions
                .iter()
                .find(|symbol| symbol.is_global())
                .and_then(|kernel| kernel.name().ok().map(|name| format!("kernel `{name}`")))
                .or_else(|| {
                    functions
                        .first()
                        .and_then(|symbol| symbol.name().ok().map(|name| format!("`{}`", demangled(name))))
                })
            else {
                continue;
            };
            for (_, relocation) in section.relocations() {
                let RelocationTarget::Symbol(index) = relocation.target() else { continue };
                let Ok(target) = file.symbol_by_index(index) else { continue };
                // A call to a function of the same object may be relocated
                // against its section's symbol: the function is the one
                // defined in that section.
                let target = if target.kind() == object::SymbolKind::Section {
                    match file.symbols().find(|symbol| {
                        symbol.section_index() == target.section_index()
                            && symbol.kind() == object::SymbolKind::Text
                    }) {
                        Some(function) => function,
                        None => continue,
                    }
                } else {
                    target
                };
                if let Ok(name) = target.name() {
                    edges.push((name.to_owned(), function.clone()));
                }
            }
        }
        Ok(Self { edges })
    }

    /// The functions referring to `raw`, each named once.
    fn of(&self, raw: &str) -> Vec<String> {
        let mut users: Vec<String> =
            self.edges.iter().filter(|(target, _)| target == raw).map(|(_, user)| user.clone()).collect();
        users.sort();
        users.dedup();
        users
    }
}

/// `name` demangled (Rust's legacy and v0 schemes), without the hash; the
/// linked entry of an import is named after the author's function
/// (`kernel fn NAME`), which the generated marker's name carries.
fn demangled(name: &str) -> String {
    let name = format!("{:#}", rustc_demangle::demangle(name));
    if name.contains("__xplug_linked_entry")
        && let Some(at) = name.rfind("__XplugImport_")
    {
        let function: String = name[at + "__XplugImport_".len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        return format!("kernel fn {function}");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_is_static_with_bare_pointers() {
        let kernel =
            LinkedKernel { symbol: "mul".to_owned(), params: "%a: memref<f32>, %n: index".to_owned() };
        assert_eq!(
            kernel.declaration(),
            "func.func private @mul(%a: memref<f32>, %n: index) attributes {hal.import.static, llvm.bareptr = true}"
        );
    }

    #[test]
    fn a_linked_entry_is_named_after_the_kernel_function() {
        assert_eq!(
            demangled(
                "<panicking_kernel::PickArgs>::__xplug_linked_entry::<panicking_kernel::plugin::__XplugImport_pick>"
            ),
            "kernel fn pick"
        );
        assert_eq!(
            demangled("_ZN4core9panicking18panic_bounds_check17h0123456789abcdefE"),
            "core::panicking::panic_bounds_check"
        );
    }

    #[test]
    fn iree_names_each_record_architecture() {
        assert_eq!(
            iree_target("x86_64-unknown-linux-gnu"),
            Some(("x86_64", "x86_64-unknown-unknown-eabi-elf"))
        );
        assert_eq!(
            iree_target("aarch64-unknown-linux-gnu"),
            Some(("arm_64", "aarch64-unknown-unknown-eabi-elf"))
        );
        assert_eq!(iree_target("mips-unknown-linux-gnu"), None);
    }
}
