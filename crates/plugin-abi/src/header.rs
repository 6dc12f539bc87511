//! The plugin header: version, identity, features and sanitizer.

use core::ffi::c_char;
use core::fmt;

/// An ABI version number (`iree_hal_executable_plugin_version_t`).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Version(pub u32);

// The C spelling of these constants is in the header prelude.
/// cbindgen:ignore
impl Version {
    /// Version 0.1, the v0 ABI described by this crate.
    pub const V0_1: Self = Self(0x0000_0001);
    /// The newest version this crate speaks; hosts query with it.
    pub const LATEST: Self = Self::V0_1;
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

/// Feature bits a plugin declares in its header.
///
/// C name: `iree_hal_executable_plugin_features_t`.
///
/// Unknown bits are kept as they are; [`Features::unknown`] isolates them so a
/// host can refuse a plugin that needs something it does not understand.
///
/// ```
/// use xplug_abi::Features;
///
/// let features = Features::STANDALONE | Features(0x80);
/// assert!(features.contains(Features::STANDALONE));
/// assert!(!features.contains(Features::FULL_STATUS));
/// assert_eq!(features.unknown(), Features(0x80));
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Features(pub u32);

// The C spelling of these constants is in the header prelude.
/// cbindgen:ignore
impl Features {
    /// No features.
    pub const NONE: Self = Self(0);
    /// The plugin uses nothing beyond the environment the host passes to
    /// `load`: no system calls, no allocation outside the host allocator, no
    /// thread-local storage, no writable globals. Required by loaders that
    /// bypass the OS loader (embedded ELF).
    pub const STANDALONE: Self = Self(1 << 0);
    /// The plugin returns full IREE `iree_status_t` objects rather than plain
    /// codes; only a host built with full status support may load it.
    pub const FULL_STATUS: Self = Self(1 << 1);
    /// Every bit this crate gives a name to.
    pub const KNOWN: Self = Self(Self::STANDALONE.0 | Self::FULL_STATUS.0);

    /// True when every bit of `other` is set in `self`.
    #[must_use]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The bits of `self` that have no name in this crate.
    #[must_use]
    pub const fn unknown(self) -> Self {
        Self(self.0 & !Self::KNOWN.0)
    }

    /// True when no bit is set.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Lower-case names of the known bits that are set, in bit order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        [(Self::STANDALONE, "standalone"), (Self::FULL_STATUS, "full_status")]
            .into_iter()
            .filter(move |(bit, _)| self.contains(*bit))
            .map(|(_, name)| name)
    }
}

impl core::ops::BitOr for Features {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl core::ops::BitOrAssign for Features {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Features(")?;
        let mut first = true;
        for name in self.names() {
            if !first {
                f.write_str(" | ")?;
            }
            f.write_str(name)?;
            first = false;
        }
        let unknown = self.unknown();
        if !unknown.is_empty() {
            if !first {
                f.write_str(" | ")?;
            }
            write!(f, "{:#x}", unknown.0)?;
            first = false;
        }
        if first {
            f.write_str("none")?;
        }
        f.write_str(")")
    }
}

/// The sanitizer a plugin was compiled with
/// (`iree_hal_executable_plugin_sanitizer_kind_t`, a C `enum` of 32 bits).
///
/// Foreign code may send any value; [`Sanitizer::name`] is `None` for the
/// ones this crate does not know.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sanitizer(pub i32);

impl Sanitizer {
    /// No sanitizer.
    pub const NONE: Self = Self(0);
    /// AddressSanitizer (`-fsanitize=address`).
    pub const ADDRESS: Self = Self(1);
    /// MemorySanitizer (`-fsanitize=memory`).
    pub const MEMORY: Self = Self(2);
    /// ThreadSanitizer (`-fsanitize=thread`).
    pub const THREAD: Self = Self(3);
    /// UndefinedBehaviorSanitizer (`-fsanitize=undefined`).
    pub const UNDEFINED: Self = Self(4);

