//! `xplug run MODULE.vmfb`: run a compiled IREE program on IREE's own
//! runtime (`xplug-iree`) with xplug's manager resolving every import of its
//! executables.
//!
//! Output is `iree-run-module`'s for the same program, flags and plugins
//! (`docs/src/embedding/iree.md`, "What matches iree-run-module"): the function
//! is looked up in the module alone, the inputs are parsed against its
//! calling convention, `EXEC @fn` is printed once the call is ready, then
//! `result[N]: ` and IREE's formatting of each result, or, with
//! `--output` flags (one per result), each result printed bare (`-`),
//! written (`@FILE`, `+FILE` to append: `.npy` as NumPy, any other name as
//! raw bytes) or dropped (empty). What xplug adds goes to stderr
//! (`--trace`, `--profile`), to files (`--profile-json`, `--profile-trace`)
//! or replaces the run (`--list-imports`); `--json` prints one object
//! instead.

use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use xplug_iree::{
    CallResults, DeviceBuilder, DeviceKind, ExecutableImports, ImportRecording, Module, Runtime, Session,
};

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::output::{Style, Table, print_json, safe, write_stdout};

/// `xplug run --help`'s text after the options: an example, then what
/// happens to each of `iree-run-module`'s other flags. Made once, when
/// clap first builds the `run` command.
static RUN_AFTER_HELP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{}\n\nExample:\n  xplug run mul.vmfb --function=mul --input=4xf32=1,2,3,4 \\\n    --input=@b.npy \
         --plugin=target/plugins/release/libsample_system.so?multiplier=2\n  iree-compile prog.mlir ... | xplug run \
         --module=- --function=main --input=...",
        crate::iree_flags::help().trim_end()
    )
});

