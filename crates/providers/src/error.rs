//! The error type of this crate.

use std::path::PathBuf;
use std::sync::Arc;

use xplug_abi::StatusCode;

use crate::incompatibility::Incompatibility;
use crate::name::ProviderName;

/// What the OS loader (`dlopen`/`LoadLibrary`, not a [`Loader`](crate::Loader))
/// said when it refused a library (`dlerror()` on
/// Unix): the source of [`Error::LibraryOpen`].
///
/// (See also [`PluginMessage`], a plugin's own explanation of a refusal.)
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OsLoaderMessage {
    message: String,
}

/// What a plugin said about its refused `load` (through xplug's optional
/// `xplug_plugin_load_error` export): the source of [`Error::LoadFailed`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the plugin says: {message}")]
pub struct PluginMessage {
    message: String,
}

impl PluginMessage {
    pub(crate) fn new(message: String) -> Self {
        Self { message }
    }

    /// The plugin's message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl OsLoaderMessage {
    pub(crate) fn new(message: String) -> Self {
        Self { message }
    }

    /// The loader's message, as it gave it.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Everything that can go wrong while loading a plugin or resolving imports
/// through a provider.
///
/// Every variant maps to the IREE status code a C host would report
/// ([`Error::code`]) and names the plugin, path or symbol concerned.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A provider resolved what it could but `missing` required imports are
    /// still empty (IREE's `NOT_FOUND`; the manager moves on to the next
    /// provider). Deliberately cheap: it carries a count, not the names; the
    /// caller has the request and can list them.
    #[error("{missing} required import(s) not provided by `{provider}`")]
    NotFound {
        /// The provider that answered.
        provider: ProviderName,
        /// How many required slots are still empty.
        missing: usize,
    },
    /// A provider failed for a reason other than a missing name.
    #[error("provider `{provider}` failed to resolve imports: {code}{}", fmt_message(message))]
    ResolveFailed {
        /// The provider's name.
        provider: String,
        /// The status code it reported.
        code: StatusCode,
        /// Detail, when the provider gave any.
        message: String,
    },
    /// The request itself is malformed (for example slot arrays of different
    /// lengths).
    #[error("invalid resolve request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// The OS loader refused a shared library.
    #[error(
        "the OS loader cannot open plugin library {}; check that the libraries it depends on can be found \
         (`ldd` lists them) and that it was built for this system",
        path.display()
    )]
    LibraryOpen {
        /// The file.
        path: PathBuf,
        /// The loader's explanation.
        #[source]
        cause: OsLoaderMessage,
    },
    /// The OS loader refused a library because it uses a symbol that
    /// neither it nor any library it depends on defines (libraries are
    /// opened binding every reference at once, so this shows at load, not
    /// at the first call).
    #[error(
        "plugin library {} uses `{symbol}`, which no loaded library defines; link the plugin against \
         the library that provides it (build with -Wl,--no-undefined to catch this when linking)",
        path.display()
    )]
    UndefinedSymbol {
        /// The file.
        path: PathBuf,
        /// The symbol nothing defines.
        symbol: String,
        /// The loader's full message.
        #[source]
        cause: OsLoaderMessage,
    },
    /// A symbol the host would call is not a function in the library's
    /// symbol table.
    #[error(
        "plugin library {} exports `{symbol}` as {found}, not as a function; export it as a function \
         with C linkage",
        path.display()
    )]
    NotAFunction {
        /// The file.
        path: PathBuf,
        /// The symbol.
        symbol: String,
        /// What the symbol table says it is.
        found: String,
    },
    /// A library does not export a symbol the loader needs.
    #[error("plugin library {} does not export `{symbol}`{}", path.display(), fmt_hint(hint))]
    MissingExport {
        /// The file.
        path: PathBuf,
        /// The symbol looked for.
        symbol: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// The plugin's query function returned NULL for the version we support.
    #[error(
        "plugin {plugin} does not support this runtime's plugin ABI version {supported}; \
         rebuild it against plugin ABI {supported} or use a runtime that supports its version"
    )]
    UnsupportedVersion {
        /// The plugin (path or static name).
        plugin: String,
        /// The version the host queried with.
        supported: xplug_abi::Version,
    },
    /// The plugin's header or table fails a load check
    /// ([`crate::compatibility`]); the source says which, with the values compared.
    #[error("plugin {plugin} cannot be loaded by this host")]
    Incompatible {
        /// The plugin: its quoted name and where it came from.
        plugin: String,
        /// Which check failed.
        #[source]
        reason: Incompatibility,
    },
    /// The plugin's `load` returned an error; `unload` was not called.
    #[error(
        "plugin {plugin} failed to load: its load returned {code} with {param_count} parameter(s); check the \
         parameters the plugin expects"
    )]
    LoadFailed {
        /// The plugin: its quoted name and where it came from.
        plugin: String,
        /// The status code `load` returned.
        code: StatusCode,
        /// How many load parameters it was given.
        param_count: usize,
        /// The plugin's own explanation (`xplug_plugin_load_error`), when
        /// it gives one.
        #[source]
        reported: Option<PluginMessage>,
    },
    /// The plugin file does not exist.
    #[error("plugin library {} does not exist; check the path", path.display())]
    FileNotFound {
        /// The file looked for.
        path: PathBuf,
    },
    /// A bare library name (`libfoo.so`) the OS loader's search did not
    /// find or could not open.
    #[error(
        "the OS loader cannot find or open plugin library `{}` in its search path (LD_LIBRARY_PATH, \
         the loader cache, the system directories; not the current directory); give its path \
         (`./{}` for a file here) or add its directory to LD_LIBRARY_PATH",
        name.display(),
        name.display()
    )]
    LibraryNotFound {
        /// The name searched for.
        name: PathBuf,
        /// The loader's explanation.
        #[source]
        cause: OsLoaderMessage,
    },
    /// The file exists but is not a shared library the OS loader can open.
    #[error("{} is not a shared library: {reason}", path.display())]
    NotSharedObject {
        /// The file.
        path: PathBuf,
        /// What the file is instead, and what to do.
        reason: String,
    },
    /// The file is a shared library built for another machine.
    #[error(
        "plugin library {} is built for {found}, but this host is {expected}; \
         rebuild the plugin for {expected}",
        path.display()
    )]
    WrongArchitecture {
        /// The file.
        path: PathBuf,
        /// The architecture the file declares.
        found: String,
        /// The architecture of this process.
        expected: String,
    },
    /// A function table names the same import twice.
    #[error("function table `{provider}` exports `{name}` more than once; keep one entry per name")]
    DuplicateExport {
        /// The table's name.
        provider: String,
        /// The duplicated import name.
        name: String,
    },
    /// A function table entry has a name no request can match.
    #[error("function table `{provider}` has an unusable export name {name:?}: {reason}")]
    InvalidExport {
        /// The table's name.
        provider: String,
        /// The offending name (lossily decoded).
        name: String,
        /// Why it is unusable and what to do.
        reason: String,
    },
    /// The embedded ELF loader refused an image or could not map it.
    #[error(
        "embedded ELF plugin {plugin} cannot be loaded; check that it is a standalone plugin built for \
         this host (`xplug fatelf list` shows a container's records)"
    )]
    EmbeddedElf {
        /// The file, or `memory image `name``.
        plugin: String,
        /// What the loader refused, with the values it found (boxed: it is
        /// large and rare).
        #[source]
        source: Box<xplug_elf::EmbeddedElfError>,
    },
    /// A `static:NAME` spec names no plugin linked into this binary.
    #[error(
        "no plugin `{name}` is linked into this binary (spec `static:{name}`); linked: [{}]; \
         link the plugin crate with its `static` feature and name it once (`use my_plugin as _;`)",
        linked.join(", ")
    )]
    StaticPluginNotFound {
        /// The name asked for.
        name: String,
        /// The names of the plugins linked in.
        linked: Vec<String>,
    },
    /// A loader was given bytes in memory but opens only what it names
    /// itself (a file, a registration).
    #[error("the {loader} loader cannot open memory image `{name}`; give it a file or a name it knows")]
    ImageUnsupported {
        /// The loader's name.
        loader: &'static str,
        /// The image's name.
        name: String,
    },
    /// A pinned plugin's code does not have the hash its spec pins
    /// (`?sha256=HEX`); nothing was mapped or run.
    #[error(
        "plugin {target} has SHA-256 {found}, but its spec pins {expected}; the file changed since it \
         was pinned: pin the new file (`xplug pin {target}`) if it is approved, or restore the approved one"
    )]
    HashMismatch {
        /// The file (the spec's target).
        target: String,
        /// The hash the spec pins.
        expected: crate::digest::Sha256Digest,
        /// The hash of the bytes read.
        found: crate::digest::Sha256Digest,
    },
    /// A plugin's code is not on the allow-list in force; nothing was
    /// mapped or run.
    #[error(
        "plugin {target} (SHA-256 {found}) is not on the allow-list {}; add its `sha256sum` line to \
         the list if it is approved",
        list.display()
    )]
    NotAllowed {
        /// The file (the spec's target).
        target: String,
        /// The hash of the bytes read.
        found: crate::digest::Sha256Digest,
        /// The allow-list file.
        list: PathBuf,
    },
    /// A pin or an allow-list was asked of a loader that cannot read its
    /// code as bytes to hash (a plugin linked into the program, a library
    /// the OS loader would search for).
    #[error("the {loader} loader cannot pin `{target}`: {reason}")]
    PinUnsupported {
        /// The loader's name.
        loader: &'static str,
        /// What the spec names.
        target: String,
        /// Why, and what to do.
        reason: &'static str,
    },
    /// A line of an allow-list file is not a `sha256sum` line.
    #[error("allow-list {} line {line} is malformed: {reason}", path.display())]
    AllowListInvalid {
        /// The allow-list file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong, and what to write.
        reason: String,
    },
    /// The variable naming the allow-list is set but empty: an allow-list
    /// fails closed, so this refuses every load rather than allowing all.
    #[error(
        "{var} is set but empty: it must name an allow-list file (`xplug pin --allow-list PLUGIN... > \
         FILE` writes one); unset it to load plugins without an allow-list"
    )]
    AllowListUnnamed {
        /// The variable ([`crate::ALLOW_LIST_VAR`]).
        var: &'static str,
    },
    /// A plugin file is larger than a plugin file may be; it was refused
    /// before any of it was read.
    #[error(
        "plugin file {} is {size} bytes, more than the {limit}-byte limit of a plugin file; pass the \
         plugin itself (a `.so` or `.sos` file)",
        path.display()
    )]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size when opened.
        size: u64,
        /// The largest plugin file read ([`crate::CodeBytes::LIMIT`]).
        limit: u64,
    },
    /// The OS loader answered a pinned or allow-listed open with a library
    /// other than the checked bytes (an object it had loaded before); it was
    /// closed again and nothing of it was run.
    #[error(
        "the OS loader did not map the checked bytes of plugin {}: {reason}; the library was refused",
        path.display()
    )]
    CodeSubstituted {
        /// The plugin file (or image name).
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// An I/O error around a plugin file (reading bytes, creating a memfd).
    #[error("{context}")]
    Io {
        /// What was being done, naming the file or plugin.
        context: String,
        /// The operating system's explanation.
        #[source]
        source: Arc<std::io::Error>,
    },
}

