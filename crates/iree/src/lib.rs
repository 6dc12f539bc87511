//! IREE programs on xplug: IREE's own runtime with xplug's [`Manager`] as
//! the import provider of every executable it loads.
//!
//! The runtime is IREE's, compiled from the sources the `eerie-sys` crate
//! bundles: its VM runs the compiled `.vmfb` program, its HAL's `local-sync`
//! or `local-task` device runs the dispatches, and its embedded-ELF and
//! system-library loaders load the program's executables. Nothing of that
//! is re-implemented here. What this crate changes is where the
//! executables' imports come from: each [`Device`] gives both of its
//! loaders an import provider backed by an `Manager`, so a program's
//! kernels call functions from any plugin xplug can hold (Rust plugins
//! linked into the binary, shared libraries, `.sos` files, plain provider
//! tables), with xplug's checks, load parameters and errors. IREE's own
//! plugin manager is not involved, and neither is IREE's flag parsing.
//!
//! A program whose kernel imports `simple_mul_workgroup`, run on the
//! example plugin `sample_system`, linked into the binary (its `static`
//! feature), so loading it takes no `unsafe`:
//!
//! ```
//! use xplug_iree::{DeviceKind, Module, Report, Runtime, Session, TensorView};
//! use xplug_manager::Manager;
//! # use sample_system as _;
//!
//! fn main() -> Result<(), Report> {
//!     let manager = Manager::new();
//!     manager.load_static("sample_system", [("multiplier", "1")])?;
//!     let runtime = Runtime::new()?;
//!     let device = runtime.device(DeviceKind::LocalSync, manager)?;
//! #   // `tests/iree/mul_call.mlir`, compiled by the pinned `iree-compile`.
//! #   let root = xplug_fixtures::workspace_root();
//! #   let tools = xplug_fixtures::iree_e2e::toolchain(&root).expect("IREE's pinned tools");
//! #   let work = tempfile::tempdir().expect("a scratch directory");
//! #   let mul_vmfb = xplug_fixtures::iree_e2e::compile(&root, &tools, xplug_fixtures::iree_e2e::MUL_CALL, work.path())
//! #       .expect("mul_call.mlir compiles");
//!     let module = Module::from_file(&runtime, mul_vmfb)?;
//!     let session = Session::new(&device, &module)?; // executables load, imports resolve
//!     let (a, b) = ([1.0f32, 2.0], [3.0f32, 4.0]);
//!     let call = session.prepare("mul", [TensorView::new(&[2], &a)?, TensorView::new(&[2], &b)?])?;
//!     let results = call.invoke()?; // results stay on the device until read
//!     assert_eq!(results.tensor(0)?.as_slice::<f32>()?, [3.0, 8.0]);
//!     Ok(())
//! }
//! ```
//!
//! A plugin in a shared library is loaded with
//! `unsafe { Manager::from_specs(["path/libkernels.so?key=value"]) }` instead:
//! loading runs its code, which the caller vouches for.
//!
//! Layers: [`Runtime`] (IREE's VM instance) → [`Device`] (a HAL device whose
//! loaders resolve through a manager) → [`Module`] (a loaded `.vmfb`) →
//! [`Session`] (the module on a device, callable) → [`Call`] (one call of a
//! function, its arguments made: [`Session::prepare`], the one way to call)
//! → [`CallResults`] (on the device until read). One manager can serve
//! several devices, and providers registered with it after a device was
//! made serve executables loaded later. How the provider answers IREE is in
//! [`provider`]; the contract is in `docs/src/embedding/iree.md`.
//!
//! # Tensors
//! [`Tensor`] owns its bytes, [`TensorView`] borrows them, and both are
//! made from and read as Rust slices of any [`Element`] type (integers,
//! `f32`, `f64`, `bool`, and [`half`]'s `f16` and `bf16`). Calls take views,
//! so a slice reaches the device with no copy on the Rust side;
//! [`CallResults::tensor`] reads a result in place where the device keeps
//! it in host memory (IREE's local devices do), [`CallResults::value`]
//! copies it.
//!
//! # Errors
//! Every error says what failed and keeps the reason (IREE's status, the
//! manager's missing imports, the operating system's error) as its
//! [`source`](std::error::Error::source). [`Report`], which `?` makes from
//! any of them, prints the whole chain; it is what `main` should return.
//! With anyhow, `?` converts these errors into `anyhow::Error`, whose
//! `{:#}` and `{:?}` print the same chain.
//!
//! # Building
//! Prerequisites: the Rust toolchain, a C and C++ compiler, and either
//! CMake ≥ 3.26 on `PATH` (and Ninja, when present, else Make) or Python 3
//! with `venv` and pip (Debian: `apt-get install python3-venv`) and access
//! to PyPI. No libclang and no
//! configuration: this crate's build script builds IREE's runtime from the
//! sources the `eerie-sys` package carries, with CMake and Ninja from
//! `PATH` or pinned PyPI wheels it installs once into `xplug-tools/` in the
//! target directory, and the Rust declarations of IREE's API are committed.
//! A missing prerequisite stops the build before the long step, naming the
//! command that installs it. Linux only (`docs/src/embedding/iree.md`, "Building
//! IREE's runtime").

mod archive;
mod builder;
mod call;
mod compare;
mod element;
mod error;
pub mod files;
mod flags;
mod input;
mod mapped;
mod module;
mod parameters;
pub mod provider;
mod results;
mod runtime;
mod session;
mod sys;
mod tensor;

pub use builder::SessionBuilder;
pub use call::Call;
pub use compare::{Comparison, Tolerance};
pub use element::ElementType;
pub use error::{Error, IREE_RUNTIME_VERSION, IreeStatus};
pub use flags::set_iree_flags;
/// The `half` crate, whose `f16` and `bf16` are IREE's 16-bit float elements
/// ([`Element`]).
pub use half;
pub use input::Argument;
pub use mapped::MappedTensor;
pub use module::{Function, Module};
pub use parameters::ParameterArchiveMode;
pub use provider::{ExecutableImports, ImportRecord, ImportRecording, IreeImportProvider};
pub use results::CallResults;
pub use runtime::{Device, DeviceBuilder, DeviceKind, Runtime};
pub use session::Session;
pub use tensor::{DEBUG_VALUES, Element, Tensor, TensorView, Value};
pub use xplug_manager::{CImportProvider, CResolveFn};
pub use xplug_manager::{ErrorChain, Manager, Report};
pub use xplug_profile::{
    CallSlice, HistogramBucket, ImportCallStats, ImportProfile, LatencyHistogram, ProfileOptions,
    ProfiledThread,
};
