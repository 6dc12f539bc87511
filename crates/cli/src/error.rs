//! The CLI's error type and how errors are reported.

use std::path::PathBuf;

use serde_json::{Value, json};
use xplug_abi::StatusCode;
use xplug_probe::ProbeFailure;

use crate::output::{Style, terminal_safe};

/// Everything a command can fail with.
///
/// [`CliError::exit_code`] maps usage errors to 2 and everything else to 1;
/// [`CliError::code`] gives the IREE status code for `--json` output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CliError {
    /// The command line is well-formed for clap but not usable.
    #[error("{message}")]
    Usage {
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The manager failed (a spec, a load, or a resolve).
    #[error("{context}")]
    Manager {
        /// What the CLI was doing.
        context: String,
        /// The manager's error.
        #[source]
        source: xplug_manager::Error,
    },
    /// A load parameter the plugin does not declare (it would refuse it).
    #[error(
        "plugin {plugin} does not take the load parameter `{key}`{}; it declares: {}",
        suggestion.as_ref().map(|name| format!(" (did you mean `{name}`?)")).unwrap_or_default(),
        if declared.is_empty() { "no parameters".to_owned() } else { declared.join(", ") }
    )]
    UnknownParam {
        /// The plugin library.
        plugin: String,
        /// The undeclared key.
        key: String,
        /// The closest declared name, when one is close.
        suggestion: Option<String>,
        /// Every declared name.
        declared: Vec<String>,
    },
    /// `xplug check` found non-conforming behaviour.
    #[error("{failed} of {total} conformance check(s) failed for {plugin}")]
    ChecksFailed {
        /// The plugin checked.
        plugin: String,
        /// Failed checks.
        failed: usize,
        /// All checks run.
        total: usize,
    },
    /// The demo's plugin directory is missing or incomplete.
    #[error(
        "the example plugins are not built: {} is missing in {}; run `cargo xtask build-plugins` \
         (or `cargo xtask demo`, which builds them first), or pass --plugin-dir",
        missing.join(", "),
        dir.display()
    )]
    PluginsNotBuilt {
        /// The directory searched.
        dir: PathBuf,
        /// The files not found there.
        missing: Vec<String>,
    },
    /// A plugin could not be loaded (the one variant for it, whichever
    /// command loads it): the manager's error says which spec, its causes
    /// why (no line of it is repeated).
    #[error(transparent)]
    Plugin {
        /// The manager's error.
        source: xplug_manager::Error,
    },
    /// An args block whose size is not the size the plugin declares for
    /// the import's args struct.
    #[error(
        "the args block for `{import}` is {found} bytes ({given} field(s) given), but plugin `{plugin}` declares \
         `{type_name}` as {expected} bytes{}; give one --field per field, in order",
        if fields.is_empty() { String::new() } else { format!(": {}", fields.join(", ")) }
    )]
    ArgsSize {
        /// The plugin as named on the command line.
        plugin: String,
        /// The import.
        import: String,
        /// The args struct's name.
        type_name: String,
        /// Its declared size.
        expected: usize,
        /// The size of the block given.
        found: usize,
        /// How many `--field`s were given.
        given: usize,
        /// The declared fields: name, type, offset and the `--field` for it.
        fields: Vec<String>,
    },
    /// An import returned a non-zero result.
    #[error("import `{name}` returned {result} ({})", import_code_name(*result))]
    ImportFailed {
        /// The import.
        name: String,
        /// What it returned.
        result: i32,
    },
    /// The demo's plugin result differs from the plain Rust loop.
    #[error(
        "plugin result differs from the reference loop at element {index}: {found} instead of {expected}; \
         the resolved `simple_mul_workgroup` is wrong"
    )]
    Mismatch {
        /// First differing element.
        index: usize,
        /// Reference value.
        expected: f32,
        /// Plugin value.
        found: f32,
    },
    /// A FatELF container could not be read or written.
    #[error("{context}")]
    FatElf {
        /// What was being done, naming the file.
        context: String,
        /// What is wrong with the container or its inputs.
        #[source]
        source: xplug_providers::embedded_elf::EmbeddedElfError,
    },
    /// A file could not be read or written.
    #[error("{context}")]
    File {
        /// What was being done, naming the file.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The plugin crashed, hung or ended the process in the child process
    /// probing it.
    #[error("plugin `{plugin}` {failure}; run with --in-process under a debugger to see where")]
    PluginFault {
        /// The plugin as named on the command line.
        plugin: String,
        /// The signal, timeout or exit status, and the stage.
        failure: xplug_probe::ProbeFailure,
    },
    /// The child process probing a plugin could not be run.
    #[error("cannot run a child process to probe plugin `{plugin}`")]
    ProbeUnavailable {
        /// The plugin as named on the command line.
        plugin: String,
        /// Why.
        #[source]
        source: xplug_providers::Error,
    },
    /// `xplug run`'s program faulted in the supervised child process that
    /// runs it: the module's executable code or a plugin it calls died of
    /// a signal (xplug itself is intact and reports it).
    #[error(
        "xplug run's child process {failure}{}: the module's executable code or a plugin it calls faulted, and \
         the run was stopped; run again with {}--in-process to get a core dump or to debug it (gdb --args \
         xplug run --in-process ...)",
        function.as_ref().map(|name| format!(", running @{name}")).unwrap_or_default(),
        if matches!(failure, ProbeFailure::Crashed { site: Some(_), .. }) {
            ""
        } else {
            "--crash-report to name the faulting function, or with "
        }
    )]
    ProgramFault {
        /// The function run, when `--function` named it.
        function: Option<String>,
        /// The signal, the stage and, when the crash reporter found it,
        /// the faulting function.
        failure: xplug_probe::ProbeFailure,
    },
    /// `xplug run` could not start the child process that runs the program.
    #[error("cannot start xplug run's child process; run with --in-process to run in this process")]
    Unsupervised {
        /// Why.
        #[source]
        source: xplug_providers::Error,
    },
    /// IREE's runtime (through `xplug-iree`) failed: a module, a device,
    /// unresolved imports or a call.
    #[error("{context}")]
    Iree {
        /// What the CLI was doing.
        context: String,
        /// xplug-iree's error (its causes include IREE's status text).
        #[source]
        source: xplug_iree::Error,
    },
    /// `xplug build` failed (cargo, the linker, the crate's manifest, an
    /// object IREE's linker cannot take).
    #[error("cannot build the {what} of {}", manifest.display())]
    Build {
        /// What was being built: `.sos`, `linked kernels`.
        what: &'static str,
        /// The plugin crate's manifest.
        manifest: PathBuf,
        /// xplug-build's error.
        #[source]
        source: xplug_build::BuildError,
    },
    /// A result cannot be handled as its `--output` asks (`xplug run`), or
    /// the `--output` flags do not give one per result.
    #[error(
        "{}{problem}",
        match index {
            Some(index) => format!("--output={spec} (result {index}): "),
            None => String::new(),
        }
    )]
    Output {
        /// The result, when one is concerned.
        index: Option<usize>,
        /// The `--output` value, cut by `xplug_npy::excerpt`.
        spec: String,
        /// What is wrong and what to give instead.
        problem: String,
    },
    /// A file given to read is refused (not a regular file, too large) or
    /// cannot be read (`xplug call --file`).
    #[error("{context}")]
    Input {
        /// What the CLI was doing.
        context: String,
        /// xplug-iree's error, naming the file and the limit.
        #[source]
        source: xplug_iree::Error,
    },
    /// A thread of the demo panicked.
    #[error("a demo worker thread panicked: {message}")]
    WorkerPanicked {
        /// The panic payload, when it is a string.
        message: String,
    },
}