fn fmt_message(message: &str) -> String {
    if message.is_empty() { String::new() } else { format!(" ({message})") }
}

fn fmt_hint(hint: &'static str) -> String {
    if hint.is_empty() { String::new() } else { format!("; {hint}") }
}

impl Error {
    /// An [`Error::Io`] saying what was being done.
    pub(crate) fn io(context: String, source: std::io::Error) -> Self {
        Self::Io { context, source: Arc::new(source) }
    }

    /// The error for a failure reading the plugin file at `path`:
    /// [`Error::FileNotFound`] when it does not exist, else [`Error::Io`]
    /// saying "cannot read `what` `path`".
    pub(crate) fn reading<'p>(
        what: &'static str,
        path: &'p std::path::Path,
    ) -> impl Fn(std::io::Error) -> Self + 'p {
        move |error| {
            if error.kind() == std::io::ErrorKind::NotFound {
                Self::FileNotFound { path: path.to_path_buf() }
            } else {
                Self::io(format!("cannot read {what} {}", path.display()), error)
            }
        }
    }

    /// The IREE status code equivalent to this error.
    #[must_use]
    pub fn code(&self) -> StatusCode {
        match self {
            Self::NotFound { .. } | Self::MissingExport { .. } => StatusCode::NOT_FOUND,
            Self::ResolveFailed { code, .. } | Self::LoadFailed { code, .. } => *code,
            Self::Incompatible { reason, .. } => reason.code(),
            Self::InvalidRequest { .. } | Self::NotSharedObject { .. } | Self::InvalidExport { .. } => {
                StatusCode::INVALID_ARGUMENT
            }
            Self::LibraryOpen { .. } | Self::Io { .. } => StatusCode::UNAVAILABLE,
            Self::UndefinedSymbol { .. } => StatusCode::NOT_FOUND,
            Self::NotAFunction { .. } => StatusCode::INVALID_ARGUMENT,
            Self::FileNotFound { .. } | Self::LibraryNotFound { .. } => StatusCode::NOT_FOUND,
            Self::WrongArchitecture { .. } => StatusCode::FAILED_PRECONDITION,
            Self::DuplicateExport { .. } => StatusCode::ALREADY_EXISTS,
            Self::UnsupportedVersion { .. } => StatusCode::FAILED_PRECONDITION,
            Self::EmbeddedElf { source, .. } => source.code(),
            Self::StaticPluginNotFound { .. } => StatusCode::NOT_FOUND,
            Self::ImageUnsupported { .. } | Self::PinUnsupported { .. } => StatusCode::UNIMPLEMENTED,
            Self::HashMismatch { .. } | Self::NotAllowed { .. } => StatusCode::PERMISSION_DENIED,
            Self::AllowListInvalid { .. } | Self::AllowListUnnamed { .. } => StatusCode::INVALID_ARGUMENT,
            Self::FileTooLarge { .. } => StatusCode::OUT_OF_RANGE,
            Self::CodeSubstituted { .. } => StatusCode::PERMISSION_DENIED,
        }
    }
}

