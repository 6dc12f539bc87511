//! The errors a plugin's `load` reports, and the code an import returns.

use alloc::string::String;
use core::fmt::{self, Write as _};
use core::num::NonZeroI32;

use xplug_abi::StatusCode;

use crate::{ParamKind, TypedParamDecl};

/// Why a plugin could not be loaded (or could not allocate).
///
/// Returned by [`crate::PluginState::load`] and by the
/// [`crate::HostAllocator`] helpers. The host only sees the status code
/// ([`Error::code`]); with the `std` feature the generated `load` also prints
/// the message to stderr, naming the plugin, so it is not lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The host allocator returned an error or a NULL block.
    #[error(
        "the host allocator could not provide {bytes} bytes for `{what}` ({code}); \
         give the runtime more memory or make the plugin state smaller"
    )]
    OutOfMemory {
        /// What was being allocated (a type name).
        what: &'static str,
        /// The requested size.
        bytes: usize,
        /// The code the host allocator reported (`RESOURCE_EXHAUSTED` when it
        /// returned OK with a NULL block).
        code: StatusCode,
    },
    /// The environment's allocator has no control function.
    #[error(
        "the host passed an allocator without a control function while allocating `{what}`; \
         the host must fill `environment.host_allocator` before calling load"
    )]
    NoAllocator {
        /// What was being allocated (a type name).
        what: &'static str,
    },
    /// A type needs more alignment than the host allocator guarantees.
    #[error(
        "`{what}` needs {align}-byte alignment but host allocations are only aligned to {guaranteed} bytes; \
         remove the over-alignment (`#[repr(align)]`) or keep that part outside the host allocation"
    )]
    OverAligned {
        /// The type.
        what: &'static str,
        /// Its alignment.
        align: usize,
        /// What the host guarantees ([`crate::HOST_ALIGNMENT`]).
        guaranteed: usize,
    },
    /// A required load parameter is absent.
    #[error("load parameter `{key}` is required; pass it as `{key}=VALUE` when loading the plugin")]
    MissingParam {
        /// The parameter's key.
        key: ParamText,
    },
    /// A load parameter is present but its value cannot be used.
    #[error("load parameter `{key}` has the value `{value}` but {expected} is expected; fix the value")]
    InvalidParam {
        /// The parameter's key.
        key: ParamText,
        /// The value received.
        value: ParamText,
        /// What the parameter's type accepts ([`crate::ParamKind::expected`]).
        expected: &'static str,
    },
    /// The plugin reads a declared load parameter as another type than
    /// the one it declares (a bug in the plugin: the check before `load`
    /// lets through values of the declared type only).
    #[error(
        "load parameter `{key}` is declared as `{}` but the plugin reads it as `{}`; make the type in \
         `params(...)` and the type given to `LoadParams::parse` agree",
        declared.name(),
        read.name()
    )]
    ParamReadAs {
        /// The parameter's key.
        key: ParamText,
        /// The type `params(...)` declares.
        declared: ParamKind,
        /// The type the plugin reads the value as.
        read: ParamKind,
    },
    /// A load parameter the plugin does not declare (only plugins that
    /// declare their parameters refuse unknown keys).
    #[error("unknown load parameter `{key}`{}", unknown_param_hint(.suggestion, .known))]
    UnknownParam {
        /// The key received.
        key: ParamText,
        /// The declared name closest to `key`, when one is close.
        suggestion: Option<&'static str>,
        /// Every declared parameter.
        known: &'static [TypedParamDecl],
    },
    /// Anything else the plugin's own `load` wants to report.
    #[error("{message}")]
    Custom {
        /// The status code the host receives.
        code: StatusCode,
        /// What went wrong and what to do about it.
        message: String,
    },
}

impl Error {
    /// The status code the host receives for this error.
    #[must_use]
    pub fn code(&self) -> StatusCode {
        match self {
            Self::OutOfMemory { code, .. } => {
                if code.is_ok() {
                    StatusCode::RESOURCE_EXHAUSTED
                } else {
                    *code
                }
            }
            Self::NoAllocator { .. } => StatusCode::FAILED_PRECONDITION,
            Self::OverAligned { .. } => StatusCode::INVALID_ARGUMENT,
            Self::MissingParam { .. } | Self::InvalidParam { .. } | Self::UnknownParam { .. } => {
                StatusCode::INVALID_ARGUMENT
            }
            Self::ParamReadAs { .. } => StatusCode::INTERNAL,
            Self::Custom { code, .. } => {
                if code.is_ok() {
                    StatusCode::UNKNOWN
                } else {
                    *code
                }
            }
        }
    }

    /// A [`Error::Custom`] error with `code` (OK is reported as `UNKNOWN`).
    #[must_use]
    pub fn custom(code: StatusCode, message: impl Into<String>) -> Self {
        Self::Custom { code, message: message.into() }
    }
}

/// The end of an [`Error::UnknownParam`] message: the suggestion and what
/// the plugin takes (written without allocating).
fn unknown_param_hint<'a>(suggestion: &Option<&'a str>, known: &'a [TypedParamDecl]) -> UnknownParamHint<'a> {
    UnknownParamHint { suggestion: *suggestion, known }
}

/// See [`unknown_param_hint`].
struct UnknownParamHint<'a> {
    suggestion: Option<&'a str>,
    known: &'a [TypedParamDecl],
}