impl CliError {
    /// The error for the plugin `spec` names, which its loader refused.
    pub(crate) fn load(spec: &str, source: xplug_providers::Error) -> Self {
        Self::Plugin { source: xplug_manager::Error::PluginLoad { spec: spec.to_owned(), source } }
    }

    /// The `error` object of every command's `--json` failure output:
    /// `{"kind", "code", "message", "causes"}`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind(),
            "code": self.code().to_string(),
            "message": self.to_string(),
            "causes": self.causes(),
            "fault": self.fault().map(fault_json),
        })
    }

    /// The process exit code for this error.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Usage { .. } => 2,
            _ => 1,
        }
    }

    /// The IREE status code a C host would report for the same failure.
    pub(crate) fn code(&self) -> StatusCode {
        match self {
            Self::Usage { .. } | Self::Mismatch { .. } | Self::UnknownParam { .. } => {
                StatusCode::INVALID_ARGUMENT
            }
            Self::PluginsNotBuilt { .. } => StatusCode::NOT_FOUND,
            Self::Manager { source, .. } => source.code(),
            Self::ChecksFailed { .. } => StatusCode::FAILED_PRECONDITION,
            Self::Plugin { source } => source.code(),
            Self::ArgsSize { .. } => StatusCode::INVALID_ARGUMENT,
            Self::ImportFailed { result, .. } => import_status(*result).unwrap_or(StatusCode::UNKNOWN),
            Self::WorkerPanicked { .. } => StatusCode::INTERNAL,
            Self::FatElf { source, .. } => source.code(),
            Self::File { .. } => StatusCode::UNAVAILABLE,
            Self::PluginFault { failure, .. } => match failure {
                xplug_probe::ProbeFailure::TimedOut { .. } => StatusCode::DEADLINE_EXCEEDED,
                _ => StatusCode::INTERNAL,
            },
            Self::ProbeUnavailable { source, .. } | Self::Unsupervised { source } => source.code(),
            Self::ProgramFault { .. } => StatusCode::INTERNAL,
            Self::Iree { source, .. } => iree_code(source),
            Self::Build { .. } => StatusCode::FAILED_PRECONDITION,
            Self::Output { .. } => StatusCode::INVALID_ARGUMENT,
            Self::Input { source, .. } => iree_code(source),
        }
    }

    /// A short machine-readable name of the variant, for `--json`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Usage { .. } => "usage",
            // A plugin that cannot be loaded gets the same kind from every
            // command, whichever layer reported it.
            Self::Manager { .. } | Self::Plugin { .. } => self.load_failure_kind().unwrap_or("manager"),
            Self::ArgsSize { .. } => "args_size",
            Self::UnknownParam { .. } => "unknown_param",
            Self::ChecksFailed { .. } => "checks_failed",
            Self::PluginsNotBuilt { .. } => "plugins_not_built",
            Self::ImportFailed { .. } => "import_failed",
            Self::Mismatch { .. } => "mismatch",
            Self::WorkerPanicked { .. } => "worker_panicked",
            Self::FatElf { .. } => "fatelf",
            Self::File { .. } => "file",
            Self::PluginFault { failure, .. } => match failure.kind() {
                "timed_out" => "plugin_timed_out",
                "exited" => "plugin_exited",
                _ => "plugin_crashed",
            },
            Self::ProbeUnavailable { .. } => "probe_unavailable",
            Self::ProgramFault { .. } => "program_crashed",
            Self::Unsupervised { .. } => "unsupervised",
            Self::Iree { source: xplug_iree::Error::UnresolvedImports { .. }, .. } => "unresolved_imports",
            Self::Iree { source: xplug_iree::Error::NoSuchFunction { .. }, .. } => "no_such_function",
            Self::Iree { source, .. } | Self::Input { source, .. } if input_kind(source).is_some() => {
                input_kind(source).unwrap_or("input")
            }
            Self::Iree { source: xplug_iree::Error::FunctionNotGiven { .. }, .. } => "function_not_given",
            Self::Iree { source: xplug_iree::Error::Input { .. }, .. } => "input",
            Self::Iree { source: xplug_iree::Error::Argument { .. }, .. } => "argument",
            Self::Iree { source: xplug_iree::Error::ParameterFile { .. }, .. } => "parameter_file",
            Self::Iree { source: xplug_iree::Error::ParameterArchive { .. }, .. } => "parameter_archive",
            Self::Iree { source: xplug_iree::Error::ParameterLayout { .. }, .. } => "parameter_layout",
            Self::Iree { source: xplug_iree::Error::ParameterScope { .. }, .. } => "parameter_scope",
            Self::Iree { source: xplug_iree::Error::ParameterMissing { .. }, .. } => "parameter_missing",
            Self::Iree { .. } | Self::Input { .. } => "iree",
            Self::Output { .. } => "output",
            Self::Build { .. } => "build",
        }
    }

    /// The crash or hang behind this error, for `--json`.
    pub(crate) fn fault(&self) -> Option<&xplug_probe::ProbeFailure> {
        match self {
            Self::PluginFault { failure, .. } | Self::ProgramFault { failure, .. } => Some(failure),
            _ => None,
        }
    }

    /// The kind of the plugin load failure in the cause chain, if any.
    fn load_failure_kind(&self) -> Option<&'static str> {
        use xplug_providers::Error as LoadError;
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(error) = next {
            if let Some(error) = error.downcast_ref::<LoadError>() {
                return Some(match error {
                    LoadError::FileNotFound { .. } | LoadError::LibraryNotFound { .. } => {
                        "plugin_file_not_found"
                    }
                    LoadError::NotSharedObject { .. } => "not_shared_object",
                    LoadError::WrongArchitecture { .. } => "wrong_architecture",
                    LoadError::LibraryOpen { .. } => "library_open",
                    LoadError::UndefinedSymbol { .. } => "undefined_symbol",
                    LoadError::NotAFunction { .. } => "not_a_function",
                    LoadError::MissingExport { .. } => "missing_export",
                    LoadError::UnsupportedVersion { .. } => "unsupported_version",
                    // One kind per cause: an undeclared key is the same
                    // mistake whichever command (or check) finds it.
                    LoadError::Incompatible {
                        reason: xplug_providers::compatibility::Incompatibility::UndeclaredParam { .. },
                        ..
                    } => "unknown_param",
                    LoadError::Incompatible { .. } => "incompatible",
                    LoadError::LoadFailed { .. } => "load_failed",
                    LoadError::EmbeddedElf { source, .. } => embedded_kind(source),
                    LoadError::StaticPluginNotFound { .. } => "static_plugin_not_found",
                    LoadError::HashMismatch { .. } => "hash_mismatch",
                    LoadError::NotAllowed { .. } => "not_allowed",
                    LoadError::PinUnsupported { .. } => "pin_unsupported",
                    LoadError::AllowListInvalid { .. } => "allow_list_invalid",
                    LoadError::AllowListUnnamed { .. } => "allow_list_unnamed",
                    LoadError::FileTooLarge { .. } => "plugin_file_too_large",
                    LoadError::CodeSubstituted { .. } => "code_substituted",
                    _ => "load",
                });
            }
            next = error.source();
        }
        None
    }

    /// The messages of the causes, outermost first (each error prints only
    /// its own message; causes are never repeated inside it).
    pub(crate) fn causes(&self) -> Vec<String> {
        let mut causes = Vec::new();
        let mut next = std::error::Error::source(self);
        while let Some(cause) = next {
            causes.push(cause.to_string());
            next = cause.source();
        }
        causes
    }
}

