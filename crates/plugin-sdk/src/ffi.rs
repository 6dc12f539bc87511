//! The C side of a generated plugin: `load`, `unload`, `resolve`, the import
//! trampoline and the query function, generic over the plugin definition the
//! `#[plugin]` macro emits. Reached from generated code as
//! `xplug_sdk::__private`; not a public API.
//!
//! Every entry point runs the plugin author's code under [`guard`], which
//! (with the `std` feature) catches a panic and turns it into a status or a
//! non-zero import code, so no unwind ever crosses `extern "C"`. Without
//! `std`, a panic reaching an `extern "C"` frame aborts the process (Rust's
//! rule since 1.81), which is still sound.

use core::cell::Cell;
use core::ffi::{CStr, c_char, c_int, c_void};
use core::fmt;
use core::marker::PhantomData;
use core::mem::{needs_drop, size_of};
use core::ptr::{self, NonNull};

use xplug_abi::{
    EnvironmentV0, Features, FieldLayout, Header, ImportFn, ImportLayout, ParamDecl, PluginV0, Resolution,
    ResolveParamsV0, Sanitizer, Status, StatusCode, StringPair, Version,
};

pub use crate::resolve::HashIndex;
use crate::resolve::{Exports, resolve_with};
use crate::{
    Environment, HostAllocator, HostBox, ImportArgs, ImportError, LoadParams, PluginDescriptor, PluginState,
    TypedParamDecl,
};

/// What the `#[plugin]` macro generates for one plugin.
///
/// # Safety
/// Implemented only by generated code: `v0()` must be the table built by
/// [`v0_table::<Self>`], `exports()` must be sorted by name with no
/// duplicates and built with [`Export::new`] from imports whose
/// `Import::State` is `Self::State`, `export_names()` must list the same
/// names in the same order, and `hash_index()` must be the index of
/// `exports()` built with `xplug_abi::hash_index_insert` and
/// `xplug_abi::name_hash` over the names (a wrong index makes lookups miss,
/// it is never unsound).
pub unsafe trait PluginDef: 'static {
    /// The state `load` creates and imports receive.
    type State: PluginState;
    /// The plugin's name (as in its header).
    const NAME: &'static str;
    /// The plugin's v0 table.
    fn v0() -> &'static PluginV0;
    /// The export table, sorted by name.
    fn exports() -> &'static [Export];
    /// The export names as C strings, in the same order.
    fn export_names() -> &'static [CName];
    /// The hash index of `exports()`, for sparse requests.
    fn hash_index() -> HashIndex<'static>;
    /// The declared load parameters (`params(...)`), if the plugin
    /// declares them.
    const PARAM_DECLS: Option<&'static [TypedParamDecl]>;
    /// The same declarations as C structs, for `xplug_plugin_params`.
    fn param_decls() -> &'static [CParamDecl];
    /// The args layout of each import, in the order of `exports()`, for
    /// `xplug_import_layouts`.
    fn import_layouts() -> &'static [CImportLayout];
}

/// A declared load parameter as C sees it, shareable in a `static` array.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct CParamDecl(ParamDecl);

// SAFETY: every pointer comes from a `&'static CStr` (see `new`), immutable
// and valid for the whole program.
unsafe impl Sync for CParamDecl {}

impl CParamDecl {
    /// The C declaration of one parameter.
    #[must_use]
    pub const fn new(
        name: &'static CStr,
        kind: &'static CStr,
        default_value: Option<&'static CStr>,
        description: &'static CStr,
    ) -> Self {
        Self(ParamDecl {
            name: name.as_ptr(),
            kind: kind.as_ptr(),
            default_value: match default_value {
                Some(value) => value.as_ptr(),
                None => ptr::null(),
            },
            description: description.as_ptr(),
        })
    }
}

/// `xplug_plugin_params`: the declared load parameters of `D` and their
/// count.
pub extern "C" fn param_decls_list<D: PluginDef>(out_count: Option<&mut usize>) -> *const ParamDecl {
    let decls = D::param_decls();
    if let Some(count) = out_count {
        *count = decls.len();
    }
    decls.as_ptr().cast::<ParamDecl>()
}

/// One field of an args struct as C sees it, shareable in a `static`
/// array (an element of [`ArgsLayout::fields`]).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct CFieldLayout(FieldLayout);

// SAFETY: both pointers come from `&'static CStr`s (see `new`), immutable
// and valid for the whole program.
unsafe impl Sync for CFieldLayout {}

