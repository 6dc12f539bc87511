//! The flags of IREE's `iree-run-module` that apply to local devices, and
//! what `xplug run` does with each: [`IREE_RUN_MODULE_FLAGS`] is the one
//! list. A flag is taken by `xplug run`'s own parser with IREE's meaning
//! ([`Handling::Native`]), handed to IREE's own flag parser
//! ([`Handling::Iree`]: the task system's flags), answered here as IREE's
//! tool answers it ([`Handling::Listing`], [`Handling::AbortOnFailure`]), or
//! refused by name with the reason ([`Handling::Refused`]).
//!
//! [`prepare_run_arguments`] runs before clap on an `xplug run` command
//! line: it expands `--flagfile=FILE` as IREE does, takes out the flags
//! that are not clap's, and refuses the refused ones. `xplug run --help`
//! lists every flag of the table ([`help`]), and a test compares the table
//! with the pinned `iree-run-module --help`, so a flag IREE adds cannot go
//! unnoticed.

use std::ffi::OsString;
use std::path::Path;

use crate::error::CliError;

/// What `xplug run` does with one of `iree-run-module`'s flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handling {
    /// A flag of `xplug run`'s own parser, with IREE's meaning.
    Native,
    /// Passed to IREE's flag parser ([`xplug_iree::set_iree_flags`]).
    Iree,
    /// `--flagfile=FILE`: expanded in place, as IREE does.
    Flagfile,
    /// `--task_abort_on_failure`: set on the `local-task` device.
    AbortOnFailure,
    /// Prints what `iree-run-module` prints for xplug's two devices, then
    /// exits.
    Listing,
    /// Refused, naming the flag, with this reason.
    Refused(&'static str),
}

/// Why the HAL profiling flags are refused.
const NO_DEVICE_PROFILING: &str = "IREE's HAL device profiling is not wired into xplug's devices; \
     `xplug run --profile` times every import call, or run iree-run-module";
/// Why the replay flags are refused.
const NO_REPLAY: &str =
    "xplug run records no HAL replay stream; record one with iree-run-module --device_replay_output";
/// Why the capture flags are refused.
const NO_CAPTURE: &str = "capture tools (RenderDoc and the like) serve GPU drivers; xplug runs only \
     IREE's local CPU devices, which have none";
/// Why the allocator flags are refused.
const NO_ALLOCATOR_SPECS: &str = "xplug's devices use IREE's heap allocator; IREE's allocator \
     specs are not wired in (the results do not depend on it)";
/// Why the statistics flags are refused.
const NO_STATISTICS: &str = "xplug run does not print IREE's allocator statistics; run \
     iree-run-module with it, or `xplug run --profile` for per-import timings";

