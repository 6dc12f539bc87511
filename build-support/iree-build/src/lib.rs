//! Build-script support for `xplug-iree` (and the unpublished
//! `xplug-iree-reference`): where IREE's runtime sources are, and the tools
//! that build them.
//!
//! * [`runtime_src_dir`] and [`iree_root_dir`] find the IREE tree bundled
//!   in the `eerie-sys` package, in this workspace and when the calling
//!   crate was unpacked from a registry or a vendor directory.
//! * [`tools::ToolCache`] finds or installs CMake >= 3.26 and Ninja for
//!   `xplug-iree`'s CMake build of IREE's runtime (the system's when
//!   suitable, else pinned PyPI wheels installed once under Cargo's target
//!   directory), and the pinned libclang wheel for `cargo xtask
//!   iree-bindings` (building needs no libclang: the bindings are
//!   committed).
//! * [`runtime_tree`] names the build tree of IREE's runtime
//!   ([`host_tools_tree`] that of its host tools for a cross build), and
//!   [`record_linked_tree`] / [`linked_runtime_tree`] record and find the
//!   one a profile's build linked.
//!
//! Every function panics with what went wrong and what to do: a build
//! script has no better way to stop a build.
//!
//! Not run as a doctest: it reads the environment Cargo gives a build
//! script (`crates/iree/build.rs` is the real caller):
//!
//! ```no_run
//! // In a build script of a crate that depends on eerie-sys:
//! let runtime_src = xplug_iree_build::runtime_src_dir();
//! assert!(runtime_src.join("iree/base/api.h").is_file());
//! let cmake = xplug_iree_build::tools::ToolCache::for_build_script().cmake();
//! assert!(xplug_iree_build::tools::cmake_version(&cmake) >= Some((3, 26)));
//! ```

mod runtime_tree;
mod sources;
pub mod tools;

pub use runtime_tree::{
    RUNTIME_TREES_DIR, host_tools_tree, linked_runtime_tree, record_linked_tree, runtime_tree,
};
pub use sources::{EERIE_SYS, EERIE_SYS_VERSION, RUNTIME_SRC_VAR, iree_root_dir, runtime_src_dir};
