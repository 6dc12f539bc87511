//! Where a loader read a plugin's code from ([`Origin`]): a file, or bytes
//! in memory. A leaf: the raw layer and the [`Code`](crate::Code) record
//! both name it.

use std::fmt;
use std::path::{Path, PathBuf};

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
