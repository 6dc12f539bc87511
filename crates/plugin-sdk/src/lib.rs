//! Write IREE executable import plugins in safe Rust.
//!
//! A plugin is an ordinary Rust library crate. The [`plugin`] attribute on a
//! module turns the functions marked `#[import("symbol")]` inside it into a
//! plugin that speaks IREE's plugin ABI v0: it generates the header, the
//! `load`/`unload`/`resolve` entry points, one `extern "C"` trampoline per
//! import and a symbol table sorted at compile time. The author writes no
//! `unsafe`, no `extern "C"` and no `#[no_mangle]`.
//!
//! ```
//! use xplug_sdk::{Environment, Error, ImportError, ImportArgs, LoadParams, PluginState};
//!
//! /// What the executable passes to `scale_f32` (the C struct it was
//! /// compiled against).
//! #[derive(ImportArgs)]
//! #[repr(C)]
//! pub struct ScaleArgs {
//!     pub value: f32,
//!     pub result: f32,
//! }
//!
//! /// Created by `load`, shared by every import call, dropped by `unload`.
//! pub struct Scale {
//!     factor: f32,
//! }
//!
//! impl PluginState for Scale {
//!     fn load(_env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, Error> {
//!         Ok(Self { factor: params.parse("factor")?.unwrap_or(2.0) })
//!     }
//! }
//!
//! #[xplug_sdk::plugin(name = "doc_scale", description = "scales a float", state = Scale)]
//! mod plugin {
//!     use super::*;
//!
//!     #[import("scale_f32")]
//!     fn scale(args: &mut ScaleArgs, state: &Scale) -> Result<(), ImportError> {
//!         args.result = args.value * state.factor;
//!         Ok(())
//!     }
//! }
//!
//! fn main() {
//!     // The generated module describes the plugin to Rust code:
//!     assert_eq!(plugin::PLUGIN.name(), "doc_scale");
//!     assert_eq!(plugin::PLUGIN.symbols(), ["scale_f32"]);
//! }
//! ```
//!
//! # The `#[plugin]` attribute
//!
//! `#[xplug_sdk::plugin(name = "...", description = "...", features(standalone), state = Type, sanitizer = "none")]`
//! on an inline `mod`:
//!
//! * `name` (required) and `description` (optional) go into the header;
//! * `features(standalone)` declares the `STANDALONE` feature: the plugin
//!   promises to use nothing but the host allocator (no system calls, no
//!   TLS, no writable globals), as an embedded-ELF loader requires.
//!   `full_status` is refused: SDK plugins return plain status codes;
//! * `state = Type` (optional): a [`PluginState`] created by `load`, passed
//!   by reference to the imports that take a second parameter, dropped by
//!   `unload`. It lives in a host allocation, so the host accounts for it.
//!   Without `state`, imports take only their args and `self` is NULL;
//! * `sanitizer = "address" | "memory" | "thread" | "undefined" | "none"`
//!   (optional, default `none`). Stable Rust cannot tell which sanitizer a
//!   crate is built with (`cfg(sanitize)` is nightly-only), so the header
//!   says NONE unless you set this when building with `-Zsanitizer`; a host
//!   refuses a plugin whose sanitizer differs from its own.
//!
//! * `params(name: type [= default] "description", ...)` (optional): the
//!   load parameters the plugin takes. `type` is one of `str`, `bool`,
//!   `i32`, `i64`, `u32`, `u64`, `usize`, `f32`, `f64` ([`ParamKind`]); a
//!   default is a literal of that type, checked at compile time. A plugin
//!   that declares its parameters (even `params()`, "none"):
//!   - exports them as `xplug_plugin_params` (see below), so `xplug
//!     inspect` lists them;
//!   - refuses in `load`, before [`PluginState::load`] runs, any key it does
//!     not declare ([`Error::UnknownParam`], naming the closest declared
//!     key: `multplier=3` → "did you mean `multiplier`?") and any value
//!     not of the declared type ([`Error::InvalidParam`]);
//!   - sees the declared default for an absent key in [`LoadParams::get`]
//!     and friends.
//!
//!   Values are read with [`LoadParams::parse`] as the declared type's
//!   Rust type (`bool`, `u32`, `f32`, `&str`, ...: [`FromParam`]). The
//!   host's check before `load`, the check in `load` and `parse` all use
//!   one parser, [`ParamKind::parse`], so a value that passes the checks
//!   is read as the same value (`verbose=1` is `true` for a `bool`).
//!
//!   Without `params`, every key reaches [`PluginState::load`] unchecked.
//!
//! Paths in the attribute (the state type) and in the module resolve inside
//! the module, so start it with `use super::*;`.
//!
//! Inside the module, each `#[import]` / `#[import("symbol")]` function
//! (the symbol defaults to the function's name) has the shape
//! `fn(args: &mut P) -> R` or `fn(args: &mut P, state: &State) -> R`,
//! where `P` implements [`ImportArgs`] (derive it on a `#[repr(C)]`
//! struct, see [Args](#args)) and `R` is `Result<(), ImportError>`,
//! `i32` (0 = success) or `()` (see [`ImportReturn`]). Duplicate symbols, a
//! args type without `#[repr(C)]` and any other signature are compile
//! errors that say what to write instead.
//!
//! # Args
//!
//! An import's args struct is memory the executable wrote, from C: any
//! bytes its C declaration allows. `#[derive(ImportArgs)]` therefore
//! accepts only a `#[repr(C)]`, non-generic struct whose every field is
//! [`AnyBitPattern`], valid whatever bytes it holds:
//!
//! | C field | Rust field |
//! |---|---|
//! | integers, `size_t`, `float`, `double` | `u8` … `u64`, `i8` … `i64`, `usize`, `f32`, `f64` |
//! | `bool`, an `int` flag | `u8`, `u32` / `i32` (test with `!= 0`) |
//! | an `enum` | its integer type (`u32`), compared with constants |
//! | `T*`, `const T*` | `*mut T`, `*const T`, [`BufferMut<T>`], [`Buffer<T>`], `Option<NonNull<T>>` |
//! | a function pointer | `Option<unsafe extern "C" fn(...) -> R>` |
//! | `T x[N]` | `[T; N]` |
//! | a nested struct | another `#[derive(ImportArgs)]` struct |
//! | a string | [`Buffer<u8>`] plus a length field, or `*const c_char` |
//!
//! `bool`, `char`, enums, references, `NonNull<T>`, `String`, `Vec`, `Box`
//! and the like are refused at compile time with an error at the field that
//! says what to write instead; a field of any other type compiles only if it
//! implements [`AnyBitPattern`] (an `unsafe` trait: implementing it by hand
//! is a promise the derive cannot check).
//!
//! **Padding** between or after fields is allowed, as C compilers insert it
//! (IREE's sample `params_t` has four bytes of it on 64-bit targets). Padding
//! is never read as a value: the derive offers no byte view of the struct,
//! and a field read only reads that field's bytes. The one consequence to
//! know: assigning a whole struct (`*args = Args { .. }`) may leave the
//! padding bytes of the caller's block undefined, which C callers never
//! observe; a Rust caller that reads its args block back as raw bytes
//! should have the import assign field by field, or declare the padding as
//! explicit fields (`_pad: [u8; 4]`).
//!
//! The macro adds to the module:
//! * `pub const PLUGIN: xplug_sdk::PluginDescriptor` (name, symbols, the query
//!   function) for Rust code and tests;
//! * by default, the C symbols `iree_hal_executable_plugin_query`,
//!   `xplug_plugin_exports`, `xplug_plugin_load_error` (and
//!   `xplug_plugin_params` with `params(...)`); with the plugin crate's `static` feature on
//!   (or in a test build), a registration in
//!   `xplug_providers::static_plugins()` instead (see
//!   [below](#shared-library-and-static-linking-from-one-crate)).
//!
//! # How the generated plugin resolves
//!
//! The macro emits two static structures over the exports and no search
//! code of its own: the symbol table sorted by byte value (each name stored
//! with its length, so comparing never scans for a NUL), and an
//! open-addressing hash index over it (power-of-two length at least twice
//! the number of exports, 16-bit slots holding table index + 1 for up to
//! 65 535 exports, 32-bit beyond; linear probing from
//! [`abi::name_hash`]`(name)`, the same function at compile and at run
//! time). One generic resolver, shared by every plugin, measures each
//! requested name once and then:
//!
//! * for a request that is sparse relative to the table (fewer names than
//!   half the exports) looks every name up in the hash index: one hash and
//!   usually one comparison, in any order;
//! * otherwise walks the sorted table with [`abi::gallop_search`], starting
//!   just past where the previous name landed, so a request sorted by bare
//!   name (as IREE's compiler emits it) is a single merge pass.
//!
//! Either way the resolution rules (`docs/src/reference/resolution.md#provider-rules`)
//! hold for any request: the `?` prefix is
//! stripped before matching, already-filled slots are skipped and never
//! overwritten, duplicates and unsorted names are found, an unresolved
//! optional name sets `MISSING_OPTIONAL`, an unresolved required one makes
//! the call return `NOT_FOUND`, and [`PluginState::provides`] can decline
//! any export.
//!
//! # Shared library and static linking from one crate
//!
//! Declare the plugin crate as
//!
//! ```toml
//! [lib]
//! crate-type = ["cdylib", "rlib"]
//!
//! [features]
//! # Link the plugin into a binary instead of exporting C entry points.
//! static = []
//! ```
//!
//! and `cargo build --release` makes `target/release/lib<crate>.so`, which
//! IREE's runtime (`--executable_plugin=...`) and xplug's manager load: by
//! default the macro exports the C entry points. (`xplug new NAME`
//! scaffolds such a crate.)
//!
//! **Linking into a runtime is the opt-in.** A runtime that links the
//! plugin crate depends on it with `features = ["static"]`: then nothing
//! global is exported and the plugin registers itself with `inventory`
//! (through `xplug_abi::StaticPluginRegistration`; the plugin does not
//! depend on the host crates), so the binary finds it in
//! `xplug_providers::static_plugins()`. Test builds (`cfg(test)`) behave as
//! if `static` were on. Two plugins linked into one binary without
//! `static` would both define the C entry points: the link fails with a
//! duplicate symbol named
//! `xplug_two_plugins_export_c_entry_points__enable_the_static_feature_of_plugins_linked_into_a_binary`.
//! A crate that never links statically need not declare the feature.
//!
//! **The linker trap:** the registration is a constructor in the plugin's
//! object code, and rustc links a dependency only when the binary refers to
//! it. A binary that lists the plugin in `Cargo.toml` but never names it in
//! code silently loses the registration. Name the crate once:
//!
//! ```ignore
//! use sample_static as _; // keep the plugin's static registration
//! ```
//!
//! (`plugins/static_runtime` shows both the fix and the trap.)
//!
//! # `xplug_plugin_exports`
//!
//! Shared-library builds also export, for tools,
//!
//! ```c
//! const char* const* xplug_plugin_exports(size_t* out_count);
//! ```
//!
//! returning the plugin's import names (static, NUL-terminated, sorted by
//! byte value, without `?`) and writing their number to `*out_count` when
//! `out_count` is not NULL. The array lives as long as the library is loaded.
//!
//! # `xplug_plugin_params`
//!
//! A plugin with `params(...)` also exports
//!
//! ```c
//! const xplug_param_decl_t* xplug_plugin_params(size_t* out_count);
//! ```
//!
//! returning its declared parameters ([`abi::ParamDecl`]: name, type
//! name, default or NULL, description; static NUL-terminated strings) and
//! writing their number to `*out_count` when `out_count` is not NULL. A
//! host that finds it may refuse undeclared keys before loading.
//!
//! # Panics and errors
//!
//! With the default `std` feature, a panic in `load`, `resolve`
//! ([`PluginState::provides`]) or an import is caught before it reaches the
//! host: `load`/`resolve` return `INTERNAL`, an import returns
//! [`ImportError::INTERNAL`] (13), and one line naming the plugin, the
//! entry point (the import's symbol), the panic's location and message is
//! printed to stderr (the standard library's own panic message is held back
//! for these). Repeated panics of one entry point are rate-limited: printed
//! at the 1st, 2nd, 4th, 8th, ... occurrence, with the count.
//!
//! A `load` error is returned as its [`Error::code`], printed to stderr
//! with the plugin's name, and kept (per thread, until the next `load`) for
//! the optional export
//!
//! ```c
//! const char* xplug_plugin_load_error(void);
//! ```
//!
//! which xplug's host reads after a refused `load`, so the plugin's own
//! explanation reaches the error (`xplug --json` prints it as a cause).
//! xplug's host also calls it once before `load`, which tells the plugin
//! that the host shows these messages: from then on they are no longer
//! printed to stderr, so each appears once. A host that never calls it
//! (IREE's runtime) still gets the printed line.
//!
//! # `no_std` and `.sos` files
//!
//! The crate is `#![no_std]` (+ `alloc`). Turn off the default features
//! (`std`, `static-registration`) for a plugin that must not link the
//! standard library; panics then abort instead of being reported, static
//! registration is unavailable, and the message of a refused `load` is kept
//! in one fixed 512-byte buffer (the latest in the process) for
//! `xplug_plugin_load_error`.
//!
//! The `standalone` feature (without `std`) is what a plugin linked as a
//! standalone embedded ELF file (`.sos`, `xplug build --sos`) needs: a
//! global allocator that allocates through the host allocator of the latest
//! `load` (so `Box`, `Vec` and `String` work and the host accounts for
//! every byte), a panic handler that executes a trap instruction, and the C
//! memory functions (`xplug-sdk-builtins`). A plugin crate turns it on from
//! its own `sos` feature:
//!
//! ```toml
//! [features]
//! default = ["std"]
//! std = ["xplug-sdk/std", "xplug-sdk/static-registration"]
//! sos = ["xplug-sdk/standalone"]
//!
//! [dependencies]
//! xplug-sdk = { path = "...", default-features = false }
//! ```
//!
//! The SDK's load path allocates nothing and links no unwinding code: a
//! load-parameter error carries its key and value as [`ParamText`] (fixed
//! size), so a bad parameter in a `.sos` is a refused `load` with its
//! message, not a trap. The precompiled standard library is built with
//! unwinding, so its formatting into a `String` (`format!`, `to_string`)
//! links `_Unwind_Resume`, which a `.sos` cannot have (the link fails and
//! `xplug build` says so): give [`Error::custom`] a `&'static str`.
#![no_std]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