    /// Lower-case name (`"address"`), or `None` for an unknown value.
    #[must_use]
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "none",
            1 => "address",
            2 => "memory",
            3 => "thread",
            4 => "undefined",
            _ => return None,
        })
    }

    /// The sanitizer named `name` (as [`Sanitizer::name`] spells it), or
    /// `None` for a name this crate does not know.
    ///
    /// ```
    /// use xplug_abi::Sanitizer;
    /// assert_eq!(Sanitizer::from_name("thread"), Some(Sanitizer::THREAD));
    /// assert_eq!(Sanitizer::from_name("Thread"), None);
    /// ```
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::known().find(|sanitizer| sanitizer.name() == Some(name))
    }

    /// Every sanitizer this crate names, in value order.
    pub fn known() -> impl Iterator<Item = Self> {
        [Self::NONE, Self::ADDRESS, Self::MEMORY, Self::THREAD, Self::UNDEFINED].into_iter()
    }

    /// The compiler flag that enables this sanitizer, or `None` for
    /// [`Sanitizer::NONE`] and unknown values.
    #[must_use]
    pub const fn compiler_flag(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "-fsanitize=address",
            2 => "-fsanitize=memory",
            3 => "-fsanitize=thread",
            4 => "-fsanitize=undefined",
            _ => return None,
        })
    }

    /// True for the values this crate names.
    #[must_use]
    pub const fn is_known(self) -> bool {
        self.name().is_some()
    }
}

impl fmt::Debug for Sanitizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "Sanitizer({name})"),
            None => write!(f, "Sanitizer(unknown {})", self.0),
        }
    }
}

/// The header every plugin version starts with.
///
/// C name: `iree_hal_executable_plugin_header_t`.
///
/// `name` and `description` are NUL-terminated strings owned by the plugin;
/// they stay valid while the plugin's code is loaded.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Header {
    /// ABI version the plugin was built against, normally [`Version::LATEST`].
    pub version: Version,
    /// Short identifier used in logs and errors.
    pub name: *const c_char,
    /// Free-form description (build flavour, version, commit...).
    pub description: *const c_char,
    /// Features the plugin needs or offers.
    pub features: Features,
    /// Sanitizer the plugin was compiled with.
    pub sanitizer: Sanitizer,
    /// Reserved; zero.
    pub reserved: [u64; 8],
}

// SAFETY: `Header` is plain data. Its two pointers are only ever read (the
// type offers no way to write through them), they point at immutable
// NUL-terminated strings that live as long as the plugin's code, and reading
// them from several threads at once is what IREE's ABI expects.
unsafe impl Sync for Header {}
// SAFETY: as above; moving the pointer values between threads moves no
// ownership.
unsafe impl Send for Header {}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;
    use std::string::ToString;

    #[test]
    fn names_and_flags() {
        assert_eq!(Sanitizer::THREAD.name(), Some("thread"));
        assert_eq!(Sanitizer(99).name(), None);
        assert_eq!(Sanitizer(-1).compiler_flag(), None);
        assert_eq!(Sanitizer::ADDRESS.compiler_flag(), Some("-fsanitize=address"));
        assert_eq!(format!("{:?}", Features::STANDALONE | Features(8)), "Features(standalone | 0x8)");
        assert_eq!(format!("{:?}", Features::NONE), "Features(none)");
        assert_eq!(Version::LATEST.to_string(), "0x00000001");
    }

    #[test]
    fn every_known_sanitizer_round_trips_through_its_name() {
        for value in -2..16 {
            let sanitizer = Sanitizer(value);
            match sanitizer.name() {
                Some(name) => assert_eq!(Sanitizer::from_name(name), Some(sanitizer)),
                None => assert!(!Sanitizer::known().any(|known| known == sanitizer)),
            }
        }
        assert_eq!(Sanitizer::from_name("leak"), None);
    }
}
