//! The steps of hosting a plugin, as the raw layer enters them, and one
//! hook to observe them.
//!
//! Crash isolation (`xplug-probe`) needs to know which step a child process
//! was in when it died; the raw layer knows, so it reports each step it
//! enters to a hook a tool installs once ([`set_stage_hook`]). Without a
//! hook (every host), reporting a step is one atomic load.

use std::fmt;
use std::sync::OnceLock;

/// A step of hosting a plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// Opening the library (its initialisers run).
    Open,
    /// The plugin's query function.
    Query,
    /// The plugin's `load`.
    Load,
    /// The plugin's `resolve`.
    Resolve,
    /// An import function the plugin resolved (reported by the code that
    /// calls it, not by the raw layer).
    Call,
    /// The plugin's `unload`.
    Unload,
    /// Closing the library (its finalisers run).
    Close,
}

impl Stage {
    /// Every stage, in the order a plugin's life goes through them.
    pub const ALL: [Self; 7] =
        [Self::Open, Self::Query, Self::Load, Self::Resolve, Self::Call, Self::Unload, Self::Close];

    /// The stage's name: `open`, `query`, `load`, `resolve`, `call`,
    /// `unload`, `close`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Query => "query",
            Self::Load => "load",
            Self::Resolve => "resolve",
            Self::Call => "call",
            Self::Unload => "unload",
            Self::Close => "close",
        }
    }

    /// The stage called `name`, if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|stage| stage.as_str() == name)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The installed hook, if any.
static HOOK: OnceLock<fn(Stage)> = OnceLock::new();

/// Installs `hook`, called with each stage the raw layer enters, just
/// before it calls into the plugin. It runs on the thread doing the step,
/// inside the step's hot path (`resolve`), so it must be cheap.
///
/// # Errors
/// The hook already installed (it is set once per process), when there is
/// one.
pub fn set_stage_hook(hook: fn(Stage)) -> Result<(), fn(Stage)> {
    HOOK.set(hook)
}

/// Reports that this thread enters `stage`.
#[inline]
pub(crate) fn enter(stage: Stage) {
    if let Some(hook) = HOOK.get() {
        hook(stage);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_names_round_trip() {
        for stage in Stage::ALL {
            assert_eq!(Stage::from_name(stage.as_str()), Some(stage));
        }
        assert_eq!(Stage::from_name("lunch"), None);
    }
}
