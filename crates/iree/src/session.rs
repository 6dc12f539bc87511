//! Modules (`.vmfb` files) and sessions that call their functions.

use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::archive;
use crate::runtime::{Device, Runtime};
use crate::sys::{self, iree};
use crate::{Element, ElementType, Error, IreeStatus, Tensor, TensorView, Value};

/// A module file's read failure as [`Error::ModuleFile`]; the other
/// errors of [`crate::files`] as they are.
fn module_file_error(error: Error) -> Error {
    match error {
        Error::FileRead { path, source, .. } => Error::ModuleFile { path, source },
        other => other,
    }
}

/// Alignment IREE's bytecode loader wants for a module's bytes (its
/// flatbuffer and rodata segments are read in place).
const MODULE_ALIGNMENT: usize = 64;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct AlignedBlock([u8; MODULE_ALIGNMENT]);

/// A compiled IREE program (`.vmfb`), loaded into the runtime's VM.
/// Cheap to clone (shared); one module can run in sessions on many devices.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

struct ModuleInner {
    // The VM module reads `bytes` in place: drop it first.
    raw: sys::Module,
    _bytes: Vec<AlignedBlock>,
    label: String,
    name: String,
    // The VM instance the module was created in lives at least as long.
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
        let bytes = crate::files::read_module(path).map_err(module_file_error)?;
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
        let bytes =
            crate::files::read_stdin("the module", crate::files::MODULE_LIMIT).map_err(module_file_error)?;
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
        let mut blocks = vec![AlignedBlock([0; MODULE_ALIGNMENT]); bytes.len().div_ceil(MODULE_ALIGNMENT)];
        for (block, chunk) in blocks.iter_mut().zip(bytes.chunks(MODULE_ALIGNMENT)) {
            block.0[..chunk.len()].copy_from_slice(chunk);
        }
        let contents =
            iree::iree_const_byte_span_t { data: blocks.as_ptr().cast(), data_length: bytes.len() };
        // No deallocation: the module borrows the blocks this struct owns.
        let archive_allocator = iree::iree_allocator_t { self_: std::ptr::null_mut(), ctl: None };
        let raw = sys::create(
            // SAFETY: the instance is live. Ownership: IREE keeps `contents`
            // for the module's whole life, reading code and rodata in place,
            // and frees it with `archive_allocator` (none here); it points
            // into `blocks`, which outlive the module (dropped after it, see
            // ModuleInner).
            |out| unsafe {
                iree::iree_vm_bytecode_module_create(
                    runtime.inner.instance.as_ptr(),
                    0,
                    contents,
                    archive_allocator,
                    sys::system_allocator(),
                    out,
                )
            },
            sys::Module::from_raw,
        )
        .map_err(|status| Error::ModuleInvalid { module: label.clone(), source: status.into() })?;
        // SAFETY: the module is live; the view points into its metadata,
        // copied out at once.
        let name = unsafe { view_to_string(iree::iree_vm_module_name(raw.as_ptr())) };
        Ok(Self {
            inner: Arc::new(ModuleInner { raw, _bytes: blocks, label, name, _runtime: runtime.clone() }),
        })
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
        let mut function = iree::iree_vm_function_t::default();
        // SAFETY: the module is live; the name view is valid for the call
        // (IREE only compares it); `function` is a valid out pointer.
        let status = unsafe {
            iree::iree_vm_module_lookup_function_by_name(
                self.inner.raw.as_ptr(),
                iree::iree_vm_function_linkage_e_IREE_VM_FUNCTION_LINKAGE_EXPORT,
                sys::string_view(name),
                &mut function,
            )
        };
        if sys::check(status).is_err() {
            let wanted = String::from_utf8_lossy(name).into_owned();
            let exported = self.functions();
            return Err(Error::NoSuchFunction {
                module: self.name().to_owned(),
                suggestion: xplug_manager::suggest::closest(&wanted, &exported).map(str::to_owned),
                function: wanted,
            });
        }
        self.wrap_function(function)
    }

    /// The function `iree-run-module` runs without `--function`: the only
    /// export whose name neither starts with `__` nor holds `$`.
    ///
    /// # Errors
    /// [`Error::FunctionNotGiven`] when there is none or more than one.
    pub fn only_function(&self) -> Result<Function, Error> {
        let mut candidates = Vec::new();
        for function in self.exported_functions() {
            if !function.name.starts_with(b"__") && !function.name.contains(&b'$') {
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
        let raw = self.inner.raw.as_ptr();
        // SAFETY: the module is live.
        let signature = unsafe { iree::iree_vm_module_signature(raw) };
        (0..signature.export_function_count)
            .filter_map(|ordinal| {
                let mut function = iree::iree_vm_function_t::default();
                // SAFETY: the ordinal is below the export count; `function`
                // is a valid out pointer.
                let status = unsafe {
                    iree::iree_vm_module_lookup_function_by_ordinal(
                        raw,
                        iree::iree_vm_function_linkage_e_IREE_VM_FUNCTION_LINKAGE_EXPORT,
                        ordinal,
                        &mut function,
                    )
                };
                sys::check(status).ok()?;
                self.wrap_function(function).ok()
            })
            .collect()
    }

    fn wrap_function(&self, raw: iree::iree_vm_function_t) -> Result<Function, Error> {
        // SAFETY: `raw` was filled by IREE for this live module; the name
        // view points into its metadata and is copied at once.
        let name = unsafe { view_to_bytes(iree::iree_vm_function_name(&raw)) };
        // SAFETY: as above.
        let signature = unsafe { iree::iree_vm_function_signature(&raw) };
        let mut arguments = iree::iree_string_view_t { data: std::ptr::null(), size: 0 };
        let mut results = iree::iree_string_view_t { data: std::ptr::null(), size: 0 };
        // SAFETY: `signature` is live (it views the module's metadata); the
        // out views point into it and are copied at once.
        let status = unsafe {
            iree::iree_vm_function_call_get_cconv_fragments(&signature, &mut arguments, &mut results)
        };
        let function = String::from_utf8_lossy(&name).into_owned();
        sys::check(status).map_err(|status| Error::Call { function, source: status.into() })?;
        // SAFETY: as above.
        let arguments_cconv = unsafe { view_to_bytes(arguments) };
        // SAFETY: as above.
        let results_cconv = unsafe { view_to_bytes(results) };
        // SAFETY: `raw` is a function of this live module; the view points
        // into its metadata and is copied at once (empty when absent).
        let declaration = unsafe {
            view_to_string(iree::iree_vm_function_lookup_attr_by_name(
                &raw,
                sys::string_view(b"iree.abi.declaration"),
            ))
        };
        Ok(Function {
            raw,
            module: self.clone(),
            name,
            arguments_cconv,
            results_cconv,
            declaration: Some(declaration).filter(|text| !text.is_empty()),
        })
    }

    /// The names of the functions the module exports (invalid UTF-8
    /// replaced).
    #[must_use]
    pub fn functions(&self) -> Vec<String> {
        self.exported_functions().iter().map(Function::name_lossy).collect()
    }
}

/// Copies a string view IREE returned.
///
/// # Safety
/// `view` points to `size` readable bytes (or is empty).
unsafe fn view_to_string(view: iree::iree_string_view_t) -> String {
    // SAFETY: forwarded to the caller.
    String::from_utf8_lossy(&unsafe { view_to_bytes(view) }).into_owned()
}

/// Copies the bytes of a string view IREE returned.
///
/// # Safety
/// `view` points to `size` readable bytes (or is empty).
unsafe fn view_to_bytes(view: iree::iree_string_view_t) -> Vec<u8> {
    if view.data.is_null() || view.size == 0 {
        return Vec::new();
    }
    // SAFETY: forwarded to the caller.
    unsafe { std::slice::from_raw_parts(view.data.cast::<u8>(), view.size) }.to_vec()
}

/// A module loaded on a device, ready to call: IREE's VM context holding
/// the HAL module over the device and the program module. Loading creates
/// the module's executables, so this is where every import is resolved.
///
/// Calls may be made from several threads at once, as IREE allows for a
/// context.
///
/// ```no_run
/// use std::sync::Arc;
/// use xplug_iree::{DeviceKind, Module, Runtime, Session, Tensor, Value};
/// use xplug_manager::Manager;
///
/// let runtime = Runtime::new()?;
/// // SAFETY: the plugin is trusted code built from this workspace.
/// let manager = unsafe { Manager::from_specs(["target/plugins/release/libsample_system.so"]) }?;
/// let device = runtime.device(DeviceKind::LocalSync, manager)?;
/// let module = Module::from_file(&runtime, "mul.vmfb")?;
/// let session = Session::new(&device, &module)?;
/// let a = Tensor::from_f32(&[1.0, 2.0, 3.0, 4.0]);
/// let b = Tensor::from_f32(&[5.0, 6.0, 7.0, 8.0]);
/// let results = session.call("mul", &[a, b])?;
/// let Value::Tensor(product) = &results[0] else { panic!("a tensor") };
/// assert_eq!(product.to_f32().unwrap(), [5.0, 12.0, 21.0, 32.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Session {
    // Drop order: the context (which holds the modules' state and the
    // executables) before the modules and the device.
    context: sys::Context,
    _hal_module: sys::Module,
    // IREE's `io_parameters` module, which holds the parameter archives.
    _parameters_module: Option<sys::Module>,
    _modules: Vec<Module>,
    module: Module,
    device: Device,
}