/// Run a compiled IREE program (.vmfb) on IREE's runtime with xplug's
/// manager resolving every import of its executables. Prints what
/// iree-run-module prints for the same program, inputs and plugins.
#[derive(Debug, clap::Args)]
#[command(after_help = RUN_AFTER_HELP.as_str())]
pub(crate) struct RunArgs {
    /// The compiled module whose function runs (loaded after every
    /// --module).
    #[arg(value_name = "MODULE.vmfb", required_unless_present = "module_flag")]
    module: Option<PathBuf>,
    /// A compiled module, as iree-run-module takes it: repeatable, loaded
    /// in order; the function runs from the last one (or from
    /// MODULE.vmfb when that is given too).
    #[arg(long = "module", value_name = "MODULE.vmfb")]
    module_flag: Vec<PathBuf>,
    /// The function to call, as the module exports it (default: its
    /// only export not starting with `__` nor holding `$`, as
    /// iree-run-module picks it).
    #[arg(long)]
    function: Option<std::ffi::OsString>,
    /// A parameter archive (`.irpa`, `.gguf`, `.safetensors`) serving
    /// the parameters of SCOPE (none: parameters named without a
    /// scope), as iree-run-module takes it; repeatable.
    #[arg(long = "parameters", value_name = "[SCOPE=]FILE")]
    parameters: Vec<String>,
    /// How the archives are opened: `file` (the default, as
    /// iree-run-module's: each parameter read into a buffer of its own at
    /// start-up), `preload` (each archive read whole at start-up) or
    /// `mmap` (mapped, nothing copied; the archive must not change while
    /// the program runs: it computes with bytes rewritten in place, and a
    /// truncation kills it with SIGBUS). The results are the same.
    #[arg(long = "parameter_mode", default_value = "file", value_name = "MODE",
          value_parser = parameter_archive_mode)]
    parameter_archive_mode: xplug_iree::ParameterArchiveMode,
    /// List the functions of the module (names and signatures) instead
    /// of running one.
    #[arg(long)]
    list_functions: bool,
    /// An argument, as iree-run-module takes it: a number for a scalar
    /// parameter (`21`, `1.5`), a tensor (`4xf32=1,2,3,4`,
    /// `2x2xi32=[1 2][3 4]`, `f32=7`), `@FILE.npy` (`+FILE.npy` the
    /// next array of the file, `*FILE.npy` all that are left),
    /// `4xf32=@FILE` (raw bytes) or `(null)`; repeat in argument order.
    #[arg(long = "input", value_name = "VALUE")]
    inputs: Vec<String>,
    /// Where result N goes, one flag per result in order (none: print
    /// all as `result[N]: ...`): `-` prints it, `@FILE` writes it
    /// (`.npy` as NumPy, other names as raw bytes), `+FILE` appends,
    /// an empty value drops it.
    #[arg(long = "output", value_name = "-|@FILE|+FILE|")]
    outputs: Vec<String>,
    /// An expected result, one per result in order, in --input's forms
    /// (`4xf32=1,2,3,4`, `@FILE.npy`, a number) or `(ignored)`: the
    /// results are compared with IREE's comparison instead of printed,
    /// and xplug exits 1 when one differs, as iree-run-module does.
    #[arg(long = "expected_output", value_name = "VALUE")]
    expected_outputs: Vec<String>,
    /// Absolute tolerance of f16 results.
    #[arg(long = "expected_f16_threshold", default_value_t = 0.001, value_name = "X")]
    expected_f16_threshold: f32,
    /// Absolute tolerance of bf16 results.
    #[arg(long = "expected_bf16_threshold", default_value_t = 0.01, value_name = "X")]
    expected_bf16_threshold: f32,
    /// Absolute tolerance of f32 results.
    #[arg(long = "expected_f32_threshold", default_value_t = 0.0001, value_name = "X")]
    expected_f32_threshold: f32,
    /// Absolute tolerance of f64 results.
    #[arg(long = "expected_f64_threshold", default_value_t = 0.0001, value_name = "X")]
    expected_f64_threshold: f64,
    /// Relative tolerance of float results.
    #[arg(long = "expected_rtol", default_value_t = 1e-5, value_name = "X")]
    expected_rtol: f64,
    /// `approximate` (the tolerances) or `exact`.
    #[arg(long = "equality_mode", default_value = "approximate", value_parser = ["approximate", "exact"])]
    equality_mode: String,
    /// `local-sync` (inline on this thread) or `local-task` (a worker pool).
    #[arg(long, default_value = "local-sync")]
    device: String,
    /// How modules are read, as iree-run-module takes it: `preload` (read
    /// whole into memory at start-up, IREE's default and xplug's only
    /// way); `mmap` is refused.
    #[arg(long = "module_mode", value_name = "MODE", default_value = "preload", value_parser = ["preload"])]
    module_mode: String,
    /// `--task_abort_on_failure` (set by `parse_arguments`, from IREE's task flags).
    #[arg(skip)]
    pub(crate) abort_on_failure: bool,
    /// A plugin spec (`path[?key=value&...]`, `.sos` files included, or
    /// `static:NAME`); repeatable, later ones are asked first. The
    /// XPLUG_PLUGINS environment variable's plugins come before these.
    #[arg(long = "plugin", visible_alias = "executable_plugin", value_name = "PLUGIN")]
    plugins: Vec<String>,
    /// Register the plugins linked into xplug first.
    #[arg(long = "static")]
    with_static: bool,
    /// Print each executable's imports and the provider that resolved
    /// each, on stderr.
    #[arg(long)]
    trace: bool,
    /// Load the module (creating its executables) without calling
    /// anything, and list every import of every executable with the
    /// provider that resolves it or why none does. Exits 1 if a required
    /// import is missing.
    #[arg(long)]
    list_imports: bool,
    /// Profile every import call: print on stderr, after the results,
    /// per executable and import, the provider, calls, total, mean,
    /// p50, p99 and max time, and the share of the run (in the JSON
    /// object with --json). Without it (and the two flags below) no
    /// wrapper is installed and imports cost nothing more.
    #[arg(long)]
    profile: bool,
    /// Write the import profile as JSON to FILE (counts as --profile's
    /// counting; the table is printed only with --profile).
    #[arg(long = "profile-json", value_name = "FILE")]
    profile_json: Option<PathBuf>,
    /// Write a Chrome trace-event file (Perfetto, chrome://tracing)
    /// with the first --profile-slices calls of each import as slices.
    #[arg(long = "profile-trace", value_name = "FILE")]
    profile_trace: Option<PathBuf>,
    /// Calls of each import kept as trace slices, at most 1000000 (each
    /// thread calling an import sets 24 bytes aside per slice); every
    /// call is counted whatever this is.
    #[arg(long = "profile-slices", value_name = "N", default_value_t = xplug_iree::ProfileOptions::DEFAULT_SLICES as u32,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    profile_slices: u32,
    /// Elements printed per tensor; a negative count prints them all, as
    /// iree-run-module takes it.
    #[arg(long = "output_max_element_count", default_value = "1024", value_name = "N",
          value_parser = element_count, allow_hyphen_values = true)]
    pub(crate) max_elements: usize,
    /// On SIGSEGV, SIGBUS, SIGILL or SIGFPE print one line naming the
    /// plugin, function and offset to stderr (also XPLUG_CRASH_REPORT=1),
    /// and name them in the error of a supervised run; costs a read of
    /// each plugin's symbol table at load.
    #[arg(long)]
    crash_report: bool,
}

