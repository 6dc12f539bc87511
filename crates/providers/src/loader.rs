//! The [`Loader`] trait: the one owner of each kind of plugin code.
//!
//! A loader knows its name, the header features it requires, which specs
//! it claims, how to open code (a file, a memory image, or a name it
//! understands) into a [`Code`] — a query function plus xplug's optional
//! exports — and how to describe what it opened ([`MappedCode::details`]).
//! xplug's three loaders are [`SYSTEM_LIBRARY`], [`EMBEDDED_ELF`] and
//! [`STATIC`]; a crate adds a fourth with one line,
//! `inventory::submit! { LoaderRegistration::new(&MY_LOADER) }`, and
//! [`loaders`] lists it among them. Nothing else in xplug matches on kinds
//! of code: the manager gives a spec to the first loader of the list that
//! claims it, and the CLI and `xplug-iree` ask the loader.
//!
//! See `docs/src/design/internals.md#adding-a-loader`.

use std::any::Any;
use std::fmt;
use std::path::Path;

use xplug_abi::Features;

use crate::digest::Sha256Digest;
use crate::error::Error;
use crate::origin::Origin;
use crate::raw::sealed::CodeBytes;
use crate::raw::{OptionalExports, RawQuery};

/// One kind of plugin code: how it is named in a spec, opened and
/// described.
///
/// Implementations are `'static` values (a unit struct in a `static`),
/// registered with [`LoaderRegistration`] or given to a manager.
///
/// # Example
///
/// A loader for plugins linked into the program under names of its own
/// (`table:NAME`), registered with one line:
///
/// ```
/// use std::ffi::c_void;
/// use xplug_providers::abi::{Features, Header, Version};
/// use xplug_providers::raw::RawQuery;
/// use xplug_providers::{Code, Error, Loader, LoaderRegistration, MappedCode, loaders};
///
/// unsafe extern "C" fn query(_: Version, _: *mut c_void) -> *mut *const Header {
///     std::ptr::null_mut() // a real plugin returns its v0 table
/// }
///
/// struct Linked;
/// impl MappedCode for Linked {
///     fn query(&self) -> RawQuery<'_> {
///         // SAFETY: `query` follows the v0 contract (it answers NULL).
///         unsafe { RawQuery::new(query) }
///     }
/// }
///
/// struct TableLoader;
/// impl Loader for TableLoader {
///     fn name(&self) -> &'static str { "table" }
///     fn claim<'s>(&self, spec: &'s str) -> Option<&'s str> { spec.strip_prefix("table:") }
///     unsafe fn open(&'static self, target: &str) -> Result<Code, Error> {
///         Ok(Code::new(self, None, target, Linked))
///     }
/// }
/// static TABLE: TableLoader = TableLoader;
/// xplug_providers::inventory::submit! { LoaderRegistration::new(&TABLE) }
///
/// let list = loaders();
/// let loader = list.iter().find(|loader| loader.claim("table:x").is_some()).unwrap();
/// assert_eq!(loader.name(), "table");
/// // SAFETY: the loader serves only the function above.
/// let code = unsafe { loader.open("x") }?;
/// assert_eq!(code.loader().name(), "table");
/// assert_eq!(code.required_features(), Features::NONE);
/// # Ok::<(), Error>(())
/// ```
pub trait Loader: Send + Sync + 'static {
    /// The loader's name, as messages, `inspect` and `check` give it
    /// (`system library`, `embedded ELF`, `static`).
    fn name(&self) -> &'static str;

    /// The header features every plugin this loader opens must declare
    /// (`STANDALONE` for an embedded ELF, which has no OS loader to
    /// resolve its imports).
    fn required_features(&self) -> Features {
        Features::NONE
    }

    /// Whether this loader takes `spec` (a spec without its `?` parameters):
    /// the target it names (the spec without the loader's prefix), or
    /// `None` for a spec it leaves to the next loader.
    fn claim<'s>(&self, spec: &'s str) -> Option<&'s str>;

    /// Opens the code `target` names (a file path, or a name the loader
    /// understands): nothing of the plugin's v0 functions is called.
    ///
    /// # Errors
    /// A typed [`Error`] naming `target` and what to do.
    ///
    /// # Safety
    /// Opening may run the code's initialisers, and the [`Code`]'s query
    /// function is called afterwards: `target` must be a trusted v0 plugin
    /// (`docs/src/reference/abi.md#overview`).
    unsafe fn open(&'static self, target: &str) -> Result<Code, Error>;

    /// Opens code from bytes in memory, as if read from a file called
    /// `name`. Loaders that cannot answer [`Error::ImageUnsupported`] (the
    /// default).
    ///
    /// # Errors
    /// As [`Loader::open`].
    ///
    /// # Safety
    /// As [`Loader::open`].
    unsafe fn open_image(&'static self, name: &str, bytes: &[u8]) -> Result<Code, Error> {
        let _ = bytes;
        Err(Error::ImageUnsupported { loader: self.name(), name: name.to_owned() })
    }

    /// Reads the bytes of the code `target` names, exactly the bytes
    /// [`Loader::open_bytes`] maps, for a pinned open
    /// ([`crate::open_verified`]), hashing them as they are read
    /// ([`CodeBytes::read_file`]: in chunks,
    /// at most [`CodeBytes::LIMIT`] bytes). Loaders
    /// whose code is not a file answer [`Error::PinUnsupported`] (the
    /// default).
    ///
    /// # Errors
    /// [`Error::PinUnsupported`], or the read's error naming `target`.
    fn read(&self, target: &str) -> Result<CodeBytes, Error> {
        Err(Error::PinUnsupported { loader: self.name(), target: target.to_owned(), reason: NOT_A_FILE })
    }

    /// Opens `code`, read from `target` by [`Loader::read`], mapping
    /// those bytes and never `target` again; messages name `target`. The
    /// default opens them as an image ([`Loader::open_image`]).
    ///
    /// # Errors
    /// As [`Loader::open`].
    ///
    /// # Safety
    /// As [`Loader::open`].
    unsafe fn open_bytes(&'static self, target: &str, code: &CodeBytes) -> Result<Code, Error> {
        let bytes = code.map(target)?;
        // SAFETY: forwarded to the caller.
        unsafe { self.open_image(target, &bytes) }
    }
}

