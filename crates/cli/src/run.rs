//! `xplug run MODULE.vmfb`: run a compiled IREE program on IREE's own
//! runtime (`xplug-iree`) with xplug's manager resolving every import of its
//! executables.
//!
//! Output is `iree-run-module`'s for the same program, inputs and plugins
//! (`EXEC @fn`, then `result[N]: TYPE` and IREE's formatting of each result
//! not written to a file), so a script can switch between the two. What
//! xplug adds goes to stderr (`--trace`) or replaces the run
//! (`--list-imports`); `--json` prints one object instead.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use xplug_iree::{
    Argument, DeviceBuilder, DeviceKind, ExecutableImports, ImportRecording, Module, Runtime, Session,
    Tensor, Value,
};

use crate::error::CliError;
use crate::output::{Style, Table, print_json, safe};

/// What `xplug run` was asked to do.
pub(crate) struct Options<'a> {
    /// The `.vmfb` file.
    pub(crate) module: &'a Path,
    /// The function to call (default: the module's only export).
    pub(crate) function: Option<&'a str>,
    /// IREE-syntax values or `@file.npy`.
    pub(crate) inputs: &'a [String],
    /// `@file.npy` or `-` (print), one per result in order.
    pub(crate) outputs: &'a [String],
    /// `local-sync` or `local-task`.
    pub(crate) device: &'a str,
    /// Worker threads of `local-task`.
    pub(crate) task_workers: usize,
    /// Plugin specs, later ones asked first.
    pub(crate) plugins: &'a [String],
    /// Register the plugins linked into xplug first.
    pub(crate) with_static: bool,
    /// Print, per executable, each import and its provider (stderr).
    pub(crate) trace: bool,
    /// Only load the module and list every executable's imports.
    pub(crate) list_imports: bool,
    /// Elements printed per tensor (`--output_max_element_count`).
    pub(crate) max_elements: usize,
}

fn iree_error(context: String) -> impl FnOnce(xplug_iree::Error) -> CliError {
    move |source| CliError::Iree { context, source }
}

pub(crate) fn run(options: &Options<'_>, as_json: bool) -> Result<u8, CliError> {
    let kind = DeviceKind::parse(options.device, options.task_workers).ok_or_else(|| CliError::Usage {
        message: format!("unknown device `{}`; xplug runs `local-sync` and `local-task`", options.device),
    })?;
    let built = crate::resolve::Runtime::build(options.with_static, options.plugins)?;
    let manager = Arc::clone(&built.manager);
    let runtime = Runtime::new().map_err(iree_error("cannot start IREE's runtime".to_owned()))?;
    let recording = if options.list_imports {
        ImportRecording::ListOnly
    } else if options.trace || as_json {
        ImportRecording::Record
    } else {
        ImportRecording::Off
    };
    let device = DeviceBuilder::new(&runtime, kind, manager)
        .recording(recording)
        .build()
        .map_err(iree_error(format!("cannot create device `{}`", kind.name())))?;
    let module = Module::from_file(&runtime, options.module)
        .map_err(iree_error(format!("cannot load {}", options.module.display())))?;
    let session = Session::new(&device, &module);
    let executables = device.executable_imports();
    if options.list_imports {
        return list_imports(&built, &executables, session.err(), as_json);
    }
    if options.trace && !as_json {
        eprint!("{}", imports_table(&built, &executables, Style::stderr()));
    }
    let session = session.map_err(iree_error(format!(
        "cannot load {} on {}",
        options.module.display(),
        kind.name()
    )))?;

    let function = match options.function {
        Some(function) => function.to_owned(),
        None => only_function(&module)?,
    };
    let tensors: Vec<Option<Tensor>> =
        options.inputs.iter().map(|input| read_input(input)).collect::<Result<_, _>>()?;
    let arguments: Vec<Argument<'_>> = options
        .inputs
        .iter()
        .zip(&tensors)
        .map(|(input, tensor)| match tensor {
            Some(tensor) => Argument::Tensor(tensor),
            None => Argument::Text(input),
        })
        .collect();
    if !as_json {
        println!("EXEC @{function}");
    }
    let results =
        session.invoke(&function, &arguments).map_err(iree_error(format!("cannot run @{function}")))?;
    let mut printed = Vec::new();
    for index in 0..results.len() {
        let target = options.outputs.get(index).map(String::as_str).unwrap_or("-");
        if let Some(path) = target.strip_prefix('@') {
            write_output(
                &results.value(index).map_err(iree_error(format!("cannot read result {index}")))?,
                path,
            )?;
            printed.push(json!({ "index": index, "file": path }));
        } else if target == "-" {
            let text = results
                .format(index, options.max_elements)
                .map_err(iree_error(format!("cannot format result {index}")))?;
            if as_json {
                printed.push(json!({ "index": index, "text": text }));
            } else {
                println!("result[{index}]: {text}");
            }
        } else {
            return Err(CliError::Usage {
                message: format!(
                    "--output={target}: give `@FILE.npy` or `-` (print), as iree-run-module takes"
                ),
            });
        }
    }
    if as_json {
        print_json(&json!({
            "ok": true,
            "module": options.module.display().to_string(),
            "device": kind.name(),
            "function": function,
            "results": printed,
            "executables": executables_json(&built, &executables),
        }));
    }
    Ok(0)
}

