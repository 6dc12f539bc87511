//! Parameter archives (`.irpa`, `.gguf`, `.safetensors`): opened and
//! indexed by IREE, one index per scope, checked by [`crate::archive`]
//! before a program reads them, and the named errors for a parameter a
//! program reads that no archive serves.

use std::ffi::c_int;
use std::path::PathBuf;

use crate::archive;
use crate::error::{Error, IreeStatus};
use crate::files;
use crate::sys;

/// How a session opens its parameter archives: the `--parameter_mode` of
/// `xplug run`. The outputs are the same in every mode; what differs is
/// what is read and what memory it takes (`docs/src/embedding/iree.md`,
/// "Parameter archives").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ParameterArchiveMode {
    /// iree-run-module's default: IREE's file API reads each parameter the
    /// program loads into a device buffer of its own, when the session is
    /// built (a program's parameters load in its initialisers). The
    /// session keeps the bytes it read: a later rewrite or truncation of
    /// the archive changes nothing.
    #[default]
    File,
    /// iree-run-module's `preload`: each archive is read whole into memory
    /// when the session is built, and IREE imports from that copy; later
    /// changes to the file change nothing.
    Preload,
    /// xplug's opt-in, not one of the pinned iree-run-module's modes: map
    /// each archive (private, copy-on-write) and let IREE import the
    /// mapped range of each parameter as its device buffer: nothing is
    /// copied, only the pages the program touches are read, and they stay
    /// shared with the page cache. The archive must not change while the
    /// session lives: the program computes with bytes rewritten in place,
    /// and a truncated archive faults (SIGBUS) when the program touches a
    /// page past its new end.
    Mmap,
}

impl ParameterArchiveMode {
    /// Every mode, in the order `xplug run --help` lists them.
    pub const ALL: [Self; 3] = [Self::File, Self::Preload, Self::Mmap];

    /// The mode named `name` (`mmap`, `file`, `preload`), as
    /// `--parameter_mode` takes it.
    ///
    /// ```
    /// use xplug_iree::ParameterArchiveMode;
    /// assert_eq!(ParameterArchiveMode::parse("file"), Some(ParameterArchiveMode::File));
    /// assert_eq!(ParameterArchiveMode::parse("mapped"), None);
    /// ```
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.name() == name)
    }

    /// Its `--parameter_mode` name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Mmap => "mmap",
            Self::File => "file",
            Self::Preload => "preload",
        }
    }

    fn code(self) -> c_int {
        match self {
            Self::Mmap => sys::PARAMETER_MODE_MMAP,
            Self::File => sys::PARAMETER_MODE_FILE,
            Self::Preload => sys::PARAMETER_MODE_PRELOAD,
        }
    }
}

/// The parameter archives of one scope, indexed by IREE.
pub(crate) struct ScopeIndex {
    pub(crate) scope: String,
    pub(crate) index: sys::ParameterIndex,
    archives: Vec<PathBuf>,
}