impl fmt::Debug for dyn Loader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Loader({})", self.name())
    }
}

/// Why a loader without [`Loader::read`] cannot be pinned.
const NOT_A_FILE: &str = "its code is not a file xplug reads; plugins linked into the program are trusted \
                          by linking them (drop `sha256` from the spec; allow-lists except them)";

/// One fact about opened code, for `inspect` (the FatELF record chosen,
/// the mapped segments): a single value or a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeDetail {
    key: &'static str,
    values: Vec<String>,
    list: bool,
}

impl CodeDetail {
    /// A fact with one value.
    #[must_use]
    pub fn one(key: &'static str, value: String) -> Self {
        Self { key, values: vec![value], list: false }
    }

    /// A fact that is a list of values.
    #[must_use]
    pub fn list(key: &'static str, values: Vec<String>) -> Self {
        Self { key, values, list: true }
    }

    /// What the fact is (`record`, `segments`), a short lower-case key.
    #[must_use]
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// Its values (one for a single fact).
    #[must_use]
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// True for a list (shown as a JSON array), false for a single value.
    #[must_use]
    pub fn is_list(&self) -> bool {
        self.list
    }
}

/// What keeps a plugin's code mapped while its plugin lives: a loader's
/// open library, mapped image or linked function.
///
/// The query function it gives borrows it, so trust is placed where the
/// [`RawQuery`] is built (an `unsafe` constructor).
pub trait MappedCode: Any + Send + Sync {
    /// The code's v0 query function.
    fn query(&self) -> RawQuery<'_>;

    /// xplug's optional exports of the code, read alike from any loader's
    /// code (a library's symbols, a `.sos`'s recorded symbols, a linked-in
    /// registration's functions); `None` when the code has none.
    fn optional_exports(&self) -> Option<&dyn OptionalExports> {
        None
    }