impl RunArgs {
    /// Runs the command in a supervised child process (this one, forked),
    /// or in this one with `--in-process` or under a debugger; returns the
    /// exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        if !globals.in_process && !crate::isolate::debugger_attached() {
            let function = self.function.as_ref().map(|name| name.to_string_lossy().into_owned());
            // The child reports its own error, as this process would have.
            let work = || crate::exit_code_of(self.run_here(globals), globals.json);
            return crate::isolate::supervise_run(function, work);
        }
        self.run_here(globals)
    }

    /// Runs the command in this process; returns the exit code.
    fn run_here(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        let modules: Vec<&Path> =
            self.module_flag.iter().chain(self.module.as_ref()).map(PathBuf::as_path).collect();
        if modules.is_empty() {
            return Err(CliError::Usage { message: "give the module to run (MODULE.vmfb)".to_owned() });
        }
        // Before any plugin is loaded, so every one is named.
        let asked = self.crash_report
            || std::env::var_os(xplug_manager::CRASH_REPORT_ENV).is_some_and(|value| value == "1");
        if asked {
            // In `run`'s supervised child, the report also reaches the
            // parent, which names the function in its error.
            xplug_probe::report_crashes_to_parent();
        }
        let reporter =
            |source| CliError::Manager { context: "cannot install the crash reporter".to_owned(), source };
        let builder = xplug_manager::Manager::builder();
        let builder =
            if self.crash_report { builder.crash_reporter() } else { builder.crash_reporter_from_env() };
        // The reporter is process-wide: the manager built here only installs it.
        builder.build().map_err(reporter)?;
        run(self, &modules, globals.json)
    }

    /// How results are compared with `--expected_output`.
    fn tolerance(&self) -> xplug_iree::Tolerance {
        xplug_iree::Tolerance {
            f16: self.expected_f16_threshold,
            bf16: self.expected_bf16_threshold,
            f32: self.expected_f32_threshold,
            f64: self.expected_f64_threshold,
            rtol: self.expected_rtol,
            exact: self.equality_mode == "exact",
        }
    }

    /// What `--profile` and its file flags ask for, when any is given.
    fn profile(&self) -> Option<crate::profile::Request<'_>> {
        (self.profile || self.profile_json.is_some() || self.profile_trace.is_some()).then_some(
            crate::profile::Request {
                print: self.profile,
                json: self.profile_json.as_deref(),
                trace: self.profile_trace.as_deref(),
                slices: self.profile_slices as usize,
            },
        )
    }
}

