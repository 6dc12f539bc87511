//! Running the checks one child process each: this binary re-run with
//! `--in-process --json check --single-check NAME` through
//! [`crate::isolate::probe`], its one-check report read back, a crash
//! turned into that check's failure and a hang into "not run" for the
//! checks after it; a plugin that ended the child is that check's failure
//! too.

use xplug_probe::{ProbeFailure, ProbeStatus};

use super::bodies::{Outcome, Verdict};
use super::catalogue::{CheckResult, select, skipped_after};
use crate::error::CliError;
use crate::isolate;

/// What running the checks in child processes gave.
pub(super) enum Isolated {
    /// A result per check.
    Results(Vec<CheckResult>),
    /// A child failed as a whole (the library does not open, say) and its
    /// report was passed on; the command ends with this code.
    Forwarded(u8),
}

/// Runs each selected check in a child process of its own.
pub(super) fn run_checks(
    spec: &str,
    symbols: &[String],
    only: Option<&str>,
    json: bool,
    timeout: std::time::Duration,
) -> Result<Isolated, CliError> {
    let mut results = Vec::new();
    let mut hang: Option<(&'static str, ProbeFailure)> = None;
    let mut fatal: Option<&'static str> = None;
    for check in select(only)? {
        if let Some((hung_check, failure)) = &hang {
            let verdict = Verdict::skipped(&format!("not run: the plugin {failure} in check {hung_check}"));
            results.push(CheckResult {
                name: check.name,
                outcome: verdict.outcome,
                detail: verdict.detail,
                fault: None,
            });
            continue;
        }
        if let Some(fatal) = fatal {
            results.push(skipped_after(check, fatal));
            continue;
        }
        let mut args: Vec<std::ffi::OsString> =
            ["--json", "check", "--single-check", check.name].into_iter().map(Into::into).collect();
        for symbol in symbols {
            args.push("--symbol".into());
            args.push(symbol.into());
        }
        args.push("--".into());
        args.push(spec.into());
        let output = isolate::probe(spec, &args, timeout)?;
        match output.status {
            ProbeStatus::Exited(code) => {
                let parsed: Option<serde_json::Value> = serde_json::from_slice(&output.stdout).ok();
                let entry = parsed.as_ref().and_then(|value| value["checks"].as_array()?.first().cloned());
                let Some(entry) = entry else {
                    // The child failed before running the check: pass its
                    // report on, as this process would have printed it.
                    isolate::forward(
                        &output,
                        if json { isolate::Pass::Both } else { isolate::Pass::StderrOnly },
                    );
                    return Ok(Isolated::Forwarded(u8::try_from(code).unwrap_or(1)));
                };
                let outcome = entry["outcome"].as_str().and_then(Outcome::parse).unwrap_or(Outcome::Fail);
                results.push(CheckResult {
                    name: check.name,
                    outcome,
                    detail: entry["detail"].as_str().unwrap_or("the child gave no detail").to_owned(),
                    fault: None,
                });
            }
            ProbeStatus::Failed(failure) => {
                if matches!(failure, ProbeFailure::TimedOut { .. }) {
                    hang = Some((check.name, failure.clone()));
                }
                results.push(CheckResult {
                    name: check.name,
                    outcome: Outcome::Fail,
                    detail: failure.to_string(),
                    fault: Some(failure),
                });
            }
            _ => {
                results.push(CheckResult {
                    name: check.name,
                    outcome: Outcome::Fail,
                    detail: "the child process ended in an unknown way".to_owned(),
                    fault: None,
                });
            }
        }
        if results.last().is_some_and(|result| check.stops_the_run(result.outcome)) {
            fatal = Some(check.name);
        }
    }
    Ok(Isolated::Results(results))
}
