//! The raw steps for an embedded ELF plugin: read the file (for
//! [`crate::EmbeddedElfLoader`], the one routine that validates and maps
//! it), and take a mapped image's query function.

use std::path::Path;

use xplug_elf::ElfImage;

use super::RawQuery;
use crate::Error;

/// Reads a `.sos` file, mapping a missing file to [`Error::FileNotFound`].
/// Only regular files are read (a FIFO or device would block or never
/// end; the file is opened non-blocking, so a FIFO is refused rather than
/// waited on), in one `read` of the size the file has when opened.
pub(crate) fn read_elf_file(path: &Path) -> Result<Vec<u8>, Error> {
    read_plugin_file(path, "embedded ELF plugin")
}

/// Reads the plugin file at `path` (`what` it is, for messages) as
/// [`read_elf_file`] does: the one routine that reads a plugin's bytes
/// (a `.sos`, or a `.so` opened pinned).
pub(crate) fn read_plugin_file(path: &Path, what: &'static str) -> Result<Vec<u8>, Error> {
    use std::io::Read as _;
    let io_error = Error::reading(what, path);
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let mut file = options.open(path).map_err(&io_error)?;
    let metadata = file.metadata().map_err(&io_error)?;
    if !metadata.is_file() {
        return Err(super::library::not_a_regular_file(path, &metadata));
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
