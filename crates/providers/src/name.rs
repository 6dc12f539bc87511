//! A provider's name, cheap to copy into errors.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The name of a provider as errors carry it: a `'static` string (free to
/// copy) or a shared one (one reference-count increment to copy), so that
/// [`crate::Error::NotFound`], which the manager sees once per provider that
/// lacks a name, never allocates.
///
/// ```
/// use std::sync::Arc;
/// use xplug_providers::ProviderName;
///
/// let fixed = ProviderName::from("table");
/// let shared = ProviderName::from(Arc::<str>::from(String::from("loaded at run time")));
/// assert_eq!(&*fixed, "table");
/// assert_eq!(shared.to_string(), "loaded at run time");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ProviderName(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Deref for ProviderName {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.0 {
            Repr::Static(name) => name,
            Repr::Shared(name) => name,
        }
    }
}

impl fmt::Display for ProviderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for ProviderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl From<&'static str> for ProviderName {
    fn from(name: &'static str) -> Self {
        Self(Repr::Static(name))
    }
}

impl From<Arc<str>> for ProviderName {
    fn from(name: Arc<str>) -> Self {
        Self(Repr::Shared(name))
    }
}

impl From<String> for ProviderName {
    fn from(name: String) -> Self {
        Self(Repr::Shared(name.into()))
    }
}

impl From<&ProviderName> for ProviderName {
    fn from(name: &ProviderName) -> Self {
        name.clone()
    }
}

impl PartialEq<str> for ProviderName {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for ProviderName {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}
