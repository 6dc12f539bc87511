//! Owning plugins: registration, loading from specs and the environment, and
//! plugins linked into the binary.

use std::sync::Arc;

use xplug_providers::{AllowList, LoadParamList, Loader, Plugin, STATIC};
use xplug_swap::{SwapHandle, VersionSource};

use crate::error::Error;
use crate::manager::{Manager, Registered};
use crate::registry::Held;
use crate::spec::{self, PluginSpec};

impl Manager {
    /// Registers a loaded plugin. The manager owns it from now on: it is
    /// asked before every provider registered earlier, and unloaded (its
    /// library released after) when the manager drops, in reverse
    /// registration order.
    ///
    /// Returns what was registered: the plugin's registration index and
    /// name.
    ///
    /// # Errors
    /// [`Error::CapacityReached`] when the manager is full; the plugin is
    /// then dropped (unloaded) and nothing else changes.
    pub fn register_plugin(&self, plugin: Plugin) -> Result<Registered, Error> {
        self.register_entry(Held::Plugin(Box::new(plugin)))
    }

    /// Loads the plugin `spec` names (grammar in [`crate::spec`]) and
    /// registers it; returns what was registered, as
    /// [`Manager::register_plugin`] does.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a malformed spec, [`Error::PluginLoad`]
    /// (naming the spec, whose error names the path) when loading fails,
    /// [`Error::CapacityReached`] when full. A spec that pins its code
    /// (`?sha256=`), or any spec while an allow-list applies
    /// ([`ManagerBuilder::allow_only`](crate::ManagerBuilder::allow_only), `XPLUG_ALLOWED_PLUGINS`), is opened pinned
    /// ([`PluginSpec::open_verified`]): code of another hash is refused with
    /// [`xplug_providers::Error::HashMismatch`] or
    /// [`xplug_providers::Error::NotAllowed`] before it is mapped.
    ///
    /// # Safety
    /// Loading a shared library runs its initialisers and then calls its v0
    /// functions, which Rust cannot check: the library must be a well-formed
    /// v0 plugin (`docs/src/reference/abi.md#overview`) that is sound to load into this
    /// process. The same holds for an embedded ELF's code, although its file
    /// is validated before anything runs.
    ///
    /// # Thread-safety
    /// Safe to call while other threads resolve through this manager; the
    /// plugin becomes visible to resolves that start after it returns.
    ///
    /// # Platform-specific behaviour
    /// The spec goes to the first of [`Manager::loaders`] that claims it
    /// (`docs/src/reference/specs.md#loader-selection`): an `embedded:` spec or a `.sos`
    /// path (IREE's rule) to xplug's own embedded ELF loader (Unix hosts),
    /// anything no other loader claims to the system loader (`dlopen` on
    /// Unix, `LoadLibrary` on Windows).
    pub unsafe fn load_spec(&self, spec: &str) -> Result<Registered, Error> {
        let spec = self.parse_spec(spec)?;
        // SAFETY: forwarded to the caller.
        unsafe { self.load_parsed(&spec, false) }
    }

    /// Loads the plugin linked into the binary under `name` with load
    /// parameters and registers it, as the spec `static:NAME?key=value`
    /// would, but safely: linking the plugin's code into the binary was the
    /// trust decision ([`xplug_providers::StaticLoader::linked_code`]).
    ///
    /// ```
    /// use xplug_manager::{Error, Manager};
    ///
    /// let manager = Manager::new();
    /// let error = manager.load_static("no_such_plugin", [("k", "2.5")]).unwrap_err();
    /// assert!(matches!(error, Error::PluginLoad { ref spec, .. } if spec == "static:no_such_plugin"));
    /// assert!(manager.is_empty(), "nothing registered");
    /// ```
    ///
    /// # Errors
    /// [`Error::PluginLoad`] (its spec `static:NAME`) whose source is
    /// [`xplug_providers::Error::StaticPluginNotFound`] when nothing of that
    /// name is linked in, or the plugin's refusal when its `load` rejects a
    /// parameter; [`Error::CapacityReached`] when full.
    pub fn load_static<I, K, V>(&self, name: &str, params: I) -> Result<Registered, Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<Vec<u8>>,
        V: Into<Vec<u8>>,
    {
        let params =
            params.into_iter().fold(LoadParamList::new(), |list, (key, value)| list.with(key, value));
        let plugin = STATIC
            .linked_code(name)
            .and_then(|code| code.load(&params))
            .map_err(|source| Error::PluginLoad { spec: format!("static:{name}"), source })?;
        self.register_plugin(plugin)
    }

