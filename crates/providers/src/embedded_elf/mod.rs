//! Embedded ELF plugins (`.sos`): standalone, position-independent ELF
//! shared objects loaded by xplug itself, without the OS loader
//! (`docs/embedded-elf.md`).
//!
//! A `.sos` file is one ELF or a FatELF container of several ([`fatelf`]);
//! the record for this host is picked, then loading is split in two:
//!
//! 1. [`validate`]: pure checks on the bytes (header, segments, dynamic
//!    section, symbols, relocations), producing an [`ElfPlan`]. It reads
//!    nothing but its input, so it is safe on hostile files and fuzzed.
//! 2. the mapping step: one private reservation, segments copied in, the
//!    planned (range-checked) relocations applied, final protections set.
//!
//! [`Plugin::load_embedded_elf`] runs both and hands the image's query
//! function ([`ElfImage::raw_query`] in the raw layer's terms) to the
//! checked loader, which additionally requires the plugin to declare the
//! `STANDALONE` feature.
//!
//! # Calling convention
//! The plugin's functions are called with the C convention of the host,
//! which on x86_64 Linux and macOS is System V (`sysv64`), the convention
//! `.sos` files are built for. The mapping step exists on Unix hosts only;
//! on other platforms loading fails with
//! [`EmbeddedElfError::UnsupportedHost`] (a Windows host would also need
//! `extern "sysv64"` function types for every call into the plugin).

mod error;
pub mod fatelf;
mod map;
mod validate;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use xplug_abi::{Features, QueryFn};

pub use error::EmbeddedElfError;
pub use fatelf::FatElfRecord;
pub use validate::{
    ElfPlan, ElfTarget, MAX_IMAGE_SIZE, PlannedSegment, QUERY_SYMBOL, SegmentFlags, SymbolHashTable,
    validate, validate_for,
};

use crate::plugin::{LoadSite, load_checked};
use crate::raw::RawQuery;
use crate::{Error, LoadParamList, Plugin, PluginSource};

/// A validated, mapped and relocated ELF image: owns the memory its code
/// runs from (released on drop) and yields the plugin's query function.
pub struct ElfImage {
    mapping: map::MappedImage,
    plan: ElfPlan,
}

impl std::fmt::Debug for ElfImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfImage")
            .field("base", &format_args!("{:#x}", self.base()))
            .field("plan", &self.plan)
            .finish()
    }
}

impl ElfImage {
    /// Validates `bytes` for this host and maps the result.
    ///
    /// # Errors
    /// Whatever [`validate`] refuses; [`EmbeddedElfError::Memory`] when the
    /// reservation or a protection change fails;
    /// [`EmbeddedElfError::RelocationOverflow`] when a 32-bit relocation
    /// cannot reach the address the image landed at;
    /// [`EmbeddedElfError::UnsupportedHost`] off Unix.
    pub fn load(bytes: &[u8]) -> Result<Self, EmbeddedElfError> {
        let plan = validate(bytes)?;
        let mapping = map::map(&plan, &bytes[plan.elf()])?;
        Ok(Self { mapping, plan })
    }

    /// What [`validate`] decided for this image.
    #[must_use]
    pub fn plan(&self) -> &ElfPlan {
        &self.plan
    }

    /// The address the image's first page is mapped at.
    #[must_use]
    pub fn base(&self) -> usize {
        self.mapping.address(0)
    }

    /// The plugin's `iree_hal_executable_plugin_query`.
    ///
    /// # Safety
    /// The image must be a v0 plugin whose query symbol really is a
    /// function of [`QueryFn`]'s type in this host's C calling convention
    /// (validation checked only that it points into executable memory); the
    /// pointer is valid while `self` lives.
    #[must_use]
    pub unsafe fn query(&self) -> QueryFn {
        let address = self.mapping.address(self.plan.query_offset());
        // SAFETY: `address` is inside an executable segment of the mapping
        // (validated); the caller vouches that it is a `QueryFn`. Function
        // pointers and addresses have the same size on supported hosts.
        unsafe { std::mem::transmute::<usize, QueryFn>(address) }
    }
}

/// Reads a `.sos` file, mapping a missing file to [`Error::FileNotFound`].
/// Only regular files are read (a FIFO or device would block or never
/// end; the file is opened non-blocking, so a FIFO is refused rather than
/// waited on), in one `read` of the size the file has when opened.
fn read_image_file(path: &Path) -> Result<Vec<u8>, Error> {
    use std::io::Read as _;
    let io_error = Error::reading("embedded ELF plugin", path);
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let mut file = options.open(path).map_err(&io_error)?;
    let metadata = file.metadata().map_err(&io_error)?;
    if !metadata.is_file() {
        return Err(crate::raw::not_a_regular_file(path, &metadata));
    }
    let too_large = || {
        io_error(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("the file is {} bytes, more than this process can hold", metadata.len()),
        ))
    };
    let size = usize::try_from(metadata.len()).map_err(|_| too_large())?;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size).map_err(|_| too_large())?;
    bytes.resize(size, 0);
    file.read_exact(&mut bytes).map_err(&io_error)?;
    Ok(bytes)
}

