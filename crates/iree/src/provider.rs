//! xplug's [`Manager`] as the import provider of IREE's executable loaders.
//!
//! IREE's embedded-ELF and system-library loaders keep an import provider,
//! a `{ self, resolve }` pair, and call it once per executable they load
//! with the executable's whole import table. Each [`crate::Device`] installs
//! one [`IreeImportProvider`] as that pair on both of its loaders, so every
//! import of every executable goes through [`Manager::resolve`], with
//! IREE's semantics (`docs/src/reference/resolution.md`). Unlike
//! [`Manager::as_c_provider`], which can only return status codes, a failure
//! here becomes a full `iree_status_t` carrying xplug's explanation (the
//! executable, the missing imports with suggestions, the providers asked),
//! so IREE's own error output shows it.
//!
//! The provider can also record what each executable asked for and who
//! answered ([`ExecutableImports`]): `xplug run --trace` and
//! `--list-imports` print that record. And it can profile every import
//! call ([`ImportProfiler`], `docs/src/operating/profiles.md`): with a profile asked for,
//! each resolved slot gets the profiler's counting wrapper in place of the
//! plugin's function, at one point of the resolve
//! (`IreeImportProvider::install_profile`); without one, the slots hold
//! exactly what the manager resolved.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use xplug_manager::providers::ResolveRequest;
use xplug_manager::providers::abi::{Resolution, Status, StatusCode};
use xplug_manager::{CImportProvider, CResolver, Manager, ResolveTrace, SlotSource};
use xplug_profile::{ImportProfile, ImportProfiler, ProfileOptions};

use crate::sys;

/// What a device's provider does beyond resolving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ImportRecording {
    /// Resolve only: the fastest path, nothing kept.
    #[default]
    Off,
    /// Keep an [`ExecutableImports`] record per executable loaded.
    Record,
    /// Record, and let executables with missing required imports load
    /// anyway so that every executable of a module can be listed: a missing
    /// import's slot gets a function that fails every call (IREE reports
    /// the failure) instead of NULL. For listing imports, never for running.
    ListOnly,
}

/// One import of an executable as the device's provider saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportRecord {
    /// The name without IREE's `?` prefix for optional imports.
    pub name: String,
    /// Whether the executable declared it optional.
    pub optional: bool,
    /// The provider that resolved it, or `None` when none did.
    pub provider: Option<String>,
    /// For an unresolved import, the closest exported name, when one is a
    /// plausible typo.
    pub suggestion: Option<String>,
}

/// The imports of one executable loaded on a device.
#[derive(Debug, Clone)]
pub struct ExecutableImports {
    /// The executable's position among those this device loaded (0 first;
    /// exact for executables loaded one after another, as a module's are,
    /// while two loaded at the same instant on two threads may share one).
    pub ordinal: usize,
    /// Every import, in the executable's order.
    pub imports: Vec<ImportRecord>,
    /// Why resolving failed, when it did (the manager's error).
    pub failure: Option<xplug_manager::Error>,
}

impl ExecutableImports {
    /// Whether every required import was resolved.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.failure.is_none()
    }
}

/// xplug's [`Manager`] as IREE's `iree_hal_executable_import_provider_t`,
/// answering with full `iree_status_t` values: what every [`crate::Device`]
/// installs in its loaders, and usable alone by a host that creates IREE
/// loaders itself.
///
/// The C pair ([`IreeImportProvider::as_c_provider`]) points at `self`, so keep
/// the provider at one address (boxed, as devices do) for as long as IREE
/// may call the pair.
///
/// ```
/// use xplug_iree::IreeImportProvider;
/// use xplug_manager::Manager;
/// use xplug_manager::providers::abi::{Resolution, Status};
///
/// let provider = Box::new(IreeImportProvider::new(Manager::new()));
/// let names = [c"?optional_import".as_ptr()];
/// let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
/// let pair = provider.as_c_provider();
/// let mut resolution = Resolution::NONE;
/// // SAFETY: one name and two one-element slot arrays; the provider lives.
/// let status = unsafe {
///     (pair.resolve)(pair.self_, 1, names.as_ptr(), fns.as_mut_ptr(), contexts.as_mut_ptr(), &mut resolution)
/// };
/// assert_eq!(status, Status::OK, "an optional import nobody exports is not an error");
/// assert_eq!(resolution, Resolution::MISSING_OPTIONAL);
/// ```
pub struct IreeImportProvider {
    manager: Manager,
    device: &'static str,
    recording: ImportRecording,
    executables: AtomicUsize,
    log: Mutex<Vec<ExecutableImports>>,
    /// Counts every import call when a profile was asked for; owns the
    /// wrappers' records, so it lives as long as the provider, which the
    /// device drops after IREE released its executables.
    profiler: Option<ImportProfiler>,
}