    /// Loads and registers one parsed spec, as swappable when `swappable`
    /// or the spec says `?swappable`.
    ///
    /// # Safety
    /// As [`Manager::load_spec`].
    unsafe fn load_parsed(&self, spec: &PluginSpec, swappable: bool) -> Result<Registered, Error> {
        // SAFETY: forwarded to the caller.
        let plugin = unsafe { spec.load_allowed(self.allow_list()) }?;
        if !(swappable || spec.is_swappable()) {
            return self.register_plugin(plugin);
        }
        let versions =
            Versions { loaders: self.loaders().to_vec(), allow_list: self.inner.allow_list.clone() };
        let handle = SwapHandle::new(spec.as_str(), plugin, Arc::new(versions))
            .map_err(|source| Error::PluginLoad { spec: spec.as_str().to_owned(), source })?;
        Ok(self.register_provider(handle.provider())?.with_swap(handle))
    }

    /// Loads the plugin `spec` names as **swappable** and registers it as
    /// a provider ([`SwapHandle::new`](crate::swap::SwapHandle::new): what
    /// a swappable call costs, and why a `.so` is never closed), so
    /// [`SwapHandle::replace`](crate::swap::SwapHandle::replace) can later
    /// point every executable already loaded at a new version, loaded with
    /// this manager's loaders and allow-list. The same as
    /// [`Manager::load_spec`] with `?swappable` in the spec
    /// (`docs/src/operating/swap.md`).
    ///
    /// ```no_run
    /// use xplug_manager::Manager;
    ///
    /// let manager = Manager::new();
    /// // SAFETY: both builds are trusted v0 plugins.
    /// let kernel = unsafe { manager.load_swappable("build/1/kernels.sos") }?;
    /// let imports = manager.resolve_imports(["scale_i32"])?;
    /// // ... executables call `imports` from any thread ...
    /// // SAFETY: as above.
    /// let swapped = unsafe { kernel.replace("build/2/kernels.sos") }?;
    /// assert_eq!(swapped.rebound, 1); // `imports` now calls build 2
    /// # Ok::<(), xplug_manager::Report>(())
    /// ```
    ///
    /// # Errors
    /// As [`Manager::load_spec`].
    ///
    /// # Safety
    /// As [`Manager::load_spec`].
    pub unsafe fn load_swappable(&self, spec: &str) -> Result<SwapHandle, Error> {
        let spec = self.parse_spec(spec)?;
        // SAFETY: forwarded to the caller.
        let registered = unsafe { self.load_parsed(&spec, true) }?;
        Ok(registered.swap_handle().expect("a swappable registration carries its handle").clone())
    }

    /// A manager holding the plugins `specs` name, registered in order, so a
    /// later spec overrides an earlier one (like IREE's repeatable
    /// `--executable_plugin` flag; `docs/src/reference/specs.md#order`). Every spec is
    /// parsed before any plugin is opened.
    ///
    /// ```no_run
    /// use xplug_manager::Manager;
    ///
    /// // SAFETY: both libraries are trusted v0 plugins.
    /// let manager = unsafe {
    ///     Manager::from_specs(["/opt/plugins/libgeneric.so", "/opt/plugins/libfast.so?threads=4"])
    /// }
    /// .unwrap();
    /// assert_eq!(manager.len(), 2);
    /// ```
    ///
    /// # Errors
    /// As [`Manager::load_spec`], for the first spec that fails; plugins
    /// already loaded are unloaded again.
    ///
    /// # Safety
    /// As [`Manager::load_spec`], for every library named.
    ///
    /// # Thread-safety
    /// Builds a new manager; no other thread can see it yet.
    ///
    /// # Platform-specific behaviour
    /// As [`Manager::load_spec`].
    pub unsafe fn from_specs<I, S>(specs: I) -> Result<Manager, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let specs = specs
            .into_iter()
            .map(|spec| PluginSpec::parse(spec.as_ref()))
            .collect::<Result<Vec<_>, Error>>()?;
        let manager = Manager::new();
        for spec in &specs {
            // SAFETY: forwarded to the caller.
            unsafe { manager.load_parsed(spec, false)? };
        }
        Ok(manager)
    }

    /// A manager holding the plugins listed in the `XPLUG_PLUGINS`
    /// environment variable ([`spec::ENV_VAR`], read by [`spec::env_specs`]):
    /// specs separated by [`spec::ENV_SEPARATOR`] (`:` on Unix, `;` on
    /// Windows), empty entries skipped, loaded as by [`Manager::from_specs`].
    /// An unset variable gives an empty manager. See [`spec::split_spec_list`] for `embedded:` and
    /// `:` inside parameters on Unix. The allow-list `XPLUG_ALLOWED_PLUGINS`
    /// names applies, as to every spec ([`ManagerBuilder::allow_only`](crate::ManagerBuilder::allow_only)).
    ///
    /// # Errors
    /// [`Error::InvalidEnvironment`] when the value is not UTF-8; otherwise
    /// as [`Manager::from_specs`].
    ///
    /// # Safety
    /// As [`Manager::from_specs`]: whoever controls the environment chooses
    /// the code loaded into the process.
    ///
    /// # Thread-safety
    /// Reads the environment; do not call while another thread modifies it.
    ///
    /// # Platform-specific behaviour
    /// The separator differs per platform (above); loading as
    /// [`Manager::load_spec`].
    pub unsafe fn from_env() -> Result<Manager, Error> {
        let specs = spec::env_specs()?;
        // SAFETY: forwarded to the caller.
        unsafe { Self::from_specs(specs) }
    }
}

