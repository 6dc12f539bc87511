//! The catalogue of checks: their names, what each verifies, in the order
//! they run, and the shape of a check's result. The bodies are in
//! [`super::bodies`].

use super::bodies::{
    Checked, Outcome, Subject, Verdict, allocations_balanced, filled_slots_untouched, header, load_plain,
    load_with_params, query_latest, query_max_version_0, repeated_resolve_stable, resolve_exports,
    resolve_nothing, resolve_unknown_optional, resolve_unknown_required,
};
use xplug_probe::ProbeFailure;

use crate::error::CliError;

/// One conformance check.
pub(crate) struct Check {
    /// Stable name (used by `--single-check` and in the JSON).
    pub(crate) name: &'static str,
    /// What it verifies, for humans.
    pub(crate) description: &'static str,
    pub(super) run: fn(&Subject<'_>) -> Checked,
    /// Whether its failure makes every later check meaningless (no table,
    /// a header a host refuses): the later checks are then skipped, not
    /// failed again for the same reason. Any check that could not load an
    /// instance is fatal too ([`Check::stops_the_run`]).
    pub(crate) fatal: bool,
}

impl Check {
    /// Whether this check ending with `outcome` stops the run: a
    /// fatal check, or any check whose plugin did not load (each later one
    /// would say the same).
    pub(crate) fn stops_the_run(&self, outcome: Outcome) -> bool {
        outcome == Outcome::NotLoaded || (self.fatal && outcome.is_failure())
    }
}

/// The result of one check.
#[derive(Debug)]
pub(crate) struct CheckResult {
    /// The check's name.
    pub(crate) name: &'static str,
    /// Whether it passed, failed or was skipped.
    pub(crate) outcome: Outcome,
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
        fatal: false,
    },
    Check {
        name: "query-latest",
        description: "query(LATEST) returns a table with a header",
        run: query_latest,
        fatal: true,
    },
    Check {
        name: "header",
        description: "header version, name, features and sanitizer are sane",
        run: header,
        fatal: true,
    },
    Check {
        name: "load-unload",
        description: "load with the spec's params succeeds; unload frees everything",
        run: load_plain,
        fatal: false,
    },
    Check {
        name: "load-unload-params",
        description: "an unknown load param is refused (INVALID_ARGUMENT, nothing held) by a plugin that declares \
                      its params, else accepted and unload frees everything",
        run: load_with_params,
        fatal: false,
    },
    Check {
        name: "resolve-nothing",
        description: "resolving zero names is OK",
        run: resolve_nothing,
        fatal: false,
    },
    Check {
        name: "resolve-unknown-required",
        description: "an unknown required name gives NOT_FOUND and an empty slot",
        run: resolve_unknown_required,
        fatal: false,
    },
    Check {
        name: "resolve-unknown-optional",
        description: "an unknown ?optional name gives OK with MISSING_OPTIONAL",
        run: resolve_unknown_optional,
        fatal: false,
    },
    Check {
        name: "resolve-exports",
        description: "every listed export resolves to a function",
        run: resolve_exports,
        fatal: false,
    },
    Check {
        name: "filled-slots-untouched",
        description: "slots filled before resolve are skipped and left alone",
        run: filled_slots_untouched,
        fatal: false,
    },
    Check {
        name: "repeated-resolve-stable",
        description: "resolving the same names twice gives the same pointers",
        run: repeated_resolve_stable,
        fatal: false,
    },
    Check {
        name: "allocations-balanced",
        description: "after load, resolves and unload the plugin holds no host memory",
        run: allocations_balanced,
        fatal: false,
    },
];

/// The result standing for a check not run because `fatal`, an earlier
/// check, failed.
pub(crate) fn skipped_after(check: &Check, fatal: &str) -> CheckResult {
    let verdict =
        Verdict::skipped(&format!("check `{fatal}` failed, and this one depends on what it checks"));
    CheckResult { name: check.name, outcome: verdict.outcome, detail: verdict.detail, fault: None }
}

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
