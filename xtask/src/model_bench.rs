//! `cargo xtask model-bench`: `xplug run` against `iree-run-module`, whole
//! processes side by side on the same compiled models, inputs and
//! archives: wall time, CPU time (user + system, the child's `rusage`
//! from `wait4`) and peak resident memory (`ru_maxrss`). Runs come in
//! pairs, one of each tool, and which tool goes first alternates from
//! pair to pair, so neither is always the one that finds the page cache
//! warm. Each scenario runs at least `--runs` pairs and, for short
//! scenarios, more pairs until `--seconds` have passed (a 3 ms process on
//! a shared machine needs many runs for its median to settle). Medians
//! are reported with their ratios (xplug / IREE), and with the share of
//! pairs in which xplug's process ended first. IREE's side is the native
//! `iree-run-module` of the pinned pip package (not the Python script in
//! the environment's `bin/` that starts it).
//!
//! The models are the tests' own (`xplug_fixtures::models`): the ONNX CNN
//! imported by `iree-import-onnx`, with its weights inline and in an
//! `.irpa`; and a program that reads one parameter of `--archive-mib` MiB
//! (256 by default) from an archive written on the fly into
//! `target/model-bench/` (never committed), which measures loading a
//! large archive: xplug in `--parameter_mode=mmap` (it maps the archive;
//! iree-run-module has no such mode and reads it in its default, `file`),
//! then with both in `--parameter_mode=file` (both tools' default) and
//! both in `preload`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xplug_fixtures::iree_e2e::{self, E2eError, IreeTools};
use xplug_fixtures::models;

/// One measured process (or, in a [`Row`], the medians of many).
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Wall time, seconds.
    pub seconds: f64,
    /// CPU time, user plus system, seconds.
    pub cpu_seconds: f64,
    /// Peak resident set, KiB.
    pub max_rss_kib: i64,
}

/// One scenario's medians for both tools.
#[derive(Clone, Debug)]
pub struct Row {
    /// What runs.
    pub scenario: String,
    /// Measured pairs (one run of each tool).
    pub pairs: usize,
    /// Pairs in which xplug's run took less wall time than IREE's.
    pub xplug_faster: usize,
    /// `iree-run-module`'s medians.
    pub iree: Sample,
    /// `xplug run`'s medians.
    pub xplug: Sample,
}

impl Row {
    /// xplug's wall time over IREE's.
    #[must_use]
    pub fn time_ratio(&self) -> f64 {
        self.xplug.seconds / self.iree.seconds
    }

    /// xplug's CPU time over IREE's.
    #[must_use]
    pub fn cpu_ratio(&self) -> f64 {
        self.xplug.cpu_seconds / self.iree.cpu_seconds
    }

    /// xplug's peak memory over IREE's.
    #[must_use]
    pub fn memory_ratio(&self) -> f64 {
        self.xplug.max_rss_kib as f64 / self.iree.max_rss_kib as f64
    }
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> E2eError {
    move |source| E2eError::Io { context, source }
}

/// Runs `command` to its end with stdout and stderr discarded; its wall
/// time and peak memory.
fn measure(command: &mut Command) -> Result<Sample, E2eError> {
    let line = format!("{command:?}");
    let start = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(io(format!("cannot run {line}")))?;
    let pid = libc::pid_t::try_from(child.id()).expect("pids fit pid_t");
    let mut status: libc::c_int = 0;
    // SAFETY: all-zero is a valid `rusage` (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (std's `Child`
    // is dropped without waiting); the out pointers are valid.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    if waited != pid {
        return Err(E2eError::Io {
            context: format!("cannot wait for {line}"),
            source: std::io::Error::last_os_error(),
        });
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(E2eError::Tool {
            command: line,
            stderr: format!("exit status {status:#x}; rerun it to see why"),
        });
    }
    let timeval = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 * 1e-6;
    let cpu_seconds = timeval(usage.ru_utime) + timeval(usage.ru_stime);
    Ok(Sample { seconds, cpu_seconds, max_rss_kib: usage.ru_maxrss })
}

/// The median of each field on its own.
fn median(samples: &[Sample]) -> Sample {
    fn middle(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }
    Sample {
        seconds: middle(samples.iter().map(|sample| sample.seconds).collect()),
        cpu_seconds: middle(samples.iter().map(|sample| sample.cpu_seconds).collect()),
        max_rss_kib: middle(samples.iter().map(|sample| sample.max_rss_kib as f64).collect()) as i64,
    }
}