/// Sets up a [`Session`] with parameter archives and several modules, as
/// `iree-run-module --parameters=... --module=A --module=B` does; made by
/// [`Session::builder`], loaded by [`SessionBuilder::build`].
///
/// The context holds, in this order: IREE's HAL module over the device,
/// IREE's `io_parameters` module when a module imports from it or
/// archives were given (one index provider per scope, each archive opened
/// in the [`ParameterMode`] of [`SessionBuilder::parameter_mode`]: read
/// with IREE's file API by default), the
/// modules given to [`SessionBuilder::module`] in order, then the
/// session's module, whose functions [`Session::invoke`] calls.
pub struct SessionBuilder<'a> {
    device: &'a Device,
    module: &'a Module,
    modules: Vec<Module>,
    parameters: Vec<(String, PathBuf)>,
    mode: ParameterMode,
}

/// How a session opens its parameter archives: the `--parameter_mode` of
/// `xplug run`. The outputs are the same in every mode; what differs is
/// what is read and what memory it takes (`docs/iree-runtime.md`,
/// "Parameter archives").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ParameterMode {
    /// iree-run-module's default: IREE's file API reads each parameter the
    /// program loads into a device buffer of its own, when the session is
    /// built (a program's parameters load in its initialisers). The
    /// session keeps the bytes it read: a later rewrite or truncation of
    /// the archive changes nothing.
    #[default]
    File,
    /// iree-run-module's `preload`: each archive is read whole into memory
    /// when the session is built, and IREE imports from that copy; later
    /// changes to the file change nothing.
    Preload,
    /// xplug's opt-in, not one of the pinned iree-run-module's modes: map
    /// each archive (private, copy-on-write) and let IREE import the
    /// mapped range of each parameter as its device buffer: nothing is
    /// copied, only the pages the program touches are read, and they stay
    /// shared with the page cache. The archive must not change while the
    /// session lives: the program computes with bytes rewritten in place,
    /// and a truncated archive faults (SIGBUS) when the program touches a
    /// page past its new end.
    Mmap,
}

impl ParameterMode {
    /// Every mode, in the order `xplug run --help` lists them.
    pub const ALL: [Self; 3] = [Self::File, Self::Preload, Self::Mmap];

    /// The mode named `name` (`mmap`, `file`, `preload`), as
    /// `--parameter_mode` takes it.
    ///
    /// ```
    /// use xplug_iree::ParameterMode;
    /// assert_eq!(ParameterMode::parse("file"), Some(ParameterMode::File));
    /// assert_eq!(ParameterMode::parse("mapped"), None);
    /// ```
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.name() == name)
    }

    /// Its `--parameter_mode` name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Mmap => "mmap",
            Self::File => "file",
            Self::Preload => "preload",
        }
    }

    fn code(self) -> c_int {
        match self {
            Self::Mmap => sys::PARAMETER_MODE_MMAP,
            Self::File => sys::PARAMETER_MODE_FILE,
            Self::Preload => sys::PARAMETER_MODE_PRELOAD,
        }
    }
}