// Lets the macros' `::xplug_sdk` paths work inside this crate's own tests.
extern crate self as xplug_sdk;

mod allocator;
mod bits;
mod buffer;
mod cheader;
mod error;
mod ffi;
mod linked;
mod param_decl;
mod params;
mod resolve;
#[cfg(feature = "standalone")]
mod standalone;

#[cfg(all(feature = "standalone", feature = "std"))]
compile_error!(
    "xplug-sdk's `standalone` feature (a no_std `.sos` build) excludes `std`: build the plugin with \
     `--no-default-features --features <its standalone feature>` (`xplug build --sos` does)"
);

// The C memory functions of a standalone build.
#[cfg(feature = "standalone")]
extern crate xplug_sdk_builtins as _;

use alloc::string::String;
use core::ffi::c_int;
use core::fmt;
#[cfg(doc)]
use core::ptr::NonNull;

pub use allocator::{HOST_ALIGNMENT, HostAllocator, HostBox};
pub use bits::AnyBitPattern;
pub use buffer::{Buffer, BufferMut};
pub use error::{Error, ImportError, ParamText};
pub use param_decl::TypedParamDecl;
pub use params::{Environment, LoadParams, Param};
pub use xplug_abi as abi;
pub use xplug_abi::{FromParam, ParamKind, ParamValue};
pub use xplug_sdk_macros::{ImportArgs, plugin};

