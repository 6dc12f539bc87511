//! Where a plugin's code came from, said once: which loader mapped it, and
//! whether from a file or from bytes in memory. The loader's name and the
//! features it requires are derived from it.

use std::fmt;
use std::path::{Path, PathBuf};

use xplug_abi::Features;
use xplug_elf::FatElfRecord;

/// Where a loader read a plugin's code from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// A file, by the path it was opened with.
    File(PathBuf),
    /// Bytes in memory, by the name the caller gave them.
    Memory(String),
}

impl Origin {
    /// The file, for code read from one.
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            Self::Memory(_) => None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Memory(name) => write!(f, "memory image `{name}`"),
        }
    }
}

/// Where a plugin was loaded from: the loader and, for code that was not
/// linked in, its [`Origin`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PluginSource {
    /// Linked into the binary (a query function called directly).
    Static,
    /// A shared library opened by the OS loader.
    SystemLibrary {
        /// The file or the image the library was opened from.
        origin: Origin,
    },
    /// An embedded ELF (`.sos`) image mapped by xplug's own loader
    /// ([`xplug_elf`]).
    EmbeddedElf {
        /// The file or the image the ELF was read from.
        origin: Origin,
        /// The FatELF record chosen, or `None` for a plain ELF.
        record: Option<FatElfRecord>,
    },
}

impl PluginSource {
    /// The loader's name, as load-check messages give it: `static`,
    /// `system library` or `embedded ELF`.
    #[must_use]
    pub fn loader(&self) -> &'static str {
        match self {
            Self::Static => "static",
            Self::SystemLibrary { .. } => "system library",
            Self::EmbeddedElf { .. } => "embedded ELF",
        }
    }

    /// The features the loader insists on: `STANDALONE` for an embedded
    /// ELF (it has no OS loader to resolve imports), none otherwise.
    #[must_use]
    pub fn required_features(&self) -> Features {
        match self {
            Self::EmbeddedElf { .. } => Features::STANDALONE,
            Self::Static | Self::SystemLibrary { .. } => Features::NONE,
        }
    }

    /// The file or image the code was read from; `None` when linked in.
    #[must_use]
    pub fn origin(&self) -> Option<&Origin> {
        match self {
            Self::Static => None,
            Self::SystemLibrary { origin } | Self::EmbeddedElf { origin, .. } => Some(origin),
        }
    }
}

impl fmt::Display for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Static => f.write_str("linked in"),
            Self::SystemLibrary { origin } => write!(f, "{origin}"),
            Self::EmbeddedElf { origin, record: Some(record) } => {
                write!(f, "{origin} (embedded ELF, FatELF record {}: {record})", record.index)
            }
            Self::EmbeddedElf { origin, record: None } => write!(f, "{origin} (embedded ELF)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_and_its_features_follow_from_the_source() {
        let file = Origin::File(PathBuf::from("/p/libx.so"));
        let library = PluginSource::SystemLibrary { origin: file.clone() };
        assert_eq!((library.loader(), library.required_features()), ("system library", Features::NONE));
        assert_eq!(library.to_string(), "/p/libx.so");
        let elf = PluginSource::EmbeddedElf { origin: Origin::Memory("k".to_owned()), record: None };
        assert_eq!((elf.loader(), elf.required_features()), ("embedded ELF", Features::STANDALONE));
        assert_eq!(elf.to_string(), "memory image `k` (embedded ELF)");
        assert_eq!(elf.origin().and_then(Origin::path), None);
        assert_eq!(PluginSource::Static.to_string(), "linked in");
        assert_eq!(PluginSource::Static.origin(), None);
        assert_eq!(library.origin().and_then(Origin::path), Some(Path::new("/p/libx.so")));
    }
}
