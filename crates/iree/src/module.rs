//! Modules (`.vmfb` files) and the functions they export.

use std::path::Path;
use std::sync::Arc;

use crate::error::Error;
use crate::files;
use crate::runtime::Runtime;
use crate::sys;

/// A module file's read failure as [`Error::ModuleFile`]; the other
/// errors of [`crate::files`] as they are.
fn module_file_error(error: Error) -> Error {
    match error {
        Error::FileRead { path, source, .. } => Error::ModuleFile { path, source },
        other => other,
    }
}

/// A compiled IREE program (`.vmfb`), loaded into the runtime's VM.
/// Cheap to clone (shared); one module can run in sessions on many devices.
#[derive(Clone)]
pub struct Module {
    pub(crate) inner: Arc<ModuleInner>,
}

pub(crate) struct ModuleInner {
    // The VM module (and the bytes it reads in place) before the runtime
    // whose instance it was created in.
    pub(crate) vm: Arc<sys::VmModule>,
    pub(crate) label: String,
    name: String,
    _runtime: Runtime,
}

impl Module {
    /// Loads the module in the file at `path`: a regular file, or a FIFO
    /// (a named pipe, `/dev/stdin` on a pipe) read to its end
    /// (bounded by [`crate::files::MODULE_LIMIT`]).
    ///
    /// # Errors
    /// [`Error::ModuleFile`] when the file cannot be read,
    /// [`Error::NotAFile`] or [`Error::FileTooLarge`] when it is neither a
    /// regular file nor a FIFO, or holds more than
    /// [`crate::files::MODULE_LIMIT`] bytes, [`Error::ModuleInvalid`] when
    /// IREE refuses its contents.
    pub fn from_file(runtime: &Runtime, path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes = files::read_module(path).map_err(module_file_error)?;
        Self::from_bytes_labelled(runtime, &bytes, path.display().to_string())
    }

    /// Loads the module piped into standard input, as `iree-run-module
    /// --module=-` does: `iree-compile prog.mlir | xplug run --module=-`.
    ///
    /// # Errors
    /// [`Error::NotAFile`] when standard input is a terminal or a device,
    /// [`Error::FileTooLarge`] above [`crate::files::MODULE_LIMIT`],
    /// [`Error::ModuleFile`] when it cannot be read,
    /// [`Error::ModuleInvalid`] when IREE refuses its contents.
    pub fn from_stdin(runtime: &Runtime) -> Result<Self, Error> {
        let bytes = files::read_stdin("the module", files::MODULE_LIMIT).map_err(module_file_error)?;
        Self::from_bytes_labelled(runtime, &bytes, "<standard input>".to_owned())
    }

    /// Loads a module from its bytes (copied into aligned storage).
    ///
    /// # Errors
    /// [`Error::ModuleInvalid`] when IREE refuses them.
    pub fn from_bytes(runtime: &Runtime, bytes: &[u8]) -> Result<Self, Error> {
        Self::from_bytes_labelled(runtime, bytes, format!("<{} bytes in memory>", bytes.len()))
    }

    fn from_bytes_labelled(runtime: &Runtime, bytes: &[u8], label: String) -> Result<Self, Error> {
        let vm = sys::VmModule::bytecode(&runtime.inner.instance, bytes)
            .map_err(|status| Error::ModuleInvalid { module: label.clone(), source: status.into() })?;
        let name = vm.name();
        Ok(Self { inner: Arc::new(ModuleInner { vm: Arc::new(vm), label, name, _runtime: runtime.clone() }) })
    }

    /// The module's name (the `module` of `module.function`).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The exported function `name`, looked up in this module alone, as
    /// `iree-run-module --function=NAME` looks it up (no `module.` prefix;
    /// the bytes need not be UTF-8).
    ///
    /// # Errors
    /// [`Error::NoSuchFunction`], with the closest exported name.
    pub fn function(&self, name: &[u8]) -> Result<Function, Error> {
        let Some(found) = sys::export_by_name(&self.inner.vm, name) else {
            let wanted = String::from_utf8_lossy(name).into_owned();
            let exported = self.functions();
            return Err(Error::NoSuchFunction {
                module: self.name().to_owned(),
                suggestion: xplug_manager::suggest::closest(&wanted, &exported).map(str::to_owned),
                function: wanted,
            });
        };
        let vm = found.map_err(|status| Error::Call {
            function: String::from_utf8_lossy(name).into_owned(),
            source: status.into(),
        })?;
        Ok(Function { vm, _module: self.clone() })
    }

