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
//! [`Plugin::load_embedded_elf`] (a file) and
//! [`Plugin::load_embedded_elf_image`] (bytes) run both and hand the image's
//! query function to the checked loader, which additionally requires the
//! plugin to declare the `STANDALONE` feature. [`ElfImage`] is the mapped
//! image alone, for tools (its query is a [`RawQuery`]).
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

use xplug_abi::Features;

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

    /// The plugin's `iree_hal_executable_plugin_query`, valid while `self`
    /// lives.
    ///
    /// # Safety
    /// The image must be a v0 plugin whose query symbol really is a v0
    /// query function in this host's C calling convention, obeying the
    /// contract of [`RawQuery::new`] (validation checked only that the
    /// symbol points into executable memory).
    #[must_use]
    pub unsafe fn query(&self) -> RawQuery<'_> {
        let address = self.mapping.address(self.plan.query_offset());
        // SAFETY: `address` is inside an executable segment of the mapping
        // (validated); the caller vouches that it is a `QueryFn`. Function
        // pointers and addresses have the same size on supported hosts.
        let query = unsafe { std::mem::transmute::<usize, xplug_abi::QueryFn>(address) };
        // SAFETY: the caller's promise; the code lives as long as `self`.
        unsafe { RawQuery::new(query) }
    }
}

impl Plugin {
    /// Reads the `.sos` (or plain ELF) at `path` and loads the plugin in it
    /// with xplug's embedded ELF loader: the record for this host is
    /// validated ([`validate`]) and mapped, then the plugin is queried,
    /// checked (it must declare `STANDALONE`) and loaded with `params`.
    ///
    /// ```no_run
    /// use xplug_providers::{LoadParamList, Plugin};
    ///
    /// // SAFETY: the file is a trusted v0 plugin.
    /// let plugin = unsafe {
    ///     Plugin::load_embedded_elf("target/plugins/release/sample_standalone.sos", &LoadParamList::new())
    /// }?;
    /// println!("loaded {} ({})", plugin.name(), plugin.info().description);
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
    /// Unix hosts only (x86_64, aarch64, riscv64); elsewhere
    /// [`EmbeddedElfError::UnsupportedHost`].
    pub unsafe fn load_embedded_elf(path: impl AsRef<Path>, params: &LoadParamList) -> Result<Plugin, Error> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|error| {
            if error.kind() == std::io::ErrorKind::NotFound {
                Error::FileNotFound { path: path.to_path_buf() }
            } else {
                Error::io(format!("cannot read embedded ELF plugin {}", path.display()), error)
            }
        })?;
        // SAFETY: forwarded to the caller.
        unsafe { load(&bytes, path.display().to_string(), Some(path.to_path_buf()), String::new(), params) }
    }

    /// Loads a plugin from the bytes of a `.sos` file (a FatELF container
    /// or one ELF), as if read from a file called `name`. The bytes are
    /// copied into the new mapping; `bytes` may be dropped afterwards.
    ///
    /// # Errors
    /// [`Error::EmbeddedElf`] when the image is refused or cannot be mapped
    /// (its source says why); then the query, check and load errors of
    /// [`Plugin::from_static_query`], including the refusal of a plugin
    /// without the `STANDALONE` feature.
    ///
    /// # Safety
    /// The image's code runs in this process: validation refuses malformed,
    /// hostile-looking and non-standalone files but cannot judge what the
    /// code does. It must be a trusted v0 plugin.
    ///
    /// # Thread-safety
    /// Any thread; every call maps a fresh image.
    pub unsafe fn load_embedded_elf_image(
        name: &str,
        bytes: &[u8],
        params: &LoadParamList,
    ) -> Result<Plugin, Error> {
        // SAFETY: forwarded to the caller.
        unsafe { load(bytes, format!("memory image `{name}`"), None, name.to_owned(), params) }
    }
}

/// Validates, maps and hands over to the checked loader.
///
/// # Safety
/// As [`Plugin::load_embedded_elf_image`].
unsafe fn load(
    bytes: &[u8],
    shown: String,
    path: Option<PathBuf>,
    name: String,
    params: &LoadParamList,
) -> Result<Plugin, Error> {
    let span = tracing::debug_span!("xplug.embedded_elf.map", plugin = %shown, size = bytes.len());
    let image = span
        .in_scope(|| ElfImage::load(bytes))
        .map_err(|source| Error::EmbeddedElf { plugin: shown.clone(), source: Box::new(source) })?;
    let record = image.plan().record().copied();
    let fallback_name = path
        .as_deref()
        .and_then(Path::file_stem)
        .map_or_else(|| shown.clone(), |stem| stem.to_string_lossy().into_owned());
    let source = PluginSource::EmbeddedElf { path, name, record };
    // SAFETY: the caller vouches for the plugin; the query lives in the
    // image, which the plugin keeps mapped (`site.code`) until after its
    // unload, so `'static` is never observed beyond the image's life.
    let query = unsafe { image.query() }.as_fn();
    // SAFETY: as above.
    let query = unsafe { RawQuery::new(query) };
    let site = LoadSite {
        fallback_name,
        source,
        required_features: Features::STANDALONE,
        loader: "embedded ELF",
        code: Some(Arc::new(image)),
    };
    load_checked(query, site, params)
}