/// `--output_max_element_count`'s value: a count, or a negative number
/// for all (iree-run-module reads the flag as an `int32` and converts it
/// to a size, so `-1` prints every element).
fn element_count(text: &str) -> Result<usize, String> {
    let count: i64 =
        text.parse().map_err(|_| format!("`{text}` is not a whole number of elements (-1: all)"))?;
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

/// `--parameter_mode`'s value.
fn parameter_archive_mode(name: &str) -> Result<xplug_iree::ParameterArchiveMode, String> {
    xplug_iree::ParameterArchiveMode::parse(name).ok_or_else(|| {
        let names: Vec<&str> = xplug_iree::ParameterArchiveMode::ALL.iter().map(|mode| mode.name()).collect();
        format!("`{name}` is not a parameter mode; give one of {}", names.join(", "))
    })
}

fn iree_error(context: String) -> impl FnOnce(xplug_iree::Error) -> CliError {
    move |source| CliError::Iree { context, source }
}

fn stdout_error(source: std::io::Error) -> CliError {
    CliError::File { context: "cannot write the results to stdout".to_owned(), source }
}

/// Runs `modules` (the last one's function) as `options` ask; returns the
/// exit code.
fn run(options: &RunArgs, modules: &[&Path], as_json: bool) -> Result<u8, CliError> {
    let profile_request = options.profile();
    // local-task's executors come from IREE's task flags, as in IREE's tool.
    let kind = DeviceKind::parse(&options.device).ok_or_else(|| CliError::Usage {
        message: format!("unknown device `{}`; xplug runs `local-sync` and `local-task`", options.device),
    })?;
    distinct_output_files(options)?;
    let main_path = *modules
        .last()
        .ok_or_else(|| CliError::Usage { message: "give the module to run (MODULE.vmfb)".to_owned() })?;
    let runtime = Runtime::new().map_err(iree_error("cannot start IREE's runtime".to_owned()))?;
    let mut loaded = Vec::with_capacity(modules.len());
    for path in modules {
        // `-` is standard input, as iree-run-module takes it.
        let module = if path.as_os_str() == "-" {
            Module::from_stdin(&runtime)
                .map_err(iree_error("cannot load the module from standard input".to_owned()))?
        } else {
            Module::from_file(&runtime, path)
                .map_err(iree_error(format!("cannot load {}", path.display())))?
        };
        loaded.push(module);
    }
    let module = loaded.pop().expect("at least one module");
    if options.list_functions {
        return list_functions(&module, main_path, as_json);
    }
    let built = crate::resolve::LoadedPlugins::build(options.with_static, &options.plugins)?;
    let manager = built.manager.clone();
    let recording = if options.list_imports {
        ImportRecording::ListOnly
    } else if options.trace || as_json {
        ImportRecording::Record
    } else {
        ImportRecording::Off
    };
    let mut device = DeviceBuilder::new(&runtime, kind, manager)
        .recording(recording)
        .abort_on_failure(options.abort_on_failure);
    if let Some(profile) = &profile_request
        && !options.list_imports
    {
        device = device.profile(xplug_iree::ProfileOptions::default().slices_per_import(profile.slices));
    }
    let device = device.build().map_err(iree_error(format!("cannot create device `{}`", kind.name())))?;
    let mut builder =
        Session::builder(&device, &module).parameter_archive_mode(options.parameter_archive_mode);
    for dependency in &loaded {
        builder = builder.module(dependency);
    }
    for flag in &options.parameters {
        // IREE's split: the scope is what comes before the first `=`.
        let (scope, path) = flag.split_once('=').unwrap_or(("", flag));
        builder = builder.parameter_archive(scope, path);
    }
    let session = builder.build();
    let executables = device.executable_imports();
    if options.list_imports {
        return list_imports(&built, &executables, session.err(), as_json);
    }
    if options.trace && !as_json {
        // Diagnostics only: a stderr that cannot be written does not stop the run.
        let _ = std::io::stderr()
            .lock()
            .write_all(imports_table(&built, &executables, Style::stderr()).as_bytes());
    }
    let session =
        session.map_err(iree_error(format!("cannot load {} on {}", main_path.display(), kind.name())))?;

    // As iree-run-module: the function, then the inputs, and only then
    // `EXEC`; a failure before the call leaves stdout empty.
    let function = match options.function.as_deref() {
        Some(name) => module.function(name.as_bytes()),
        None => module.only_function(),
    }
    .map_err(iree_error(format!("cannot find the function to run in {}", main_path.display())))?;
    let name = function.name_lossy();
    let arguments = options.inputs.iter().map(String::as_str);
    let call = session
        .prepare(function.name(), arguments)
        .map_err(iree_error(format!("cannot make the arguments of @{name}")))?;
    if !as_json {
        let mut line = b"EXEC @".to_vec();
        line.extend_from_slice(function.name());
        line.push(b'\n');
        // Written out now, as iree-run-module flushes it: a plugin that
        // prints during the call prints after it, whatever stdout is.
        write_stdout(&line).and_then(|()| crate::output::flush_stdout()).map_err(stdout_error)?;
    }
    // A crash from here on is the call's (reported by the supervisor).
    xplug_probe::mark(xplug_probe::Stage::Call);
    let started = Instant::now();
    let results = call.invoke().map_err(iree_error(format!("cannot run @{name}")))?;
    let run_time = started.elapsed();
    // Read once the call returned: IREE waited for every worker, so the
    // counts are exact (`docs/src/operating/profiles.md`).
    let profile = profile_request.as_ref().zip(device.import_profile());
    let profile_json =
        profile.as_ref().map(|(_, profile)| crate::profile::to_json(profile, run_time, &built));
    // The profile's files and table, once the results are out.
    let report_profile = || match &profile {
        Some((request, profile)) => {
            let label = format!("xplug run {} @{name} ({})", main_path.display(), kind.name());
            crate::profile::report(request, profile, run_time, &built, as_json, &label)
        }
        None => Ok(()),
    };
    if !options.expected_outputs.is_empty() {
        // As iree-run-module: the results are checked instead of printed,
        // and a mismatch is exit code 1 with IREE's report on stdout.
        let expected = options.expected_outputs.iter().map(String::as_str);
        let check = results
            .compare(expected, &options.tolerance())
            .map_err(iree_error(format!("cannot check the results of @{name}")))?;
        if as_json {
            print_json(&json!({
                "ok": check.matched,
                "module": main_path.display().to_string(),
                "device": kind.name(),
                "function": name,
                "matched": check.matched,
                "report": check.report,
                "profile": profile_json,
            }));
        } else {
            let mut text = check.report;
            if check.matched {
                text.push_str("[SUCCESS] all function outputs matched their expected values.\n");
            }
            write_stdout(text.as_bytes()).map_err(stdout_error)?;
        }
        report_profile()?;
        return Ok(u8::from(!check.matched));
    }
    let written = write_results(&results, options, as_json)?;
    if as_json {
        print_json(&json!({
            "ok": true,
            "module": main_path.display().to_string(),
            "device": kind.name(),
            "function": name,
            "results": written,
            "executables": executables_json(&built, &executables),
            "profile": profile_json,
        }));
    }
    report_profile()?;
    Ok(0)
}

/// `--list-functions`: every function the module exports, with its
/// VM signature and, when the compiler recorded one, its declaration.
fn list_functions(module: &Module, path: &Path, as_json: bool) -> Result<u8, CliError> {
    let functions = module.exported_functions();
    if as_json {
        print_json(&json!({
            "ok": true,
            "module": path.display().to_string(),
            "name": module.name(),
            "functions": functions.iter().map(|function| json!({
                "name": function.name_lossy(),
                "signature": function.vm_signature(),
                "declaration": function.declaration(),
            })).collect::<Vec<_>>(),
        }));
        return Ok(0);
    }
    let mut text = String::new();
    for function in &functions {
        text.push_str(&format!("@{}\n", safe(&function.vm_signature())));
        if let Some(declaration) = function.declaration() {
            for line in declaration.lines() {
                text.push_str(&format!("    {}\n", safe(line)));
            }
        }
    }
    write_stdout(text.as_bytes()).map_err(stdout_error)?;
    Ok(0)
}

/// Prints or writes every result as iree-run-module does: without
/// `--output`, each as `result[N]: TEXT`; with them, one per result, in
/// order, stopping at the first that fails. Returns what `--json` reports.
fn write_results(
    results: &CallResults,
    options: &RunArgs,
    as_json: bool,
) -> Result<Vec<serde_json::Value>, CliError> {
    let format = |index: usize| {
        results
            .format(index, options.max_elements)
            .map_err(iree_error(format!("cannot format result {index}")))
    };
    let mut reported = Vec::new();
    if options.outputs.is_empty() {
        for index in 0..results.len() {
            let text = format(index)?;
            if as_json {
                reported.push(json!({ "index": index, "text": text }));
            } else {
                write_stdout(format!("result[{index}]: {text}\n").as_bytes()).map_err(stdout_error)?;
            }
        }
        return Ok(reported);
    }
    if options.outputs.len() != results.len() {
        return Err(CliError::Output {
            index: None,
            spec: String::new(),
            problem: format!(
                "{} --output flag(s) given but the function returned {} result(s); give one per result \
                 (an empty --output= drops one)",
                options.outputs.len(),
                results.len()
            ),
        });
    }
    for (index, spec) in options.outputs.iter().enumerate() {
        if spec.is_empty() {
            reported.push(json!({ "index": index, "dropped": true }));
        } else if spec == "-" {
            let text = format(index)?;
            if as_json {
                reported.push(json!({ "index": index, "text": text }));
            } else {
                write_stdout(format!("{text}\n").as_bytes()).map_err(stdout_error)?;
            }
        } else if let Some((append, path)) = spec
            .strip_prefix('@')
            .map(|path| (false, path))
            .or_else(|| spec.strip_prefix('+').map(|path| (true, path)))
        {
            let format = write_output_file(results, index, spec, Path::new(path), append)?;
            reported.push(json!({ "index": index, "file": path, "append": append, "format": format }));
        } else {
            return Err(CliError::Output {
                index: Some(index),
                spec: xplug_npy::excerpt(spec),
                problem: "give `-` (print), `@FILE` (write), `+FILE` (append) or nothing (drop), as \
                          iree-run-module takes them"
                    .to_owned(),
            });
        }
    }
    Ok(reported)
}

/// Refuses a run whose output files clash, before anything runs:
/// `--profile-json`, `--profile-trace` and the `--output=@FILE`/`+FILE`
/// files must be different files (one would overwrite another). Several
/// `--output`s may name one file among themselves, as iree-run-module
/// allows (`@F` then `+F` appends the next result to it).
fn distinct_output_files(options: &RunArgs) -> Result<(), CliError> {
    // (flag as given, file, whether it is an `--output`)
    let mut files: Vec<(String, &Path, bool)> = Vec::new();
    if let Some(profile) = options.profile() {
        files.extend(profile.json.map(|path| ("--profile-json".to_owned(), path, false)));
        files.extend(profile.trace.map(|path| ("--profile-trace".to_owned(), path, false)));
    }
    for spec in &options.outputs {
        if let Some(path) = spec.strip_prefix('@').or_else(|| spec.strip_prefix('+')) {
            files.push((format!("--output={spec}"), Path::new(path), true));
        }
    }
    let identities: Vec<FileIdentity> = files.iter().map(|(_, path, _)| FileIdentity::of(path)).collect();
    for (later, identity) in identities.iter().enumerate() {
        for earlier in 0..later {
            let both_outputs = files[earlier].2 && files[later].2;
            if !both_outputs && identities[earlier] == *identity {
                return Err(CliError::Usage {
                    message: format!(
                        "{} and {} name the same file ({}); give each its own file",
                        files[earlier].0,
                        files[later].0,
                        safe(&files[later].1.display().to_string())
                    ),
                });
            }
        }
    }
    Ok(())
}

/// What makes two paths the same file: the device and inode of a file
/// that exists, else the absolute path through its parent's canonical
/// path (symbolic links and `..` resolved).
#[derive(PartialEq, Eq)]
enum FileIdentity {
    Existing(u64, u64),
    New(std::path::PathBuf),
}

impl FileIdentity {
    fn of(path: &Path) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        if let Ok(metadata) = std::fs::metadata(path) {
            return Self::Existing(metadata.dev(), metadata.ino());
        }
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let canonical = match (absolute.parent().map(std::fs::canonicalize), absolute.file_name()) {
            (Some(Ok(parent)), Some(name)) => parent.join(name),
            _ => absolute,
        };
        Self::New(canonical)
    }
}