impl CFieldLayout {
    /// The C description of one field.
    #[must_use]
    pub const fn new(name: &'static CStr, type_name: &'static CStr, offset: usize, size: usize) -> Self {
        Self(FieldLayout { name: name.as_ptr(), type_name: type_name.as_ptr(), offset, size })
    }
}

/// What `#[derive(ImportArgs)]` knows of an args struct beyond its size:
/// its name and fields (`ImportArgs::__LAYOUT`).
#[derive(Clone, Copy, Debug)]
pub struct ArgsLayout {
    /// The struct's name.
    pub type_name: &'static CStr,
    /// Its fields in declaration order.
    pub fields: &'static [CFieldLayout],
}

/// One import's args layout as C sees it, shareable in a `static` array
/// handed to `xplug_import_layouts`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct CImportLayout(ImportLayout);

// SAFETY: every pointer comes from a `&'static CStr` or a `&'static` slice
// (see `of`), immutable and valid for the whole program.
unsafe impl Sync for CImportLayout {}

impl CImportLayout {
    /// The layout of import `I`'s args struct, exported as `symbol`: its
    /// size and alignment always, its name and fields when the derive gave
    /// them.
    #[must_use]
    pub const fn of<I: Import>(symbol: &'static CStr) -> Self {
        let (type_name, field_count, fields) = match <I::Args as ImportArgs>::__LAYOUT {
            Some(layout) => (layout.type_name.as_ptr(), layout.fields.len(), layout.fields.as_ptr()),
            None => (ptr::null(), 0, ptr::null()),
        };
        Self(ImportLayout {
            symbol: symbol.as_ptr(),
            type_name,
            size: size_of::<I::Args>(),
            align: core::mem::align_of::<I::Args>(),
            field_count,
            fields: fields.cast::<FieldLayout>(),
        })
    }
}

/// `xplug_import_layouts`: the args layout of each import of `D`, sorted
/// by symbol, and their count.
pub extern "C" fn import_layouts<D: PluginDef>(out_count: Option<&mut usize>) -> *const ImportLayout {
    let layouts = D::import_layouts();
    if let Some(count) = out_count {
        *count = layouts.len();
    }
    layouts.as_ptr().cast::<ImportLayout>()
}

/// One `#[import]` function, as the macro describes it.
pub trait Import: 'static {
    /// The name of the plugin exporting it (for messages).
    const PLUGIN: &'static str;
    /// The symbol it is exported as (for messages).
    const SYMBOL: &'static str;
    /// The args struct the executable passes.
    type Args: ImportArgs;
    /// The plugin's state type.
    type State: PluginState;
    /// Whether the function takes the state (its context is the plugin
    /// state) or not (its context is NULL).
    const USES_STATE: bool;
    /// Calls the author's function; `state` is `None` only when a stateful
    /// import was called without its context.
    fn call(args: &mut Self::Args, state: Option<&Self::State>) -> c_int;
    /// Declares the args struct in C (for `PluginDescriptor::c_header`).
    fn declare_c(out: &mut crate::cheader::CDeclarations) {
        out.import::<Self::Args>(Self::SYMBOL);
    }
}

/// A NUL-terminated export name, shareable in a `static` array handed to C.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct CName(*const c_char);

// SAFETY: the pointer always comes from a `&'static CStr` (see `new`), which
// is immutable and valid for the whole program.
unsafe impl Sync for CName {}

impl CName {
    /// Wraps a static C string.
    #[must_use]
    pub const fn new(name: &'static CStr) -> Self {
        Self(name.as_ptr())
    }
}

/// One entry of a plugin's sorted export table.
///
/// The name is kept as a `&str` (pointer and length, no NUL), so comparing
/// it with a requested name never scans for a terminator; the NUL-terminated
/// copies live in the separate [`CName`] list that `xplug_plugin_exports`
/// hands out.
#[derive(Clone, Copy, Debug)]
pub struct Export {
    symbol: &'static str,
    function: ImportFn,
    uses_state: bool,
}

impl Export {
    /// The entry for import `I`, exported as `symbol`, called through
    /// `function`: the `#[plugin]` macro's per-import wrapper of
    /// [`import_entry::<I>`](import_entry), a function of the plugin crate
    /// named after the import, so debuggers, profilers and crash reports
    /// show the import's name where a shared generic entry would show
    /// `import_entry`.
    #[must_use]
    pub const fn new<I: Import>(symbol: &'static str, function: ImportFn) -> Self {
        Self { symbol, function, uses_state: I::USES_STATE }
    }