impl ElfImage {
    /// Reads the `.sos` (or plain ELF) at `path`, validates and maps it: the
    /// raw layer's "open" step for embedded plugins.
    ///
    /// # Errors
    /// [`Error::FileNotFound`] or [`Error::Io`] when the file cannot be
    /// read, [`Error::EmbeddedElf`] (with the [`EmbeddedElfError`] as its
    /// source) when it is refused or cannot be mapped.
    pub fn load_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes = read_image_file(path)?;
        Self::load(&bytes).map_err(|source| Error::EmbeddedElf {
            plugin: path.display().to_string(),
            source: Box::new(source),
        })
    }

    /// The plugin's query function as a step of the raw layer
    /// ([`crate::raw`]), borrowing the image.
    ///
    /// # Safety
    /// As [`ElfImage::query`], plus the v0 query contract of
    /// [`RawQuery::new`].
    #[must_use]
    pub unsafe fn raw_query(&self) -> RawQuery<'_> {
        // SAFETY: forwarded to the caller; the image outlives the borrow.
        unsafe { RawQuery::new(self.query()) }
    }
}

/// Embedded ELF plugins (`.sos` files or bytes), loaded by xplug itself.
impl Plugin {
    /// Reads the `.sos` (or plain ELF) at `path`, validates and maps it
    /// ([`ElfImage::load`]) and loads the plugin with the checks of
    /// [`crate::checks`], requiring the `STANDALONE` feature.
    ///
    /// ```no_run
    /// use xplug_providers::{LoadParamList, Plugin};
    ///
    /// // SAFETY: the file is a trusted v0 plugin.
    /// let plugin = unsafe {
    ///     Plugin::load_embedded_elf("target/plugins/release/sample_standalone.sos", &LoadParamList::new())
    /// }?;
    /// println!("loaded {} ({})", plugin.name(), plugin.source());
    /// # Ok::<(), xplug_providers::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::FileNotFound`] or [`Error::Io`] when the file cannot be
    /// read; otherwise as [`Plugin::load_embedded_elf_image`].
    ///
    /// # Safety
    /// As [`Plugin::load_embedded_elf_image`].
    ///
    /// # Platform-specific behaviour
    /// Unix hosts only (`mmap`/`mprotect`); elsewhere
    /// [`EmbeddedElfError::UnsupportedHost`].
    pub unsafe fn load_embedded_elf(path: impl AsRef<Path>, params: &LoadParamList) -> Result<Self, Error> {
        let path = path.as_ref();
        let bytes = read_image_file(path)?;
        let label = path.display().to_string();
        // SAFETY: forwarded to the caller.
        unsafe { load(&bytes, label, Some(path.to_path_buf()), params) }
    }

    /// Loads a plugin from the bytes of a `.sos` file (a FatELF container
    /// or one ELF), as if read from a file called `name`. The bytes are
    /// copied; `bytes` may be dropped afterwards.
    ///
    /// # Errors
    /// [`Error::EmbeddedElf`] when the image is refused or cannot be mapped
    /// (its source says why); then the errors of
    /// [`Plugin::from_static_query`], including a refusal of a plugin
    /// without the `STANDALONE` feature.
    ///
    /// # Safety
    /// The image's code runs in this process: validation refuses malformed
    /// and non-standalone files but cannot judge what the code does. It must
    /// be a trusted v0 plugin.
    ///
    /// # Thread-safety
    /// Any thread; every call maps its own copy of the image.
    pub unsafe fn load_embedded_elf_image(
        name: &str,
        bytes: &[u8],
        params: &LoadParamList,
    ) -> Result<Self, Error> {
        // SAFETY: forwarded to the caller.
        unsafe { load(bytes, format!("memory image `{name}`"), None, params) }
    }
}

/// Validates, maps and hands over to the checked loader.
///
/// # Safety
/// As [`Plugin::load_embedded_elf_image`].
unsafe fn load(
    bytes: &[u8],
    label: String,
    path: Option<PathBuf>,
    params: &LoadParamList,
) -> Result<Plugin, Error> {
    let span = tracing::debug_span!("xplug.embedded_elf.map", plugin = %label, size = bytes.len());
    let image = span
        .in_scope(|| ElfImage::load(bytes))
        .map_err(|source| Error::EmbeddedElf { plugin: label.clone(), source: Box::new(source) })?;
    let record = image.plan().record().copied();
    // SAFETY: the caller vouches for the plugin.
    let query = unsafe { image.query() };
    let fallback_name = path
        .as_deref()
        .and_then(Path::file_stem)
        .map_or_else(|| label.clone(), |stem| stem.to_string_lossy().into_owned());
    let source = match path {
        Some(path) => PluginSource::EmbeddedElf { path: Some(path), name: String::new(), record },
        None => PluginSource::EmbeddedElf { path: None, name: label, record },
    };
    let site = LoadSite {
        fallback_name,
        source,
        required_features: Features::STANDALONE,
        loader: "embedded ELF",
        code: Some(Arc::new(image)),
        params_list: None,
    };
    // SAFETY: `query` is the image's v0 query function (the caller's
    // promise); the image stays mapped while the plugin holds `site.code`,
    // which outlives the plugin's instance.
    let query = unsafe { RawQuery::new(query) };
    load_checked(query, site, params)
}
