//! A validated, mapped and relocated image, and the query function it
//! exports: where the embedded loader hands over to a host.

use xplug_abi::QueryFn;

use crate::error::EmbeddedElfError;
use crate::map;
use crate::plan::ElfPlan;
use crate::validate::validate;

/// A validated, mapped and relocated ELF image: owns the memory its code
/// runs from (released on drop) and yields the plugin's query function.
///
/// # Thread-safety
/// `Send` and `Sync`: after loading, the image is only read (the plugin's
/// own code writes its writable segment, which the v0 ABI requires to be
/// thread-safe).
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
    /// Validates `bytes` (a FatELF container or one ELF) for this host and
    /// maps the result. The bytes are copied; `bytes` may be dropped
    /// afterwards. No code of the image runs.
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
        // SAFETY: the offset was validated to lie inside an executable
        // segment of the mapping; the caller vouches that a `QueryFn` is
        // there.
        unsafe { self.mapping.function(self.plan.query_offset()) }
    }

    /// The address of xplug's optional export `name` (one of
    /// [`xplug_abi::OPTIONAL_EXPORTS`]) when the image defines it inside an
    /// executable segment, as validated; `None` otherwise. Valid while
    /// `self` lives. Nothing is called: the caller casts it to the
    /// export's function type, vouching that the image is an xplug plugin.
    #[must_use]
    pub fn optional_export(&self, name: &std::ffi::CStr) -> Option<*const ()> {
        let offset = self.plan.optional_export(name.to_str().ok()?)?;
        Some(self.mapping.address(offset) as *const ())
    }
}
