//! Where a plugin's code came from, said once: which [`Loader`] opened it,
//! and whether from a file or from bytes in memory. The loader's name and
//! the features it requires are the loader's.

use std::fmt;
use std::path::{Path, PathBuf};

use xplug_abi::Features;

use crate::Loader;

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

/// Where a plugin was loaded from: the [`Loader`] that opened its code and,
/// for code that was not linked in, its [`Origin`].
#[derive(Clone)]
pub struct PluginSource {
    loader: &'static dyn Loader,
    origin: Option<Origin>,
    label: String,
}

impl fmt::Debug for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginSource")
            .field("loader", &self.loader.name())
            .field("origin", &self.origin)
            .field("label", &self.label)
            .finish()
    }
}

/// Two sources are equal when the same loader read the same origin.
impl PartialEq for PluginSource {
    fn eq(&self, other: &Self) -> bool {
        self.loader.name() == other.loader.name() && self.origin == other.origin
    }
}

impl Eq for PluginSource {}

impl PluginSource {
    /// The source of code `loader` opened from `origin` (`None`: linked
    /// in), shown in messages as `label`.
    pub(crate) fn new(loader: &'static dyn Loader, origin: Option<Origin>, label: String) -> Self {
        Self { loader, origin, label }
    }

    /// Shows the source as `label` in messages (a loader's fuller
    /// description, [`Code::with_label`](crate::Code::with_label)).
    pub(crate) fn set_label(&mut self, label: String) {
        self.label = label;
    }

    /// How messages name the plugin `name` from this source:
    /// "`name` (source)".
    pub(crate) fn plugin_label(&self, name: &str) -> String {
        format!("`{name}` ({self})")
    }

    /// The loader that opened the plugin's code.
    #[must_use]
    pub fn loader(&self) -> &'static dyn Loader {
        self.loader
    }

    /// The features the loader insists on ([`Loader::required_features`]).
    #[must_use]
    pub fn required_features(&self) -> Features {
        self.loader.required_features()
    }

    /// The file or image the code was read from; `None` when linked in.
    #[must_use]
    pub fn origin(&self) -> Option<&Origin> {
        self.origin.as_ref()
    }
}

impl fmt::Display for PluginSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EMBEDDED_ELF, STATIC, SYSTEM_LIBRARY};

    #[test]
    fn the_loader_and_its_features_follow_from_the_source() {
        let file = Origin::File(PathBuf::from("/p/libx.so"));
        let library = PluginSource::new(&SYSTEM_LIBRARY, Some(file.clone()), file.to_string());
        assert_eq!(
            (library.loader().name(), library.required_features()),
            ("system library", Features::NONE)
        );
        assert_eq!(library.to_string(), "/p/libx.so");
        let elf =
            PluginSource::new(&EMBEDDED_ELF, Some(Origin::Memory("k".to_owned())), "k (embedded ELF)".into());
        assert_eq!((elf.loader().name(), elf.required_features()), ("embedded ELF", Features::STANDALONE));
        assert_eq!(elf.origin().and_then(Origin::path), None);
        let linked = PluginSource::new(&STATIC, None, "linked in".into());
        assert_eq!(linked.origin(), None);
        assert_ne!(linked, library);
        assert_eq!(library.origin().and_then(Origin::path), Some(Path::new("/p/libx.so")));
    }
}
