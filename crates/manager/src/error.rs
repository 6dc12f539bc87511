//! The error type of this crate.

use std::fmt::Write as _;

use xplug_providers::abi::StatusCode;

/// One required import that no provider resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingImport {
    /// Position of the import in the request.
    pub index: usize,
    /// The name as the executable declared it.
    pub name: String,
    /// The closest name some provider exports, when one is close enough to
    /// be a plausible typo (see [`crate::suggest`]).
    pub suggestion: Option<String>,
}

/// Everything that can go wrong in the manager.
///
/// [`Error::code`] gives the IREE status code a C host would report for the
/// same failure.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Required imports are still unresolved after every provider was asked
    /// (IREE's `NOT_FOUND`). Lists every missing required import, in request
    /// order, with a suggestion where a provider exports a similar name.
    #[error(
        "missing {} required executable import(s) after asking {provider_count} provider(s): [{}]; \
         register a plugin that exports them or declare them optional with a `?` prefix",
        missing.len(),
        fmt_missing(missing)
    )]
    MissingImports {
        /// Every required slot left empty.
        missing: Vec<MissingImport>,
        /// How many providers were registered when the resolve began.
        provider_count: usize,
    },
    /// A provider failed for a reason other than a missing import; the
    /// resolve stopped there.
    #[error("provider #{index} `{provider}` failed while resolving imports")]
    ProviderFailed {
        /// The provider's position in registration order.
        index: usize,
        /// The provider's name.
        provider: String,
        /// What the provider reported.
        source: xplug_providers::Error,
    },
    /// The manager was created with a fixed capacity and it is full; nothing
    /// was registered and earlier registrations are untouched.
    #[error(
        "plugin manager capacity of {capacity} provider(s) reached; cannot register `{provider}` \
         (create the manager with a larger capacity)"
    )]
    CapacityReached {
        /// The capacity the manager was created with.
        capacity: usize,
        /// The provider that did not fit.
        provider: String,
    },
    /// A plugin spec (`--executable_plugin` style string) is malformed.
    #[error("invalid plugin spec `{spec}`: {reason}")]
    InvalidSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it and how to write it instead.
        reason: String,
    },
    /// Loading the plugin a spec names failed.
    #[error("cannot load plugin from spec `{spec}`")]
    PluginLoad {
        /// The spec as given (it names the library path).
        spec: String,
        /// The loader's error.
        source: xplug_providers::Error,
    },
    /// Loading a plugin linked into the binary failed.
    #[error("cannot load static plugin `{name}`")]
    StaticPluginLoad {
        /// The registration's name.
        name: String,
        /// The loader's error.
        source: xplug_providers::Error,
    },
    /// A debugging aid (`docs/src/operating/debugging.md`) cannot be set up on this
    /// host.
    #[error("cannot set up {aid}")]
    DebuggingAid {
        /// Which aid (`the crash reporter`).
        aid: &'static str,
        /// Why.
        source: xplug_debug::DebugError,
    },
    /// An environment variable holding plugin specs cannot be read.
    #[error("environment variable `{variable}` cannot be used: {reason}")]
    InvalidEnvironment {
        /// The variable.
        variable: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// An import name cannot be passed to C providers.
    #[error("import #{index} {name:?} is not a valid import name: {reason}")]
    InvalidImportName {
        /// Position in the import table.
        index: usize,
        /// The name as given.
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A request is malformed (for example its arrays differ in length, or a
    /// C caller passed NULL arrays).
    #[error("invalid resolve request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// A manager was asked to register itself as one of its providers.
    #[error(
        "manager `{provider}` cannot be registered as a provider of itself: resolving would recurse \
         forever; register the other manager's providers instead"
    )]
    SelfRegistration {
        /// The manager's provider name.
        provider: String,
    },
    /// A provider the registry counted could not be read: a bug in xplug's
    /// registry, reported instead of skipping the provider silently.
    #[error(
        "provider #{index} of {count} was counted but is not readable; this is a bug in xplug's registry, \
         please report it"
    )]
    RegistryInconsistent {
        /// The unreadable slot.
        index: usize,
        /// The count the registry published.
        count: usize,
    },
    /// A resolved-imports table was asked to call an import no provider
    /// supplied (an optional import left empty).
    #[error(
        "import #{index} `{name}` is not resolved (an optional import no provider exports); \
         check `is_resolved` before calling it"
    )]
    UnresolvedImport {
        /// Position in the import table.
        index: usize,
        /// The declared name.
        name: String,
    },
    /// A name that is not in a resolved-imports table
    /// (`ResolvedImports::typed`).
    #[error(
        "`{name}` is not in this import table{}; resolve a table that declares it",
        suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default()
    )]
    ImportNotInTable {
        /// The name asked for.
        name: String,
        /// The closest declared name, when one is close.
        suggestion: Option<String>,
    },
    /// An import index past the end of a resolved-imports table.
    #[error(
        "import index {index} is out of range for an import table of {len} import(s); \
         look imports up with `index_of`"
    )]
    ImportIndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The table's length.
        len: usize,
    },
}

