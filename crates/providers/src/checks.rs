//! The load checks a host runs on a plugin's header and table before it
//! calls `load` (`docs/loading.md#load-checks`).
//!
//! Each check is a small function returning a typed [`Incompatibility`]
//! with the expected and found values; [`check_plugin`] runs them in order.
//! [`crate::Plugin`] refuses a plugin that fails one; `xplug check` reports
//! each one. IREE's own loader checks only the sanitizer and `FULL_STATUS`.
//!
//! ```
//! use xplug_providers::abi::{Features, Sanitizer, StatusCode, Version};
//! use xplug_providers::checks::{self, Incompatibility};
//! use xplug_providers::raw::RawHeader;
//!
//! let header = RawHeader {
//!     version: Version(7),
//!     name: Some("future".into()),
//!     description: None,
//!     features: Features::NONE,
//!     sanitizer: Sanitizer::NONE,
//! };
//! let refusal = checks::check_version(&header).unwrap_err();
//! assert_eq!(refusal, Incompatibility::NewerVersion { found: Version(7), supported: Version::LATEST });
//! assert_eq!(refusal.code(), StatusCode::FAILED_PRECONDITION);
//! ```

use xplug_abi::{Features, Sanitizer, Version};

use crate::LoadParamList;
pub use crate::incompatibility::Incompatibility;
use crate::raw::{EntryPoints, ParamDeclInfo, RawHeader};

/// The sanitizer this host is built with.
///
/// Always [`Sanitizer::NONE`]: stable Rust cannot build a sanitized host
/// (`-Zsanitizer` is nightly-only), so every sanitized plugin is refused.
pub const HOST_SANITIZER: Sanitizer = Sanitizer::NONE;

/// The header has a name.
///
/// # Errors
/// [`Incompatibility::NullName`].
pub fn check_name(header: &RawHeader) -> Result<(), Incompatibility> {
    if header.name.is_none() { Err(Incompatibility::NullName) } else { Ok(()) }
}

/// The header version is a real one, not newer than [`Version::LATEST`].
///
/// # Errors
/// [`Incompatibility::InvalidVersion`] for 0, [`Incompatibility::NewerVersion`].
pub fn check_version(header: &RawHeader) -> Result<(), Incompatibility> {
    if header.version.0 == 0 {
        return Err(Incompatibility::InvalidVersion { found: header.version, expected: Version::LATEST });
    }
    if header.version > Version::LATEST {
        return Err(Incompatibility::NewerVersion { found: header.version, supported: Version::LATEST });
    }
    Ok(())
}

/// The plugin does not need a full-status host (xplug is not one).
///
/// # Errors
/// [`Incompatibility::FullStatus`].
pub fn check_status_mode(header: &RawHeader) -> Result<(), Incompatibility> {
    if header.features.contains(Features::FULL_STATUS) { Err(Incompatibility::FullStatus) } else { Ok(()) }
}

/// The plugin's sanitizer is none or the host's.
///
/// # Errors
/// [`Incompatibility::Sanitizer`], for known and unknown values alike.
pub fn check_sanitizer(header: &RawHeader) -> Result<(), Incompatibility> {
    if header.sanitizer == Sanitizer::NONE || header.sanitizer == HOST_SANITIZER {
        Ok(())
    } else {
        Err(Incompatibility::Sanitizer { found: header.sanitizer, host: HOST_SANITIZER })
    }
}

/// Every feature bit is one this host knows.
///
/// # Errors
/// [`Incompatibility::UnknownFeatures`].
pub fn check_known_features(header: &RawHeader) -> Result<(), Incompatibility> {
    let unknown = header.features.unknown();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Incompatibility::UnknownFeatures { unknown, known: Features::KNOWN })
    }
}

/// The plugin declares every feature `loader` requires.
///
/// # Errors
/// [`Incompatibility::MissingFeatures`].
pub fn check_required_features(
    header: &RawHeader,
    loader: &'static str,
    required: Features,
) -> Result<(), Incompatibility> {
    if header.features.contains(required) {
        Ok(())
    } else {
        Err(Incompatibility::MissingFeatures {
            loader,
            missing: Features(required.0 & !header.features.0),
            found: header.features,
        })
    }
}

/// The table has `load` and `resolve` (`unload` may be NULL).
///
/// # Errors
/// [`Incompatibility::MissingFunction`].
pub fn check_entry_points(entry_points: EntryPoints) -> Result<(), Incompatibility> {
    if !entry_points.load {
        return Err(Incompatibility::MissingFunction { function: "load" });
    }
    if !entry_points.resolve {
        return Err(Incompatibility::MissingFunction { function: "resolve" });
    }
    Ok(())
}