    /// The symbol name.
    #[must_use]
    pub const fn symbol(&self) -> &'static str {
        self.symbol
    }

    fn key(&self) -> &[u8] {
        self.symbol.as_bytes()
    }
}

/// The header of a plugin.
#[must_use]
pub const fn header(
    name: &'static CStr,
    description: &'static CStr,
    features: Features,
    sanitizer: Sanitizer,
) -> Header {
    Header {
        version: Version::LATEST,
        name: name.as_ptr(),
        description: description.as_ptr(),
        features,
        sanitizer,
        reserved: [0; 8],
    }
}

/// The v0 table of plugin `D`.
#[must_use]
pub const fn v0_table<D: PluginDef>(header: &'static Header) -> PluginV0 {
    PluginV0 { header, load: Some(load::<D>), unload: Some(unload::<D>), resolve: Some(resolve::<D>) }
}

/// The Rust-side description of plugin `D`.
#[must_use]
pub const fn descriptor<D: PluginDef>(
    description: &'static str,
    symbols: &'static [&'static str],
    c_declarations: fn(&mut crate::cheader::CDeclarations),
) -> PluginDescriptor {
    PluginDescriptor {
        name: D::NAME,
        description,
        query: query::<D>,
        symbols,
        param_decls: D::PARAM_DECLS,
        c_declarations,
    }
}

/// The v0 query function of plugin `D`: its table when the host speaks v0.1
/// or later, else NULL (`docs/src/reference/abi.md#query`).
pub extern "C" fn query<D: PluginDef>(max_version: Version, _reserved: *mut c_void) -> *mut *const Header {
    if max_version >= Version::V0_1 {
        ptr::from_ref(D::v0()).cast_mut().cast::<*const Header>()
    } else {
        ptr::null_mut()
    }
}

/// `xplug_plugin_exports`: the sorted export names of `D` and their count.
pub extern "C" fn export_list<D: PluginDef>(out_count: Option<&mut usize>) -> *const *const c_char {
    let names = D::export_names();
    if let Some(count) = out_count {
        *count = names.len();
    }
    names.as_ptr().cast::<*const c_char>()
}

/// The registration of `D` for the static-plugin list, carrying what its
/// shared library would export besides the query function (the export
/// list, the declared parameters when it declares them, the import layouts
/// and the load-error message), so a host gives the linked-in plugin the
/// diagnostics of its `.so`.
#[cfg(feature = "static-registration")]
#[must_use]
pub const fn registration<D: PluginDef>() -> xplug_abi::StaticPluginRegistration {
    let optional = xplug_abi::LinkedOptionalExports {
        exports: Some(linked::exports::<D>),
        params: if D::PARAM_DECLS.is_some() { Some(linked::params::<D>) } else { None },
        import_layouts: Some(linked::import_layouts::<D>),
        load_error: Some(last_load_error),
    };
    // SAFETY: `query::<D>` returns NULL or `D::v0()`, the table built by
    // `v0_table::<D>` (guaranteed by `PluginDef`'s contract): an immutable
    // static whose entry points are the functions of this module, which obey
    // the v0 ABI from any thread for the life of the program. The optional
    // functions are the ones the C exports of a shared library of `D` call
    // (`export_list`, `param_decls_list`, `import_layouts`,
    // `last_load_error`), over `'static` data, with the same contracts.
    unsafe { xplug_abi::StaticPluginRegistration::new(D::NAME, query::<D>).with_optional_exports(optional) }
}

/// The optional exports of a linked-in plugin, with the exact C function
/// types of `xplug-abi` (the shared-library exports take the count as
/// `Option<&mut usize>`, the same ABI but another Rust type).
#[cfg(feature = "static-registration")]
mod linked {
    use core::ffi::c_char;

    use xplug_abi::{ImportLayout, ParamDecl};

    use super::PluginDef;

    /// `xplug_plugin_exports` of `D`.
    pub(super) unsafe extern "C" fn exports<D: PluginDef>(out_count: *mut usize) -> *const *const c_char {
        // SAFETY: the export's contract: `out_count` is NULL or writable.
        super::export_list::<D>(unsafe { out_count.as_mut() })
    }