/// Opens and indexes every archive, one IREE index per scope in the order
/// the scopes first appear (as IREE's scope map builds them).
pub(crate) fn index_parameters(
    parameters: &[(String, PathBuf)],
    mode: ParameterArchiveMode,
) -> Result<Vec<ScopeIndex>, Error> {
    let mut scopes: Vec<ScopeIndex> = Vec::new();
    for (scope, path) in parameters {
        let metadata = std::fs::metadata(path).map_err(|source| Error::ParameterFile {
            path: path.clone(),
            scope: scope.clone(),
            source,
        })?;
        if !metadata.is_file() {
            return Err(Error::NotAFile {
                what: "the parameter archive",
                path: path.clone(),
                kind: files::file_kind(&metadata),
            });
        }
        let archive_error = |status: sys::Status| Error::ParameterArchive {
            path: path.clone(),
            scope: scope.clone(),
            source: status.into(),
        };
        let position = match scopes.iter().position(|entry| entry.scope == *scope) {
            Some(position) => position,
            None => {
                let index = sys::ParameterIndex::new().map_err(archive_error)?;
                scopes.push(ScopeIndex { scope: scope.clone(), index, archives: Vec::new() });
                scopes.len() - 1
            }
        };
        let entry = &mut scopes[position];
        let (handle, length) = sys::FileHandle::open_archive(path, mode.code()).map_err(archive_error)?;
        let archive = OpenArchive { handle: &handle, length };
        let format = archive::Format::of(path);
        let damaged = |fault: archive::Fault| Error::ParameterLayout {
            path: path.clone(),
            scope: scope.clone(),
            key: fault.key,
            problem: fault.problem,
            code: fault.code.0,
        };
        let regions = archive::layout(format, &archive).map_err(damaged)?;
        let first = entry.index.len();
        entry.index.parse(path, &handle).map_err(archive_error)?;
        let indexed = (first..entry.index.len())
            .map(|i| {
                entry.index.entry(i, &handle).map(|found| archive::Entry {
                    key: found.key,
                    in_file: found.in_file,
                    in_archive: found.in_archive,
                    offset: found.offset,
                    length: found.length,
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(archive_error)?;
        archive::check_entries(length, &regions, &indexed).map_err(damaged)?;
        entry.archives.push(path.clone());
    }
    Ok(scopes)
}

/// An archive IREE opened, read by xplug's checks through IREE's handle.
struct OpenArchive<'a> {
    handle: &'a sys::FileHandle,
    length: u64,
}

impl archive::Source for OpenArchive<'_> {
    fn len(&self) -> u64 {
        self.length
    }

    fn read(&self, offset: u64, buffer: &mut [u8]) -> Result<(), archive::Fault> {
        self.handle.read(self.length, offset, buffer).map_err(|status| archive::Fault {
            code: xplug_manager::providers::abi::StatusCode(status.code()),
            key: None,
            problem: status.text(),
        })
    }
}

/// The named error for a context that failed for want of a parameter:
/// IREE's `io_parameters` module reports a scope no provider serves, its
/// index provider a key no archive of the scope holds.
pub(crate) fn parameter_error(status: &sys::Status, module: &str, scopes: &[ScopeIndex]) -> Option<Error> {
    let text = status.text();
    // IREE quotes the name as '%.*s' and may follow it with annotations
    // ("; while invoking ..."): the name ends at the first quote that
    // ends the text, its line or its message, so a name may hold quotes.
    let quoted = |prefix: &str| {
        let rest = &text[text.find(prefix)? + prefix.len()..];
        let end = rest.match_indices('\'').map(|(at, _)| at).find(|&at| {
            let after = &rest[at + 1..];
            after.is_empty() || after.starts_with(';') || after.starts_with('\n')
        })?;
        Some(rest[..end].to_owned())
    };
    if let Some(scope) = quoted("no provider registered that handles scopes like '") {
        return Some(Error::ParameterScope {
            module: module.to_owned(),
            scope,
            given: scopes.iter().map(|entry| entry.scope.clone()).collect(),
            source: IreeStatus { code: status.code(), text },
        });
    }
    let key = quoted("no parameter found in index with key '")?;
    // The scopes whose archives lack the key: IREE's message does not say
    // which one the program asked, so each that may be is named, with its
    // archives, each once.
    let lacking: Vec<&ScopeIndex> = scopes.iter().filter(|entry| !entry.index.contains(&key)).collect();
    let mut archives: Vec<PathBuf> = Vec::new();
    for path in lacking.iter().flat_map(|entry| &entry.archives) {
        if !archives.contains(path) {
            archives.push(path.clone());
        }
    }
    Some(Error::ParameterMissing {
        module: module.to_owned(),
        key,
        scopes: lacking.iter().map(|entry| entry.scope.clone()).collect(),
        archives: archives.into_boxed_slice(),
        source: IreeStatus { code: status.code(), text },
    })
}
