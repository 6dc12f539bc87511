//! The raw step for an embedded ELF plugin: take a mapped image's query
//! function.

use xplug_elf::ElfImage;

use super::RawQuery;

impl<'code> RawQuery<'code> {
    /// The query function of a mapped embedded ELF image, borrowing the
    /// image.
    ///
    /// # Safety
    /// As [`ElfImage::query`] (the image is a v0 plugin), plus the v0 query
    /// contract of [`RawQuery::in_image`] (the header and its strings are
    /// checked against the image before they are read).
    #[must_use]
    pub unsafe fn from_elf_image(image: &'code ElfImage) -> Self {
        // SAFETY: forwarded to the caller; the image outlives `'code`, and
        // the header pointers are checked against its segments.
        unsafe { Self::in_image(image.query(), image.readable_ranges()) }
    }
}
