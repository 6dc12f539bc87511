//! Declared load parameters: the types a plugin may declare
//! (`xplug_plugin_params`, [`crate::ParamDecl::kind`]) and the one parser
//! of their values.
//!
//! Both sides of the boundary parse a declared value with
//! [`ParamKind::parse`]: the host when it checks the parameters it is about
//! to pass against the plugin's declaration, `xplug-sdk`'s `load` when it
//! checks them again, and the plugin when it reads one
//! ([`FromParam`], what `LoadParams::parse` uses). So a value the host's
//! check lets through is a value the plugin reads, as the same number.
//!
//! [`ParamKind::parse`] says which text each type accepts.

use core::str::FromStr;

/// The type of a declared load parameter's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamKind {
    /// Any UTF-8 text.
    Str,
    /// `true`, `false`, `1` or `0`.
    Bool,
    /// A 32-bit signed integer.
    I32,
    /// A 64-bit signed integer.
    I64,
    /// A 32-bit unsigned integer.
    U32,
    /// A 64-bit unsigned integer.
    U64,
    /// A pointer-sized unsigned integer.
    Usize,
    /// A finite 32-bit float.
    F32,
    /// A finite 64-bit float.
    F64,
}

/// A declared load parameter's value, as [`ParamKind::parse`] reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ParamValue<'a> {
    /// A [`ParamKind::Str`] value.
    Str(&'a str),
    /// A [`ParamKind::Bool`] value.
    Bool(bool),
    /// A [`ParamKind::I32`] value.
    I32(i32),
    /// A [`ParamKind::I64`] value.
    I64(i64),
    /// A [`ParamKind::U32`] value.
    U32(u32),
    /// A [`ParamKind::U64`] value.
    U64(u64),
    /// A [`ParamKind::Usize`] value.
    Usize(usize),
    /// A [`ParamKind::F32`] value (finite).
    F32(f32),
    /// A [`ParamKind::F64`] value (finite).
    F64(f64),
}

impl ParamKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 9] = [
        Self::Str,
        Self::Bool,
        Self::I32,
        Self::I64,
        Self::U32,
        Self::U64,
        Self::Usize,
        Self::F32,
        Self::F64,
    ];

    /// The name used in `params(...)`, in [`crate::ParamDecl::kind`] and
    /// in messages.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Str => "str",
            Self::Bool => "bool",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::U32 => "u32",
            Self::U64 => "u64",
            Self::Usize => "usize",
            Self::F32 => "f32",
            Self::F64 => "f64",
        }
    }

    /// The kind called `name`, if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Describes valid values, for error messages ("... but {expected} is
    /// expected").
    #[must_use]
    pub const fn expected(self) -> &'static str {
        match self {
            Self::Str => "UTF-8 text",
            Self::Bool => "`true`, `false`, `1` or `0`",
            Self::I32 => "a 32-bit signed integer",
            Self::I64 => "a 64-bit signed integer",
            Self::U32 => "a 32-bit unsigned integer",
            Self::U64 => "a 64-bit unsigned integer",
            Self::Usize => "an unsigned integer",
            Self::F32 | Self::F64 => "a finite number",
        }
    }

    /// Parses `value` as a value of this kind: the one parser of declared
    /// parameter values. `None` when it is not one.
    ///
    /// The text is taken as it is, with no trimming: `str` is any UTF-8
    /// (the empty value included); `bool` is exactly `true`, `false`, `1`
    /// or `0`; an integer is ASCII decimal digits with an optional `+` (or
    /// `-` for the signed types) within the type's range; a float is Rust's
    /// float syntax (`1`, `-0.5`, `.5`, `2.`, `1e-3`) whose value is finite
    /// in the type (`inf`, `nan` and `1e39` as `f32` are refused). Bytes
    /// that are not UTF-8 are no value of any type.
    #[must_use]
    pub fn parse(self, value: &[u8]) -> Option<ParamValue<'_>> {
        let text = core::str::from_utf8(value).ok()?;
        Some(match self {
            Self::Str => ParamValue::Str(text),
            Self::Bool => ParamValue::Bool(match text {
                "true" | "1" => true,
                "false" | "0" => false,
                _ => return None,
            }),
            Self::I32 => ParamValue::I32(text.parse().ok()?),
            Self::I64 => ParamValue::I64(text.parse().ok()?),
            Self::U32 => ParamValue::U32(text.parse().ok()?),
            Self::U64 => ParamValue::U64(text.parse().ok()?),
            Self::Usize => ParamValue::Usize(text.parse().ok()?),
            Self::F32 => ParamValue::F32(finite(text, f32::is_finite)?),
            Self::F64 => ParamValue::F64(finite(text, f64::is_finite)?),
        })
    }

    /// Whether `value` is a value of this kind ([`ParamKind::parse`]
    /// returns one).
    #[must_use]
    pub fn accepts(self, value: &[u8]) -> bool {
        self.parse(value).is_some()
    }
}