fn fmt_missing(missing: &[MissingImport]) -> String {
    let mut out = String::new();
    for (i, import) in missing.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "`{}`", import.name);
        if let Some(suggestion) = &import.suggestion {
            let _ = write!(out, " (did you mean `{suggestion}`?)");
        }
    }
    out
}

impl Error {
    /// The IREE status code equivalent to this error.
    ///
    /// ```
    /// use xplug_manager::Error;
    /// use xplug_manager::providers::abi::StatusCode;
    ///
    /// let error = Error::InvalidSpec { spec: "?x".into(), reason: "no path".into() };
    /// assert_eq!(error.code(), StatusCode::INVALID_ARGUMENT);
    /// ```
    #[must_use]
    pub fn code(&self) -> StatusCode {
        match self {
            Self::MissingImports { .. } | Self::UnresolvedImport { .. } | Self::ImportNotInTable { .. } => {
                StatusCode::NOT_FOUND
            }
            Self::ProviderFailed { source, .. }
            | Self::PluginLoad { source, .. }
            | Self::StaticPluginLoad { source, .. } => source.code(),
            Self::CapacityReached { .. } => StatusCode::RESOURCE_EXHAUSTED,
            Self::InvalidSpec { .. }
            | Self::InvalidEnvironment { .. }
            | Self::InvalidImportName { .. }
            | Self::InvalidRequest { .. }
            | Self::SelfRegistration { .. } => StatusCode::INVALID_ARGUMENT,
            Self::RegistryInconsistent { .. } => StatusCode::INTERNAL,
            Self::ImportIndexOutOfRange { .. } => StatusCode::OUT_OF_RANGE,
            // The one way a service refuses: not on this host.
            Self::DebuggingAid { .. } => StatusCode::UNIMPLEMENTED,
        }
    }

    /// The missing required imports, for a [`Error::MissingImports`] error;
    /// empty for every other variant.
    #[must_use]
    pub fn missing_imports(&self) -> &[MissingImport] {
        match self {
            Self::MissingImports { missing, .. } => missing,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_imports_message_lists_every_name_and_suggestion() {
        let error = Error::MissingImports {
            missing: vec![
                MissingImport { index: 0, name: "c_mul_i3".into(), suggestion: Some("c_mul_i32".into()) },
                MissingImport { index: 2, name: "zzz".into(), suggestion: None },
            ],
            provider_count: 2,
        };
        let text = error.to_string();
        assert!(text.starts_with("missing 2 required executable import(s) after asking 2 provider(s)"));
        assert!(text.contains("[`c_mul_i3` (did you mean `c_mul_i32`?), `zzz`]"), "{text}");
        assert_eq!(error.code(), StatusCode::NOT_FOUND);
        assert_eq!(error.missing_imports().len(), 2);
    }

    #[test]
    fn codes_follow_the_wrapped_error() {
        let source = xplug_providers::Error::ResolveFailed {
            provider: "jit".into(),
            code: StatusCode::INTERNAL,
            message: String::new(),
        };
        let error = Error::ProviderFailed { index: 3, provider: "jit".into(), source };
        assert_eq!(error.code(), StatusCode::INTERNAL);
        assert!(error.to_string().contains("provider #3 `jit`"));
        assert!(error.missing_imports().is_empty());
        let full = Error::CapacityReached { capacity: 4, provider: "p".into() };
        assert_eq!(full.code(), StatusCode::RESOURCE_EXHAUSTED);
        assert!(full.to_string().contains("capacity of 4"));
    }
}