impl IreeImportProvider {
    /// A provider resolving through `manager`, recording nothing.
    #[must_use]
    pub fn new(manager: Manager) -> Self {
        Self::for_device(manager, "(none)", ImportRecording::Off, None)
    }

    pub(crate) fn for_device(
        manager: Manager,
        device: &'static str,
        recording: ImportRecording,
        profile: Option<ProfileOptions>,
    ) -> Self {
        Self {
            manager,
            device,
            recording,
            executables: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            profiler: profile.map(ImportProfiler::new),
        }
    }

    /// Every profiled import's figures so far; `None` unless the provider
    /// profiles.
    pub(crate) fn profile(&self) -> Option<ImportProfile> {
        self.profiler.as_ref().map(ImportProfiler::snapshot)
    }

    /// The manager it resolves through.
    #[must_use]
    pub fn manager(&self) -> &Manager {
        &self.manager
    }

    pub(crate) fn device_name(&self) -> &'static str {
        self.device
    }

    /// The records kept so far (empty unless recording).
    pub(crate) fn log(&self) -> Vec<ExecutableImports> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// How many records there are.
    pub(crate) fn log_len(&self) -> usize {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The first failed record from position `from` on.
    pub(crate) fn failure_since(&self, from: usize) -> Option<ExecutableImports> {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter().skip(from).find(|record| record.failure.is_some()).cloned()
    }

    /// The `{ self, resolve }` pair IREE's loaders call, valid while `self`
    /// stays at this address and alive.
    #[must_use]
    pub fn as_c_provider(&self) -> CImportProvider<'_> {
        CImportProvider::new(self)
    }

    /// Resolves one executable's request, recording when asked to: the
    /// resolution, or the full `iree_status_t` IREE gets.
    ///
    /// Everything but the manager's answer is in cold functions.
    #[inline(always)]
    fn resolve_for_iree(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Status> {
        // Not a read-modify-write: an uncontended atomic add costs as much
        // as the rest of this call. Executables loaded one after another
        // (a module's, on the thread loading it) are numbered exactly; two
        // loaded at the same instant on two threads may share a number,
        // which says no less than their order would.
        let ordinal = self.executables.load(Ordering::Relaxed);
        self.executables.store(ordinal + 1, Ordering::Relaxed);
        if self.recording != ImportRecording::Off || self.profiler.is_some() {
            return self.resolve_recorded(ordinal, request);
        }
        // The hot path: no trace. A failure is still recorded, without who
        // resolved what, so the session can report it typed.
        match self.manager.resolve(request) {
            Ok(resolution) => Ok(resolution),
            Err(error) => self.record(ordinal, request, None, Err(error)),
        }
    }

    /// [`IreeImportProvider::resolve_for_iree`] for a recording or
    /// profiling provider: the resolve is traced (who resolved each slot),
    /// the profile installed, and the record kept when recording.
    #[cold]
    #[inline(never)]
    fn resolve_recorded(
        &self,
        ordinal: usize,
        request: &mut ResolveRequest<'_>,
    ) -> Result<Resolution, Status> {
        let (trace, result) = self.manager.resolve_traced(request);
        if result.is_ok() {
            self.install_profile(ordinal, request, &trace);
        }
        match result {
            Ok(resolution) if self.recording == ImportRecording::Off => Ok(resolution),
            result => self.record(ordinal, request, Some(trace), result),
        }
    }

    /// The one point where per-import profiles are installed: every slot
    /// the resolution filled (with a plugin's function, or with whatever a
    /// host wrapper put there) is wrapped by the profiler's counting entry
    /// point, labelled with executable `ordinal` and the provider that
    /// resolved it. Nothing happens unless the provider profiles.
    fn install_profile(&self, ordinal: usize, request: &mut ResolveRequest<'_>, trace: &ResolveTrace) {
        if let Some(profiler) = &self.profiler {
            profiler.install(ordinal, request, |index| slot_provider(trace, index));
        }
    }

    /// Records executable `ordinal`'s imports and outcome in the log, and
    /// gives the outcome IREE sees (a listing run lets missing imports
    /// through, bound to a function that refuses every call).
    #[cold]
    #[inline(never)]
    fn record(
        &self,
        ordinal: usize,
        request: &mut ResolveRequest<'_>,
        trace: Option<ResolveTrace>,
        result: Result<Resolution, xplug_manager::Error>,
    ) -> Result<Resolution, Status> {
        let missing = match &result {
            Err(error) => error.missing_imports().to_vec(),
            Ok(_) => Vec::new(),
        };
        let imports = request
            .names()
            .iter()
            .enumerate()
            .map(|(index, name)| {
                let provider = trace.as_ref().and_then(|trace| slot_provider(trace, index));
                ImportRecord {
                    name: String::from_utf8_lossy(name.bare()).into_owned(),
                    optional: name.is_optional(),
                    provider,
                    suggestion: missing
                        .iter()
                        .find(|missing| missing.index == index)
                        .and_then(|missing| missing.suggestion.clone()),
                }
            })
            .collect();
        let failure = result.as_ref().err().cloned();
        self.log.lock().unwrap_or_else(PoisonError::into_inner).push(ExecutableImports {
            ordinal,
            imports,
            failure,
        });
        match result {
            Err(xplug_manager::Error::MissingImports { missing, .. })
                if self.recording == ImportRecording::ListOnly =>
            {
                for import in missing {
                    request.fill_untyped(import.index, refuse_call as *mut c_void, std::ptr::null_mut());
                }
                Ok(Resolution::NONE)
            }
            other => other.map_err(|error| {
                iree_status(sys::make_status(
                    status_code_for_iree(&error),
                    &self.failure_message(ordinal, &error),
                ))
            }),
        }
    }

    /// The message IREE's status carries for a failed resolve.
    fn failure_message(&self, ordinal: usize, error: &xplug_manager::Error) -> String {
        let mut message = format!("executable #{ordinal} loaded on device `{}`: {error}", self.device);
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        let providers = self.manager.providers();
        if providers.is_empty() {
            message.push_str("; no provider is registered with the xplug manager");
        } else {
            message.push_str(&format!("; providers asked, newest first: {}", providers.join(", ")));
        }
        message
    }
}