/// `text` as a float when it is one and `is_finite` holds for it.
fn finite<F: FromStr + Copy>(text: &str, is_finite: fn(F) -> bool) -> Option<F> {
    text.parse().ok().filter(|&value| is_finite(value))
}

/// A Rust type a declared parameter's value is read as: the type of one
/// [`ParamKind`], parsed by [`ParamKind::parse`].
pub trait FromParam<'a>: Sized {
    /// The kind whose values this type holds.
    const KIND: ParamKind;

    /// The value of `value` parsed as [`FromParam::KIND`], when it is one.
    fn from_param(value: &'a [u8]) -> Option<Self>;
}

macro_rules! from_param {
    ($($type:ty => $kind:ident),* $(,)?) => {$(
        impl<'a> FromParam<'a> for $type {
            const KIND: ParamKind = ParamKind::$kind;

            fn from_param(value: &'a [u8]) -> Option<Self> {
                match Self::KIND.parse(value)? {
                    ParamValue::$kind(value) => Some(value),
                    _ => None,
                }
            }
        }
    )*};
}

from_param! {
    &'a str => Str,
    bool => Bool,
    i32 => I32,
    i64 => I64,
    u32 => U32,
    u64 => U64,
    usize => Usize,
    f32 => F32,
    f64 => F64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_its_edge_values() {
        use ParamValue as V;
        #[rustfmt::skip]
        let table: &[(ParamKind, &[u8], Option<ParamValue<'_>>)] = &[
            (ParamKind::Str, b"", Some(V::Str(""))),
            (ParamKind::Str, b" a b ", Some(V::Str(" a b "))),
            (ParamKind::Str, b"\xff", None),
            (ParamKind::Bool, b"true", Some(V::Bool(true))),
            (ParamKind::Bool, b"1", Some(V::Bool(true))),
            (ParamKind::Bool, b"false", Some(V::Bool(false))),
            (ParamKind::Bool, b"0", Some(V::Bool(false))),
            (ParamKind::Bool, b"TRUE", None),
            (ParamKind::Bool, b"yes", None),
            (ParamKind::Bool, b" true", None),
            (ParamKind::Bool, b"", None),
            (ParamKind::Bool, b"2", None),
            (ParamKind::I32, b"-2147483648", Some(V::I32(i32::MIN))),
            (ParamKind::I32, b"2147483647", Some(V::I32(i32::MAX))),
            (ParamKind::I32, b"+7", Some(V::I32(7))),
            (ParamKind::I32, b"2147483648", None),
            (ParamKind::I32, b"-2147483649", None),
            (ParamKind::I32, b"7.0", None),
            (ParamKind::I32, b" 7", None),
            (ParamKind::I32, b"1_000", None),
            (ParamKind::I32, b"", None),
            (ParamKind::I64, b"-9223372036854775808", Some(V::I64(i64::MIN))),
            (ParamKind::I64, b"9223372036854775808", None),
            (ParamKind::U32, b"4294967295", Some(V::U32(u32::MAX))),
            (ParamKind::U32, b"4294967296", None),
            (ParamKind::U32, b"-0", None),
            (ParamKind::U32, b"+0", Some(V::U32(0))),
            (ParamKind::U64, b"18446744073709551615", Some(V::U64(u64::MAX))),
            (ParamKind::U64, b"18446744073709551616", None),
            (ParamKind::U64, b"0x10", None),
            (ParamKind::Usize, b"0", Some(V::Usize(0))),
            (ParamKind::Usize, b"-1", None),
            (ParamKind::F32, b"-0.5", Some(V::F32(-0.5))),
            (ParamKind::F32, b".5", Some(V::F32(0.5))),
            (ParamKind::F32, b"2.", Some(V::F32(2.0))),
            (ParamKind::F32, b"1e-3", Some(V::F32(1e-3))),
            (ParamKind::F32, b"3.4028235e38", Some(V::F32(f32::MAX))),
            (ParamKind::F32, b"1e39", None),
            (ParamKind::F32, b"inf", None),
            (ParamKind::F32, b"NaN", None),
            (ParamKind::F32, b"", None),
            (ParamKind::F32, b"1,5", None),
            (ParamKind::F64, b"1e39", Some(V::F64(1e39))),
            (ParamKind::F64, b"1e309", None),
            (ParamKind::F64, b"-infinity", None),
        ];
        for &(kind, text, expected) in table {
            assert_eq!(kind.parse(text), expected, "{} {:?}", kind.name(), text);
            assert_eq!(kind.accepts(text), expected.is_some(), "{} {:?}", kind.name(), text);
        }
    }

    #[test]
    fn rust_types_read_what_their_kind_parses() {
        assert_eq!(bool::from_param(b"1"), Some(true));
        assert_eq!(<&str>::from_param(b"x"), Some("x"));
        assert_eq!(u64::from_param(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(f32::from_param(b"inf"), None);
        assert_eq!(i32::from_param(b"-1"), Some(-1));
        for kind in ParamKind::ALL {
            assert_eq!(ParamKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(ParamKind::from_name("string"), None);
    }
}