/// The kind of a file xplug's embedded ELF loader refused, by cause: the
/// same kind as the system loader's refusal where the cause is the same
/// (`wrong_architecture`, `missing_export`).
fn embedded_kind(error: &xplug_providers::embedded_elf::EmbeddedElfError) -> &'static str {
    use xplug_providers::embedded_elf::EmbeddedElfError as Elf;
    match error {
        // An ordinary shared library (libz.so.1) given as a standalone
        // plugin: it needs the OS loader.
        Elf::NeededLibrary { .. }
        | Elf::UndefinedSymbol { .. }
        | Elf::Initializer { .. }
        | Elf::ThreadLocalStorage { .. } => "not_standalone",
        Elf::NoMatchingRecord { .. } | Elf::WrongArchitecture { .. } => "wrong_architecture",
        Elf::MissingQuery { .. } | Elf::QueryNotCode { .. } => "missing_export",
        Elf::UnsupportedHost { .. } => "unsupported_host",
        Elf::Memory { .. } => "out_of_memory",
        Elf::UnsupportedDynamicEntry { .. }
        | Elf::UnsupportedRelocation { .. }
        | Elf::RelocationOverflow { .. } => "unsupported_elf",
        Elf::Truncated { .. } | Elf::BadMagic { .. } => "not_elf",
        _ => "invalid_elf",
    }
}