/// Who filled slot `index`, as the trace says: a provider's name,
/// `(prefilled)` for a slot filled before the resolve, or `None`.
fn slot_provider(trace: &ResolveTrace, index: usize) -> Option<String> {
    match trace.slots.get(index) {
        Some(SlotSource::Provider { name, .. }) => Some(name.to_string()),
        Some(SlotSource::Prefilled) => Some("(prefilled)".to_owned()),
        _ => None,
    }
}

/// The code IREE gets for a failed resolve: the manager's, except that
/// missing imports become `FAILED_PRECONDITION` instead of `NOT_FOUND`.
/// IREE's executable cache treats a loader's `NOT_FOUND` as "this loader
/// does not handle the format", drops the status and reports "no
/// executable loader registered for the given executable format"; a
/// different code makes it return xplug's explanation instead.
fn status_code_for_iree(error: &xplug_manager::Error) -> u32 {
    match error {
        xplug_manager::Error::MissingImports { .. } => StatusCode::FAILED_PRECONDITION.0,
        other => match other.code() {
            StatusCode::NOT_FOUND | StatusCode::CANCELLED => StatusCode::FAILED_PRECONDITION.0,
            code => code.0,
        },
    }
}

/// The provider answers full `iree_status_t` values, carrying xplug's
/// explanation.
impl CResolver for IreeImportProvider {
    #[inline(always)]
    fn resolve_for_c(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Status> {
        self.resolve_for_iree(request)
    }

    #[cold]
    #[inline(never)]
    fn refusal(code: StatusCode, message: &str) -> Status {
        iree_status(sys::make_status(code.0, message))
    }
}

/// An `iree_status_t` IREE made, as the pointer-sized [`Status`] the C
/// boundary returns (ownership passes to IREE, which frees it).
fn iree_status(status: sys::StatusHandle) -> Status {
    Status::from_raw(status.expose_provenance())
}

/// The import installed for a missing import when only listing: every call
/// fails, so an executable run by mistake reports an error instead of
/// jumping to NULL.
extern "C" fn refuse_call(_params: *mut c_void, _context: *mut c_void, _reserved: *mut c_void) -> i32 {
    -1
}

#[cfg(test)]
mod tests {
    use std::ffi::c_char;

    use super::*;

    /// Calls the provider's raw resolve function over `names` and returns
    /// IREE's text for the status it made (`None` for OK), read only after
    /// the heap has been churned, so a status that borrowed freed memory
    /// shows other bytes.
    fn status_text_after_churn(provider: &IreeImportProvider, names: &[*const c_char]) -> Option<String> {
        let (mut fns, mut contexts) =
            (vec![std::ptr::null_mut(); names.len()], vec![std::ptr::null_mut(); names.len()]);
        let raw = provider.as_c_provider();
        let mut resolution = Resolution::NONE;
        // SAFETY: `names.len()` names (NULLs included, which the provider
        // refuses) and as many slots; the provider is alive.
        let status = unsafe {
            (raw.resolve)(
                raw.self_,
                names.len(),
                names.as_ptr(),
                fns.as_mut_ptr(),
                contexts.as_mut_ptr(),
                &mut resolution,
            )
        };
        let status = sys::Status::from_raw(std::ptr::with_exposed_provenance_mut(status.0))?;
        // Reuse whatever the provider freed while making the status: blocks
        // of every small size, filled with a byte no message contains.
        let churn: Vec<Vec<u8>> = (1..512).map(|size| vec![0xa5; size]).collect();
        let text = status.text();
        drop(churn);
        Some(text)
    }

