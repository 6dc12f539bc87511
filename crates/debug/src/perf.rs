//! perf's map of code it has no file for: with [`PERF_MAP_ENV`]`=1` in
//! the environment, or after [`enable`], every image mapped from then on
//! appends one `START SIZE name` line per function (hex, no `0x`) to
//! `/tmp/perf-<pid>.map`, so `perf report` attributes samples in a `.sos`
//! to its functions. Never written otherwise.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

use xplug_elf::ImageFunction;

/// The environment variable that turns the perf map on (`1`).
pub const PERF_MAP_ENV: &str = "XPLUG_PERF_MAP";

/// 0: the environment not read yet; 1: off; 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);
/// One image's lines at a time.
static FILE: Mutex<()> = Mutex::new(());

/// Turns the perf map on for every image mapped from now on.
pub fn enable() {
    STATE.store(2, Ordering::Relaxed);
}

/// Whether images mapped now are written to the perf map.
#[must_use]
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os(PERF_MAP_ENV).is_some_and(|value| value == "1");
            // A concurrent `enable` wins over the environment.
            let _ = STATE.compare_exchange(0, if on { 2 } else { 1 }, Ordering::Relaxed, Ordering::Relaxed);
            STATE.load(Ordering::Relaxed) == 2
        }
        state => state == 2,
    }
}

/// This process's map file, `/tmp/perf-<pid>.map`.
#[must_use]
pub fn map_path() -> PathBuf {
    PathBuf::from(format!("/tmp/perf-{}.map", std::process::id()))
}

/// The lines of one image: `START SIZE name`, one per function, with
/// `START` the function's absolute address (`base` + its offset).
#[must_use]
fn map_lines(base: usize, functions: &[ImageFunction]) -> String {
    functions
        .iter()
        .map(|function| {
            format!("{:x} {:x} {}\n", base as u64 + function.offset, function.size, function.name)
        })
        .collect()
}

/// Appends the lines of one image to [`map_path`], in one write.
///
/// # Errors
/// When the file cannot be opened or written.
pub(crate) fn append(base: usize, functions: &[ImageFunction]) -> std::io::Result<()> {
    let lines = map_lines(base, functions);
    let _one_writer = FILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    std::fs::OpenOptions::new().create(true).append(true).open(map_path())?.write_all(lines.as_bytes())
}
