//! IREE's executable plugin ABI **v0**, byte for byte, as `#[repr(C)]` Rust.
//!
//! This is the one crate both sides of the plugin boundary share: plugins
//! (written with `xplug-sdk`, or in C against `include/xplug/executable_plugin.h`)
//! fill these structures in, hosts (`xplug-providers`, `xplug-manager`, or
//! IREE's own C runtime) read them. It is `#![no_std]`, has no dependencies by
//! default and contains no logic beyond small, total helpers on the value
//! types and [`gallop_search`], the sorted-table search every resolver shares,
//! and [`name_hash`] with the hash-index helpers built on it, and
//! [`ParamKind::parse`], the one parser of declared load parameter values
//! that hosts and plugins share.
//!
//! # Features
//!
//! * `inventory` (off by default): link-time registration of plugins compiled
//!   into a binary, `StaticPluginRegistration` and `registered_plugins`. Both
//!   the plugin side (`xplug-sdk`) and the host side (`xplug-providers`) turn
//!   it on, so a plugin crate registers itself without depending on the host.
//!
//! # Shape of the ABI
//!
//! A shared-library plugin exports one C function, [`EXPORT_NAME`]
//! (`iree_hal_executable_plugin_query`), of type [`QueryFn`]. Called with the
//! highest [`Version`] the host understands, it returns a pointer to the
//! plugin's [`PluginV0`] table, whose first field points at a [`Header`].
//! The host checks the header, calls [`PluginV0::load`] with an
//! [`EnvironmentV0`] (which carries the host [`Allocator`]) and the
//! key/value [`StringPair`] parameters, then resolves imports with
//! [`PluginV0::resolve`] and finally calls [`PluginV0::unload`].
//!
//! # Values from foreign code
//!
//! Everything a plugin can hand back to the host ([`Status`], [`Sanitizer`],
//! [`Features`], [`AllocatorCommand`], [`Resolution`], [`Version`]) is a
//! `#[repr(transparent)]` newtype with associated constants, never a Rust
//! `enum`: any bit pattern the other side sends is a valid value of the type,
//! and helpers such as [`Sanitizer::name`] return `None` for values this crate
//! does not know.
//!
//! # Example
//!
//! Describing a plugin's header and reading its metadata back:
//!
//! ```
//! use xplug_abi::{Features, Header, Sanitizer, Version};
//!
//! static HEADER: Header = Header {
//!     version: Version::LATEST,
//!     name: c"example".as_ptr(),
//!     description: c"an example plugin".as_ptr(),
//!     features: Features::STANDALONE,
//!     sanitizer: Sanitizer::NONE,
//!     reserved: [0; 8],
//! };
//!
//! assert_eq!(HEADER.version, Version::V0_1);
//! assert!(HEADER.features.contains(Features::STANDALONE));
//! assert_eq!(HEADER.sanitizer.name(), Some("none"));
//! ```
//!
//! Layout is checked at compile time next to each type: a size, alignment or
//! field-offset change fails the build on both 64-bit and 32-bit targets.
#![no_std]

mod allocator;
mod bits;
mod header;
mod import;
mod layout;
mod lookup;
mod param;
mod plugin;
#[cfg(feature = "inventory")]
mod registration;
mod status;
mod strings;
pub mod suggest;

pub use allocator::{Allocator, AllocatorAllocParams, AllocatorCommand, AllocatorCtlFn};
pub use bits::{AnyBitPattern, assert_any_bit_pattern};
pub use header::{Features, Header, Sanitizer, Version};
pub use import::{
    ImportFn, ImportThunkFn, bare_name, import_fn_from_ptr, is_optional, is_optional_bytes, strip_optional,
};
pub use lookup::{gallop_search, hash_index_capacity, hash_index_insert, name_hash};
pub use param::{FromParam, ParamKind, ParamValue};
pub use plugin::{
    EXPORT_NAME, EXPORTS_LIST_NAME, EnvironmentV0, ExportsListFn, FieldLayout, IMPORT_LAYOUTS_NAME,
    ImportLayout, ImportLayoutsFn, LINKED_SECTION, LOAD_ERROR_NAME, LoadErrorFn, LoadFnV0, OPTIONAL_EXPORTS,
    PARAM_DECLS_NAME, ParamDecl, ParamDeclsFn, PluginV0, QueryFn, Resolution, ResolveFnV0, ResolveParamsV0,
    UnloadFnV0,
};
#[cfg(feature = "inventory")]
pub use registration::{LinkedOptionalExports, StaticPluginRegistration, registered_plugins};
pub use status::{Status, StatusCode};
pub use strings::{StringPair, StringView};

/// The `inventory` crate, re-exported so a plugin crate can submit a
/// [`StaticPluginRegistration`] without depending on it itself.
#[cfg(feature = "inventory")]
pub use inventory;