    /// What the loader decided while opening, for `inspect` (none by
    /// default).
    fn details(&self) -> Vec<CodeDetail> {
        Vec::new()
    }
}

/// A plugin's code, opened by a [`Loader`]: the one record of where a
/// plugin comes from (the loader, the [`Origin`], the label messages show,
/// the SHA-256 when it was opened pinned) with the [`MappedCode`] that
/// keeps it mapped. [`Code::load`] loads the plugin in it; the loaded
/// [`Plugin`](crate::Plugin) keeps the record ([`Plugin::code`](crate::Plugin::code)).
pub struct Code {
    loader: &'static dyn Loader,
    origin: Option<Origin>,
    label: String,
    /// Boxed: most code is not pinned, and `Code` travels in `Result`s.
    sha256: Option<Box<Sha256Digest>>,
    fallback_name: String,
    mapped: Box<dyn MappedCode>,
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Code")
            .field("loader", &self.loader.name())
            .field("origin", &self.origin)
            .field("label", &self.label)
            .field("sha256", &self.sha256)
            .field("fallback_name", &self.fallback_name)
            .finish_non_exhaustive()
    }
}

/// How messages say where the code came from (its label).
impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

impl Code {
    /// Code `loader` opened from `origin` (`None` for code linked in),
    /// named `fallback_name` until its header gives a name.
    #[must_use]
    pub fn new(
        loader: &'static dyn Loader,
        origin: Option<Origin>,
        fallback_name: &str,
        mapped: impl MappedCode,
    ) -> Self {
        let label = origin.as_ref().map_or_else(|| "linked in".to_owned(), ToString::to_string);
        Self {
            loader,
            origin,
            label,
            sha256: None,
            fallback_name: fallback_name.to_owned(),
            mapped: Box::new(mapped),
        }
    }

    /// The code, recorded as the bytes hashed to `sha256` (by
    /// [`crate::open_verified`], which read and checked them).
    pub(crate) fn with_sha256(mut self, sha256: Sha256Digest) -> Self {
        self.sha256 = Some(Box::new(sha256));
        self
    }

    /// The SHA-256 of the bytes mapped, when the code was opened pinned
    /// ([`crate::open_verified`]: the hash was checked before they were
    /// mapped); `None` for code opened by path or linked in.
    #[must_use]
    pub fn sha256(&self) -> Option<&Sha256Digest> {
        self.sha256.as_deref()
    }

    /// How messages say where the code came from, in place of the origin
    /// alone (`memory image `k` (embedded ELF)`).
    #[must_use]
    pub fn with_label(mut self, label: String) -> Self {
        self.label = label;
        self
    }

    /// How messages say where the code came from (also its `Display`).
    #[must_use]
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The loader that opened the code.
    #[must_use]
    pub fn loader(&self) -> &'static dyn Loader {
        self.loader
    }

    /// The features the code's loader requires of its header
    /// ([`Loader::required_features`]).
    #[must_use]
    pub fn required_features(&self) -> Features {
        self.loader.required_features()
    }

    /// Where the code came from; `None` when linked in.
    #[must_use]
    pub fn origin(&self) -> Option<&Origin> {
        self.origin.as_ref()
    }

    /// The name used before the header is read (the file's stem, the
    /// registration's name).
    #[must_use]
    pub fn fallback_name(&self) -> &str {
        &self.fallback_name
    }

    /// The code's v0 query function, borrowing the code.
    #[must_use]
    pub fn query(&self) -> RawQuery<'_> {
        self.mapped.query()
    }

    /// xplug's optional exports of the code ([`MappedCode::optional_exports`]).
    #[must_use]
    pub fn optional_exports(&self) -> Option<&dyn OptionalExports> {
        self.mapped.optional_exports()
    }

    /// What the loader decided while opening ([`MappedCode::details`]).
    #[must_use]
    pub fn details(&self) -> Vec<CodeDetail> {
        self.mapped.details()
    }

    /// The loader's own view of the code, when it is a `T`: the one way to
    /// reach what only one kind of code has (a
    /// [`SystemLibraryCode`](crate::SystemLibraryCode)'s library, an
    /// [`EmbeddedElfCode`](crate::EmbeddedElfCode)'s image).
    #[must_use]
    pub fn downcast_ref<T: MappedCode>(&self) -> Option<&T> {
        let mapped: &dyn Any = &*self.mapped;
        mapped.downcast_ref()
    }

    /// How messages name the plugin `name` in this code: "`name` (label)".
    pub(crate) fn plugin_label(&self, name: &str) -> String {
        format!("`{name}` ({})", self.label)
    }

    /// Takes the mapped code out when it is a `T`, leaving in `self` the
    /// same record over code whose query answers NULL (for the last
    /// messages of a plugin whose code was given back).
    pub(crate) fn take_mapped<T: MappedCode>(&mut self) -> Option<Box<T>> {
        self.downcast_ref::<T>()?;
        let mapped = std::mem::replace(&mut self.mapped, Box::new(Released));
        let mapped: Box<dyn Any> = mapped;
        mapped.downcast().ok()
    }
}