/// How many pairs a scenario runs: `runs` at least, more while the
/// `budget` lasts, at most [`MAX_PAIRS`].
pub const MAX_PAIRS: usize = 1001;

/// One side-by-side measurement: both tools get the same arguments, and
/// xplug also `xplug_only` (`--parameter_mode=mmap`, a mode the pinned
/// iree-run-module lacks).
struct Scenario {
    name: String,
    args: Vec<String>,
    xplug_only: Vec<String>,
}

impl Scenario {
    fn same(name: &str, args: Vec<String>) -> Self {
        Self { name: name.to_owned(), args, xplug_only: Vec::new() }
    }
}

/// The program reading one `elements`-long f32 parameter, `zeros` of
/// scope `model`, and returning its first four elements plus the input.
fn large_parameter_program(elements: usize) -> String {
    format!(
        "// Generated by `cargo xtask model-bench`: one large parameter.\n\
         module @large_parameter {{\n\
         \x20 util.global private @zeros = #stream.parameter.named<\"model\"::\"zeros\"> : tensor<{elements}xf32>\n\
         \x20 func.func @head(%a: tensor<4xf32>) -> tensor<4xf32> {{\n\
         \x20   %w = util.global.load @zeros : tensor<{elements}xf32>\n\
         \x20   %s = tensor.extract_slice %w[0] [4] [1] : tensor<{elements}xf32> to tensor<4xf32>\n\
         \x20   %r = arith.addf %a, %s : tensor<4xf32>\n\
         \x20   return %r : tensor<4xf32>\n\
         \x20 }}\n\
         }}\n"
    )
}