    /// The other tests of this binary again under valgrind: a status that
    /// borrowed a freed message is an invalid read there, whatever the
    /// freed bytes hold.
    #[test]
    fn the_unit_tests_are_memcheck_clean() {
        let Some(output) =
            xplug_fixtures::valgrind::rerun_this_test_binary("the_unit_tests_are_memcheck_clean")
        else {
            return;
        };
        xplug_fixtures::valgrind::assert_clean(&output, 0, "xplug-iree's unit tests");
    }

    unsafe extern "C" fn triple(args: *mut c_void, _: *mut c_void, _: *mut c_void) -> i32 {
        // SAFETY: the test passes an `i32`.
        unsafe { *args.cast::<i32>() *= 3 };
        0
    }

    /// What the provider's C pair writes into the slot of `triple`.
    fn resolved_slot(provider: &IreeImportProvider) -> (*mut c_void, *mut c_void) {
        let names = [c"triple".as_ptr()];
        let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
        let raw = provider.as_c_provider();
        let mut resolution = Resolution::NONE;
        // SAFETY: one name and two one-element slot arrays; the provider lives.
        let status = unsafe {
            (raw.resolve)(
                raw.self_,
                1,
                names.as_ptr(),
                fns.as_mut_ptr(),
                contexts.as_mut_ptr(),
                &mut resolution,
            )
        };
        assert_eq!(status, Status::OK);
        (fns[0], contexts[0])
    }

    fn manager_with_triple() -> Manager {
        use xplug_manager::providers::{FnTableEntry, FnTableProvider};
        let manager = Manager::new();
        let table = FnTableProvider::new("math", [FnTableEntry::new("triple", triple)]).unwrap();
        manager.register_provider(std::sync::Arc::new(table)).unwrap();
        manager
    }

    #[test]
    fn without_a_profile_the_slot_holds_the_plugins_own_function() {
        for recording in [ImportRecording::Off, ImportRecording::Record] {
            let provider =
                Box::new(IreeImportProvider::for_device(manager_with_triple(), "test", recording, None));
            assert_eq!(resolved_slot(&provider).0, triple as *mut c_void, "{recording:?}");
            assert!(provider.profile().is_none());
        }
    }

    #[test]
    fn with_a_profile_the_slot_holds_the_counting_wrapper() {
        let provider = Box::new(IreeImportProvider::for_device(
            manager_with_triple(),
            "test",
            ImportRecording::Off,
            Some(ProfileOptions::default()),
        ));
        let (function, context) = resolved_slot(&provider);
        assert_ne!(function, triple as *mut c_void);
        // SAFETY: the slot holds an import function; the provider (and its
        // profiler) outlives the calls.
        let function = unsafe { xplug_manager::providers::abi::import_fn_from_ptr(function) }.unwrap();
        let mut value = 1;
        for _ in 0..4 {
            // SAFETY: `triple` takes an `i32`, passed on by the wrapper.
            assert_eq!(unsafe { function((&raw mut value).cast(), context, std::ptr::null_mut()) }, 0);
        }
        assert_eq!(value, 81);
        let profile = provider.profile().expect("profiling");
        assert_eq!(profile.imports.len(), 1);
        let stats = &profile.imports[0];
        assert_eq!(
            (stats.executable, stats.name.as_str(), stats.provider.as_deref()),
            (0, "triple", Some("math"))
        );
        assert_eq!(stats.calls, 4);
    }

    #[test]
    fn a_refused_request_reads_back_in_irees_exact_text() {
        let provider = Box::new(IreeImportProvider::new(Manager::new()));
        let names = [c"a".as_ptr(), std::ptr::null()];
        assert_eq!(
            status_text_after_churn(&provider, &names).as_deref(),
            Some(
                "xplug-iree:0: INVALID_ARGUMENT; invalid resolve request: resolve called with invalid arguments: a symbol name is NULL"
            )
        );
    }

    #[test]
    fn a_missing_import_reads_back_in_irees_exact_text() {
        let provider = Box::new(IreeImportProvider::new(Manager::new()));
        let names = [c"xplug_test_missing_import".as_ptr()];
        assert_eq!(
            status_text_after_churn(&provider, &names).as_deref(),
            Some(
                "xplug-iree:0: FAILED_PRECONDITION; executable #0 loaded on device `(none)`: missing 1 \
                 required executable import(s) after asking 0 provider(s): [`xplug_test_missing_import`]; \
                 register a plugin that exports them or declare them optional with a `?` prefix; \
                 no provider is registered with the xplug manager"
            )
        );
    }
}
