//! `xplug run MODULE.vmfb`: run a compiled IREE program on IREE's own
//! runtime (`xplug-iree`) with xplug's manager resolving every import of its
//! executables.
//!
//! Output is `iree-run-module`'s for the same program, flags and plugins
//! (`docs/iree-runtime.md`, "What matches iree-run-module"): the function
//! is looked up in the module alone, the inputs are parsed against its
//! calling convention, `EXEC @fn` is printed once the call is ready, then
//! `result[N]: ` and IREE's formatting of each result, or, with
//! `--output` flags (one per result), each result printed bare (`-`),
//! written (`@FILE`, `+FILE` to append: `.npy` as NumPy, any other name as
//! raw bytes) or dropped (empty). What xplug adds goes to stderr
//! (`--trace`, `--profile`), to files (`--profile-json`, `--profile-trace`)
//! or replaces the run (`--list-imports`); `--json` prints one object
//! instead.

use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use serde_json::json;
use xplug_iree::{
    Argument, CallResults, DeviceBuilder, DeviceKind, ExecutableImports, ImportRecording, Module, Runtime,
    Session,
};

use crate::error::CliError;
use crate::output::{Style, Table, print_json, safe, write_stdout};

/// What `xplug run` was asked to do.
pub(crate) struct Options<'a> {
    /// The `.vmfb` files, in load order; the function runs from the last.
    pub(crate) modules: &'a [&'a Path],
    /// The function to call (default: the module's only export); any
    /// bytes, as IREE takes them.
    pub(crate) function: Option<&'a OsStr>,
    /// `--parameters` flags: `[SCOPE=]FILE`.
    pub(crate) parameters: &'a [String],
    /// `--parameter_mode`.
    pub(crate) parameter_mode: xplug_iree::ParameterMode,
    /// Only list the functions of the last module.
    pub(crate) list_functions: bool,
    /// `--expected_output` values, one per result or none.
    pub(crate) expected_outputs: &'a [String],
    /// How results are compared with them.
    pub(crate) tolerance: xplug_iree::Tolerance,
    /// `iree-run-module`'s `--input` forms (`Session::prepare`).
    pub(crate) inputs: &'a [String],
    /// `iree-run-module`'s `--output` forms, one per result or none.
    pub(crate) outputs: &'a [String],
    /// `local-sync` or `local-task`.
    pub(crate) device: &'a str,
    /// IREE's `--task_abort_on_failure` (`local-task`).
    pub(crate) abort_on_failure: bool,
    /// Plugin specs, later ones asked first.
    pub(crate) plugins: &'a [String],
    /// Register the plugins linked into xplug first.
    pub(crate) with_static: bool,
    /// Print, per executable, each import and its provider (stderr).
    pub(crate) trace: bool,
    /// Only load the module and list every executable's imports.
    pub(crate) list_imports: bool,
    /// Profile every import call (`--profile` and its file flags).
    pub(crate) profile: Option<crate::profile::Request<'a>>,
    /// Elements printed per tensor (`--output_max_element_count`).
    pub(crate) max_elements: usize,
}

fn iree_error(context: String) -> impl FnOnce(xplug_iree::Error) -> CliError {
    move |source| CliError::Iree { context, source }
}

fn stdout_error(source: std::io::Error) -> CliError {
    CliError::File { context: "cannot write the results to stdout".to_owned(), source }
}

