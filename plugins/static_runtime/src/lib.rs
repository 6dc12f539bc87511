//! `static_runtime`: a tiny runtime that loads plugins linked into its own
//! binary.
//!
//! The `static_runtime` binary names `sample_static` (`use sample_static as
//! _;`), lists [`xplug_providers::static_plugins()`], loads `sample_static`
//! with [`xplug_providers::StaticLoader::registration_code`] and [`xplug_providers::Code::load`] and calls its
//! `static_fma_i64` import. The `unreferenced` binary depends on the same
//! crate but never names it: the linker drops the plugin's registration and
//! the list is empty. That is the trap `xplug-sdk` documents.
//!
//! The tests (`tests/`) also load every example plugin through
//! `xplug-providers` and `xplug-manager`, statically and as shared
//! libraries.

use xplug_providers::{ImportProvider, LoadParamList, RequestSlots, STATIC};

/// The args of `static_fma_i64`, as a host declares them (the layout of
/// `sample_static::FmaArgs`).
#[repr(C)]
#[derive(Debug, Default)]
pub struct Fma {
    /// Output: `a * b + c`.
    pub result: i64,
    /// Factor.
    pub a: i64,
    /// Factor.
    pub b: i64,
    /// Addend.
    pub c: i64,
}

/// The names of the statically registered plugins, sorted.
#[must_use]
pub fn static_plugin_names() -> Vec<&'static str> {
    xplug_providers::static_plugins().iter().map(|plugin| plugin.name()).collect()
}

/// Loads the registered plugin `name` and returns `a * b + c` computed by its
/// `static_fma_i64` import.
///
/// # Errors
/// A message when the plugin is not registered, fails to load or resolve, or
/// the import reports a failure.
pub fn fma_through_static_plugin(name: &str, a: i64, b: i64, c: i64) -> Result<i64, String> {
    let registration = xplug_providers::static_plugins()
        .into_iter()
        .find(|plugin| plugin.name() == name)
        .ok_or_else(|| format!("no static plugin named `{name}` is linked in; add `use {name} as _;`"))?;
    let plugin =
        STATIC.registration_code(registration).load(&LoadParamList::new()).map_err(|e| e.to_string())?;
    let mut slots = RequestSlots::for_names([c"static_fma_i64"]);
    plugin.resolve(&mut slots.request()).map_err(|e| e.to_string())?;
    let (function, context) = (slots.fns()[0], slots.contexts()[0]);
    let mut args = Fma { result: 0, a, b, c };
    // SAFETY: the plugin just resolved this slot, so it holds the plugin's
    // `static_fma_i64` entry point, an `ImportFn`.
    let function =
        unsafe { xplug_providers::abi::import_fn_from_ptr(function) }.ok_or("the slot is empty")?;
    // SAFETY: `static_fma_i64` takes exactly `Fma`, with its own context;
    // `plugin` stays loaded across the call.
    let code = unsafe { function(std::ptr::from_mut(&mut args).cast(), context, std::ptr::null_mut()) };
    drop(plugin);
    if code != 0 {
        return Err(format!("static_fma_i64 failed with code {code}"));
    }
    Ok(args.result)
}