/// An error and its causes, for people: `Display` and `Debug` both print
/// the error's message, then each cause on a line of its own
/// (`caused by: ...`), each message once.
///
/// Every error of xplug's crates prints only its own message and gives its
/// cause as [`std::error::Error::source`]; the derived `Debug` is a
/// structure dump. A program that returns errors from `main` (which prints
/// them with `Debug`) returns a `Report` instead: `?` converts any error.
///
/// ```
/// use std::path::PathBuf;
/// use xplug_providers::{Error, Report};
///
/// fn load() -> Result<(), Error> {
///     Err(Error::FileNotFound { path: PathBuf::from("/no/such/libplugin.so") })
/// }
///
/// // What `fn main() -> Result<(), Report>` prints when it fails.
/// fn run() -> Result<(), Report> {
///     load()?;
///     Ok(())
/// }
///
/// let report = run().unwrap_err();
/// assert_eq!(format!("{report:?}"), "plugin library /no/such/libplugin.so does not exist; check the path");
/// ```
///
/// With `anyhow` instead, `anyhow::Error`'s `Debug` prints the same chain
/// (`Caused by:`); either way each message appears once.
pub struct Report(Box<dyn std::error::Error + Send + Sync + 'static>);

impl Report {
    /// The error reported.
    #[must_use]
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for Report {
    fn from(error: E) -> Self {
        Self(Box::new(error))
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        ErrorChain(&*self.0).fmt(f)
    }
}

/// A borrowed error shown as a [`Report`] shows it (its message, then each
/// cause on a line of its own), for code that must keep the error: a log
/// line, a test's assertion.
///
/// ```
/// use std::sync::Arc;
/// use xplug_providers::{Error, ErrorChain};
///
/// let error = Error::Io {
///     context: "reading plugin libplugin.so".into(),
///     source: Arc::new(std::io::Error::other("disk on fire")),
/// };
/// let shown = ErrorChain(&error).to_string();
/// assert!(shown.ends_with("\n  caused by: disk on fire"), "{shown}");
/// assert_eq!(error.code(), xplug_providers::abi::StatusCode::UNAVAILABLE); // still ours
/// ```
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(cause) = next {
            write!(f, "\n  caused by: {cause}")?;
            next = cause.source();
        }
        Ok(())
    }
}

impl std::fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Debug for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
