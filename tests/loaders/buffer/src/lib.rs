//! A fourth plugin loader, written against xplug's public API alone:
//! `buffer:PATH` reads the shared library at `PATH` into a byte buffer and
//! serves the plugin from memory ([`RawLibrary::open_image`]).
//!
//! Adding it to every manager and tool of a program is the one
//! `inventory::submit!` line at the bottom; a program links it by naming
//! the crate (`use xplug_buffer_loader as _;`, see `src/main.rs`).

use std::path::Path;

use xplug_providers::abi::QueryFn;
use xplug_providers::raw::{OptionalExports, RawLibrary, RawQuery};
use xplug_providers::{Code, CodeDetail, Error, Loader, LoaderRegistration, MappedCode, Origin};

/// The prefix this loader claims.
pub const PREFIX: &str = "buffer:";

/// The loader: `buffer:PATH`.
#[derive(Debug)]
pub struct BufferLoader;

/// The one instance, registered below.
pub static BUFFER: BufferLoader = BufferLoader;

/// A library served from a buffer, with its query export and the buffer's
/// size.
struct BufferCode {
    library: RawLibrary,
    query: QueryFn,
    size: usize,
}

impl MappedCode for BufferCode {
    fn query(&self) -> RawQuery<'_> {
        // SAFETY: the library's v0 export, vouched for by the caller of
        // `BufferLoader::open`; the library stays open while `self` lives.
        unsafe { RawQuery::new(self.query) }
    }

    fn optional_exports(&self) -> Option<&dyn OptionalExports> {
        Some(&self.library)
    }

    fn details(&self) -> Vec<CodeDetail> {
        vec![CodeDetail::one("buffer", format!("{} bytes served from memory", self.size))]
    }
}

impl Loader for BufferLoader {
    fn name(&self) -> &'static str {
        "byte buffer"
    }

    fn claim<'s>(&self, spec: &'s str) -> Option<&'s str> {
        spec.strip_prefix(PREFIX)
    }

    unsafe fn open(&'static self, target: &str) -> Result<Code, Error> {
        let path = Path::new(target);
        let bytes = std::fs::read(path).map_err(|_| Error::FileNotFound { path: path.to_path_buf() })?;
        let name =
            path.file_name().map_or_else(|| target.to_owned(), |name| name.to_string_lossy().into_owned());
        // SAFETY: forwarded to the caller.
        unsafe { self.open_image(&name, &bytes) }
    }

    unsafe fn open_image(&'static self, name: &str, bytes: &[u8]) -> Result<Code, Error> {
        // SAFETY: forwarded to the caller.
        let library = unsafe { RawLibrary::open_image(name, bytes) }?;
        let query = library.query()?.as_fn();
        // A Rust library stays mapped after its plugin (docs/src/reference/loading.md#unload-policy).
        if library.is_xplug_sdk() {
            library.pin()?;
        }
        let code = BufferCode { library, query, size: bytes.len() };
        Ok(Code::new(self, Some(Origin::Memory(name.to_owned())), name, code))
    }
}

xplug_providers::inventory::submit! { LoaderRegistration::new(&BUFFER) }