    /// The function `iree-run-module` runs without `--function`: the only
    /// export whose name neither starts with `__` nor holds `$`.
    ///
    /// # Errors
    /// [`Error::FunctionNotGiven`] when there is none or more than one.
    pub fn only_function(&self) -> Result<Function, Error> {
        let mut candidates = Vec::new();
        for function in self.exported_functions() {
            if !function.name().starts_with(b"__") && !function.name().contains(&b'$') {
                candidates.push(function);
            }
        }
        if candidates.len() == 1 {
            return Ok(candidates.remove(0));
        }
        Err(Error::FunctionNotGiven {
            module: self.name().to_owned(),
            functions: candidates.iter().map(Function::name_lossy).collect(),
        })
    }

    /// Every function the module exports, in export order, with its
    /// signature ([`Function::vm_signature`], [`Function::declaration`]).
    #[must_use]
    pub fn exported_functions(&self) -> Vec<Function> {
        (0..self.inner.vm.export_count())
            .filter_map(|ordinal| sys::export_by_ordinal(&self.inner.vm, ordinal).ok())
            .map(|vm| Function { vm, _module: self.clone() })
            .collect()
    }

    /// The names of the functions the module exports (invalid UTF-8
    /// replaced).
    #[must_use]
    pub fn functions(&self) -> Vec<String> {
        self.exported_functions().iter().map(Function::name_lossy).collect()
    }
}

/// A function a module exports, found in that module alone as
/// `iree-run-module` finds it (`--function=NAME`, the exact export name;
/// the functions of the HAL module a session adds are not among them).
#[derive(Clone)]
pub struct Function {
    pub(crate) vm: sys::VmFunction,
    // Keeps the module's runtime alive as long as the function.
    _module: Module,
}

impl Function {
    /// The name as the module spells it (bytes: IREE does not require
    /// UTF-8).
    #[must_use]
    pub fn name(&self) -> &[u8] {
        &self.vm.name
    }

    /// The name for messages (invalid UTF-8 replaced).
    #[must_use]
    pub fn name_lossy(&self) -> String {
        String::from_utf8_lossy(&self.vm.name).into_owned()
    }

    /// The argument types of its calling convention (`i`, `I`, `f`, `F`,
    /// `r`, ...), one byte per argument.
    #[must_use]
    pub fn argument_types(&self) -> &[u8] {
        &self.vm.arguments
    }

    /// The result types of its calling convention, as
    /// [`Function::argument_types`].
    #[must_use]
    pub fn result_types(&self) -> &[u8] {
        &self.vm.results
    }

    /// The source-level signature the compiler recorded
    /// (`iree.abi.declaration`, e.g. `sync func @f(%input0:
    /// tensor<4xf32>) -> (%output0: tensor<4xf32>)`), when it did.
    #[must_use]
    pub fn declaration(&self) -> Option<&str> {
        Some(self.vm.declaration.as_str()).filter(|text| !text.is_empty())
    }

    /// The VM-level signature: `name(i32, ref) -> (ref)`, from the calling
    /// convention (`ref` for a tensor, list or other reference).
    #[must_use]
    pub fn vm_signature(&self) -> String {
        let types = |cconv: &[u8]| {
            cconv
                .iter()
                .map(|&byte| match byte {
                    b'i' => "i32".to_owned(),
                    b'I' => "i64".to_owned(),
                    b'f' => "f32".to_owned(),
                    b'F' => "f64".to_owned(),
                    b'r' => "ref".to_owned(),
                    other => char::from(other).to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let results: &[u8] = if self.result_types() == b"v" { &[] } else { self.result_types() };
        let arguments: &[u8] = if self.argument_types() == b"v" { &[] } else { self.argument_types() };
        format!("{}({}) -> ({})", self.name_lossy(), types(arguments), types(results))
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Function({})", self.name_lossy())
    }
}
