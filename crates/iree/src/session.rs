//! Modules (`.vmfb` files) and sessions that call their functions.

use std::ffi::c_int;
use std::path::Path;
use std::sync::Arc;

use crate::runtime::{Device, Runtime};
use crate::sys::{self, iree};
use crate::{Error, Tensor, Value};

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
    /// [`Error::ModuleInvalid`] when IREE refuses its contents.
    pub fn from_file(runtime: &Runtime, path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes =
            std::fs::read(path).map_err(|source| Error::ModuleFile { path: path.to_owned(), source })?;
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
            // SAFETY: the instance is live; `contents` points into `blocks`,
            // which outlive the module (dropped after it, see ModuleInner).
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

    /// The names of the functions the module exports.
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
    if view.data.is_null() || view.size == 0 {
        return String::new();
    }
    // SAFETY: forwarded to the caller.
    let bytes = unsafe { std::slice::from_raw_parts(view.data.cast::<u8>(), view.size) };
    String::from_utf8_lossy(bytes).into_owned()
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

/// One argument of [`Session::invoke`].
#[derive(Debug, Clone, Copy)]
pub enum Argument<'a> {
    /// A host tensor, copied to the device.
    Tensor(&'a Tensor),
    /// IREE's text form of a tensor, as `iree-run-module --input` takes it
    /// (`4xf32=1,2,3,4`, `2x2xi32=[1 2][3 4]`, `f32=7`).
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

    /// Calls `function` (a name the module exports, or `module.function`)
    /// with host tensors and copies every result back.
    ///
    /// # Errors
    /// As [`Session::invoke`] and [`CallResults::values`].
    pub fn call(&self, function: &str, inputs: &[Tensor]) -> Result<Vec<Value>, Error> {
        let arguments: Vec<Argument<'_>> = inputs.iter().map(Argument::Tensor).collect();
        self.invoke(function, &arguments)?.values()
    }

    /// Calls `function` with `arguments`, leaving the results on the device.
    ///
    /// # Errors
    /// [`Error::NoSuchFunction`] (with a suggestion) when the module does
    /// not export it, [`Error::Argument`] when an argument cannot be made,
    /// [`Error::Call`] when IREE's invocation fails.
    pub fn invoke(&self, function: &str, arguments: &[Argument<'_>]) -> Result<CallResults, Error> {
        let resolved = self.resolve_function(function)?;
        let allocator = sys::system_allocator();
        let call_error =
            |status: sys::Status| Error::Call { function: function.to_owned(), source: status.into() };
        let inputs = new_list(arguments.len(), allocator).map_err(call_error)?;
        for (index, argument) in arguments.iter().enumerate() {
            let view = self.make_view(argument).map_err(|status| Error::Argument {
                function: function.to_owned(),
                index,
                input: match argument {
                    Argument::Tensor(tensor) => format!("{tensor:?}"),
                    Argument::Text(text) => (*text).to_owned(),
                },
                source: status.into(),
            })?;
            // SAFETY: list and view are live; the list takes its own reference.
            sys::check(unsafe { sys::xplug_iree_list_push_buffer_view(inputs.as_ptr(), view.as_ptr()) })
                .map_err(call_error)?;
        }
        let outputs = new_list(4, allocator).map_err(call_error)?;
        // SAFETY: context, function, and both lists are live; a NULL policy
        // is IREE's default.
        sys::check(unsafe {
            iree::iree_vm_invoke(
                self.context.as_ptr(),
                resolved,
                0,
                std::ptr::null(),
                inputs.as_ptr(),
                outputs.as_ptr(),
                allocator,
            )
        })
        .map_err(call_error)?;
        Ok(CallResults { list: outputs, device: self.device.clone(), function: function.to_owned() })
    }

    fn resolve_function(&self, function: &str) -> Result<iree::iree_vm_function_t, Error> {
        let full = if function.contains('.') {
            function.to_owned()
        } else {
            format!("{}.{function}", self.module.name())
        };
        let mut resolved = iree::iree_vm_function_t::default();
        // SAFETY: the context is live; the name view is valid for the call.
        let status = unsafe {
            iree::iree_vm_context_resolve_function(
                self.context.as_ptr(),
                sys::string_view(full.as_bytes()),
                &mut resolved,
            )
        };
        match sys::check(status) {
            Ok(()) => Ok(resolved),
            Err(_) => {
                let exported = self.module.functions();
                let bare = function.rsplit('.').next().unwrap_or(function);
                Err(Error::NoSuchFunction {
                    module: self.module.name().to_owned(),
                    function: function.to_owned(),
                    suggestion: xplug_manager::suggest::closest(bare, &exported).map(str::to_owned),
                })
            }
        }
    }

    fn make_view(&self, argument: &Argument<'_>) -> Result<sys::BufferView, sys::Status> {
        let device = self.device.inner.raw.as_ptr();
        match argument {
            Argument::Tensor(tensor) => {
                let shape: &[iree::iree_hal_dim_t] = tensor.shape();
                sys::create(
                    // SAFETY: device is live; shape and data are valid for
                    // the call and IREE copies the data.
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
                |out| unsafe {
                    sys::xplug_iree_buffer_view_parse(device, text.as_ptr().cast(), text.len(), out)
                },
                sys::BufferView::from_raw,
            ),
        }
    }
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