pub(crate) fn run(options: &Options<'_>, as_json: bool) -> Result<u8, CliError> {
    // local-task's executors come from IREE's task flags, as in IREE's tool.
    let kind = DeviceKind::parse(options.device).ok_or_else(|| CliError::Usage {
        message: format!("unknown device `{}`; xplug runs `local-sync` and `local-task`", options.device),
    })?;
    distinct_output_files(options)?;
    let main_path = *options
        .modules
        .last()
        .ok_or_else(|| CliError::Usage { message: "give the module to run (MODULE.vmfb)".to_owned() })?;
    let runtime = Runtime::new().map_err(iree_error("cannot start IREE's runtime".to_owned()))?;
    let mut modules = Vec::with_capacity(options.modules.len());
    for path in options.modules {
        // `-` is standard input, as iree-run-module takes it.
        let module = if path.as_os_str() == "-" {
            Module::from_stdin(&runtime)
                .map_err(iree_error("cannot load the module from standard input".to_owned()))?
        } else {
            Module::from_file(&runtime, path)
                .map_err(iree_error(format!("cannot load {}", path.display())))?
        };
        modules.push(module);
    }
    let module = modules.pop().expect("at least one module");
    if options.list_functions {
        return list_functions(&module, main_path, as_json);
    }
    let built = crate::resolve::LoadedPlugins::build(options.with_static, options.plugins)?;
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
    if let Some(profile) = &options.profile
        && !options.list_imports
    {
        device = device.profile(xplug_iree::ProfileOptions::default().slices_per_import(profile.slices));
    }
    let device = device.build().map_err(iree_error(format!("cannot create device `{}`", kind.name())))?;
    let mut builder = Session::builder(&device, &module).parameter_mode(options.parameter_mode);
    for dependency in &modules {
        builder = builder.module(dependency);
    }
    for flag in options.parameters {
        // IREE's split: the scope is what comes before the first `=`.
        let (scope, path) = flag.split_once('=').unwrap_or(("", flag));
        builder = builder.parameters(scope, path);
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
    let function = match options.function {
        Some(name) => module.function(name.as_bytes()),
        None => module.only_function(),
    }
    .map_err(iree_error(format!("cannot find the function to run in {}", main_path.display())))?;
    let name = function.name_lossy();
    let arguments: Vec<Argument<'_>> = options.inputs.iter().map(|input| Argument::Text(input)).collect();
    let call = session
        .prepare(&function, &arguments)
        .map_err(iree_error(format!("cannot make the arguments of @{name}")))?;
    if !as_json {
        let mut line = b"EXEC @".to_vec();
        line.extend_from_slice(function.name());
        line.push(b'\n');
        // Written out now, as iree-run-module flushes it: a plugin that
        // prints during the call prints after it, whatever stdout is.
        write_stdout(&line).and_then(|()| crate::output::flush_stdout()).map_err(stdout_error)?;
    }
    let started = Instant::now();
    let results = call.invoke().map_err(iree_error(format!("cannot run @{name}")))?;
    let run_time = started.elapsed();
    // Read once the call returned: IREE waited for every worker, so the
    // counts are exact (`docs/profiling.md`).
    let profile = options.profile.as_ref().zip(device.import_profile());
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
        let expected: Vec<Argument<'_>> =
            options.expected_outputs.iter().map(|value| Argument::Text(value)).collect();
        let check = session
            .check(&function, &results, &expected, &options.tolerance)
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
    options: &Options<'_>,
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
fn distinct_output_files(options: &Options<'_>) -> Result<(), CliError> {
    // (flag as given, file, whether it is an `--output`)
    let mut files: Vec<(String, &Path, bool)> = Vec::new();
    if let Some(profile) = &options.profile {
        files.extend(profile.json.map(|path| ("--profile-json".to_owned(), path, false)));
        files.extend(profile.trace.map(|path| ("--profile-trace".to_owned(), path, false)));
    }
    for spec in options.outputs {
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

/// A provider's name with where it came from (`NAME (SOURCE)`).
pub(crate) fn provider_label(built: &crate::resolve::LoadedPlugins, name: &str) -> String {
    built
        .scan_order()
        .find(|provider| provider.registered.name() == name)
        .map_or_else(|| name.to_owned(), |provider| format!("{name} ({})", provider.source))
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
                (Some(provider), _) => provider_label(built, provider),
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
                    "provider": import.provider.as_ref().map(|name| provider_label(built, name)),
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
