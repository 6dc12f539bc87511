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
///
/// # Debugging
/// Loading tells no debugger, profiler or crash reporter about the image:
/// the host that maps it does, through `xplug-debug`'s hook
/// (`docs/src/operating/debugging.md`), with [`ElfImage::code_range`] and the functions
/// of its symbol table ([`image_functions`](crate::image_functions)).
pub struct ElfImage {
    mapping: map::MappedImage,
    plan: ElfPlan,
    /// Where the readable segments landed ([`ElfImage::readable_ranges`]).
    readable: ReadableRanges,
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
        Self::load_validated(bytes, validate(bytes)?)
    }

    /// [`ElfImage::load`] for an image whose exported query is
    /// `query_symbol` rather than the plugin's: IREE's compiled
    /// executables ([`LIBRARY_QUERY_SYMBOL`](crate::LIBRARY_QUERY_SYMBOL)),
    /// which go through the same checks and mapping. [`ElfImage::query`]
    /// then points at that function, which is not a [`QueryFn`]: do not
    /// call it through that type.
    ///
    /// # Errors
    /// As [`ElfImage::load`].
    pub fn load_with_query(bytes: &[u8], query_symbol: &'static str) -> Result<Self, EmbeddedElfError> {
        let plan = crate::validate_for(bytes, crate::ElfTarget::host()?.with_query_symbol(query_symbol))?;
        Self::load_validated(bytes, plan)
    }

    /// Maps `plan`, validated from `bytes` for this host.
    fn load_validated(bytes: &[u8], plan: ElfPlan) -> Result<Self, EmbeddedElfError> {
        let elf = &bytes[plan.elf()];
        let mapping = map::map(&plan, elf)?;
        let readable = ReadableRanges(
            plan.segments()
                .iter()
                .filter(|segment| segment.flags.read)
                .map(|segment| {
                    mapping.address(segment.image_offset)
                        ..mapping.address(segment.image_offset + segment.mem_size)
                })
                .collect(),
        );
        Ok(Self { mapping, plan, readable })
    }

    /// The span `[start, end)` of the image's executable segments, where
    /// it landed (empty at 0 when it has none).
    #[must_use]
    pub fn code_range(&self) -> std::ops::Range<usize> {
        let code = self.plan.segments().iter().filter(|segment| segment.flags.execute);
        let start = code.clone().map(|segment| self.mapping.address(segment.image_offset)).min();
        let end = code.map(|segment| self.mapping.address(segment.image_offset + segment.mem_size)).max();
        start.unwrap_or(0)..end.unwrap_or(0)
    }

    /// The address ranges whose instruction cache the loader synchronised
    /// with the code it wrote (copied and relocated), before making them
    /// executable: every executable segment, in whole cache lines, on
    /// aarch64 (`dc cvau`/`ic ivau`) and riscv64; empty on x86_64, whose
    /// instruction fetch sees stores without maintenance. An emulator runs
    /// code without the flush all the same, so this is how a test proves
    /// it happened (`docs/src/reference/embedded-elf.md`).
    ///
    /// Hidden: a bookkeeping record for the tests
    /// (`tests/src/lib.rs`, `assert_code_synchronized`), not an API.
    #[doc(hidden)]
    #[must_use]
    pub fn synchronized_code(&self) -> &[std::ops::Range<usize>] {
        self.mapping.synchronized()
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

    /// Where this image's readable segments lie in memory: what a pointer
    /// the plugin's data holds (its v0 table's header pointer, the
    /// header's strings) must point into before the host reads through it,
    /// since relocated data can point anywhere in a damaged file.
    #[must_use]
    pub fn readable_ranges(&self) -> &ReadableRanges {
        &self.readable
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

/// The address ranges of an image's readable segments
/// ([`ElfImage::readable_ranges`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadableRanges(Vec<std::ops::Range<usize>>);

impl ReadableRanges {
    /// The range holding all `len` bytes at `address`, if one does.
    fn holding(&self, address: usize, len: usize) -> Option<&std::ops::Range<usize>> {
        let last = address.checked_add(len)?;
        self.0.iter().find(|range| range.start <= address && last <= range.end)
    }

    /// Whether the `len` bytes at `address` lie inside one readable segment.
    #[must_use]
    pub fn contains(&self, address: usize, len: usize) -> bool {
        self.holding(address, len).is_some()
    }

    /// A copy of the NUL-terminated string at `address`, without its NUL,
    /// when it starts inside a readable segment and its NUL lies inside
    /// that same segment; `None` otherwise. No byte outside the segment is
    /// read.
    ///
    /// # Safety
    /// The image these ranges were taken from is still mapped.
    #[must_use]
    pub unsafe fn c_string_at(&self, address: usize) -> Option<Vec<u8>> {
        let range = self.holding(address, 1)?;
        let mut bytes = Vec::new();
        for at in address..range.end {
            // SAFETY: `at` lies inside a readable segment of an image that
            // is still mapped (the caller's promise); a volatile byte read
            // does not assume the plugin's data stays unchanged.
            let byte = unsafe { std::ptr::read_volatile(at as *const u8) };
            if byte == 0 {
                return Some(bytes);
            }
            bytes.push(byte);
        }
        None
    }
}