/// Every flag `iree-run-module` (IREE 3.13, pinned in the tests) lists for
/// local devices, and its handling; CUDA, HIP and Vulkan flags are not
/// listed (xplug runs no GPU driver, and clap refuses them as unknown).
pub(crate) const IREE_RUN_MODULE_FLAGS: &[(&str, Handling)] = &[
    ("help", Handling::Native),
    ("flagfile", Handling::Flagfile),
    ("module", Handling::Native),
    ("module_mode", Handling::Native),
    ("function", Handling::Native),
    ("input", Handling::Native),
    ("output", Handling::Native),
    ("expected_output", Handling::Native),
    ("output_max_element_count", Handling::Native),
    ("parameters", Handling::Native),
    ("parameter_mode", Handling::Native),
    ("device", Handling::Native),
    ("executable_plugin", Handling::Native),
    ("expected_f16_threshold", Handling::Native),
    ("expected_f32_threshold", Handling::Native),
    ("expected_f64_threshold", Handling::Native),
    ("expected_bf16_threshold", Handling::Native),
    ("expected_rtol", Handling::Native),
    ("equality_mode", Handling::Native),
    ("task_abort_on_failure", Handling::AbortOnFailure),
    ("task_worker_spin_us", Handling::Iree),
    ("task_worker_stack_size", Handling::Iree),
    ("task_worker_local_memory", Handling::Iree),
    ("task_topology_mode", Handling::Iree),
    ("task_topology_max_group_count", Handling::Iree),
    ("task_topology_group_count", Handling::Iree),
    ("task_topology_cpu_ids", Handling::Iree),
    ("task_topology_nodes", Handling::Iree),
    ("task_topology_snapshot", Handling::Iree),
    ("task_topology_performance_level", Handling::Iree),
    ("task_topology_distribution", Handling::Iree),
    ("task_topology_favor", Handling::Iree),
    ("dump_task_topologies", Handling::Iree),
    ("list_drivers", Handling::Listing),
    ("list_devices", Handling::Listing),
    ("dump_devices", Handling::Listing),
    (
        "trace_execution",
        Handling::Refused(
            "xplug run does not trace VM execution; run iree-run-module --trace_execution, or \
             `xplug run --trace` for each executable's imports",
        ),
    ),
    ("print_statistics", Handling::Refused(NO_STATISTICS)),
    ("print_device_statistics", Handling::Refused(NO_STATISTICS)),
    ("device_allocator", Handling::Refused(NO_ALLOCATOR_SPECS)),
    ("device_lead_allocator", Handling::Refused(NO_ALLOCATOR_SPECS)),
    (
        "instrument_file",
        Handling::Refused(
            "xplug run does not collect IREE's dispatch instrumentation; run iree-run-module with it, \
             or `xplug run --profile` for per-import timings",
        ),
    ),
    ("device_profiling_mode", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_profiling_output", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_profiling_filter_function", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_profiling_filter_command_buffer", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_profiling_filter_command_index", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_profiling_filter_physical_device", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_profiling_filter_queue", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_profiling_counter", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_profiling_flush_interval_ms", Handling::Refused(NO_DEVICE_PROFILING)),
    ("device_replay_output", Handling::Refused(NO_REPLAY)),
    ("device_replay_file_policy", Handling::Refused(NO_REPLAY)),
    ("device_replay_file_validation", Handling::Refused(NO_REPLAY)),
    ("agents_md", Handling::Refused(NO_REPLAY)),
    ("device_capture_tool", Handling::Refused(NO_CAPTURE)),
    ("device_capture_file", Handling::Refused(NO_CAPTURE)),
    ("device_capture_label", Handling::Refused(NO_CAPTURE)),
];

/// The handling of `--name`, when it is one of [`IREE_RUN_MODULE_FLAGS`].
fn handling(name: &str) -> Option<Handling> {
    IREE_RUN_MODULE_FLAGS.iter().find(|(known, _)| *known == name).map(|(_, handling)| *handling)
}

/// The largest flagfile read (1 MiB) and the deepest nesting of
/// `--flagfile` inside flagfiles.
const FLAGFILE_LIMIT: u64 = 1 << 20;
const FLAGFILE_DEPTH: usize = 8;

/// An `xplug run` command line made ready for clap.
#[derive(Debug, Default)]
pub(crate) struct RunArguments {
    /// What clap parses: every argument but those below.
    pub(crate) clap: Vec<OsString>,
    /// `--task_*` and `--dump_task_topologies`, for IREE's parser.
    pub(crate) iree: Vec<String>,
    /// `--task_abort_on_failure` was given true.
    pub(crate) abort_on_failure: bool,
    /// A listing flag (`list_drivers`, `list_devices`, `dump_devices`):
    /// print it and exit.
    pub(crate) listing: Option<String>,
}

/// Splits `arguments` (program name, `run`, then `run`'s arguments):
/// flagfiles expanded in place (their lines are `--name=value`, `#` and
/// `//` comments, as IREE reads them), IREE's task flags and the listing
/// flags taken out, refused flags refused.
///
/// # Errors
/// [`CliError::Usage`] for a refused flag (named, with the reason) or a bad
/// flagfile line; [`CliError::File`] for an unreadable flagfile.
pub(crate) fn prepare_run_arguments(arguments: Vec<OsString>) -> Result<RunArguments, CliError> {
    let mut prepared = RunArguments::default();
    let mut pending: Vec<(OsString, usize)> =
        arguments.into_iter().rev().map(|argument| (argument, 0)).collect();
    let mut after_separator = false;
    while let Some((argument, depth)) = pending.pop() {
        let Some(text) = argument.to_str().filter(|_| !after_separator) else {
            prepared.clap.push(argument);
            continue;
        };
        if text == "--" {
            after_separator = true;
            prepared.clap.push(argument);
            continue;
        }
        let Some(flag) = text.strip_prefix("--") else {
            prepared.clap.push(argument);
            continue;
        };
        let (name, value) = flag.split_once('=').map_or((flag, None), |(name, value)| (name, Some(value)));
        match handling(name) {
            None | Some(Handling::Native) => prepared.clap.push(argument),
            Some(Handling::Iree) => prepared.iree.push(text.to_owned()),
            Some(Handling::AbortOnFailure) => prepared.abort_on_failure = parse_bool(name, value)?,
            Some(Handling::Listing) => prepared.listing = Some(name.to_owned()),
            Some(Handling::Refused(reason)) => {
                return Err(CliError::Usage {
                    message: format!("--{name}: iree-run-module's flag is not taken by xplug run: {reason}"),
                });
            }
            Some(Handling::Flagfile) => {
                let path = value.filter(|path| !path.is_empty()).ok_or_else(|| CliError::Usage {
                    message: "--flagfile= requires a file path (--flagfile=FILE)".to_owned(),
                })?;
                if depth >= FLAGFILE_DEPTH {
                    return Err(CliError::Usage {
                        message: format!("--flagfile={path}: flagfiles nest deeper than {FLAGFILE_DEPTH}"),
                    });
                }
                let lines = read_flagfile(Path::new(path))?;
                pending.extend(lines.into_iter().rev().map(|line| (OsString::from(line), depth + 1)));
            }
        }
    }
    Ok(prepared)
}