impl Manager {
    /// The loaders a spec is offered to, in order: the first that claims it
    /// opens it ([`xplug_providers::loaders`], after any added with
    /// [`ManagerBuilder::loader`](crate::ManagerBuilder::loader)).
    #[must_use]
    pub fn loaders(&self) -> &[&'static dyn Loader] {
        &self.inner.loaders
    }

    /// The allow-list given to
    /// [`ManagerBuilder::allow_only`](crate::ManagerBuilder::allow_only),
    /// if any.
    #[must_use]
    pub fn allow_list(&self) -> Option<&AllowList> {
        self.inner.allow_list.as_deref()
    }

    /// Parses `spec` for this manager's loaders ([`PluginSpec::parse_with`]).
    ///
    /// # Errors
    /// [`Error::InvalidSpec`], as [`PluginSpec::parse`].
    pub fn parse_spec(&self, spec: &str) -> Result<PluginSpec, Error> {
        PluginSpec::parse_with(spec, &self.inner.loaders)
    }
}

impl PluginSpec {
    /// Loads the plugin this spec names with its load parameters, with the
    /// loader [`Manager::load_spec`] would choose, without registering it:
    /// for a tool that reads what the loaded [`Plugin`] describes (its
    /// exports, parameters, import layouts) before handing it to
    /// [`Manager::register_plugin`].
    ///
    /// # Errors
    /// As [`Manager::load_spec`], except [`Error::CapacityReached`].
    ///
    /// # Safety
    /// As [`Manager::load_spec`].
    pub unsafe fn load(&self) -> Result<Plugin, Error> {
        // SAFETY: forwarded to the caller.
        unsafe { self.load_allowed(None) }
    }

    /// Loads as [`PluginSpec::load`], checking the code against `allow_list`
    /// as well as the environment's ([`PluginSpec::open_verified`]).
    ///
    /// # Safety
    /// As [`Manager::load_spec`].
    pub(crate) unsafe fn load_allowed(&self, allow_list: Option<&AllowList>) -> Result<Plugin, Error> {
        let params = self.load_params();
        let span = tracing::debug_span!("xplug_load_plugin", spec = self.as_str());
        let _entered = span.enter();
        let loaded = AllowList::from_env().and_then(|env_list| {
            let lists: Vec<&AllowList> = env_list.iter().chain(allow_list).collect();
            // SAFETY: the caller vouches for the plugin (see `load_spec`).
            unsafe { self.open_verified(&lists) }.and_then(|code| code.load(&params))
        });
        loaded.map_err(|source| Error::PluginLoad { spec: self.as_str().to_owned(), source })
    }
}

/// Where a swappable plugin's next versions come from: the loaders and the
/// allow-list of the manager that loaded the first.
struct Versions {
    loaders: Vec<&'static dyn Loader>,
    allow_list: Option<Arc<AllowList>>,
}

impl VersionSource for Versions {
    unsafe fn load(&self, spec: &str) -> Result<Plugin, Box<dyn std::error::Error + Send + Sync>> {
        let spec = PluginSpec::parse_with(spec, &self.loaders)?;
        // SAFETY: forwarded to the caller (`SwapHandle::replace`'s, who
        // vouches for the plugin).
        Ok(unsafe { spec.load_allowed(self.allow_list.as_deref()) }?)
    }
}