impl fmt::Display for UnknownParamHint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.suggestion {
            Some(name) => write!(f, "; did you mean `{name}`? (")?,
            None => f.write_str(" (")?,
        }
        if self.known.is_empty() {
            f.write_str("this plugin takes no load parameters; remove it")?;
        } else {
            f.write_str("this plugin takes ")?;
            for (index, param) in self.known.iter().enumerate() {
                if index > 0 {
                    f.write_str(", ")?;
                }
                f.write_str(param.name())?;
            }
        }
        f.write_char(')')
    }
}

/// A key or value from the host's load parameters, copied into a fixed
/// buffer of [`ParamText::CAPACITY`] bytes (longer text is cut there).
///
/// Load errors carry their text this way, not in a `String`, so building
/// and printing them allocates nothing: a standalone plugin (`.sos`)
/// refusing a parameter cannot fail for want of memory, and its parameter
/// path links none of the standard library's allocating, unwinding code.
/// It prints as text, with U+FFFD for bytes that are not UTF-8 and `…`
/// after a cut.
///
/// ```
/// use xplug_sdk::ParamText;
///
/// let value = ParamText::new(b"abc\xff");
/// assert_eq!(value.to_string(), "abc\u{fffd}");
/// assert_eq!(value.as_bytes(), b"abc\xff");
/// let long = ParamText::new(&[b'x'; 100]);
/// assert!(long.is_truncated() && long.as_bytes().len() == ParamText::CAPACITY);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParamText {
    bytes: [u8; ParamText::CAPACITY],
    len: u8,
    truncated: bool,
}

impl ParamText {
    /// The most bytes kept.
    pub const CAPACITY: usize = 40;

    /// Copies up to [`Self::CAPACITY`] bytes of `text`.
    #[must_use]
    pub const fn new(text: &[u8]) -> Self {
        let len = if text.len() < Self::CAPACITY { text.len() } else { Self::CAPACITY };
        let mut bytes = [0; Self::CAPACITY];
        let mut i = 0;
        while i < len {
            bytes[i] = text[i];
            i += 1;
        }
        // `len <= CAPACITY` (40) fits in a `u8`.
        Self { bytes, len: len as u8, truncated: text.len() > Self::CAPACITY }
    }

    /// The bytes kept.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// True when the original text was longer than [`Self::CAPACITY`].
    #[must_use]
    pub const fn is_truncated(&self) -> bool {
        self.truncated
    }
}

// The length is kept in a `u8`.
const _: () = assert!(ParamText::CAPACITY <= u8::MAX as usize);

impl From<&str> for ParamText {
    fn from(text: &str) -> Self {
        Self::new(text.as_bytes())
    }
}

impl PartialEq<str> for ParamText {
    fn eq(&self, other: &str) -> bool {
        !self.truncated && self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for ParamText {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl fmt::Display for ParamText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.as_bytes().utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_char(char::REPLACEMENT_CHARACTER)?;
            }
        }
        if self.truncated {
            f.write_char('…')?;
        }
        Ok(())
    }
}

impl fmt::Debug for ParamText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// The failure an import function returns: a non-zero `int` for the
/// executable that called it.
///
/// IREE only distinguishes zero (success) from non-zero (failure); the
/// constants reuse status-code numbers so a failure is still readable in a
/// debugger.
///
/// ```
/// use xplug_sdk::ImportError;
///
/// assert_eq!(ImportError::INVALID_ARGUMENT.code(), 3);
/// assert_eq!(ImportError::new(core::num::NonZeroI32::new(-7).unwrap()).code(), -7);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ImportError {
    code: NonZeroI32,
}

impl ImportError {
    /// The args were unusable (NULL pointer, bad size, out-of-range index).
    pub const INVALID_ARGUMENT: Self = Self::from_status(StatusCode::INVALID_ARGUMENT);
    /// An index or size in the args is out of range.
    pub const OUT_OF_RANGE: Self = Self::from_status(StatusCode::OUT_OF_RANGE);
    /// The import broke an internal invariant; also returned when it panics.
    pub const INTERNAL: Self = Self::from_status(StatusCode::INTERNAL);

    /// A failure with an explicit non-zero code.
    #[must_use]
    pub const fn new(code: NonZeroI32) -> Self {
        Self { code }
    }

    /// A failure carrying a status code's number (OK becomes `UNKNOWN`).
    #[must_use]
    pub const fn from_status(code: StatusCode) -> Self {
        let raw = (code.0 & StatusCode::MASK) as i32;
        match NonZeroI32::new(raw) {
            Some(code) => Self { code },
            None => Self::UNKNOWN,
        }
    }

    /// Fallback for a status of OK, which is not a failure.
    const UNKNOWN: Self = match NonZeroI32::new(StatusCode::UNKNOWN.0 as i32) {
        Some(code) => Self { code },
        None => panic!("UNKNOWN is a non-zero code"),
    };

    /// The value returned to the executable.
    #[must_use]
    pub const fn code(self) -> i32 {
        self.code.get()
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "import failed with code {}", self.code)
    }
}

impl core::error::Error for ImportError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_status_never_becomes_success() {
        assert_eq!(ImportError::from_status(StatusCode::OK).code(), 2);
        assert_eq!(ImportError::from_status(StatusCode::NOT_FOUND).code(), 5);
        assert_eq!(Error::custom(StatusCode::OK, "x").code(), StatusCode::UNKNOWN);
        let oom = Error::OutOfMemory { what: "T", bytes: 8, code: StatusCode::OK };
        assert_eq!(oom.code(), StatusCode::RESOURCE_EXHAUSTED);
    }
}