impl SessionBuilder<'_> {
    /// Loads `module` before the session's own module (and after those
    /// given before it), so that modules later in the list can import its
    /// functions, as iree-run-module's `--module` flags in order.
    #[must_use]
    pub fn module(mut self, module: &Module) -> Self {
        self.modules.push(module.clone());
        self
    }

    /// Serves the parameters of the archive at `path` (`.irpa`, `.gguf` or
    /// `.safetensors`, by its extension, as IREE's parser registry reads
    /// them) under `scope` (`""` for parameters named without a scope),
    /// as `iree-run-module --parameters=SCOPE=PATH`. Several archives may
    /// share a scope; the first holding a key serves it.
    #[must_use]
    pub fn parameters(mut self, scope: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.parameters.push((scope.into(), path.into()));
        self
    }

    /// Opens every archive in `mode` (default: [`ParameterMode::File`]), as
    /// `iree-run-module --parameter_mode=MODE`.
    #[must_use]
    pub fn parameter_mode(mut self, mode: ParameterMode) -> Self {
        self.mode = mode;
        self
    }

    /// Opens the archives, creates the context with every module and runs
    /// the modules' initialisers (which create the executables, resolving
    /// their imports through the device's manager, and load the
    /// parameters they read at start-up). Nothing stays open on failure.
    ///
    /// # Errors
    /// [`Error::ParameterFile`] when an archive cannot be opened,
    /// [`Error::NotAFile`] when it is not a regular file,
    /// [`Error::ParameterArchive`] when IREE cannot index it;
    /// [`Error::ParameterScope`] when the program reads a scope no archive
    /// was given for, [`Error::ParameterMissing`] when it reads a key no
    /// archive holds; [`Error::UnresolvedImports`] when an executable needs
    /// an import no provider resolves (the error names the executable, and
    /// its source the missing names with suggestions); [`Error::ModuleInit`]
    /// when IREE fails for another reason.
    pub fn build(self) -> Result<Session, Error> {
        let Self { device, module, modules, parameters, mode } = self;
        let runtime = &device.inner.runtime;
        let allocator = sys::system_allocator();
        let instance = runtime.inner.instance.as_ptr();
        let init_error = |status: sys::Status| Error::ModuleInit {
            module: module.inner.label.clone(),
            device: device.name(),
            source: status.into(),
        };
        let scopes = index_parameters(&parameters, mode)?;
        let hal_module = sys::create(
            // SAFETY: the instance and the device's group are live; the
            // module retains the group.
            |out| unsafe {
                sys::xplug_iree_hal_module_create(instance, device.inner.group.as_ptr(), allocator, out)
            },
            sys::Module::from_raw,
        )
        .map_err(init_error)?;
        let mut wants_parameters = !scopes.is_empty();
        for needing in modules.iter().chain([module]) {
            wants_parameters |= depends_on(needing, b"io_parameters").map_err(init_error)?;
        }
        let parameters_module = if wants_parameters {
            let views: Vec<iree::iree_string_view_t> =
                scopes.iter().map(|scope| sys::string_view(scope.scope.as_bytes())).collect();
            let indices: Vec<*mut sys::ParameterIndexRaw> =
                scopes.iter().map(|scope| scope.index.as_ptr()).collect();
            Some(
                sys::create(
                    // SAFETY: the instance and every index are live; the
                    // scope views point into `scopes`, alive for the call
                    // (IREE copies them into its providers).
                    |out| unsafe {
                        sys::xplug_iree_parameters_module_create(
                            instance,
                            indices.len(),
                            views.as_ptr(),
                            indices.as_ptr(),
                            allocator,
                            out,
                        )
                    },
                    sys::Module::from_raw,
                )
                .map_err(init_error)?,
            )
        } else {
            None
        };
        let before = device.inner.provider.log_len();
        let mut raw_modules = vec![hal_module.as_ptr()];
        raw_modules.extend(parameters_module.as_ref().map(sys::Module::as_ptr));
        raw_modules.extend(modules.iter().chain([module]).map(|module| module.inner.raw.as_ptr()));
        let context = sys::create(
            // SAFETY: the instance and every module are live; the context
            // retains the modules.
            |out| unsafe {
                iree::iree_vm_context_create_with_modules(
                    instance,
                    0,
                    raw_modules.len(),
                    raw_modules.as_mut_ptr(),
                    allocator,
                    out,
                )
            },
            sys::Context::from_raw,
        )
        .map_err(|status| match device.inner.provider.failure_since(before) {
            Some(record) => Error::UnresolvedImports {
                module: module.inner.label.clone(),
                device: device.name(),
                executable: record.ordinal,
                source: Box::new(record.failure.expect("failure_since returns failed records")),
            },
            None => {
                parameter_error(&status, &module.inner.label, &scopes).unwrap_or_else(|| init_error(status))
            }
        })?;
        Ok(Session {
            context,
            _hal_module: hal_module,
            _parameters_module: parameters_module,
            _modules: modules,
            module: module.clone(),
            device: device.clone(),
        })
    }
}

/// The parameter archives of one scope, indexed by IREE.
struct ScopeIndex {
    scope: String,
    index: sys::ParameterIndex,
    archives: Vec<PathBuf>,
}

/// Opens and indexes every archive, one IREE index per scope in the order
/// the scopes first appear (as IREE's scope map builds them).
fn index_parameters(parameters: &[(String, PathBuf)], mode: ParameterMode) -> Result<Vec<ScopeIndex>, Error> {
    let allocator = sys::system_allocator();
    let mut scopes: Vec<ScopeIndex> = Vec::new();
    for (scope, path) in parameters {
        let metadata = std::fs::metadata(path).map_err(|source| Error::ParameterFile {
            path: path.clone(),
            scope: scope.clone(),
            source,
        })?;
        if !metadata.is_file() {
            return Err(Error::NotAFile {
                what: "the parameter archive",
                path: path.clone(),
                kind: crate::files::file_kind(&metadata),
            });
        }
        let position = match scopes.iter().position(|entry| entry.scope == *scope) {
            Some(position) => position,
            None => {
                let index = sys::create(
                    // SAFETY: `out` is a valid out pointer.
                    |out| unsafe { sys::xplug_iree_parameter_index_create(allocator, out) },
                    sys::ParameterIndex::from_raw,
                )
                .map_err(|status| Error::ParameterArchive {
                    path: path.clone(),
                    scope: scope.clone(),
                    source: status.into(),
                })?;
                scopes.push(ScopeIndex { scope: scope.clone(), index, archives: Vec::new() });
                scopes.len() - 1
            }
        };
        let entry = &mut scopes[position];
        let archive_error = |status: sys::Status| Error::ParameterArchive {
            path: path.clone(),
            scope: scope.clone(),
            source: status.into(),
        };
        let bytes = path.as_os_str().as_encoded_bytes();
        let mut length = 0u64;
        let handle = sys::create(
            // SAFETY: the path bytes are valid for the call (IREE copies
            // what it keeps); `out` and `length` are valid out pointers.
            |out| unsafe {
                sys::xplug_iree_parameter_file_open(
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    mode.code(),
                    allocator,
                    out,
                    &mut length,
                )
            },
            sys::FileHandle::from_raw,
        )
        .map_err(archive_error)?;
        let archive = OpenArchive { handle: &handle, length };
        let format = archive::Format::of(path);
        let damaged = |fault: archive::Fault| Error::ParameterLayout {
            path: path.clone(),
            scope: scope.clone(),
            key: fault.key,
            problem: fault.problem,
            code: fault.code.0,
        };
        let regions = archive::layout(format, &archive).map_err(damaged)?;
        let first = entry_count(&entry.index);
        // SAFETY: the index and the handle are live; the path bytes are
        // valid for the call.
        sys::check(unsafe {
            sys::xplug_iree_parameter_index_parse(
                entry.index.as_ptr(),
                bytes.as_ptr().cast(),
                bytes.len(),
                handle.as_ptr(),
                allocator,
            )
        })
        .map_err(archive_error)?;
        let indexed = (first..entry_count(&entry.index))
            .map(|i| index_entry(&entry.index, i, &handle))
            .collect::<Result<Vec<_>, _>>()
            .map_err(archive_error)?;
        archive::check_entries(length, &regions, &indexed).map_err(damaged)?;
        entry.archives.push(path.clone());
    }
    Ok(scopes)
}

/// An archive IREE opened, read by xplug's checks through IREE's handle.
struct OpenArchive<'a> {
    handle: &'a sys::FileHandle,
    length: u64,
}

impl archive::Source for OpenArchive<'_> {
    fn len(&self) -> u64 {
        self.length
    }

    fn read(&self, offset: u64, buffer: &mut [u8]) -> Result<(), archive::Fault> {
        // SAFETY: the handle is live; `buffer` is valid for `buffer.len()`
        // bytes, which the glue writes at most.
        sys::check(unsafe {
            sys::xplug_iree_parameter_file_read(
                self.handle.as_ptr(),
                self.length,
                offset,
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        })
        .map_err(|status| archive::Fault {
            code: xplug_manager::providers::abi::StatusCode(status.code()),
            key: None,
            problem: status.text(),
        })
    }
}

/// The number of entries in `index`.
fn entry_count(index: &sys::ParameterIndex) -> usize {
    // SAFETY: the index is live.
    unsafe { sys::xplug_iree_parameter_index_count(index.as_ptr()) }
}