/// IREE's boolean flag values: none (`--flag`), `true`/`false`, `1`/`0`.
fn parse_bool(name: &str, value: Option<&str>) -> Result<bool, CliError> {
    match value {
        None | Some("" | "true" | "1") => Ok(true),
        Some("false" | "0") => Ok(false),
        Some(other) => Err(CliError::Usage {
            message: format!("--{name}={other}: give true or false (or 1 or 0), as IREE takes it"),
        }),
    }
}

/// The flags of a flagfile, one per line, as IREE reads them: lines
/// trimmed, empty lines and `#` or `//` comments skipped, every other line
/// a `--flag`; `--name = value` becomes `--name=value`.
fn read_flagfile(path: &Path) -> Result<Vec<String>, CliError> {
    let bytes = xplug_iree::files::read_bounded(path, "the flagfile", FLAGFILE_LIMIT).map_err(|source| {
        CliError::Iree { context: format!("cannot read the flagfile {}", path.display()), source }
    })?;
    let text = String::from_utf8(bytes).map_err(|_| CliError::Usage {
        message: format!("the flagfile {} is not UTF-8 text", path.display()),
    })?;
    let mut flags = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let flag = line.strip_prefix("--").ok_or_else(|| CliError::Usage {
            message: format!(
                "{}:{}: positional arguments not allowed in flag files (each line is a --flag)",
                path.display(),
                index + 1
            ),
        })?;
        flags.push(match flag.split_once('=') {
            Some((name, value)) => format!("--{}={}", name.trim(), value.trim()),
            None => format!("--{}", flag.trim()),
        });
    }
    Ok(flags)
}

/// What `iree-run-module --list_drivers`, `--list_devices` or
/// `--dump_devices` prints for xplug's two devices, in IREE's words.
pub(crate) fn listing(name: &str) -> String {
    const DRIVERS: [(&str, &str); 2] = [
        ("local-sync", "Local execution using a lightweight inline synchronous queue"),
        ("local-task", "Local execution using the IREE multithreading task system"),
    ];
    let rule = format!("# {}\n", "=".repeat(76));
    let mut out = String::new();
    match name {
        "list_drivers" => {
            out.push_str(&rule);
            out.push_str("# Available HAL drivers\n");
            out.push_str(&rule);
            out.push_str("# Use --list_devices={driver name} to enumerate available devices.\n\n");
            for (driver, description) in DRIVERS {
                out.push_str(&format!("{driver:>16}: {description}\n"));
            }
        }
        "list_devices" => {
            for (driver, _) in DRIVERS {
                out.push_str(&format!("{driver}://\n"));
            }
        }
        _ => {
            for (driver, _) in DRIVERS {
                out.push_str(&rule);
                out.push_str(&format!("# Enumerated devices for driver '{driver}'\n"));
                out.push_str(&rule);
                out.push('\n');
                out.push_str(&format!("# ==={}===\n", "-".repeat(70)));
                out.push_str(&format!("# --device={driver}://\n#   default\n"));
                out.push_str(&format!("# ==={}===\n\n", "-".repeat(70)));
            }
        }
    }
    out
}