    /// `xplug_plugin_params` of `D`.
    pub(super) unsafe extern "C" fn params<D: PluginDef>(out_count: *mut usize) -> *const ParamDecl {
        // SAFETY: as above.
        super::param_decls_list::<D>(unsafe { out_count.as_mut() })
    }

    /// `xplug_import_layouts` of `D`.
    pub(super) unsafe extern "C" fn import_layouts<D: PluginDef>(
        out_count: *mut usize,
    ) -> *const ImportLayout {
        // SAFETY: as above.
        super::import_layouts::<D>(unsafe { out_count.as_mut() })
    }
}

/// How the state of a loaded plugin is kept: in a host allocation together
/// with the allocator that frees it.
struct Loaded<S> {
    allocator: HostAllocator,
    state: S,
}

/// A state that is zero-sized and has no destructor is never allocated: the
/// plugin's `self` is NULL, as for IREE's stateless samples.
const fn inline_state<S>() -> bool {
    size_of::<S>() == 0 && !needs_drop::<S>()
}

/// The state behind a plugin `self` / import context pointer.
///
/// # Safety
/// `context` is NULL or a pointer produced by `load` for state type `S`
/// that has not been unloaded.
unsafe fn state_ref<'a, S: PluginState>(context: *mut c_void) -> Option<&'a S> {
    if inline_state::<S>() {
        // SAFETY: `S` is zero-sized, so any aligned non-NULL pointer is
        // valid for a shared reference; it has no destructor, so the value
        // `load` produced and forgot needs no other bookkeeping.
        return Some(unsafe { NonNull::<S>::dangling().as_ref() });
    }
    let loaded = NonNull::new(context.cast::<Loaded<S>>())?;
    // SAFETY: per the contract, `loaded` is the live `Loaded<S>` `load`
    // created; only shared references to it exist after `load`.
    Some(unsafe { &loaded.as_ref().state })
}

/// Runs `body`, catching a panic (with `std`) and reporting it as
/// `on_panic`; `what` names the entry point for the message.
///
/// `what` is only formatted when a panic is reported, so passing it costs
/// nothing on the import call path.
fn guard<R>(plugin: &str, what: impl fmt::Display, on_panic: R, body: impl FnOnce() -> R) -> R {
    #[cfg(feature = "std")]
    {
        panic_log::install_hook();
        match panic_log::catch_inside(body) {
            Ok(value) => value,
            Err(payload) => {
                let what = std::format!("{what}");
                if let Some(count) = panic_log::count(plugin, &what) {
                    std::eprintln!("{}", panic_report(plugin, &what, payload.as_ref(), count));
                }
                on_panic
            }
        }
    }
    #[cfg(not(feature = "std"))]
    {
        let _ = (plugin, what, on_panic);
        body()
    }
}

/// Displays as "import `symbol`" for import `I`.
struct ImportName<I>(PhantomData<I>);

impl<I: Import> fmt::Display for ImportName<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "import `{}`", I::SYMBOL)
    }
}

/// How panics caught at the C boundary are reported: once per entry
/// point, then at the 2nd, 4th, 8th, ... occurrence, each as one line
/// (the standard library's own panic message is held back for panics
/// inside a guard, its location folded into the report).
#[cfg(feature = "std")]
mod panic_log {
    use std::cell::{Cell, RefCell};
    use std::collections::BTreeMap;
    use std::string::String;
    use std::sync::{Mutex, Once, PoisonError};

    std::thread_local! {
        /// How many guards are active on this thread.
        static DEPTH: Cell<u32> = const { Cell::new(0) };
        /// Where the last panic inside a guard happened.
        static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    /// Runs `body` with the current thread marked as inside a guard,
    /// catching a panic. The thread-local is looked up once for both the
    /// mark and its removal (in a plugin loaded with `dlopen` each lookup
    /// is a call into the dynamic linker, on every import call); nothing
    /// unwinds past `catch_unwind`, so the removal always runs.
    pub(super) fn catch_inside<R>(body: impl FnOnce() -> R) -> std::thread::Result<R> {
        DEPTH.with(|depth| {
            depth.set(depth.get() + 1);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
            depth.set(depth.get().saturating_sub(1));
            outcome
        })
    }

    /// How many guards are active on this thread.
    #[cfg(test)]
    pub(super) fn depth() -> u32 {
        DEPTH.with(Cell::get)
    }

    /// Installs (once per copy of the standard library) a panic hook that
    /// stays silent for panics inside a guard and hands every other panic
    /// to the hook that was there before.
    pub(super) fn install_hook() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(std::boxed::Box::new(move |info| {
                if DEPTH.with(Cell::get) > 0 {
                    let location = info.location().map(std::string::ToString::to_string);
                    LOCATION.with(|slot| *slot.borrow_mut() = location);
                } else {
                    previous(info);
                }
            }));
        });
    }

    /// The location of the panic just caught on this thread, if known.
    pub(super) fn take_location() -> Option<String> {
        LOCATION.with(|slot| slot.borrow_mut().take())
    }

    /// Counts a panic of `what` in `plugin`; `Some(n)` when the `n`th
    /// occurrence is to be printed (n = 1, 2, 4, 8, ...).
    pub(super) fn count(plugin: &str, what: &str) -> Option<u64> {
        static COUNTS: Mutex<BTreeMap<(String, String), u64>> = Mutex::new(BTreeMap::new());
        let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry((plugin.into(), what.into())).or_insert(0);
        *count += 1;
        count.is_power_of_two().then_some(*count)
    }
}