/// A plugin's state: created by `load`, shared by reference with every
/// import that asks for it, dropped by `unload`.
///
/// Imports run concurrently on any thread, hence `Send + Sync`; use atomics
/// or locks for anything mutable. The state is `'static`, so it cannot keep
/// borrows of the load environment or parameters: copy what you need.
pub trait PluginState: Sized + Send + Sync + 'static {
    /// Builds the state from the host environment and the load parameters.
    ///
    /// # Errors
    /// Any [`Error`]; the host receives [`Error::code`] and the plugin is
    /// not loaded (`unload` is not called by a conforming host).
    fn load(env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, Error>;

    /// Whether this instance offers `symbol` (one of the plugin's import
    /// names). Called during resolve for each requested name the plugin
    /// exports; the default offers everything. Use it to switch imports off
    /// by load parameter or CPU feature: a declined name is resolved by the
    /// next provider.
    fn provides(&self, symbol: &str) -> bool {
        let _ = symbol;
        true
    }
}

/// The state of a plugin without state.
impl PluginState for () {
    fn load(_env: &Environment<'_>, _params: &LoadParams<'_>) -> Result<Self, Error> {
        Ok(())
    }
}

/// A type an import receives from the executable through `void* args`.
///
/// Implement it with `#[derive(ImportArgs)]`, which checks `#[repr(C)]`
/// and that every field is [`AnyBitPattern`] (see the crate documentation,
/// "Args").
///
/// # Safety
/// The type's layout must be exactly the C struct the executable passes
/// (hence `#[repr(C)]`), and every bit pattern the executable may write in
/// its fields must be a valid value of it ([`AnyBitPattern`]: raw pointers
/// and plain numbers, not references, `bool` or enums).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the args type of an import",
    label = "does not implement `xplug_sdk::ImportArgs`",
    note = "declare the struct with `#[derive(xplug_sdk::ImportArgs)]` and `#[repr(C)]`, matching the C struct the executable passes"
)]
pub unsafe trait ImportArgs: AnyBitPattern + 'static {
    /// Appends the C declaration of this struct (and of the args structs
    /// it nests) to `out`; generated by the derive, empty for a hand
    /// implementation. See [`PluginDescriptor::c_header`].
    #[doc(hidden)]
    fn __c_declarations(out: &mut __private::CDeclarations) {
        let _ = out;
    }

    /// The struct's name and fields (name, type, offset, size) for the
    /// `xplug_import_layouts` export; generated by the derive, `None` for a
    /// hand implementation (tools then know only the struct's size).
    #[doc(hidden)]
    const __LAYOUT: Option<__private::ArgsLayout> = None;
}

