//! Status values returned across the plugin boundary.

use core::fmt;

/// A status code: the low five bits of a [`Status`].
///
/// The named constants are the codes IREE defines; any value up to
/// [`StatusCode::MASK`] is a valid code even when it has no name here, so
/// callers must always handle codes they do not recognise.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StatusCode(pub u32);

impl StatusCode {
    /// Success.
    pub const OK: Self = Self(0);
    /// The operation was cancelled.
    pub const CANCELLED: Self = Self(1);
    /// An error with no better classification.
    pub const UNKNOWN: Self = Self(2);
    /// The caller passed a bad argument.
    pub const INVALID_ARGUMENT: Self = Self(3);
    /// A deadline passed before the operation finished.
    pub const DEADLINE_EXCEEDED: Self = Self(4);
    /// Something looked up (for example a required import) does not exist.
    pub const NOT_FOUND: Self = Self(5);
    /// Something being created already exists.
    pub const ALREADY_EXISTS: Self = Self(6);
    /// The caller may not perform the operation.
    pub const PERMISSION_DENIED: Self = Self(7);
    /// A resource (memory, capacity) ran out.
    pub const RESOURCE_EXHAUSTED: Self = Self(8);
    /// The system is not in a state the operation needs.
    pub const FAILED_PRECONDITION: Self = Self(9);
    /// The operation was aborted.
    pub const ABORTED: Self = Self(10);
    /// A value was outside its valid range.
    pub const OUT_OF_RANGE: Self = Self(11);
    /// The operation is not implemented.
    pub const UNIMPLEMENTED: Self = Self(12);
    /// An invariant was broken inside the callee.
    pub const INTERNAL: Self = Self(13);
    /// The service is not available (for example a sanitizer mismatch).
    pub const UNAVAILABLE: Self = Self(14);
    /// Data was lost or corrupted.
    pub const DATA_LOSS: Self = Self(15);
    /// The caller is not authenticated.
    pub const UNAUTHENTICATED: Self = Self(16);
    /// The operation was deferred.
    pub const DEFERRED: Self = Self(17);
    /// Mask selecting the code bits of a [`Status`] value.
    pub const MASK: u32 = 0x1F;

    /// Builds a code from a raw value, keeping only the bits under [`Self::MASK`].
    #[must_use]
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw & Self::MASK)
    }

    /// True for [`StatusCode::OK`].
    #[must_use]
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// The upper-case IREE name of the code (`"NOT_FOUND"`), or `None` for a
    /// code IREE does not name.
    #[must_use]
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "OK",
            1 => "CANCELLED",
            2 => "UNKNOWN",
            3 => "INVALID_ARGUMENT",
            4 => "DEADLINE_EXCEEDED",
            5 => "NOT_FOUND",
            6 => "ALREADY_EXISTS",
            7 => "PERMISSION_DENIED",
            8 => "RESOURCE_EXHAUSTED",
            9 => "FAILED_PRECONDITION",
            10 => "ABORTED",
            11 => "OUT_OF_RANGE",
            12 => "UNIMPLEMENTED",
            13 => "INTERNAL",
            14 => "UNAVAILABLE",
            15 => "DATA_LOSS",
            16 => "UNAUTHENTICATED",
            17 => "DEFERRED",
            _ => return None,
        })
    }
}

impl fmt::Display for StatusCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "CODE_{}", self.0),
        }
    }
}

impl fmt::Debug for StatusCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StatusCode({self})")
    }
}

/// A pointer-sized status value (`iree_hal_executable_plugin_status_t`).
///
/// Plugins without the `FULL_STATUS` feature return plain codes; a host reads
/// the code with [`Status::code`], which masks the value, so stray high bits
/// never turn into an unknown value.
///
/// ```
/// use xplug_abi::{Status, StatusCode};
///
/// let status = Status::from_code(StatusCode::NOT_FOUND);
/// assert_eq!(status.code(), StatusCode::NOT_FOUND);
/// assert!(!status.is_ok());
/// assert!(Status::OK.is_ok());
/// // Bits above the mask are ignored when reading the code.
/// assert_eq!(Status::from_raw(0x40 | 5).code(), StatusCode::NOT_FOUND);
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub usize);

impl Status {
    /// The success value (all bits zero).
    pub const OK: Self = Self(0);

    /// A status carrying `code` and nothing else.
    #[must_use]
    pub const fn from_code(code: StatusCode) -> Self {
        Self((code.0 & StatusCode::MASK) as usize)
    }

    /// Wraps a raw value received from foreign code.
    #[must_use]
    pub const fn from_raw(raw: usize) -> Self {
        Self(raw)
    }

    /// The status code, read by mask.
    #[must_use]
    pub const fn code(self) -> StatusCode {
        StatusCode((self.0 & StatusCode::MASK as usize) as u32)
    }

    /// True when the code is [`StatusCode::OK`].
    #[must_use]
    pub const fn is_ok(self) -> bool {
        self.code().is_ok()
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Status({})", self.code())
    }
}

impl From<StatusCode> for Status {
    fn from(code: StatusCode) -> Self {
        Self::from_code(code)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn every_named_code_round_trips() {
        for raw in 0..=StatusCode::MASK {
            let code = StatusCode(raw);
            assert_eq!(Status::from_code(code).code(), code);
            assert_eq!(code.name().is_some(), raw <= 17, "code {raw}");
        }
        assert_eq!(StatusCode(30).to_string(), "CODE_30");
        assert_eq!(StatusCode::NOT_FOUND.to_string(), "NOT_FOUND");
    }

    #[test]
    fn code_is_read_by_mask() {
        assert_eq!(Status::from_raw(0xFFE0).code(), StatusCode::OK);
        assert_eq!(Status::from_raw(0x25).code(), StatusCode::NOT_FOUND);
        assert_eq!(StatusCode::from_raw(0x30), StatusCode::UNAUTHENTICATED);
    }
}