/// Entry `i` of `index`, whose archive is `handle`.
fn index_entry(
    index: &sys::ParameterIndex,
    i: usize,
    handle: &sys::FileHandle,
) -> Result<archive::Entry, sys::Status> {
    let (mut key, mut key_length) = (std::ptr::null(), 0usize);
    let (mut in_file, mut in_archive): (c_int, c_int) = (0, 0);
    let (mut offset, mut length) = (0u64, 0u64);
    // SAFETY: the index and handle are live; every out pointer is valid.
    sys::check(unsafe {
        sys::xplug_iree_parameter_index_entry(
            index.as_ptr(),
            i,
            handle.as_ptr(),
            &mut key,
            &mut key_length,
            &mut in_file,
            &mut in_archive,
            &mut offset,
            &mut length,
        )
    })?;
    let key = if key.is_null() || key_length == 0 {
        String::new()
    } else {
        // SAFETY: IREE's entry holds `key_length` bytes at `key`, alive
        // as long as the index.
        String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(key.cast::<u8>(), key_length) })
            .into_owned()
    };
    Ok(archive::Entry { key, in_file: in_file != 0, in_archive: in_archive != 0, offset, length })
}

/// Whether `module` imports from the module named `name`.
fn depends_on(module: &Module, name: &[u8]) -> Result<bool, sys::Status> {
    let mut found: c_int = 0;
    // SAFETY: the module is live; the name is valid for the call; `found`
    // is a valid out pointer.
    sys::check(unsafe {
        sys::xplug_iree_module_depends_on(
            module.inner.raw.as_ptr(),
            name.as_ptr().cast(),
            name.len(),
            &mut found,
        )
    })?;
    Ok(found != 0)
}

/// The named error for a context that failed for want of a parameter:
/// IREE's `io_parameters` module reports a scope no provider serves, its
/// index provider a key no archive of the scope holds.
fn parameter_error(status: &sys::Status, module: &str, scopes: &[ScopeIndex]) -> Option<Error> {
    let text = status.text();
    // IREE quotes the name as '%.*s' and may follow it with annotations
    // ("; while invoking ..."): the name ends at the first quote that
    // ends the text, its line or its message, so a name may hold quotes.
    let quoted = |prefix: &str| {
        let rest = &text[text.find(prefix)? + prefix.len()..];
        let end = rest.match_indices('\'').map(|(at, _)| at).find(|&at| {
            let after = &rest[at + 1..];
            after.is_empty() || after.starts_with(';') || after.starts_with('\n')
        })?;
        Some(rest[..end].to_owned())
    };
    if let Some(scope) = quoted("no provider registered that handles scopes like '") {
        return Some(Error::ParameterScope {
            module: module.to_owned(),
            scope,
            given: scopes.iter().map(|entry| entry.scope.clone()).collect(),
            source: IreeStatus { code: status.code(), text },
        });
    }
    let key = quoted("no parameter found in index with key '")?;
    // The scopes whose archives lack the key: IREE's message does not say
    // which one the program asked, so each that may be is named, with its
    // archives, each once.
    let lacking: Vec<&ScopeIndex> = scopes
        .iter()
        .filter(|entry| {
            // SAFETY: the index is live; the key is valid for the call.
            sys::check(unsafe {
                sys::xplug_iree_parameter_index_lookup(entry.index.as_ptr(), key.as_ptr().cast(), key.len())
            })
            .is_err()
        })
        .collect();
    let mut archives: Vec<PathBuf> = Vec::new();
    for path in lacking.iter().flat_map(|entry| &entry.archives) {
        if !archives.contains(path) {
            archives.push(path.clone());
        }
    }
    Some(Error::ParameterMissing {
        module: module.to_owned(),
        key,
        scopes: lacking.iter().map(|entry| entry.scope.clone()).collect(),
        archives: archives.into_boxed_slice(),
        source: IreeStatus { code: status.code(), text },
    })
}

/// One argument of [`Session::invoke`] and [`Session::prepare`].
#[derive(Debug, Clone, Copy)]
pub enum Argument<'a> {
    /// A host tensor (a [`TensorView`]; `&Tensor` converts with `.into()`),
    /// copied to the device straight from its slice.
    Tensor(TensorView<'a>),
    /// One `iree-run-module --input` value, read as IREE's tool reads it
    /// for the parameter it meets: `21` for a scalar, `4xf32=1,2,3,4`,
    /// `2x2xi32=[1 2][3 4]` or `f32=7` for a tensor, `@FILE.npy` and the
    /// other file forms ([`Session::prepare`] lists them), `(null)`.
    Text(&'a str),
}

impl<'a> From<TensorView<'a>> for Argument<'a> {
    fn from(view: TensorView<'a>) -> Self {
        Self::Tensor(view)
    }
}

impl<'a> From<&'a Tensor> for Argument<'a> {
    fn from(tensor: &'a Tensor) -> Self {
        Self::Tensor(tensor.view())
    }
}

impl Session {
    /// Loads `module` on `device`: creates the context and runs the
    /// module's initialisers, which create its executables and resolve
    /// their imports through the device's manager.
    ///
    /// # Errors
    /// [`Error::UnresolvedImports`] when an executable needs an import no
    /// provider resolves (the error names the executable, and its source the
    /// missing names with suggestions); [`Error::ModuleInit`] when IREE
    /// fails for another reason.
    pub fn new(device: &Device, module: &Module) -> Result<Self, Error> {
        Self::builder(device, module).build()
    }

    /// A session of `module` on `device` with more to set before it loads:
    /// parameter archives ([`SessionBuilder::parameters`]) and modules it
    /// imports from ([`SessionBuilder::module`]).
    #[must_use]
    pub fn builder<'a>(device: &'a Device, module: &'a Module) -> SessionBuilder<'a> {
        SessionBuilder {
            device,
            module,
            modules: Vec::new(),
            parameters: Vec::new(),
            mode: ParameterMode::default(),
        }
    }

    /// The device the session runs on.
    #[must_use]
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The module the session runs.
    #[must_use]
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Calls `function` (a name the module exports) with host tensors and
    /// copies every result back. The inputs are anything that converts to
    /// a [`TensorView`]: `&[Tensor]`, or views of the caller's own slices,
    /// which go to the device with no copy on the Rust side.
    ///
    /// # Errors
    /// As [`Session::invoke`] and [`CallResults::values`].
    pub fn call<'t, I>(&self, function: &str, inputs: I) -> Result<Vec<Value>, Error>
    where
        I: IntoIterator,
        I::Item: Into<TensorView<'t>>,
    {
        let arguments: Vec<Argument<'_>> =
            inputs.into_iter().map(|input| Argument::Tensor(input.into())).collect();
        self.invoke(function, &arguments)?.values()
    }