/// What an import function may return.
///
/// `Ok(())`, `0` and `()` mean success; an [`ImportError`] or a non-zero
/// `i32` is returned to the executable as the failure code.
#[diagnostic::on_unimplemented(
    message = "an import cannot return `{Self}`",
    label = "return `Result<(), xplug_sdk::ImportError>`, `i32` or `()` here",
    note = "the executable receives an `int`: 0 for success, anything else for failure"
)]
pub trait ImportReturn {
    /// The `int` the executable receives.
    fn into_code(self) -> c_int;
}

impl ImportReturn for Result<(), ImportError> {
    fn into_code(self) -> c_int {
        match self {
            Ok(()) => 0,
            Err(error) => error.code(),
        }
    }
}

impl ImportReturn for i32 {
    fn into_code(self) -> c_int {
        self
    }
}

impl ImportReturn for () {
    fn into_code(self) -> c_int {
        0
    }
}

/// What Rust code can know of a plugin compiled into it: generated as
/// `PLUGIN` in each `#[plugin]` module.
///
/// Its name and description (as in the v0 header), its import symbols and
/// its v0 query function, which a host turns into a loaded plugin.
#[derive(Clone, Copy)]
pub struct PluginDescriptor {
    name: &'static str,
    description: &'static str,
    query: abi::QueryFn,
    symbols: &'static [&'static str],
    param_decls: Option<&'static [TypedParamDecl]>,
    c_declarations: fn(&mut __private::CDeclarations),
}