/// The native `iree-run-module` inside the pip package: the
/// environment's `bin/iree-run-module` is a Python script that starts it,
/// and Python's start-up would be counted against IREE.
fn native_run_module(tools: &IreeTools) -> Result<PathBuf, E2eError> {
    let venv = tools.run_module.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    let lib = venv.join("lib");
    let entries = std::fs::read_dir(&lib).map_err(io(format!("cannot list {}", lib.display())))?;
    for entry in entries.flatten() {
        let candidate = entry.path().join("site-packages/iree/_runtime_libs/iree-run-module");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(E2eError::Io {
        context: format!("no iree/_runtime_libs/iree-run-module below {}", lib.display()),
        source: std::io::ErrorKind::NotFound.into(),
    })
}

/// Measures every scenario in pairs (see the module docs): at least
/// `runs` pairs, and more until `budget` has passed, with the `xplug`
/// binary at `xplug` on `device`.
///
/// # Errors
/// When IREE cannot be set up, a model does not import or compile, or a
/// run fails.
pub fn run(
    root: &Path,
    xplug: &Path,
    device: &str,
    archive_mib: usize,
    runs: usize,
    budget: Duration,
) -> Result<Vec<Row>, E2eError> {
    let tools: IreeTools = iree_e2e::toolchain(root)?;
    let work = root.join("target").join("model-bench");
    std::fs::create_dir_all(&work).map_err(io(format!("cannot create {}", work.display())))?;
    let onnx = models::onnx_models(root, &tools, &work)?;
    let cnn = onnx.iter().find(|model| model.name == "cnn").expect("the catalogue has the CNN");

    let elements = archive_mib * (1 << 20) / 4;
    let source = work.join(format!("large_parameter_{archive_mib}mib.mlir"));
    if std::fs::read_to_string(&source).ok().as_deref() != Some(&large_parameter_program(elements)) {
        std::fs::write(&source, large_parameter_program(elements))
            .map_err(io(format!("cannot write {}", source.display())))?;
    }
    let large_module = work.join(format!("large_parameter_{archive_mib}mib.vmfb"));
    iree_e2e::compile_file(&tools, &source, &large_module)?;
    let archive = work.join(format!("zeros_{archive_mib}mib.irpa"));
    if std::fs::metadata(&archive).map(|meta| meta.len()).unwrap_or(0) < (elements * 4) as u64 {
        eprintln!("model-bench: writing {} ({archive_mib} MiB) ...", archive.display());
        models::write_archive(&tools, &archive, &[], elements * 4)?;
    }

    let cnn_input = format!("--input={}", cnn.inputs[0]);
    let large = vec![
        format!("--module={}", large_module.display()),
        format!("--parameters=model={}", archive.display()),
        "--input=4xf32=1,2,3,4".to_owned(),
    ];
    let with = |args: &[String], extra: &str| -> Vec<String> {
        args.iter().cloned().chain([extra.to_owned()]).collect()
    };
    // Each scenario: its name, the arguments both tools get, and what only
    // xplug gets / only iree-run-module gets (the parameter modes).
    let scenarios: Vec<Scenario> = vec![
        Scenario::same(
            "ONNX CNN, weights inline",
            vec![format!("--module={}", cnn.inline.display()), cnn_input.clone()],
        ),
        Scenario::same(
            "ONNX CNN, weights in .irpa (both default: file)",
            vec![
                format!("--module={}", cnn.external.display()),
                format!("--parameters=model={}", cnn.archive.display()),
                cnn_input,
            ],
        ),
        Scenario {
            xplug_only: vec!["--parameter_mode=mmap".to_owned()],
            ..Scenario::same(
                &format!("{archive_mib} MiB archive: load + call, xplug --parameter_mode=mmap, IREE file"),
                large.clone(),
            )
        },
        Scenario::same(
            &format!("{archive_mib} MiB archive, both --parameter_mode=file"),
            with(&large, "--parameter_mode=file"),
        ),
        Scenario::same(
            &format!("{archive_mib} MiB archive, both --parameter_mode=preload"),
            with(&large, "--parameter_mode=preload"),
        ),
    ];
    let iree_run_module = native_run_module(&tools)?;
    let mut rows = Vec::new();
    for Scenario { name, args, xplug_only } in scenarios {
        eprintln!("model-bench: {name} (at least {runs} pairs, {:.0} s) ...", budget.as_secs_f64());
        let device_flag = format!("--device={device}");
        let run_iree = || measure(Command::new(&iree_run_module).arg(&device_flag).args(&args));
        let run_xplug =
            || measure(Command::new(xplug).arg("run").arg(&device_flag).args(&args).args(&xplug_only));
        // One unmeasured run each (page cache, lazy binding).
        run_iree()?;
        run_xplug()?;
        let (mut iree, mut ours) = (Vec::new(), Vec::new());
        let start = Instant::now();
        while iree.len() < MAX_PAIRS && (iree.len() < runs || start.elapsed() < budget) {
            // Alternate which tool goes first.
            if iree.len() % 2 == 0 {
                iree.push(run_iree()?);
                ours.push(run_xplug()?);
            } else {
                ours.push(run_xplug()?);
                iree.push(run_iree()?);
            }
        }
        let xplug_faster = iree.iter().zip(&ours).filter(|(iree, ours)| ours.seconds < iree.seconds).count();
        rows.push(Row {
            scenario: name,
            pairs: iree.len(),
            xplug_faster,
            iree: median(&iree),
            xplug: median(&ours),
        });
    }
    Ok(rows)
}

/// The table `model-bench` prints.
#[must_use]
pub fn table(rows: &[Row]) -> String {
    let mut table = xplug_table::Table::new([
        "scenario",
        "iree-run-module",
        "xplug run",
        "time ratio",
        "CPU (IREE / xplug)",
        "CPU ratio",
        "xplug faster",
        "peak RSS (IREE / xplug)",
        "memory ratio",
    ]);
    for row in rows {
        table.row([
            row.scenario.clone(),
            format!("{:.1} ms", row.iree.seconds * 1e3),
            format!("{:.1} ms", row.xplug.seconds * 1e3),
            format!("{:.2}x", row.time_ratio()),
            format!("{:.2} / {:.2} ms", row.iree.cpu_seconds * 1e3, row.xplug.cpu_seconds * 1e3),
            format!("{:.2}x", row.cpu_ratio()),
            format!("{} of {}", row.xplug_faster, row.pairs),
            format!(
                "{:.1} / {:.1} MiB",
                row.iree.max_rss_kib as f64 / 1024.0,
                row.xplug.max_rss_kib as f64 / 1024.0
            ),
            format!("{:.2}x", row.memory_ratio()),
        ]);
    }
    table.render(xplug_table::Style::stdout())
}

/// The release `xplug` binary, built first.
///
/// # Errors
/// When cargo cannot build it.
pub fn build_xplug(root: &Path) -> Result<PathBuf, E2eError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--release", "-p", "xplug-cli"])
        .status()
        .map_err(io("cannot run cargo build --release -p xplug-cli".to_owned()))?;
    if !status.success() {
        return Err(E2eError::Tool {
            command: "cargo build --release -p xplug-cli".to_owned(),
            stderr: status.to_string(),
        });
    }
    Ok(root.join("target").join("release").join("xplug"))
}