/// The line printed for the `count`th panic caught in `what` of `plugin`.
#[cfg(feature = "std")]
fn panic_report(
    plugin: &str,
    what: &str,
    payload: &(dyn core::any::Any + Send),
    count: u64,
) -> std::string::String {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<std::string::String>().map(|s| s.as_str()))
        .unwrap_or("(non-string panic payload)");
    let location = panic_log::take_location().map(|at| std::format!(" at {at}")).unwrap_or_default();
    let repeat = if count == 1 {
        std::string::String::from("repeats are reported at the 2nd, 4th, 8th, ... occurrence")
    } else {
        std::format!("occurrence {count}; the next report is at occurrence {}", count.saturating_mul(2))
    };
    std::format!(
        "xplug plugin `{plugin}`: panic in {what}{location} caught at the C boundary: {message}; \
         reporting failure to the host ({repeat})"
    )
}

#[cfg(feature = "std")]
std::thread_local! {
    /// The message of the last refused `load` on this thread, for
    /// `xplug_plugin_load_error`.
    static LAST_LOAD_ERROR: core::cell::RefCell<Option<std::ffi::CString>> =
        const { core::cell::RefCell::new(None) };
}

/// Remembers why `load` failed (with `std` per thread, without it in one
/// fixed buffer); `None` clears it.
fn set_load_error(error: Option<&crate::Error>) {
    #[cfg(feature = "std")]
    // Runs on the way out of the C `load` entry point: never panics (a
    // thread-local being torn down just keeps no message).
    let _ = LAST_LOAD_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = error.map(|error| {
                std::ffi::CString::new(std::format!("{error}").replace('\0', " ")).unwrap_or_default()
            });
        }
    });
    #[cfg(not(feature = "std"))]
    no_std_load_error::set(error);
}

/// The message of a refused `load` without `std`: no thread-locals and no
/// allocation, so one static buffer (a standalone plugin's only other
/// writable global beside the allocator slot), written under a lock and
/// cut at [`no_std_load_error::CAPACITY`] bytes.
#[cfg(not(feature = "std"))]
mod no_std_load_error {
    use core::cell::UnsafeCell;
    use core::ffi::c_char;
    use core::fmt::Write as _;
    use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Bytes kept of a message, NUL included.
    pub(super) const CAPACITY: usize = 512;

    struct Buffer {
        writing: AtomicBool,
        /// Length of the message (0: none), set after the bytes.
        len: AtomicUsize,
        bytes: UnsafeCell<[u8; CAPACITY]>,
    }

    // SAFETY: `bytes` is written only while `writing` is held (one writer
    // at a time; a second concurrent `load` failure keeps no message), and
    // handed to readers only as a pointer, read by the host after the
    // `load` that wrote it returned (the export's contract).
    unsafe impl Sync for Buffer {}

    static BUFFER: Buffer = Buffer {
        writing: AtomicBool::new(false),
        len: AtomicUsize::new(0),
        bytes: UnsafeCell::new([0; CAPACITY]),
    };