impl PluginDescriptor {
    /// A C header declaring the args struct of every import (and the
    /// structs they nest), so C hosts and kernels share the Rust
    /// definitions: `typedef struct Name { ... } Name;` per struct, with C
    /// types for the fields (`f32` → `float`, `usize` → `size_t`,
    /// `Buffer<f32>` → `const float*`, `[u32; 4]` → `uint32_t x[4]`, ...).
    ///
    /// ```
    /// #[derive(xplug_sdk::ImportArgs)]
    /// #[repr(C)]
    /// pub struct AxpyArgs {
    ///     pub x: xplug_sdk::Buffer<f32>,
    ///     pub y: xplug_sdk::BufferMut<f32>,
    ///     pub n: usize,
    ///     pub a: f32,
    /// }
    ///
    /// #[xplug_sdk::plugin(name = "doc_axpy")]
    /// mod plugin {
    ///     use super::*;
    ///     #[import]
    ///     fn axpy(_args: &mut AxpyArgs) {}
    /// }
    ///
    /// fn main() {
    ///     let header = plugin::PLUGIN.c_header();
    ///     assert!(header.contains(
    ///         "typedef struct AxpyArgs {\n  const float* x;\n  float* y;\n  size_t n;\n  float a;\n} AxpyArgs;"
    ///     ));
    ///     assert!(header.contains("/* import `axpy` takes a `AxpyArgs*` */"));
    /// }
    /// ```
    #[must_use]
    pub fn c_header(&self) -> String {
        let mut out = __private::CDeclarations::new();
        (self.c_declarations)(&mut out);
        out.header(self.name)
    }