    /// Calls `function` with `arguments`, leaving the results on the device:
    /// [`Module::function`], [`Session::prepare`] and [`Call::invoke`].
    ///
    /// # Errors
    /// [`Error::NoSuchFunction`] (with a suggestion) when the module does
    /// not export it, the errors of [`Session::prepare`] when an argument
    /// cannot be made, [`Error::Call`] when IREE's invocation fails.
    pub fn invoke(&self, function: &str, arguments: &[Argument<'_>]) -> Result<CallResults, Error> {
        let function = self.module.function(function.as_bytes())?;
        self.prepare(&function, arguments)?.invoke()
    }

    /// Makes the argument list of a call to `function` (a function of this
    /// session's module), as `iree-run-module` makes it from its `--input`
    /// flags: each argument is matched with the next type of the function's
    /// calling convention (`i`, `I`, `f`, `F` for `i32`, `i64`, `f32`,
    /// `f64`; `r` for a reference such as a tensor). Nothing runs yet.
    ///
    /// [`Argument::Text`] takes `iree-run-module`'s forms: a number for a
    /// scalar parameter (`21`, `0x10`, `-1.5`, parsed by IREE's own
    /// `iree_string_view_atoi`/`atof`), a tensor (`4xf32=1,2,3,4`; `f32=7`
    /// for a 0-d tensor), `(null)`/`(ignored)`, and files: `@FILE.npy`
    /// (the first array), `+FILE.npy` (the next array after the last read
    /// of the same path), `*FILE.npy` (every array left, one argument
    /// each), `4xf32=@FILE` and `4xf32=+FILE` (raw bytes, from the start or
    /// from where the last read stopped), and `&TYPE=...` (the buffer alone,
    /// as storage for an output). Files are read through
    /// [`crate::files::read_bounded`], at most
    /// [`crate::files::INPUT_LIMIT`] bytes each. Leading and trailing
    /// whitespace is trimmed. Too few arguments are left for IREE's
    /// invocation to refuse, as in IREE's tool.
    ///
    /// # Errors
    /// [`Error::NoSuchFunction`] for a function of another module;
    /// [`Error::Input`] for too many arguments, a tensor where a scalar is
    /// expected (or the reverse), an empty one, a file too short for its
    /// type; [`Error::Argument`] when IREE refuses one; for a file the errors of
    /// [`crate::files::read_bounded`], [`Error::Npy`] and [`Error::NpyDtype`].
    pub fn prepare(&self, function: &Function, arguments: &[Argument<'_>]) -> Result<Call<'_>, Error> {
        let name = function.name_lossy();
        if !Arc::ptr_eq(&function.module.inner, &self.module.inner) {
            return Err(Error::NoSuchFunction {
                module: self.module.name().to_owned(),
                function: name,
                suggestion: None,
            });
        }
        let list = self.make_list(&name, &function.arguments_cconv, arguments)?;
        Ok(Call { session: self, function: function.clone(), name, inputs: list })
    }

    /// Checks the results of a call of `function` against `expected`, one
    /// per result in `iree-run-module --expected_output` forms (the
    /// [`Argument::Text`] forms of [`Session::prepare`], read against the
    /// function's result types; `(ignored)` skips a result), with IREE's
    /// own comparison and `tolerance`.
    ///
    /// IREE keeps its tolerances in process-wide flags: checks running at
    /// once on several threads with different tolerances may see each
    /// other's.
    ///
    /// # Errors
    /// The errors of [`Session::prepare`] for an expected value that
    /// cannot be made; [`Error::Result`] when IREE's comparison fails.
    pub fn check(
        &self,
        function: &Function,
        results: &CallResults,
        expected: &[Argument<'_>],
        tolerance: &Tolerance,
    ) -> Result<Check, Error> {
        let name = format!("{} (expected outputs)", function.name_lossy());
        let expected = self.make_list(&name, &function.results_cconv, expected)?;
        let flags: Vec<std::ffi::CString> = tolerance
            .iree_flags()
            .into_iter()
            .map(|flag| std::ffi::CString::new(flag).expect("numbers and words have no NUL"))
            .collect();
        let pointers: Vec<*const std::ffi::c_char> = flags.iter().map(|flag| flag.as_ptr()).collect();
        let allocator = sys::system_allocator();
        let (mut text, mut length, mut matched): (*mut std::ffi::c_char, usize, c_int) =
            (std::ptr::null_mut(), 0, 0);
        // SAFETY: both lists are live; `pointers` holds `flags.len()`
        // NUL-terminated strings alive for the call (IREE parses them at
        // once); the out pointers are valid.
        sys::check(unsafe {
            sys::xplug_iree_compare_lists(
                expected.as_ptr(),
                results.list.as_ptr(),
                c_int::try_from(pointers.len()).unwrap_or(c_int::MAX),
                pointers.as_ptr(),
                allocator,
                &mut text,
                &mut length,
                &mut matched,
            )
        })
        .map_err(|status| Error::Result {
            function: name.clone(),
            index: 0,
            source: status.into(),
        })?;
        // SAFETY: IREE wrote `length` bytes at `text`, allocated from
        // `allocator`, freed right after the copy.
        let report = unsafe {
            let copy = if text.is_null() {
                String::new()
            } else {
                String::from_utf8_lossy(std::slice::from_raw_parts(text.cast::<u8>(), length)).into_owned()
            };
            iree::iree_allocator_free(allocator, text.cast());
            copy
        };
        Ok(Check { matched: matched != 0, report })
    }

    /// A VM list of `arguments` read against the calling-convention types
    /// `cconv` (`name` names the function in errors).
    fn make_list(&self, name: &str, cconv: &[u8], arguments: &[Argument<'_>]) -> Result<sys::List, Error> {
        let name = name.to_owned();
        let allocator = sys::system_allocator();
        let list = new_list(arguments.len(), allocator)
            .map_err(|status| Error::Call { function: name.clone(), source: status.into() })?;
        let all_types = cconv;
        let mut cconv: &[u8] = cconv;
        // Files read so far, by the path as given: `+FILE` and `*FILE`
        // continue where the previous read of the same path stopped.
        let mut streams: Vec<InputStream> = Vec::new();
        for (index, argument) in arguments.iter().enumerate() {
            let input = match argument {
                Argument::Tensor(tensor) => format!("{tensor:?}"),
                Argument::Text(text) => xplug_npy::excerpt(text),
            };
            let problem = |problem: String| Error::Input {
                function: name.clone(),
                index,
                input: input.clone(),
                problem,
            };
            let iree_error = |status: sys::Status| {
                let mut source = IreeStatus::from(status);
                // IREE quotes the part of the input it choked on, whole.
                source.text = xplug_npy::excerpt_at(&source.text, 4 * xplug_npy::QUOTE_LIMIT);
                Error::Argument { function: name.clone(), index, input: input.clone(), source }
            };
            let next_type = |cconv: &mut &[u8]| match cconv.split_first() {
                Some((&expected, rest)) => {
                    *cconv = rest;
                    Ok(expected)
                }
                None => Err(problem(format!(
                    "`{name}` takes {} argument(s); this one is one too many",
                    all_types.len()
                ))),
            };
            let push_tensor = |expected: u8, tensor: &TensorView<'_>| {
                if expected != b'r' {
                    return Err(problem(format!(
                        "`{name}` takes {} here, not a tensor",
                        cconv_type_name(expected)
                    )));
                }
                let view = self.make_view(&Argument::Tensor(*tensor)).map_err(iree_error)?;
                // SAFETY: list and view are live; the list takes its own reference.
                sys::check(unsafe { sys::xplug_iree_list_push_buffer_view(list.as_ptr(), view.as_ptr()) })
                    .map_err(iree_error)
            };
            let push_primitive = |expected: u8, text: &str, null: bool| {
                // SAFETY: the list is live; IREE reads `text` only during
                // the call (see the glue function).
                sys::check(unsafe {
                    sys::xplug_iree_list_push_primitive(
                        list.as_ptr(),
                        expected as std::ffi::c_char,
                        text.as_ptr().cast(),
                        text.len(),
                        c_int::from(null),
                    )
                })
                .map_err(iree_error)
            };
            let text = match argument {
                Argument::Tensor(tensor) => {
                    push_tensor(next_type(&mut cconv)?, tensor)?;
                    continue;
                }
                Argument::Text(raw) => raw.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b'),
            };
            if text.is_empty() {
                return Err(problem("no value given; give a number, a tensor or @FILE.npy".into()));
            }
            if text == "(null)" || text == "(ignored)" {
                push_primitive(next_type(&mut cconv)?, text, true)?;
            } else if let Some(mode @ ('@' | '+' | '*')) = text.chars().next() {
                // One array (`@` from the start of the file, `+` from where
                // the last read of it stopped) or every array left (`*`).
                let path = &text[1..];
                if !path.ends_with(".npy") {
                    return Err(problem(
                        "only .npy files are read for `@FILE`, `+FILE` and `*FILE` inputs, as iree-run-module \
                         reads them (raw bytes need the type: `4xf32=@FILE`)"
                            .into(),
                    ));
                }
                let stream = InputStream::open(&mut streams, path, mode != '@')?;
                while mode != '*' || stream.offset < stream.bytes.len() {
                    let (array, used) = xplug_npy::decode_prefix(&stream.bytes[stream.offset..])
                        .map_err(|source| Error::Npy { path: path.into(), source })?;
                    stream.offset += used;
                    push_tensor(next_type(&mut cconv)?, &Tensor::from_npy(array)?.view())?;
                    if mode != '*' {
                        break;
                    }
                }
            } else if let Some(storage) = text.strip_prefix('&') {
                // Storage for an output: the buffer alone, no metadata.
                let expected = next_type(&mut cconv)?;
                if expected != b'r' {
                    return Err(problem(format!(
                        "`{name}` takes {} here, not a buffer",
                        cconv_type_name(expected)
                    )));
                }
                let view = self.tensor_view(storage, &mut streams, &problem, &iree_error)?;
                // SAFETY: list and view are live; the list takes its own
                // reference to the view's buffer.
                sys::check(unsafe { sys::xplug_iree_list_push_buffer_of_view(list.as_ptr(), view.as_ptr()) })
                    .map_err(iree_error)?;
            } else if cconv.first() != Some(&b'r') {
                push_primitive(next_type(&mut cconv)?, text, false)?;
            } else {
                next_type(&mut cconv)?;
                if !text.contains(['=', 'x']) {
                    return Err(problem(
                        "a tensor needs at least a shape and type (`4x2xf32=...`; `f32=7` for 0-d)".into(),
                    ));
                }
                let view = self.tensor_view(text, &mut streams, &problem, &iree_error)?;
                // SAFETY: list and view are live; the list takes its own
                // reference.
                sys::check(unsafe { sys::xplug_iree_list_push_buffer_view(list.as_ptr(), view.as_ptr()) })
                    .map_err(iree_error)?;
            }
        }
        Ok(list)
    }

    /// A tensor input as a buffer view: `TYPE=@FILE`/`TYPE=+FILE` from raw
    /// bytes, anything else parsed by IREE (`4xf32=1,2,3,4`).
    fn tensor_view(
        &self,
        text: &str,
        streams: &mut Vec<InputStream>,
        problem: &dyn Fn(String) -> Error,
        iree_error: &dyn Fn(sys::Status) -> Error,
    ) -> Result<sys::BufferView, Error> {
        match text.split_once('=') {
            Some((metadata, contents)) if contents.starts_with(['@', '+']) => {
                let stream = InputStream::open(streams, &contents[1..], contents.starts_with('+'))?;
                self.raw_view(metadata, stream).map_err(|error| match error {
                    RawInput::Iree(status) => iree_error(status),
                    RawInput::Short { needed, left } => {
                        problem(format!("the type needs {needed} bytes but the file holds {left} more"))
                    }
                })
            }
            _ => self.make_view(&Argument::Text(text)).map_err(iree_error),
        }
    }

    /// A buffer view of type and shape `metadata` (`4xf32`) over the next
    /// bytes of `stream`, as iree-run-module reads `--input=4xf32=@FILE`.
    fn raw_view(&self, metadata: &str, stream: &mut InputStream) -> Result<sys::BufferView, RawInput> {
        let mut shape = [0 as iree::iree_hal_dim_t; 128];
        let mut rank = 0usize;
        let mut element_type: iree::iree_hal_element_type_t = 0;
        // SAFETY: the view is valid for the call; `shape` holds 128 dims,
        // the capacity passed; the out pointers are valid.
        sys::check(unsafe {
            iree::iree_hal_parse_shape_and_element_type(
                sys::string_view(metadata.as_bytes()),
                shape.len(),
                &mut rank,
                shape.as_mut_ptr(),
                &mut element_type,
            )
        })
        .map_err(RawInput::Iree)?;
        let mut size: iree::iree_device_size_t = 0;
        // SAFETY: `shape` holds `rank` dims written by IREE; `size` is a
        // valid out pointer.
        sys::check(unsafe {
            iree::iree_hal_buffer_compute_view_size(
                rank,
                shape.as_ptr(),
                element_type,
                iree::iree_hal_encoding_types_t_IREE_HAL_ENCODING_TYPE_DENSE_ROW_MAJOR,
                &mut size,
            )
        })
        .map_err(RawInput::Iree)?;
        let left = stream.bytes.len() - stream.offset;
        // `iree_device_size_t` is `usize` on the 64-bit hosts this builds for.
        let needed = size;
        if needed > left {
            return Err(RawInput::Short { needed, left });
        }
        let data = &stream.bytes[stream.offset..stream.offset + needed];
        stream.offset += needed;
        let device = self.device.inner.raw.as_ptr();
        sys::create(
            // SAFETY: device is live; shape and data are valid for the call.
            // Ownership: IREE copies the data into a buffer it allocates
            // (`iree_hal_buffer_view_allocate_buffer_copy`) and keeps
            // neither pointer.
            |out| unsafe {
                sys::xplug_iree_buffer_view_from_data(
                    device,
                    rank,
                    shape.as_ptr(),
                    element_type,
                    data.as_ptr().cast(),
                    data.len(),
                    out,
                )
            },
            sys::BufferView::from_raw,
        )
        .map_err(RawInput::Iree)
    }

    fn make_view(&self, argument: &Argument<'_>) -> Result<sys::BufferView, sys::Status> {
        let device = self.device.inner.raw.as_ptr();
        match argument {
            Argument::Tensor(tensor) => {
                let shape: &[iree::iree_hal_dim_t] = tensor.shape();
                sys::create(
                    // SAFETY: device is live; shape and data are valid for
                    // the call. Ownership: IREE copies the data into a
                    // buffer it allocates and keeps neither pointer.
                    |out| unsafe {
                        sys::xplug_iree_buffer_view_from_data(
                            device,
                            shape.len(),
                            shape.as_ptr(),
                            tensor.element_type().0,
                            tensor.data().as_ptr().cast(),
                            tensor.data().len(),
                            out,
                        )
                    },
                    sys::BufferView::from_raw,
                )
            }
            Argument::Text(text) => sys::create(
                // SAFETY: device is live; the text is valid for the call.
                // Ownership: IREE parses it into a new buffer and keeps no
                // view of it.
                |out| unsafe {
                    sys::xplug_iree_buffer_view_parse(device, text.as_ptr().cast(), text.len(), out)
                },
                sys::BufferView::from_raw,
            ),
        }
    }
}

/// How [`Session::check`] compares results, as iree-run-module's flags
/// set it (the defaults are IREE's): absolute tolerances per float type,
/// a relative tolerance, and whether floats must be exactly equal.
#[derive(Clone, Debug, PartialEq)]
pub struct Tolerance {
    /// `--expected_f16_threshold` (0.001).
    pub f16: f32,
    /// `--expected_bf16_threshold` (0.01).
    pub bf16: f32,
    /// `--expected_f32_threshold` (0.0001).
    pub f32: f32,
    /// `--expected_f64_threshold` (0.0001).
    pub f64: f64,
    /// `--expected_rtol` (1e-5).
    pub rtol: f64,
    /// `--equality_mode=exact` (default `approximate`).
    pub exact: bool,
}

impl Default for Tolerance {
    fn default() -> Self {
        Self { f16: 0.001, bf16: 0.01, f32: 0.0001, f64: 0.0001, rtol: 1e-5, exact: false }
    }
}

impl Tolerance {
    /// The tolerance as IREE's comparison flags.
    fn iree_flags(&self) -> Vec<String> {
        vec![
            format!("--expected_f16_threshold={}", self.f16),
            format!("--expected_bf16_threshold={}", self.bf16),
            format!("--expected_f32_threshold={}", self.f32),
            format!("--expected_f64_threshold={}", self.f64),
            format!("--expected_rtol={}", self.rtol),
            format!("--equality_mode={}", if self.exact { "exact" } else { "approximate" }),
        ]
    }
}

/// What [`Session::check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Whether every result matched.
    pub matched: bool,
    /// IREE's report of what differs (`[FAILED] result[N]: ...` blocks;
    /// empty when everything matched).
    pub report: String,
}

/// A call made ready by [`Session::prepare`]: the function and its
/// argument list, on the session's device.
pub struct Call<'s> {
    session: &'s Session,
    function: Function,
    name: String,
    inputs: sys::List,
}

impl Call<'_> {
    /// The function this call runs.
    #[must_use]
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// Runs the function on the prepared arguments.
    ///
    /// # Errors
    /// [`Error::Call`] when IREE's invocation fails (too few arguments
    /// included: IREE's invocation checks them).
    pub fn invoke(self) -> Result<CallResults, Error> {
        let allocator = sys::system_allocator();
        let call_error =
            |status: sys::Status| Error::Call { function: self.name.clone(), source: status.into() };
        let outputs = new_list(4, allocator).map_err(call_error)?;
        // SAFETY: context, function (of a module the context holds, kept
        // alive by `self.function`) and both lists are live; a NULL policy
        // is IREE's default.
        sys::check(unsafe {
            iree::iree_vm_invoke(
                self.session.context.as_ptr(),
                self.function.raw,
                0,
                std::ptr::null(),
                self.inputs.as_ptr(),
                outputs.as_ptr(),
                allocator,
            )
        })
        .map_err(call_error)?;
        Ok(CallResults { list: outputs, device: self.session.device.clone(), function: self.name })
    }
}

/// A function a module exports, found in that module alone as
/// `iree-run-module` finds it (`--function=NAME`, the exact export name;
/// the functions of the HAL module a session adds are not among them).
#[derive(Clone)]
pub struct Function {
    raw: iree::iree_vm_function_t,
    // Keeps the module `raw` points into alive.
    module: Module,
    name: Vec<u8>,
    arguments_cconv: Vec<u8>,
    results_cconv: Vec<u8>,
    declaration: Option<String>,
}

impl Function {
    /// The name as the module spells it (bytes: IREE does not require
    /// UTF-8).
    #[must_use]
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The name for messages (invalid UTF-8 replaced).
    #[must_use]
    pub fn name_lossy(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }

    /// The argument types of its calling convention (`i`, `I`, `f`, `F`,
    /// `r`, ...), one byte per argument.
    #[must_use]
    pub fn argument_types(&self) -> &[u8] {
        &self.arguments_cconv
    }
}

impl Function {
    /// The result types of its calling convention, as
    /// [`Function::argument_types`].
    #[must_use]
    pub fn result_types(&self) -> &[u8] {
        &self.results_cconv
    }

    /// The source-level signature the compiler recorded
    /// (`iree.abi.declaration`, e.g. `sync func @f(%input0:
    /// tensor<4xf32>) -> (%output0: tensor<4xf32>)`), when it did.
    #[must_use]
    pub fn declaration(&self) -> Option<&str> {
        self.declaration.as_deref()
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
        let results: &[u8] = if self.results_cconv == b"v" { &[] } else { &self.results_cconv };
        let arguments: &[u8] = if self.arguments_cconv == b"v" { &[] } else { &self.arguments_cconv };
        format!("{}({}) -> ({})", self.name_lossy(), types(arguments), types(results))
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Function({})", self.name_lossy())
    }
}

/// What a calling-convention type is, for messages.
fn cconv_type_name(cconv: u8) -> String {
    match cconv {
        b'i' => "an i32".to_owned(),
        b'I' => "an i64".to_owned(),
        b'f' => "an f32".to_owned(),
        b'F' => "an f64".to_owned(),
        b'r' => "a reference (a tensor)".to_owned(),
        other => format!("calling-convention type `{}`", char::from(other)),
    }
}

/// A file an input reads from (`@FILE`, `+FILE`, `*FILE`, `TYPE=@FILE`),
/// read whole through [`crate::files::read_bounded`], and how far the
/// inputs so far have read it.
struct InputStream {
    path: String,
    bytes: Vec<u8>,
    offset: usize,
}

impl InputStream {
    /// The stream of `path` (as given): from the start unless `append`
    /// (then where the last read of the same path stopped, or the start
    /// the first time), as iree-run-module's stream list keeps them.
    fn open<'a>(streams: &'a mut Vec<Self>, path: &str, append: bool) -> Result<&'a mut Self, Error> {
        let index = match streams.iter().position(|stream| stream.path == path) {
            Some(index) => index,
            None => {
                let bytes =
                    crate::files::read_bounded(Path::new(path), "the input file", crate::files::INPUT_LIMIT)?;
                streams.push(Self { path: path.to_owned(), bytes, offset: 0 });
                streams.len() - 1
            }
        };
        let stream = &mut streams[index];
        if !append {
            stream.offset = 0;
        }
        Ok(stream)
    }
}