/// What a [`Code`] holds once its mapped code was taken out: a query that
/// answers NULL, never called (its plugin is unloaded).
struct Released;

impl MappedCode for Released {
    fn query(&self) -> RawQuery<'_> {
        unsafe extern "C" fn no_table(
            _: xplug_abi::Version,
            _: *mut std::ffi::c_void,
        ) -> *mut *const xplug_abi::Header {
            std::ptr::null_mut()
        }
        // SAFETY: `no_table` answers NULL, which the v0 contract allows.
        unsafe { RawQuery::new(no_table) }
    }
}

/// A loader submitted at link time (`inventory::submit!`), listed by
/// [`loaders`].
#[derive(Debug)]
pub struct LoaderRegistration {
    loader: &'static dyn Loader,
}

impl LoaderRegistration {
    /// Registers `loader` for every manager and tool of the program.
    #[must_use]
    pub const fn new(loader: &'static dyn Loader) -> Self {
        Self { loader }
    }

    /// The registered loader.
    #[must_use]
    pub fn loader(&self) -> &'static dyn Loader {
        self.loader
    }
}

xplug_abi::inventory::collect!(LoaderRegistration);

/// Every loader of the program, in the order specs are offered to them:
/// [`STATIC`] (`static:`), [`EMBEDDED_ELF`] (`embedded:`, `.sos`), the
/// loaders registered with [`LoaderRegistration`] (by name), then
/// [`SYSTEM_LIBRARY`], which claims every other spec.
#[must_use]
pub fn loaders() -> Vec<&'static dyn Loader> {
    let mut registered: Vec<&'static dyn Loader> = xplug_abi::inventory::iter::<LoaderRegistration>
        .into_iter()
        .map(LoaderRegistration::loader)
        .collect();
    registered.sort_by_key(|loader| loader.name());
    let mut list: Vec<&'static dyn Loader> = vec![&STATIC, &EMBEDDED_ELF];
    list.extend(registered);
    list.push(&SYSTEM_LIBRARY);
    list
}

/// The loader of plugins linked into the program, found by name among
/// [`static_plugins`](crate::static_plugins) (`static:NAME`).
#[derive(Debug)]
pub struct StaticLoader;

/// The loader of shared libraries opened by the OS loader
/// (`dlopen`/`LoadLibrary`).
#[derive(Debug)]
pub struct SystemLibraryLoader;

/// The loader of standalone ELF images (`.sos`, possibly a FatELF
/// container) validated and mapped by [`xplug_elf`].
#[derive(Debug)]
pub struct EmbeddedElfLoader;

/// xplug's loader of plugins linked into the program.
pub static STATIC: StaticLoader = StaticLoader;
/// xplug's loader of shared libraries.
pub static SYSTEM_LIBRARY: SystemLibraryLoader = SystemLibraryLoader;
/// xplug's loader of embedded ELF images.
pub static EMBEDDED_ELF: EmbeddedElfLoader = EmbeddedElfLoader;

/// The name a file's code goes by before its header is read: its stem.
pub(crate) fn file_stem(path: &Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}