/// The module's only exported function, or a usage error listing them.
fn only_function(module: &Module) -> Result<String, CliError> {
    let functions: Vec<String> =
        module.functions().into_iter().filter(|name| !name.starts_with("__")).collect();
    match functions.as_slice() {
        [only] => Ok(only.clone()),
        _ => Err(CliError::Usage {
            message: format!(
                "give --function: module `{}` exports {}",
                module.name(),
                if functions.is_empty() { "no function".to_owned() } else { functions.join(", ") }
            ),
        }),
    }
}

/// `@file.npy` as a tensor; anything else is IREE's text form (`None`).
fn read_input(input: &str) -> Result<Option<Tensor>, CliError> {
    let Some(path) = input.strip_prefix('@') else { return Ok(None) };
    let bytes = std::fs::read(path)
        .map_err(|source| CliError::File { context: format!("cannot read the input file {path}"), source })?;
    let array = xplug_npy::decode(&bytes)
        .map_err(|source| CliError::Npy { context: format!("cannot read the input file {path}"), source })?;
    Tensor::from_npy(array).map(Some).map_err(iree_error(format!("cannot use the input file {path}")))
}

fn write_output(value: &Value, path: &str) -> Result<(), CliError> {
    let Value::Tensor(tensor) = value else {
        return Err(CliError::Usage {
            message: format!("--output=@{path}: only tensor results can be written to .npy"),
        });
    };
    let array = tensor.to_npy().ok_or_else(|| CliError::Usage {
        message: format!("--output=@{path}: element type {} has no .npy dtype", tensor.element_type()),
    })?;
    std::fs::write(path, xplug_npy::encode(&array))
        .map_err(|source| CliError::File { context: format!("cannot write the output file {path}"), source })
}

fn provider_label(built: &crate::resolve::Runtime, name: &str) -> String {
    built
        .labels
        .iter()
        .rev()
        .find(|label| label.name == name)
        .map_or_else(|| name.to_owned(), |label| format!("{} ({})", label.name, label.source))
}

fn imports_table(built: &crate::resolve::Runtime, executables: &[ExecutableImports], style: Style) -> String {
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

fn executables_json(built: &crate::resolve::Runtime, executables: &[ExecutableImports]) -> serde_json::Value {
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
    built: &crate::resolve::Runtime,
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
        print!("{}", imports_table(built, executables, Style::stdout()));
        if executables.is_empty() {
            println!("(the module loaded no executable with imports)");
        }
        if missing > 0 {
            println!("{missing} required import(s) missing: register plugins that export them (--plugin)");
        }
    }
    if let Some(error) = load_error {
        return Err(CliError::Iree {
            context: "the module does not load even with imports listed only".into(),
            source: error,
        });
    }
    Ok(u8::from(missing > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_inputs_are_left_to_iree_and_files_are_read() {
        assert!(read_input("4xf32=1,2,3,4").unwrap().is_none());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        std::fs::write(&path, xplug_npy::encode_f32(&[1.0, 2.0])).unwrap();
        let tensor = read_input(&format!("@{}", path.display())).unwrap().unwrap();
        assert_eq!(tensor.to_f32().unwrap(), [1.0, 2.0]);
        let missing = read_input("@/nonexistent/in.npy").unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/in.npy"), "{missing}");
    }
}