/// Writes result `index` to `path` as iree-run-module does: NumPy's format
/// when the name ends in `.npy` (a scalar as a 0-d array), the raw bytes
/// otherwise. Returns `"npy"` or `"raw"`.
fn write_output_file(
    results: &CallResults,
    index: usize,
    spec: &str,
    path: &Path,
    append: bool,
) -> Result<&'static str, CliError> {
    let value = results.value(index).map_err(iree_error(format!("cannot read result {index}")))?;
    let problem =
        |problem: String| CliError::Output { index: Some(index), spec: xplug_npy::excerpt(spec), problem };
    let tensor =
        value.to_tensor().ok_or_else(|| problem("this kind of result cannot be written to a file".into()))?;
    let npy = path.as_os_str().as_bytes().ends_with(b".npy");
    let bytes = if npy {
        let array = tensor.to_npy().ok_or_else(|| {
            problem(format!(
                "element type {} has no .npy dtype; write it raw (a name not ending in .npy)",
                tensor.element_type()
            ))
        })?;
        xplug_npy::encode(&array)
    } else {
        tensor.data().to_vec()
    };
    let file_error = |source| CliError::File {
        context: format!("cannot write the output file {}", path.display()),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .open(path)
        .map_err(file_error)?;
    file.write_all(&bytes).and_then(|()| file.flush()).map_err(file_error)?;
    Ok(if npy { "npy" } else { "raw" })
}