    /// Writes into the buffer, keeping room for the NUL.
    struct Writer<'a> {
        bytes: &'a mut [u8; CAPACITY],
        len: usize,
    }

    impl core::fmt::Write for Writer<'_> {
        fn write_str(&mut self, text: &str) -> core::fmt::Result {
            for &byte in text.as_bytes() {
                if self.len + 1 >= CAPACITY {
                    break;
                }
                // A NUL inside the message would end it early.
                self.bytes[self.len] = if byte == 0 { b' ' } else { byte };
                self.len += 1;
            }
            Ok(())
        }
    }

    pub(super) fn set(error: Option<&crate::Error>) {
        if BUFFER.writing.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return;
        }
        BUFFER.len.store(0, Ordering::Release);
        if let Some(error) = error {
            // SAFETY: `writing` is held: no other writer; readers only read
            // after the `load` that writes returned.
            let bytes = unsafe { &mut *BUFFER.bytes.get() };
            let mut writer = Writer { bytes, len: 0 };
            // The writer never fails; a cut message is still a message.
            let _ = write!(writer, "{error}");
            let len = writer.len;
            writer.bytes[len] = 0;
            BUFFER.len.store(len, Ordering::Release);
        }
        BUFFER.writing.store(false, Ordering::Release);
    }

    pub(super) fn get() -> *const c_char {
        if BUFFER.len.load(Ordering::Acquire) == 0 {
            return core::ptr::null();
        }
        BUFFER.bytes.get().cast::<c_char>().cast_const()
    }
}

/// Set once a host has called `xplug_plugin_load_error`: it reads the
/// messages of refused loads, so `load` stops printing them to stderr (the
/// host shows them; printing too would show each twice). Hosts that never
/// call it (IREE's) keep the printed line, their only view of the message.
static HOST_READS_LOAD_ERRORS: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// `xplug_plugin_load_error`: the message of the last refused `load` (with
/// `std`, on this thread; without, in the process), valid until the next
/// `load`, or NULL.
/// Calling it also tells the plugin that the host reads these messages.
pub extern "C" fn last_load_error() -> *const c_char {
    HOST_READS_LOAD_ERRORS.store(true, core::sync::atomic::Ordering::Relaxed);
    #[cfg(feature = "std")]
    {
        // `try_*`: no panic may cross this C boundary (a thread-local being
        // torn down, or a message being written, reads as "no message").
        LAST_LOAD_ERROR
            .try_with(|slot| slot.try_borrow().ok()?.as_ref().map(|text| text.as_ptr()))
            .ok()
            .flatten()
            .unwrap_or(ptr::null())
    }
    #[cfg(not(feature = "std"))]
    {
        no_std_load_error::get()
    }
}

fn report_load_error(plugin: &str, error: &crate::Error) -> Status {
    #[cfg(feature = "std")]
    if !HOST_READS_LOAD_ERRORS.load(core::sync::atomic::Ordering::Relaxed) {
        std::eprintln!("xplug plugin `{plugin}`: load failed ({}): {error}", error.code());
    }
    #[cfg(not(feature = "std"))]
    let _ = plugin;
    set_load_error(Some(error));
    Status::from_code(error.code())
}

const INVALID: Status = Status::from_code(StatusCode::INVALID_ARGUMENT);
const INTERNAL: Status = Status::from_code(StatusCode::INTERNAL);

/// v0 `load` of plugin `D`.
///
/// # Safety
/// The v0 load contract: `environment` points at a valid environment whose
/// allocator obeys the allocator contract for as long as the plugin stays
/// loaded, `params` points at `param_count` valid pairs (or is NULL with a
/// count of 0), both valid for the call, and `out_self` is writable.
pub unsafe extern "C" fn load<D: PluginDef>(
    environment: *const EnvironmentV0,
    param_count: usize,
    params: *const StringPair,
    out_self: *mut *mut c_void,
) -> Status {
    guard(D::NAME, "load", INTERNAL, || {
        if out_self.is_null() || environment.is_null() || (params.is_null() && param_count != 0) {
            return INVALID;
        }
        // SAFETY: `out_self` is non-NULL and writable per the contract.
        unsafe { out_self.write(ptr::null_mut()) };
        set_load_error(None);
        // SAFETY: non-NULL and valid for the call per the contract.
        let environment = unsafe { &*environment };
        // SAFETY: the host promises its allocator obeys the allocator
        // contract while the plugin is loaded.
        let allocator = unsafe { HostAllocator::from_raw(environment.host_allocator) };
        #[cfg(feature = "standalone")]
        crate::standalone::set_host_allocator(allocator);
        let pairs: &[StringPair] = if param_count == 0 {
            &[]
        } else {
            // SAFETY: `params` is non-NULL and points at `param_count` pairs
            // valid for the call.
            unsafe { core::slice::from_raw_parts(params, param_count) }
        };
        // SAFETY: the pairs' views are valid for the call; the borrow given
        // to the author's `load` cannot outlive it (the state is 'static).
        let mut params = unsafe { LoadParams::from_pairs(pairs) };
        if let Some(declared) = D::PARAM_DECLS {
            if let Err(error) = params.check_declared(declared) {
                return report_load_error(D::NAME, &error);
            }
            params = params.with_declared(declared);
        }
        let state = match D::State::load(&Environment::new(allocator), &params) {
            Ok(state) => state,
            Err(error) => return report_load_error(D::NAME, &error),
        };
        if inline_state::<D::State>() {
            core::mem::forget(state);
            return Status::OK;
        }
        match HostBox::new_in(Loaded { allocator, state }, allocator) {
            Ok(boxed) => {
                // SAFETY: checked non-NULL and writable above.
                unsafe { out_self.write(HostBox::into_raw(boxed).as_ptr().cast()) };
                Status::OK
            }
            Err(error) => report_load_error(D::NAME, &error),
        }
    })
}

