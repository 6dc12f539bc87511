//! IREE's own command-line flags, for the parts of IREE's runtime that read
//! them: the task system's `--task_topology_*` and `--task_worker_*` flags
//! (the executors of a `local-task` device with `workers: 0`,
//! [`crate::DeviceKind::LocalTask`]) and `--dump_task_topologies`.
//!
//! IREE keeps its flags in process-wide globals, set by its tools from
//! their command line; [`set_iree_flags`] hands strings to the same parser,
//! so a flag means here exactly what it means to `iree-run-module`, with
//! IREE's syntax, checks and messages.

use std::ffi::CString;

use crate::{Error, IreeStatus, sys};

/// Sets IREE's process-wide flags from `flags` (`--name=value` strings, as
/// on IREE's command line), through IREE's own parser. They apply to what
/// is created afterwards: a `local-task` device with `workers: 0` takes
/// its executors from the task flags.
///
/// A flag with an action runs it as in IREE's tools:
/// `--dump_task_topologies` prints the topology to stdout and exits the
/// process.
///
/// ```no_run
/// # fn main() -> Result<(), xplug_iree::Error> {
/// use xplug_iree::{DeviceKind, set_iree_flags};
///
/// // Two unpinned workers, as `iree-run-module --task_topology_group_count=2`.
/// set_iree_flags(&["--task_topology_group_count=2"])?;
/// let kind = DeviceKind::LocalTask { workers: 0 };
/// # let _ = kind;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`Error::IreeFlags`] when IREE's parser refuses one (an unknown flag, a
/// bad value, a string holding NUL), naming it. Flags parsed before the
/// bad one keep their new values, as in IREE's tools.
pub fn set_iree_flags<S: AsRef<str>>(flags: &[S]) -> Result<(), Error> {
    let refused = |source: IreeStatus| Error::IreeFlags {
        flags: flags.iter().map(|flag| flag.as_ref().to_owned()).collect(),
        source,
    };
    let invalid = |text: String| IreeStatus {
        code: xplug_manager::providers::abi::StatusCode::INVALID_ARGUMENT.0,
        text,
    };
    if flags.is_empty() {
        return Ok(());
    }
    if flags.len() > sys::MAX_IREE_FLAGS {
        return Err(refused(invalid(format!("at most {} flags at once", sys::MAX_IREE_FLAGS))));
    }
    let strings = flags
        .iter()
        .map(|flag| {
            CString::new(flag.as_ref())
                .map_err(|_| refused(invalid(format!("`{}` holds a NUL byte", flag.as_ref()))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    sys::parse_iree_flags(strings).map_err(|status| refused(status.into()))
}