/// Why a `TYPE=@FILE` input could not be made.
enum RawInput {
    /// IREE refused the type or the view.
    Iree(sys::Status),
    /// The file holds fewer bytes than the type needs.
    Short { needed: usize, left: usize },
}

fn new_list(capacity: usize, allocator: sys::Allocator) -> Result<sys::List, sys::Status> {
    sys::create(
        // SAFETY: `out` is a valid out pointer.
        |out| unsafe { sys::xplug_iree_list_create(capacity, allocator, out) },
        sys::List::from_raw,
    )
}

/// The results of one [`Session::invoke`], still on the device.
pub struct CallResults {
    list: sys::List,
    device: Device,
    function: String,
}

impl CallResults {
    /// How many results the function returned.
    #[must_use]
    pub fn len(&self) -> usize {
        // SAFETY: the list is live.
        unsafe { iree::iree_vm_list_size(self.list.as_ptr()) }
    }

    /// Whether it returned nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Result `index` copied to the host.
    ///
    /// # Errors
    /// [`Error::Result`] when IREE cannot read it.
    pub fn value(&self, index: usize) -> Result<Value, Error> {
        let result_error = self.result_error(index);
        Ok(match self.slot(index).map_err(&result_error)? {
            Slot::View(view) => Value::Tensor(self.read_tensor(&view).map_err(result_error)?),
            Slot::Value(value) => value,
        })
    }