/// The status code an import's non-zero `result` stands for, when it is
/// one IREE names (imports return status codes by convention: `3` is
/// `INVALID_ARGUMENT`).
pub(crate) fn import_status(result: i32) -> Option<StatusCode> {
    let code = StatusCode(u32::try_from(result).ok()?);
    (code.name().is_some() && !code.is_ok()).then_some(code)
}

/// `result` as people read it: its status code's name, or why it has none.
pub(crate) fn import_code_name(result: i32) -> String {
    match import_status(result) {
        Some(code) => code.to_string(),
        None if result == 0 => "OK".to_owned(),
        None => "not an IREE status code".to_owned(),
    }
}

/// The JSON description of a fault: kind, signal (for a crash), stage,
/// timeout (for a hang), exit code (for a plugin that ended the process); for a crash the child's crash reporter located,
/// the faulting instruction's `address`, its `symbol`, `offset` and
/// `module`, the `data_address` and the plugin function it was
/// `called_from` (each `null` when unknown).
pub(crate) fn fault_json(failure: &ProbeFailure) -> Value {
    let location = |at: &xplug_probe::CodeLocation| json!({ "symbol": at.symbol, "offset": at.offset, "module": at.module, "plugin": at.plugin });
    match failure {
        ProbeFailure::Crashed { signal, stage, site } => {
            let at = site.as_ref().and_then(|site| site.at.as_ref());
            json!({
                "kind": failure.kind(),
                "signal": signal.to_string(),
                "stage": stage.map(|s| s.as_str()),
                "address": site.as_ref().map(|site| format!("{:#x}", site.address)),
                "symbol": at.and_then(|at| at.symbol.clone()),
                "offset": at.map(|at| at.offset),
                "module": at.map(|at| at.module.clone()),
                "data_address": site.as_ref().and_then(|site| site.data_address).map(|a| format!("{a:#x}")),
                "called_from": site.as_ref().and_then(|site| site.called_from.as_ref()).map(location),
            })
        }
        ProbeFailure::TimedOut { stage, limit } => json!({
            "kind": failure.kind(),
            "stage": stage.map(|s| s.as_str()),
            "timeout_s": limit.as_secs_f64(),
        }),
        ProbeFailure::Exited { code, stage } => json!({
            "kind": failure.kind(),
            "stage": stage.map(|s| s.as_str()),
            "exit_code": code,
        }),
        _ => json!({ "kind": failure.kind(), "stage": failure.stage().map(|s| s.as_str()) }),
    }
}

