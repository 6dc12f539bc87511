//! Modules (`.vmfb` files) and sessions that call their functions.

use std::ffi::c_int;
use std::path::Path;
use std::sync::Arc;

use crate::runtime::{Device, Runtime};
use crate::sys::{self, iree};
use crate::{Error, IreeStatus, Tensor, Value};

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
    /// Loads the module in the file at `path`.
    ///
    /// # Errors
    /// [`Error::ModuleFile`] when the file cannot be read,
    /// [`Error::NotAFile`] or [`Error::FileTooLarge`] when it is not a
    /// regular file of at most [`crate::files::MODULE_LIMIT`] bytes,
    /// [`Error::ModuleInvalid`] when IREE refuses its contents.
    pub fn from_file(runtime: &Runtime, path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes =
            crate::files::read_bounded(path, "the module", crate::files::MODULE_LIMIT).map_err(|error| {
                match error {
                    Error::FileRead { path, source, .. } => Error::ModuleFile { path, source },
                    other => other,
                }
            })?;
        Self::from_bytes_labelled(runtime, &bytes, path.display().to_string())
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
        for function in self.exports() {
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

    fn exports(&self) -> Vec<Function> {
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
        Ok(Function { raw, module: self.clone(), name, arguments_cconv })
    }

    /// The names of the functions the module exports (invalid UTF-8
    /// replaced).
    #[must_use]
    pub fn functions(&self) -> Vec<String> {
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
                // SAFETY: `function` was filled by IREE for a live module.
                Some(unsafe { view_to_string(iree::iree_vm_function_name(&function)) })
            })
            .collect()
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
/// let manager = Arc::new(unsafe { Manager::from_specs(["target/plugins/release/libsample_system.so"]) }?);
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
    module: Module,
    device: Device,
}

/// One argument of [`Session::invoke`] and [`Session::prepare`].
#[derive(Debug, Clone, Copy)]
pub enum Argument<'a> {
    /// A host tensor, copied to the device.
    Tensor(&'a Tensor),
    /// One `iree-run-module --input` value, read as IREE's tool reads it
    /// for the parameter it meets: `21` for a scalar, `4xf32=1,2,3,4`,
    /// `2x2xi32=[1 2][3 4]` or `f32=7` for a tensor, `@FILE.npy` and the
    /// other file forms ([`Session::prepare`] lists them), `(null)`.
    Text(&'a str),
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
        let runtime = &device.inner.runtime;
        let allocator = sys::system_allocator();
        let instance = runtime.inner.instance.as_ptr();
        let init_error = |status: sys::Status| Error::ModuleInit {
            module: module.inner.label.clone(),
            device: device.name(),
            source: status.into(),
        };
        let hal_module = sys::create(
            // SAFETY: the instance and the device's group are live; the
            // module retains the group.
            |out| unsafe {
                sys::xplug_iree_hal_module_create(instance, device.inner.group.as_ptr(), allocator, out)
            },
            sys::Module::from_raw,
        )
        .map_err(init_error)?;
        let before = device.inner.provider.log_len();
        let mut modules = [hal_module.as_ptr(), module.inner.raw.as_ptr()];
        let context = sys::create(
            // SAFETY: the instance and both modules are live; the context
            // retains the modules.
            |out| unsafe {
                iree::iree_vm_context_create_with_modules(
                    instance,
                    0,
                    modules.len(),
                    modules.as_mut_ptr(),
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
            None => init_error(status),
        })?;
        Ok(Self { context, _hal_module: hal_module, module: module.clone(), device: device.clone() })
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
    /// copies every result back.
    ///
    /// # Errors
    /// As [`Session::invoke`] and [`CallResults::values`].
    pub fn call(&self, function: &str, inputs: &[Tensor]) -> Result<Vec<Value>, Error> {
        let arguments: Vec<Argument<'_>> = inputs.iter().map(Argument::Tensor).collect();
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
        let allocator = sys::system_allocator();
        let list = new_list(arguments.len(), allocator)
            .map_err(|status| Error::Call { function: name.clone(), source: status.into() })?;
        let mut cconv: &[u8] = &function.arguments_cconv;
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
                    function.arguments_cconv.len()
                ))),
            };
            let push_tensor = |expected: u8, tensor: &Tensor| {
                if expected != b'r' {
                    return Err(problem(format!(
                        "`{name}` takes {} here, not a tensor",
                        cconv_type_name(expected)
                    )));
                }
                let view = self.make_view(&Argument::Tensor(tensor)).map_err(iree_error)?;
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
                    push_tensor(next_type(&mut cconv)?, &Tensor::from_npy(array)?)?;
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
        Ok(Call { session: self, function: function.clone(), name, inputs: list })
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
        let result_error = |status: sys::Status| Error::Result {
            function: self.function.clone(),
            index,
            source: status.into(),
        };
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
        })
        .map_err(result_error)?;
        let bits = u32::try_from(bits).unwrap_or(0);
        Ok(match kind {
            sys::VALUE_BUFFER_VIEW => {
                let view = sys::BufferView::from_raw(view).expect("the glue returns a retained view");
                Value::Tensor(self.read_tensor(&view).map_err(result_error)?)
            }
            sys::VALUE_INTEGER => Value::Integer { value: integer, bits },
            sys::VALUE_FLOAT => Value::Float { value: float, bits },
            sys::VALUE_EMPTY => Value::Empty,
            _ => Value::Other,
        })
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
        let mut shape = [0 as iree::iree_hal_dim_t; 16];
        let mut rank = 0usize;
        // SAFETY: the view is live; `shape` holds 16 dims.
        sys::check(unsafe {
            iree::iree_hal_buffer_view_shape(raw, shape.len(), shape.as_mut_ptr(), &mut rank)
        })?;
        // SAFETY: the view is live.
        let element_type = crate::ElementType(unsafe { iree::iree_hal_buffer_view_element_type(raw) });
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
        // `iree_hal_dim_t` is `usize` on the 64-bit hosts IREE's CPU
        // runtime is built for here.
        let shape: Vec<usize> = shape[..rank].to_vec();
        Ok(Tensor::from_parts_unchecked(shape, element_type, data))
    }
}