/// The part of `xplug run --help` that lists `iree-run-module`'s flags
/// that clap does not parse: IREE's task flags, the listings, and the
/// refused ones with their reasons.
pub(crate) fn help() -> String {
    let mut out = String::from(
        "iree-run-module's flags for local devices are taken with IREE's meaning. Besides the options \
         above:\n  --flagfile=FILE  flags from FILE, one per line (IREE's format)\n",
    );
    let names = |wanted: fn(Handling) -> bool| {
        IREE_RUN_MODULE_FLAGS
            .iter()
            .filter(|(_, handling)| wanted(*handling))
            .map(|(name, _)| format!("--{name}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push_str(&format!(
        "  passed to IREE's task system, as iree-run-module passes them (local-task):\n    {}, \
         --task_abort_on_failure\n",
        names(|handling| handling == Handling::Iree)
    ));
    out.push_str(&format!(
        "  answered as iree-run-module answers them, for xplug's devices: {}\n",
        names(|handling| handling == Handling::Listing)
    ));
    out.push_str("  refused, with the reason:\n");
    // One line per reason, its flags in the table's order.
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, handling) in IREE_RUN_MODULE_FLAGS {
        if let Handling::Refused(reason) = handling {
            match reasons.iter_mut().find(|(known, _)| known == reason) {
                Some((_, names)) => names.push(name),
                None => reasons.push((reason, vec![name])),
            }
        }
    }
    for (reason, names) in reasons {
        let names: Vec<String> = names.iter().map(|name| format!("--{name}")).collect();
        out.push_str(&format!("    {}: {reason}\n", names.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepare(arguments: &[&str]) -> Result<RunArguments, CliError> {
        prepare_run_arguments(arguments.iter().map(OsString::from).collect())
    }

    #[test]
    fn task_flags_go_to_iree_and_the_rest_to_clap() {
        let prepared = prepare(&[
            "xplug",
            "run",
            "--module=m.vmfb",
            "--task_topology_group_count=2",
            "--task_abort_on_failure",
            "--input=1",
            "--",
            "--task_worker_spin_us=1",
        ])
        .unwrap();
        assert_eq!(prepared.iree, ["--task_topology_group_count=2"]);
        assert!(prepared.abort_on_failure);
        assert_eq!(
            prepared.clap,
            ["xplug", "run", "--module=m.vmfb", "--input=1", "--", "--task_worker_spin_us=1"]
        );
    }

    #[test]
    fn refused_flags_are_named_with_their_reason() {
        let error = prepare(&["xplug", "run", "--device_allocator=caching"]).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("--device_allocator") && text.contains("heap allocator"), "{text}");
        for (name, handling) in IREE_RUN_MODULE_FLAGS {
            if let Handling::Refused(_) = handling {
                let text = prepare(&["xplug", "run", &format!("--{name}")]).unwrap_err().to_string();
                assert!(text.starts_with(&format!("--{name}: ")), "{text}");
            }
        }
    }

    #[test]
    fn flagfiles_expand_in_place_as_iree_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner.flags");
        std::fs::write(&inner, "--input=2\n").unwrap();
        let outer = dir.path().join("outer.flags");
        std::fs::write(
            &outer,
            format!(
                "# a comment\n\n// another\n  --function = mul  \n--task_topology_group_count=3\n--flagfile={}\n",
                inner.display()
            ),
        )
        .unwrap();
        let prepared =
            prepare(&["xplug", "run", "--input=1", &format!("--flagfile={}", outer.display()), "--input=3"])
                .unwrap();
        assert_eq!(prepared.clap, ["xplug", "run", "--input=1", "--function=mul", "--input=2", "--input=3"]);
        assert_eq!(prepared.iree, ["--task_topology_group_count=3"]);
        std::fs::write(&inner, "positional\n").unwrap();
        let text =
            prepare(&["xplug", "run", &format!("--flagfile={}", inner.display())]).unwrap_err().to_string();
        assert!(text.contains("inner.flags:1: positional arguments not allowed"), "{text}");
        let looping = dir.path().join("loop.flags");
        std::fs::write(&looping, format!("--flagfile={}\n", looping.display())).unwrap();
        let text =
            prepare(&["xplug", "run", &format!("--flagfile={}", looping.display())]).unwrap_err().to_string();
        assert!(text.contains("nest deeper"), "{text}");
    }

    #[test]
    fn the_help_lists_every_flag_of_the_table() {
        let text = help();
        for (name, handling) in IREE_RUN_MODULE_FLAGS {
            if !matches!(handling, Handling::Native) {
                assert!(text.contains(&format!("--{name}")), "--{name} missing from:\n{text}");
            }
        }
    }
}
