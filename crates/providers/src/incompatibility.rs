//! Why a plugin cannot be loaded by this host: [`Incompatibility`], the
//! refusal every load check of [`crate::compatibility`] returns (and the raw
//! layer's header read, for embedded images), with the values compared.
//! Its public home is `compatibility::Incompatibility`.

use xplug_abi::{Features, Sanitizer, StatusCode, Version};

/// Why a plugin cannot be loaded by this host, with the values compared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Incompatibility {
    /// The v0 table's header pointer is NULL.
    #[error("its v0 table has a NULL header pointer; fix the plugin's query function")]
    NullHeader,
    /// The v0 table's header pointer of an embedded ELF plugin does not
    /// lead to a whole header inside the plugin's image (read nowhere).
    #[error(
        "its v0 table's header pointer ({address:#x}) does not lead to a header inside its embedded ELF image; \
         the file is damaged: rebuild it"
    )]
    HeaderOutsideImage {
        /// The pointer's value.
        address: usize,
    },
    /// A string pointer of an embedded ELF plugin's header (`name` or
    /// `description`) does not lead to a NUL-terminated string inside the
    /// plugin's image (nothing outside the image was read).
    #[error(
        "its header's `{field}` pointer ({address:#x}) does not lead to a NUL-terminated string inside its \
         embedded ELF image; the file is damaged: rebuild it"
    )]
    HeaderStringOutsideImage {
        /// `name` or `description`.
        field: &'static str,
        /// The pointer's value.
        address: usize,
    },
    /// The header has no name (a NULL `name` pointer).
    #[error("its header has a NULL name; give the plugin a name in its header")]
    NullName,
    /// The header version is 0, which no ABI release uses.
    #[error(
        "its header version is {found} (not a valid version); expected {expected}; rebuild it against the current plugin header"
    )]
    InvalidVersion {
        /// The version in the header.
        found: Version,
        /// The version this host speaks.
        expected: Version,
    },
    /// The header version is newer than this host's.
    #[error(
        "its header version {found} is newer than this runtime's {supported}; use a newer runtime or build \
         the plugin for version {supported}"
    )]
    NewerVersion {
        /// The version in the header.
        found: Version,
        /// The newest version this host speaks.
        supported: Version,
    },
    /// The plugin returns full `iree_status_t` objects.
    #[error(
        "it returns full iree_status_t objects (FULL_STATUS feature) but this host only understands plain \
         status codes; rebuild the plugin without full status support"
    )]
    FullStatus,
    /// The plugin is built with a sanitizer this host lacks.
    #[error(
        "it is compiled with the {} sanitizer but this host is not{}",
        found.name().unwrap_or("unknown"),
        sanitizer_advice(*found)
    )]
    Sanitizer {
        /// The sanitizer in the header.
        found: Sanitizer,
        /// The host's ([`HOST_SANITIZER`](crate::compatibility::HOST_SANITIZER)).
        host: Sanitizer,
    },
    /// The header sets feature bits this host does not know.
    #[error(
        "it declares feature bits {:#x} this host does not understand (known: {:#x}); rebuild it against this \
         runtime's plugin header",
        unknown.0,
        known.0
    )]
    UnknownFeatures {
        /// The unknown bits.
        unknown: Features,
        /// The bits this host knows.
        known: Features,
    },
    /// The loader needs features the plugin does not declare.
    #[error(
        "the {loader} loader requires the feature(s) {} but the plugin declares {found:?}; build the plugin \
         with them",
        feature_names(*missing)
    )]
    MissingFeatures {
        /// The loader asking.
        loader: &'static str,
        /// What it requires and the plugin lacks.
        missing: Features,
        /// What the plugin declares.
        found: Features,
    },
    /// The table lacks a function every plugin must have.
    #[error("its v0 table has a NULL `{function}` function; fix the plugin's table")]
    MissingFunction {
        /// `load` or `resolve`.
        function: &'static str,
    },
    /// A load parameter the plugin does not declare (it lists its
    /// parameters, and this key is not among them).
    #[error(
        "it declares no load parameter `{key}`{}; it declares {}",
        suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(),
        if declared.is_empty() { "no parameters".to_owned() } else { declared.join(", ") }
    )]
    UndeclaredParam {
        /// The key given.
        key: Box<str>,
        /// The closest declared name, when one is close.
        suggestion: Option<Box<str>>,
        /// Every declared name.
        declared: Box<[String]>,
    },
    /// A load parameter's value is not of the type the plugin declares
    /// for it.
    #[error(
        "its load parameter `{key}` has the value `{value}` but {} is expected (it declares `{key}` as \
         `{}`); fix the value",
        kind.expected(),
        kind.name()
    )]
    InvalidParamValue {
        /// The key given.
        key: Box<str>,
        /// The value given (invalid UTF-8 shown as U+FFFD).
        value: Box<str>,
        /// The declared type.
        kind: xplug_abi::ParamKind,
    },
}

fn sanitizer_advice(found: Sanitizer) -> String {
    match found.compiler_flag() {
        Some(flag) => format!(
            "; add {flag} to the host's compile options (xplug hosts built with stable Rust have no \
             sanitizer), or rebuild the plugin without {flag}"
        ),
        None => format!(" (sanitizer value {} is unknown); rebuild the plugin without a sanitizer", found.0),
    }
}

fn feature_names(features: Features) -> String {
    features.names().collect::<Vec<_>>().join(", ")
}

impl Incompatibility {
    /// The IREE status code a C host reports for this refusal.
    #[must_use]
    pub fn code(&self) -> StatusCode {
        match self {
            Self::NullHeader
            | Self::HeaderOutsideImage { .. }
            | Self::HeaderStringOutsideImage { .. }
            | Self::NullName
            | Self::InvalidVersion { .. }
            | Self::MissingFunction { .. }
            | Self::UndeclaredParam { .. }
            | Self::InvalidParamValue { .. } => StatusCode::INVALID_ARGUMENT,
            Self::NewerVersion { .. }
            | Self::FullStatus
            | Self::UnknownFeatures { .. }
            | Self::MissingFeatures { .. } => StatusCode::FAILED_PRECONDITION,
            Self::Sanitizer { .. } => StatusCode::UNAVAILABLE,
        }
    }
}
