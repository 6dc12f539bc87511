//! Why a debugging service could not be switched on.

use std::fmt;

/// A debugging service refused to start.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum DebugError {
    /// The service does not run on this host (or the OS refused it).
    UnsupportedHost {
        /// Why.
        reason: &'static str,
    },
}

impl fmt::Display for DebugError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedHost { reason } => {
                write!(f, "this debugging service is not available on this host: {reason}")
            }
        }
    }
}

impl std::error::Error for DebugError {}
