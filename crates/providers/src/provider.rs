//! The import provider trait.

use xplug_abi::{Resolution, StatusCode};

use crate::{Error, ResolveRequest};

/// Something that resolves import names to functions and contexts.
///
/// Implementations follow `docs/src/reference/resolution.md#provider-rules` exactly:
/// - skip slots that are already filled, never overwrite them;
/// - match `?name` as `name`; an optional name nobody has stays empty;
/// - fill every empty slot whose (bare) name they export;
/// - return `Ok` with [`Resolution::MISSING_OPTIONAL`] set iff an optional
///   slot is still empty, [`Error::NotFound`] when a required slot is still
///   empty, and any other error only for a real failure.
///
/// [`ResolveRequest::outcome`] computes the right answer from the slots once
/// a provider has filled what it can.
///
/// Providers may exploit sorted input ([`ResolveRequest::is_sorted_by_bare_name`])
/// but must be correct on unsorted input and duplicates.
///
/// Providers are shared across threads and must tolerate concurrent calls.
pub trait ImportProvider: Send + Sync {
    /// A short name for diagnostics ("which provider supplied this symbol").
    fn name(&self) -> &str;

    /// Fills what this provider can of `request`.
    ///
    /// # Errors
    /// [`Error::NotFound`] when a required import is still unresolved
    /// afterwards; any other variant for a real failure.
    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error>;

    /// Fills what this provider can of `request` for a caller that asks
    /// several providers in turn and judges the slots itself once they are
    /// done (a manager, `docs/src/reference/resolution.md#reference-model`): only a real
    /// failure is an error; a provider that lacks some names returns
    /// `Ok(())`, as the walk goes on to the next one.
    ///
    /// The provided implementation calls [`ImportProvider::resolve`] and
    /// keeps its errors other than `NOT_FOUND`. A provider whose `resolve`
    /// spends work on its own judgement (a pass over the slots, an error
    /// value, tracing) may override this to skip it; it must fill exactly
    /// the slots `resolve` would.
    ///
    /// # Errors
    /// Any error of [`ImportProvider::resolve`] whose code is neither OK nor
    /// `NOT_FOUND`.
    fn supply(&self, request: &mut ResolveRequest<'_>) -> Result<(), Error> {
        match self.resolve(request) {
            Err(error) if error.code() != StatusCode::NOT_FOUND && !error.code().is_ok() => Err(error),
            _ => Ok(()),
        }
    }

    /// The bare names this provider exports, when it can list them (used for
    /// "did you mean" suggestions and tooling). `None` when unknown.
    fn exported_names(&self) -> Option<Vec<String>> {
        None
    }
}