/// v0 `unload` of plugin `D`.
///
/// # Safety
/// `plugin_self` is NULL or the value `load::<D>` produced, not yet
/// unloaded, and no import of this plugin is running or will run.
pub unsafe extern "C" fn unload<D: PluginDef>(plugin_self: *mut c_void) {
    guard(D::NAME, "unload", (), || {
        if inline_state::<D::State>() {
            return;
        }
        let Some(loaded) = NonNull::new(plugin_self.cast::<Loaded<D::State>>()) else { return };
        // SAFETY: `loaded` is the live `Loaded` that `load` boxed with its
        // own allocator, reclaimed exactly once (the host's contract).
        let allocator = unsafe { loaded.as_ref().allocator };
        // SAFETY: as above; the box was created by `HostBox::new_in` with
        // `allocator`.
        drop(unsafe { HostBox::from_raw(loaded, allocator) });
    });
}

/// v0 `resolve` of plugin `D` (`docs/src/reference/resolution.md#provider-rules`).
///
/// # Safety
/// `plugin_self` is what `load::<D>` produced; `params` points at a valid
/// request whose three arrays hold `count` elements (names NUL-terminated or
/// NULL) and are not accessed by anyone else during the call;
/// `out_resolution` is NULL or writable.
pub unsafe extern "C" fn resolve<D: PluginDef>(
    plugin_self: *mut c_void,
    params: *const ResolveParamsV0,
    out_resolution: *mut Resolution,
) -> Status {
    guard(D::NAME, "resolve", INTERNAL, || {
        if !out_resolution.is_null() {
            // SAFETY: non-NULL and writable per the contract.
            unsafe { out_resolution.write(Resolution::NONE) };
        }
        if params.is_null() {
            return INVALID;
        }
        // SAFETY: non-NULL and valid per the contract.
        let request = unsafe { params.read() };
        if request.count == 0 {
            return Status::OK;
        }
        if request.symbol_names.is_null()
            || request.out_fn_ptrs.is_null()
            || request.out_fn_contexts.is_null()
        {
            return INVALID;
        }
        // SAFETY: `plugin_self` comes from `load::<D>`.
        let Some(state) = (unsafe { state_ref::<D::State>(plugin_self) }) else {
            return Status::from_code(StatusCode::FAILED_PRECONDITION);
        };
        // SAFETY: each array holds `count` elements, exclusively ours for
        // the call; the output arrays are viewed as cells so the "already
        // filled" check and the writes can share them.
        let (names, functions, contexts) = unsafe {
            (
                core::slice::from_raw_parts(request.symbol_names, request.count),
                Cell::from_mut(core::slice::from_raw_parts_mut(request.out_fn_ptrs, request.count))
                    .as_slice_of_cells(),
                Cell::from_mut(core::slice::from_raw_parts_mut(request.out_fn_contexts, request.count))
                    .as_slice_of_cells(),
            )
        };
        let exports = Exports { table: D::exports(), key: Export::key, index: D::hash_index() };
        let outcome = resolve_with(
            exports,
            request.count,
            |slot| {
                let name = names[slot];
                // SAFETY: a non-NULL name is NUL-terminated and valid for the
                // call per the contract. Its length is measured once, here.
                (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_bytes())
            },
            |slot| !functions[slot].get().is_null(),
            |slot, export| {
                if !state.provides(export.symbol) {
                    return false;
                }
                functions[slot].set(export.function as *mut c_void);
                contexts[slot].set(if export.uses_state { plugin_self } else { ptr::null_mut() });
                true
            },
        );
        if !out_resolution.is_null() {
            // SAFETY: non-NULL and writable per the contract.
            unsafe { out_resolution.write(outcome.resolution) };
        }
        if outcome.missing_required { Status::from_code(StatusCode::NOT_FOUND) } else { Status::OK }
    })
}