fn imports_table(
    built: &crate::resolve::LoadedPlugins,
    executables: &[ExecutableImports],
    style: Style,
) -> String {
    let mut table = Table::new(["executable", "import", "", "resolved by"]);
    for executable in executables {
        for import in &executable.imports {
            let resolved = match (&import.provider, &import.suggestion) {
                (Some(provider), _) => built.label(provider),
                (None, _) if import.optional => "(none; optional)".to_owned(),
                (None, Some(suggestion)) => format!("MISSING (did you mean `{}`?)", safe(suggestion)),
                (None, None) => "MISSING".to_owned(),
            };
            table.row([
                format!("#{}", executable.ordinal),
                safe(&import.name).to_string(),
                if import.optional { "optional" } else { "required" }.to_owned(),
                resolved,
            ]);
        }
    }
    table.render(style)
}

fn executables_json(
    built: &crate::resolve::LoadedPlugins,
    executables: &[ExecutableImports],
) -> serde_json::Value {
    json!(
        executables
            .iter()
            .map(|executable| json!({
                "ordinal": executable.ordinal,
                "complete": executable.is_complete(),
                "imports": executable.imports.iter().map(|import| json!({
                    "name": import.name,
                    "optional": import.optional,
                    "provider": import.provider.as_ref().map(|name| built.label(name)),
                    "suggestion": import.suggestion,
                })).collect::<Vec<_>>(),
            }))
            .collect::<Vec<_>>()
    )
}

fn list_imports(
    built: &crate::resolve::LoadedPlugins,
    executables: &[ExecutableImports],
    load_error: Option<xplug_iree::Error>,
    as_json: bool,
) -> Result<u8, CliError> {
    let missing: usize = executables
        .iter()
        .flat_map(|executable| &executable.imports)
        .filter(|import| import.provider.is_none() && !import.optional)
        .count();
    if as_json {
        print_json(&json!({
            "ok": missing == 0 && load_error.is_none(),
            "missing_required": missing,
            "executables": executables_json(built, executables),
            "load_error": load_error.as_ref().map(ToString::to_string),
        }));
    } else {
        let mut text = imports_table(built, executables, Style::stdout());
        if executables.is_empty() {
            text.push_str("(the module loaded no executable with imports)\n");
        }
        if missing > 0 {
            text.push_str(&format!(
                "{missing} required import(s) missing: register plugins that export them (--plugin)\n"
            ));
        }
        write_stdout(text.as_bytes()).map_err(stdout_error)?;
    }
    if let Some(error) = load_error {
        return Err(CliError::Iree {
            context: "the module does not load even with imports listed only".into(),
            source: error,
        });
    }
    Ok(u8::from(missing > 0))
}
