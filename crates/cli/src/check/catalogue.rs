//! The catalogue of checks: their names, what each verifies, in the order
//! they run, and the shape of a check's result. The bodies are in
//! [`super::bodies`].

use super::bodies::{
    Subject, Verdict, allocations_balanced, filled_slots_untouched, header, load_plain, load_with_params,
    query_latest, query_max_version_0, repeated_resolve_stable, resolve_exports, resolve_nothing,
    resolve_unknown_optional, resolve_unknown_required,
};
use xplug_probe::ProbeFailure;

use crate::error::CliError;

/// One conformance check.
pub(crate) struct Check {
    /// Stable name (used by `--single-check` and in the JSON).
    pub(crate) name: &'static str,
    /// What it verifies, for humans.
    pub(crate) description: &'static str,
    pub(super) run: fn(&Subject<'_>) -> Verdict,
}

/// The result of one check.
#[derive(Debug)]
pub(crate) struct CheckResult {
    /// The check's name.
    pub(crate) name: &'static str,
    /// Whether it passed.
    pub(crate) ok: bool,
    /// What was seen.
    pub(crate) detail: String,
    /// The crash or hang that failed it, when one did.
    pub(crate) fault: Option<ProbeFailure>,
}

/// Every check, in the order they run.
pub(crate) const CHECKS: &[Check] = &[
    Check {
        name: "query-max-version-0",
        description: "query(0) returns NULL (the plugin needs version 1)",
        run: query_max_version_0,
    },
    Check {
        name: "query-latest",
        description: "query(LATEST) returns a table with a header",
        run: query_latest,
    },
    Check {
        name: "header",
        description: "header version, name, features and sanitizer are sane",
        run: header,
    },
    Check {
        name: "load-unload",
        description: "load with the spec's params succeeds; unload frees everything",
        run: load_plain,
    },
    Check {
        name: "load-unload-params",
        description: "an unknown load param is refused (INVALID_ARGUMENT, nothing held) by a plugin that declares \
                      its params, else accepted and unload frees everything",
        run: load_with_params,
    },
    Check { name: "resolve-nothing", description: "resolving zero names is OK", run: resolve_nothing },
    Check {
        name: "resolve-unknown-required",
        description: "an unknown required name gives NOT_FOUND and an empty slot",
        run: resolve_unknown_required,
    },
    Check {
        name: "resolve-unknown-optional",
        description: "an unknown ?optional name gives OK with MISSING_OPTIONAL",
        run: resolve_unknown_optional,
    },
    Check {
        name: "resolve-exports",
        description: "every listed export resolves to a function",
        run: resolve_exports,
    },
    Check {
        name: "filled-slots-untouched",
        description: "slots filled before resolve are skipped and left alone",
        run: filled_slots_untouched,
    },
    Check {
        name: "repeated-resolve-stable",
        description: "resolving the same names twice gives the same pointers",
        run: repeated_resolve_stable,
    },
    Check {
        name: "allocations-balanced",
        description: "after load, resolves and unload the plugin holds no host memory",
        run: allocations_balanced,
    },
];

/// The checks `only` selects (all when `None`).
pub(super) fn select(only: Option<&str>) -> Result<Vec<&'static Check>, CliError> {
    Ok(match only {
        None => CHECKS.iter().collect(),
        Some(name) => {
            vec![CHECKS.iter().find(|check| check.name == name).ok_or_else(|| CliError::Usage {
                message: format!(
                    "unknown check `{name}`; checks: {}",
                    CHECKS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
                ),
            })?]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_are_unique_and_described() {
        let mut names: Vec<&str> = CHECKS.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CHECKS.len());
        assert!(CHECKS.iter().all(|c| !c.description.is_empty()));
    }
}