/// Prints `error` on stderr: the message, then each cause on its own line.
/// A stderr that cannot be written (`2>/dev/full`) loses the text but does
/// not panic: the exit code still says the command failed.
pub(crate) fn report_error(error: &CliError) {
    use std::io::Write as _;
    let style = Style::stderr();
    // Messages quote plugin strings: escaped, like every plugin string
    // in the human output.
    let mut text = format!("{} {}\n", style.bad("error:"), terminal_safe(&error.to_string()));
    for cause in error.causes() {
        text.push_str(&format!("  caused by: {}\n", terminal_safe(&cause)));
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The kind of an xplug-iree error about a file given to read.
fn input_kind(error: &xplug_iree::Error) -> Option<&'static str> {
    use xplug_iree::Error as IreeError;
    Some(match error {
        IreeError::NotAFile { .. } => "not_a_file",
        IreeError::FileTooLarge { .. } => "file_too_large",
        IreeError::FileRead { .. } | IreeError::ModuleFile { .. } => "file",
        IreeError::Npy { .. } => "npy",
        _ => return None,
    })
}

/// The status code of an xplug-iree error: IREE's own where IREE reported
/// it, the manager's for unresolved imports.
fn iree_code(error: &xplug_iree::Error) -> StatusCode {
    use xplug_iree::Error as IreeError;
    match error {
        IreeError::NotAFile { .. }
        | IreeError::Npy { .. }
        | IreeError::Input { .. }
        | IreeError::FunctionNotGiven { .. } => StatusCode::INVALID_ARGUMENT,
        IreeError::FileTooLarge { .. } => StatusCode::OUT_OF_RANGE,
        IreeError::FileRead { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            StatusCode::NOT_FOUND
        }
        IreeError::FileRead { .. } => StatusCode::UNAVAILABLE,
        IreeError::UnresolvedImports { source, .. } => source.code(),
        IreeError::NoSuchFunction { .. } => StatusCode::NOT_FOUND,
        IreeError::TensorSize { .. } | IreeError::NpyDtype { .. } => StatusCode::INVALID_ARGUMENT,
        IreeError::ModuleFile { .. } => StatusCode::NOT_FOUND,
        IreeError::ParameterFile { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            StatusCode::NOT_FOUND
        }
        IreeError::ParameterFile { .. } => StatusCode::UNAVAILABLE,
        IreeError::ParameterArchive { .. } => StatusCode::INVALID_ARGUMENT,
        IreeError::ParameterLayout { code, .. } => StatusCode(*code),
        IreeError::ParameterScope { .. } | IreeError::ParameterMissing { .. } => StatusCode::NOT_FOUND,
        other => {
            let mut next: Option<&(dyn std::error::Error + 'static)> = Some(other);
            while let Some(cause) = next {
                if let Some(status) = cause.downcast_ref::<xplug_iree::IreeStatus>() {
                    return StatusCode(status.code);
                }
                next = cause.source();
            }
            StatusCode::INTERNAL
        }
    }
}
