//! Load compatibility: what a host requires of a plugin's header and table
//! before it calls `load` (`docs/src/reference/loading.md#load-checks`).
//!
//! Each requirement is a small `judge_*` function returning a typed [`Incompatibility`]
//! with the expected and found values; [`judge_plugin`] runs them in order.
//! [`crate::Plugin`] refuses a plugin that fails one; `xplug check` reports
//! each one. IREE's own loader checks only the sanitizer and `FULL_STATUS`.
//!
//! ```
//! use xplug_providers::abi::{Features, Sanitizer, StatusCode, Version};
//! use xplug_providers::compatibility::{self, Incompatibility};
//! use xplug_providers::raw::RawHeader;
//!
//! let header = RawHeader {
//!     version: Version(7),
//!     name: Some("future".into()),
//!     description: None,
//!     features: Features::NONE,
//!     sanitizer: Sanitizer::NONE,
//! };
//! let refusal = compatibility::judge_version(&header).unwrap_err();
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
pub fn judge_name(header: &RawHeader) -> Result<(), Incompatibility> {
    if header.name.is_none() { Err(Incompatibility::NullName) } else { Ok(()) }
}

/// The header version is a real one, not newer than [`Version::LATEST`].
///
/// # Errors
/// [`Incompatibility::InvalidVersion`] for 0, [`Incompatibility::NewerVersion`].
pub fn judge_version(header: &RawHeader) -> Result<(), Incompatibility> {
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
pub fn judge_status_mode(header: &RawHeader) -> Result<(), Incompatibility> {
    if header.features.contains(Features::FULL_STATUS) { Err(Incompatibility::FullStatus) } else { Ok(()) }
}

/// The plugin's sanitizer is none or the host's.
///
/// # Errors
/// [`Incompatibility::Sanitizer`], for known and unknown values alike.
pub fn judge_sanitizer(header: &RawHeader) -> Result<(), Incompatibility> {
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
pub fn judge_known_features(header: &RawHeader) -> Result<(), Incompatibility> {
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
pub fn judge_required_features(
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
pub fn judge_entry_points(entry_points: EntryPoints) -> Result<(), Incompatibility> {
    if !entry_points.load {
        return Err(Incompatibility::MissingFunction { function: "load" });
    }
    if !entry_points.resolve {
        return Err(Incompatibility::MissingFunction { function: "resolve" });
    }
    Ok(())
}

/// Judges every requirement in the order a host applies them: version, status
/// mode, sanitizer, known features, the loader's required features, name,
/// entry points. `header` is `None` for a NULL header pointer; the header
/// that passed is returned.
///
/// # Errors
/// The first [`Incompatibility`] found.
pub fn judge_plugin<'h>(
    header: Option<&'h RawHeader>,
    entry_points: EntryPoints,
    loader: &'static str,
    required: Features,
) -> Result<&'h RawHeader, Incompatibility> {
    let header = header.ok_or(Incompatibility::NullHeader)?;
    judge_version(header)?;
    judge_status_mode(header)?;
    judge_sanitizer(header)?;
    judge_known_features(header)?;
    judge_required_features(header, loader, required)?;
    judge_name(header)?;
    judge_entry_points(entry_points)?;
    Ok(header)
}

/// Every key in `params` is one the plugin declares, and every value is
/// of the declared type: [`xplug_abi::ParamKind::parse`], the parser
/// `xplug-sdk` plugins read the value with, accepts it. A type this host
/// does not know (not a [`xplug_abi::ParamKind`] name) is not checked.
///
/// # Errors
/// [`Incompatibility::UndeclaredParam`] for the first key that is not
/// declared, with the closest declared name as a suggestion;
/// [`Incompatibility::InvalidParamValue`] for the first value that is not
/// of its declared type.
pub fn judge_params(declared: &[ParamDeclInfo], params: &LoadParamList) -> Result<(), Incompatibility> {
    for (key, value) in params.iter() {
        if let Some(param) = declared.iter().find(|param| param.name.as_bytes() == key) {
            match xplug_abi::ParamKind::from_name(&param.kind) {
                Some(kind) if !kind.accepts(value) => {
                    return Err(Incompatibility::InvalidParamValue {
                        key: param.name.as_str().into(),
                        value: String::from_utf8_lossy(value).into(),
                        kind,
                    });
                }
                _ => continue,
            }
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
        assert_eq!(judge_params(&declared(&["offset", "multiplier"]), &params), Ok(()));
        assert_eq!(judge_params(&declared(&[]), &LoadParamList::new()), Ok(()));
        let refused = judge_params(&declared(&["multiplier", "offsets"]), &params).unwrap_err();
        assert_eq!(
            refused,
            Incompatibility::UndeclaredParam {
                key: "offset".into(),
                suggestion: Some("offsets".into()),
                declared: vec!["multiplier".to_owned(), "offsets".to_owned()].into(),
            }
        );
        assert_eq!(refused.code(), StatusCode::INVALID_ARGUMENT);
        let none = judge_params(&declared(&[]), &params).unwrap_err();
        assert!(none.to_string().ends_with("it declares no parameters"), "{none}");
    }

    /// The host's check accepts a value exactly when the plugin's parser
    /// does, for every declared type and its edge values: both are
    /// `ParamKind::parse`, and a type this host does not know is not
    /// checked.
    #[test]
    fn declared_values_are_checked_with_the_plugins_parser() {
        use xplug_abi::ParamKind;
        let declared = |kind: &str| {
            vec![ParamDeclInfo {
                name: "p".to_owned(),
                kind: kind.to_owned(),
                default: None,
                description: String::new(),
            }]
        };
        let edges: [&[u8]; 22] = [
            b"",
            b"1",
            b"0",
            b"true",
            b"yes",
            b"-1",
            b"+1",
            b" 1",
            b"2147483648",
            b"4294967296",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"0.5",
            b"1e39",
            b"1e309",
            b"inf",
            b"nan",
            b"-0",
            b"abc",
            b"\xff",
            b"\xc3\xa9",
            b"1 ",
        ];
        for kind in ParamKind::ALL {
            for value in edges {
                let params = LoadParamList::new().with("p", value);
                let checked = judge_params(&declared(kind.name()), &params);
                assert_eq!(checked.is_ok(), kind.parse(value).is_some(), "{} {value:?}", kind.name());
                if let Err(refused) = checked {
                    assert_eq!(
                        refused,
                        Incompatibility::InvalidParamValue {
                            key: "p".into(),
                            value: String::from_utf8_lossy(value).into(),
                            kind,
                        }
                    );
                    assert_eq!(refused.code(), StatusCode::INVALID_ARGUMENT);
                }
            }
        }
        // The reported bug: `verbose=1` for a declared `bool` passes, and the
        // plugin's parser reads it as `true`.
        let params = LoadParamList::new().with("verbose", "1");
        let mut verbose = declared("bool");
        verbose[0].name = "verbose".to_owned();
        assert_eq!(judge_params(&verbose, &params), Ok(()));
        assert_eq!(<bool as xplug_abi::FromParam>::from_param(b"1"), Some(true));
        let refused = judge_params(&declared("u32"), &LoadParamList::new().with("p", "-1")).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "its load parameter `p` has the value `-1` but a 32-bit unsigned integer is expected (it declares `p` \
             as `u32`); fix the value"
        );
        // A type this host does not know: any value passes.
        assert_eq!(judge_params(&declared("complex"), &LoadParamList::new().with("p", "1+2i")), Ok(()));
    }

    #[test]
    fn each_check_refuses_with_its_values() {
        let good = header();
        assert_eq!(judge_plugin(Some(&good), ALL, "static", Features::NONE), Ok(&good));
        assert_eq!(judge_plugin(None, ALL, "static", Features::NONE), Err(Incompatibility::NullHeader));
        let mut h = header();
        h.version = Version(0);
        assert_eq!(
            judge_version(&h),
            Err(Incompatibility::InvalidVersion { found: Version(0), expected: Version::LATEST })
        );
        h = header();
        h.features = Features::FULL_STATUS;
        assert_eq!(judge_status_mode(&h), Err(Incompatibility::FullStatus));
        h = header();
        h.sanitizer = Sanitizer::ADDRESS;
        let refusal = judge_sanitizer(&h).unwrap_err();
        assert!(refusal.to_string().contains("-fsanitize=address"), "{refusal}");
        assert_eq!(refusal.code(), StatusCode::UNAVAILABLE);
        h.sanitizer = Sanitizer(77);
        assert!(judge_sanitizer(&h).unwrap_err().to_string().contains("77 is unknown"));
        h = header();
        h.features = Features(0x40 | Features::STANDALONE.0);
        assert_eq!(
            judge_known_features(&h),
            Err(Incompatibility::UnknownFeatures { unknown: Features(0x40), known: Features::KNOWN })
        );
        h = header();
        let refusal = judge_required_features(&h, "embedded ELF", Features::STANDALONE).unwrap_err();
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
        assert_eq!(judge_name(&h), Err(Incompatibility::NullName));
        assert_eq!(
            judge_entry_points(EntryPoints { load: true, unload: false, resolve: false }),
            Err(Incompatibility::MissingFunction { function: "resolve" })
        );
        assert_eq!(judge_entry_points(EntryPoints { load: true, unload: false, resolve: true }), Ok(()));
    }
}