    /// How a failed read of result `index` is reported.
    fn result_error(&self, index: usize) -> impl Fn(sys::Status) -> Error + '_ {
        move |status| Error::Result { function: self.function.clone(), index, source: status.into() }
    }

    /// Result `index` as the list holds it: a retained buffer view, or a
    /// value that needs no copy from the device.
    fn slot(&self, index: usize) -> Result<Slot, sys::Status> {
        let (mut kind, mut bits): (c_int, c_int) = (0, 0);
        let mut view: *mut iree::iree_hal_buffer_view_t = std::ptr::null_mut();
        let (mut integer, mut float) = (0i64, 0f64);
        // SAFETY: the list is live; every out pointer is valid.
        sys::check(unsafe {
            sys::xplug_iree_list_get(
                self.list.as_ptr(),
                index,
                &mut kind,
                &mut bits,
                &mut view,
                &mut integer,
                &mut float,
            )
        })?;
        let bits = u32::try_from(bits).unwrap_or(0);
        Ok(match kind {
            sys::VALUE_BUFFER_VIEW => {
                Slot::View(sys::BufferView::from_raw(view).expect("the glue returns a retained view"))
            }
            sys::VALUE_INTEGER => Slot::Value(Value::Integer { value: integer, bits }),
            sys::VALUE_FLOAT => Slot::Value(Value::Float { value: float, bits }),
            sys::VALUE_EMPTY => Slot::Value(Value::Empty),
            _ => Slot::Value(Value::Other),
        })
    }

    /// Result `index`, a tensor, read in place: the device's memory mapped
    /// for reading, with no copy, for as long as the [`MappedTensor`]
    /// lives. IREE's local devices (`local-sync`, `local-task`) keep
    /// results in host memory, so this works there whenever the program
    /// allocated the result mappable; [`CallResults::value`] copies
    /// instead.
    ///
    /// # Errors
    /// [`Error::NotATensor`] when the result is a scalar or another kind;
    /// [`Error::Result`] when IREE cannot map it (FAILED_PRECONDITION: not
    /// host-visible or not mappable).
    pub fn tensor(&self, index: usize) -> Result<MappedTensor, Error> {
        let result_error = self.result_error(index);
        let Slot::View(view) = self.slot(index).map_err(&result_error)? else {
            return Err(Error::NotATensor { function: self.function.clone(), index });
        };
        let (shape, element_type) = view_shape(&view).map_err(&result_error)?;
        let mapping = sys::ReadMapping::new(view).map_err(result_error)?;
        Ok(MappedTensor { shape, element_type, mapping })
    }

    /// Every result copied to the host.
    ///
    /// # Errors
    /// As [`CallResults::value`].
    pub fn values(&self) -> Result<Vec<Value>, Error> {
        (0..self.len()).map(|index| self.value(index)).collect()
    }

    /// Result `index` in the text `iree-run-module` prints after
    /// `result[N]: `: the type (`hal.buffer_view`) on one line, then
    /// IREE's own formatting of the contents, at most `max_elements`
    /// elements (`iree-run-module`'s default is 1024).
    ///
    /// # Errors
    /// [`Error::Result`] when IREE cannot format it.
    pub fn format(&self, index: usize, max_elements: usize) -> Result<String, Error> {
        let allocator = sys::system_allocator();
        let mut text: *mut std::ffi::c_char = std::ptr::null_mut();
        let mut length = 0usize;
        // SAFETY: the list is live; out pointers are valid.
        sys::check(unsafe {
            sys::xplug_iree_list_format(
                self.list.as_ptr(),
                index,
                max_elements,
                allocator,
                &mut text,
                &mut length,
            )
        })
        .map_err(|status| Error::Result {
            function: self.function.clone(),
            index,
            source: status.into(),
        })?;
        // SAFETY: IREE wrote `length` bytes at `text`, allocated from
        // `allocator`, freed right after the copy.
        let formatted = unsafe {
            let copy =
                String::from_utf8_lossy(std::slice::from_raw_parts(text.cast::<u8>(), length)).into_owned();
            iree::iree_allocator_free(allocator, text.cast());
            copy
        };
        Ok(formatted)
    }

    fn read_tensor(&self, view: &sys::BufferView) -> Result<Tensor, sys::Status> {
        let raw = view.as_ptr();
        let (shape, element_type) = view_shape(view)?;
        // SAFETY: the view is live.
        let length = unsafe { sys::xplug_iree_buffer_view_byte_length(raw) };
        let mut data = vec![0u8; length];
        // SAFETY: device and view are live; `data` holds `length` bytes.
        sys::check(unsafe {
            sys::xplug_iree_buffer_view_read(
                self.device.inner.raw.as_ptr(),
                raw,
                data.as_mut_ptr().cast(),
                length,
            )
        })?;
        Ok(Tensor::from_parts_unchecked(shape, element_type, data))
    }
}

/// One result as [`CallResults`] reads it from IREE's list.
enum Slot {
    /// A tensor, still on the device.
    View(sys::BufferView),
    /// A scalar, an empty reference or a kind not copied out.
    Value(Value),
}

/// A view's shape and element type.
fn view_shape(view: &sys::BufferView) -> Result<(Vec<usize>, ElementType), sys::Status> {
    let raw = view.as_ptr();
    let mut shape = [0 as iree::iree_hal_dim_t; 16];
    let mut rank = 0usize;
    // SAFETY: the view is live; `shape` holds 16 dims.
    sys::check(unsafe { iree::iree_hal_buffer_view_shape(raw, shape.len(), shape.as_mut_ptr(), &mut rank) })?;
    // SAFETY: the view is live.
    let element_type = ElementType(unsafe { iree::iree_hal_buffer_view_element_type(raw) });
    // `iree_hal_dim_t` is `usize` on the 64-bit hosts IREE's CPU runtime is
    // built for here.
    Ok((shape[..rank].to_vec(), element_type))
}

/// A result tensor read in place ([`CallResults::tensor`]): its shape,
/// element type and the device memory holding it, mapped for reading until
/// this is dropped.
///
/// ```no_run
/// # fn run(session: &xplug_iree::Session) -> Result<(), xplug_iree::Error> {
/// use xplug_iree::TensorView;
///
/// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [5.0f32, 6.0, 7.0, 8.0]);
/// let results = session.invoke(
///     "mul",
///     &[TensorView::new(&[4], &a)?.into(), TensorView::new(&[4], &b)?.into()],
/// )?;
/// let product = results.tensor(0)?; // no copy
/// assert_eq!(product.as_slice::<f32>()?, [5.0, 12.0, 21.0, 32.0]);
/// # Ok(()) }
/// ```
pub struct MappedTensor {
    shape: Vec<usize>,
    element_type: ElementType,
    mapping: sys::ReadMapping,
}

impl MappedTensor {
    /// The shape, outermost dimension first.
    #[must_use]
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    #[must_use]
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The elements' bytes as IREE holds them.
    #[must_use]
    pub fn data(&self) -> &[u8] {
        self.mapping.bytes()
    }

    /// The elements as a slice of `T`, in place.
    ///
    /// # Errors
    /// [`Error::TensorElementType`] when the element type does not read as
    /// `T`; [`Error::TensorElementValue`] when an element is not a value of
    /// `T` (a `bool` byte other than 0 or 1), or the memory is not aligned
    /// for `T` (IREE aligns buffers far beyond any element's alignment).
    pub fn as_slice<T: Element>(&self) -> Result<&[T], Error> {
        crate::tensor::cast_elements(self.element_type, self.data())
    }

    /// A view of the mapped tensor, for another call's input.
    #[must_use]
    pub fn view(&self) -> TensorView<'_> {
        TensorView::from_parts_unchecked(&self.shape, self.element_type, self.data())
    }
}

impl std::fmt::Debug for MappedTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapped{:?}", self.view())
    }
}