/// Runs every check in the order a host applies them: version, status
/// mode, sanitizer, known features, the loader's required features, name,
/// entry points. `header` is `None` for a NULL header pointer; the header
/// that passed is returned.
///
/// # Errors
/// The first [`Incompatibility`] found.
pub fn check_plugin<'h>(
    header: Option<&'h RawHeader>,
    entry_points: EntryPoints,
    loader: &'static str,
    required: Features,
) -> Result<&'h RawHeader, Incompatibility> {
    let header = header.ok_or(Incompatibility::NullHeader)?;
    check_version(header)?;
    check_status_mode(header)?;
    check_sanitizer(header)?;
    check_known_features(header)?;
    check_required_features(header, loader, required)?;
    check_name(header)?;
    check_entry_points(entry_points)?;
    Ok(header)
}

/// Every key in `params` is one the plugin declares.
///
/// # Errors
/// [`Incompatibility::UndeclaredParam`] for the first key that is not,
/// with the closest declared name as a suggestion.
pub fn check_params(declared: &[ParamDeclInfo], params: &LoadParamList) -> Result<(), Incompatibility> {
    for (key, _) in params.iter() {
        if declared.iter().any(|param| param.name.as_bytes() == key) {
            continue;
        }
        let key: Box<str> = String::from_utf8_lossy(key).into();
        let names = declared.iter().map(|param| param.name.as_str());
        return Err(Incompatibility::UndeclaredParam {
            suggestion: xplug_abi::suggest::closest(&key, names.clone()).map(Box::from),
            declared: names.map(str::to_owned).collect(),
            key,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use xplug_abi::StatusCode;

    fn header() -> RawHeader {
        RawHeader {
            version: Version::LATEST,
            name: Some("p".into()),
            description: None,
            features: Features::NONE,
            sanitizer: Sanitizer::NONE,
        }
    }

    const ALL: EntryPoints = EntryPoints { load: true, unload: true, resolve: true };

    #[test]
    fn only_declared_parameters_pass() {
        let declared = |names: &[&str]| -> Vec<ParamDeclInfo> {
            names
                .iter()
                .map(|name| ParamDeclInfo {
                    name: (*name).to_owned(),
                    kind: "f32".to_owned(),
                    default: None,
                    description: String::new(),
                })
                .collect()
        };
        let params = LoadParamList::new().with("multiplier", "2").with("offset", "1");
        assert_eq!(check_params(&declared(&["offset", "multiplier"]), &params), Ok(()));
        assert_eq!(check_params(&declared(&[]), &LoadParamList::new()), Ok(()));
        let refused = check_params(&declared(&["multiplier", "offsets"]), &params).unwrap_err();
        assert_eq!(
            refused,
            Incompatibility::UndeclaredParam {
                key: "offset".into(),
                suggestion: Some("offsets".into()),
                declared: vec!["multiplier".to_owned(), "offsets".to_owned()].into(),
            }
        );
        assert_eq!(refused.code(), StatusCode::INVALID_ARGUMENT);
        let none = check_params(&declared(&[]), &params).unwrap_err();
        assert!(none.to_string().ends_with("it declares no parameters"), "{none}");
    }

    #[test]
    fn each_check_refuses_with_its_values() {
        let good = header();
        assert_eq!(check_plugin(Some(&good), ALL, "static", Features::NONE), Ok(&good));
        assert_eq!(check_plugin(None, ALL, "static", Features::NONE), Err(Incompatibility::NullHeader));
        let mut h = header();
        h.version = Version(0);
        assert_eq!(
            check_version(&h),
            Err(Incompatibility::InvalidVersion { found: Version(0), expected: Version::LATEST })
        );
        h = header();
        h.features = Features::FULL_STATUS;
        assert_eq!(check_status_mode(&h), Err(Incompatibility::FullStatus));
        h = header();
        h.sanitizer = Sanitizer::ADDRESS;
        let refusal = check_sanitizer(&h).unwrap_err();
        assert!(refusal.to_string().contains("-fsanitize=address"), "{refusal}");
        assert_eq!(refusal.code(), StatusCode::UNAVAILABLE);
        h.sanitizer = Sanitizer(77);
        assert!(check_sanitizer(&h).unwrap_err().to_string().contains("77 is unknown"));
        h = header();
        h.features = Features(0x40 | Features::STANDALONE.0);
        assert_eq!(
            check_known_features(&h),
            Err(Incompatibility::UnknownFeatures { unknown: Features(0x40), known: Features::KNOWN })
        );
        h = header();
        let refusal = check_required_features(&h, "embedded ELF", Features::STANDALONE).unwrap_err();
        assert_eq!(
            refusal,
            Incompatibility::MissingFeatures {
                loader: "embedded ELF",
                missing: Features::STANDALONE,
                found: Features::NONE
            }
        );
        assert!(refusal.to_string().contains("embedded ELF loader requires the feature(s) standalone"));
        h.name = None;
        assert_eq!(check_name(&h), Err(Incompatibility::NullName));
        assert_eq!(
            check_entry_points(EntryPoints { load: true, unload: false, resolve: false }),
            Err(Incompatibility::MissingFunction { function: "resolve" })
        );
        assert_eq!(check_entry_points(EntryPoints { load: true, unload: false, resolve: true }), Ok(()));
    }
}