    /// C declarations that compile only when a C compiler lays out the
    /// structs of [`Self::c_header`] exactly as Rust does on this target
    /// (each size and field offset); compile them after including the
    /// header to check it.
    #[must_use]
    pub fn c_layout_asserts(&self) -> String {
        let mut out = __private::CDeclarations::new();
        (self.c_declarations)(&mut out);
        out.layout_checks()
    }

    /// The load parameters the plugin declares (`params(...)`), or `None`
    /// when it does not declare them (and so accepts any key).
    #[must_use]
    pub const fn param_decls(&self) -> Option<&'static [TypedParamDecl]> {
        self.param_decls
    }

    /// The plugin's name, as in its header.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The plugin's description, as in its header.
    #[must_use]
    pub const fn description(&self) -> &'static str {
        self.description
    }

    /// The plugin's v0 query function; hand it to a host that loads plugins
    /// linked into the binary (such as `xplug-providers`).
    #[must_use]
    pub const fn query(&self) -> abi::QueryFn {
        self.query
    }

    /// The import names, sorted by byte value.
    #[must_use]
    pub const fn symbols(&self) -> &'static [&'static str] {
        self.symbols
    }
}

impl fmt::Debug for PluginDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginDescriptor")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("symbols", &self.symbols)
            .field("param_decls", &self.param_decls)
            .finish_non_exhaustive()
    }
}

/// Implementation details the macros expand to. Not a public API: anything
/// here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use alloc::format;
    pub use alloc::string::String;
    pub use alloc::vec::Vec;

    pub use crate::bits::assert_any_bit_pattern;
    pub use crate::cheader::{CDeclDispatch, CDeclarations, DeclareArgs, DeclareNothing};
    pub use crate::ffi::*;
    pub use crate::linked::{linked_record, zeroed};
    #[cfg(feature = "static-registration")]
    pub use xplug_abi::inventory;
}

/// Registers a generated plugin definition for `static_plugins()`.
#[cfg(feature = "static-registration")]
#[doc(hidden)]
#[macro_export]
macro_rules! __register_static {
    ($def:ty) => {
        $crate::__private::inventory::submit! {
            $crate::__private::registration::<$def>()
        }
    };
}

/// Static registration is off (`static-registration` feature disabled).
#[cfg(not(feature = "static-registration"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __register_static {
    ($def:ty) => {};
}