/// The C entry point of import `I`: `int fn(void* args, void* context,
/// void* reserved)`.
///
/// # Safety
/// `args` is NULL or points at a valid, exclusively borrowed
/// `I::Args` for the call; `context` is what `resolve` stored with this
/// function (the plugin state, or NULL).
#[inline]
pub unsafe extern "C" fn import_entry<I: Import>(
    args: *mut c_void,
    context: *mut c_void,
    _reserved: *mut c_void,
) -> c_int {
    guard(I::PLUGIN, ImportName::<I>(PhantomData), ImportError::INTERNAL.code(), || {
        let Some(mut args) = NonNull::new(args.cast::<I::Args>()) else {
            return ImportError::INVALID_ARGUMENT.code();
        };
        let state = if I::USES_STATE {
            // SAFETY: `resolve` stored the plugin state as the context of
            // stateful imports; the host keeps it loaded while imports run.
            match unsafe { state_ref::<I::State>(context) } {
                Some(state) => Some(state),
                None => return ImportError::INVALID_ARGUMENT.code(),
            }
        } else {
            None
        };
        // SAFETY: `args` points at a valid `I::Args` (the type's
        // `ImportArgs` promise plus the caller's) borrowed for the call.
        I::call(unsafe { args.as_mut() }, state)
    })
}

/// Converts an import's return value into the C code.
pub use crate::ImportReturn;

#[cfg(all(test, feature = "std"))]
mod tests {
    use std::boxed::Box;
    use std::string::ToString;

    use super::*;

    #[test]
    fn a_panic_report_names_the_plugin_the_import_and_the_message() {
        let payload: Box<dyn core::any::Any + Send> = Box::new("index out of bounds".to_string());
        let report = panic_report("sample", "import `boom`", payload.as_ref(), 1);
        assert_eq!(
            report,
            "xplug plugin `sample`: panic in import `boom` caught at the C boundary: index out of bounds; \
             reporting failure to the host (repeats are reported at the 2nd, 4th, 8th, ... occurrence)"
        );
        let payload: Box<dyn core::any::Any + Send> = Box::new(7_u32);
        let report = panic_report("sample", "load", payload.as_ref(), 4);
        assert!(report.contains("in load caught"), "{report}");
        assert!(report.contains("occurrence 4; the next report is at occurrence 8"), "{report}");
    }

    #[test]
    fn repeated_panics_are_reported_at_powers_of_two() {
        let printed: std::vec::Vec<u64> =
            (0..20).filter_map(|_| panic_log::count("rate_test", "import `x`")).collect();
        assert_eq!(printed, [1, 2, 4, 8, 16]);
        // Each entry point counts on its own.
        assert_eq!(panic_log::count("rate_test", "import `y`"), Some(1));
        assert_eq!(panic_log::count("other_plugin", "import `x`"), Some(1));
    }

    #[test]
    fn a_caught_panic_records_its_location_and_stays_out_of_the_default_hook() {
        let code = guard("location_test", "import `z`", -1, || -> i32 { panic!("deliberate") });
        assert_eq!(code, -1);
        // The guard's report consumed the location the hook recorded.
        assert_eq!(panic_log::take_location(), None);
        panic_log::install_hook();
        let caught = panic_log::catch_inside(|| panic!("inside"));
        assert!(caught.is_err());
        let location = panic_log::take_location().expect("the hook recorded where the panic happened");
        assert!(location.contains("ffi.rs"), "{location}");
    }

    #[test]
    fn a_guard_marks_its_thread_only_while_it_runs_panic_or_not() {
        assert_eq!(panic_log::depth(), 0);
        let depths = guard("depth_test", "load", (0, 0, 0), || {
            let outer = panic_log::depth();
            let code = guard("depth_test", "import `inner`", -1, || -> i32 { panic!("inner") });
            (outer, code, panic_log::depth())
        });
        assert_eq!(depths, (1, -1, 1), "the inner guard caught its panic and left the outer one marked");
        assert_eq!(panic_log::depth(), 0, "a caught panic does not leave the thread marked");
    }
}
