//! `cargo xtask model-bench`: `xplug run` against `iree-run-module`, whole
//! processes side by side on the same compiled models, inputs and
//! archives: wall time, CPU time (user + system, the child's `rusage`
//! from `wait4`) and peak resident memory ([`peak_rss_kib`]). Runs come in
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
//! `.irpa`; a program that reads one parameter of `--archive-mib` MiB
//! (256 by default) from an archive written on the fly into
//! `target/model-bench/` (never committed), which measures loading a
//! large archive: xplug in `--parameter_mode=mmap` (it maps the archive;
//! iree-run-module has no such mode and reads it in its default, `file`),
//! then with both in `--parameter_mode=file` (both tools' default) and
//! both in `preload`; and two programs of
//! `tests/iree/` at the extremes of what the runtime costs per unit of
//! work: `many_dispatches.mlir`, [`DISPATCHES`] 16x16 matrix products one
//! dispatch each (the runtime's cost per dispatch: VM, HAL command
//! buffers, task system), and `large_matmul.mlir`, one 1024x1024 matrix
//! product (the compiled kernel's time, the same code in both tools).
//!
//! Every scenario runs on each `--device` given. On `local-task` both
//! tools get the same worker count (`--task-workers`, by default one per
//! CPU) through the same flag, IREE's `--task_topology_group_count=N`,
//! which `xplug run` hands to IREE's task system as iree-run-module does.
//!
//! With `--instructions`, nothing is timed: [`instructions`] counts the
//! instructions each tool executes per dispatch under callgrind, which the
//! machine's load does not change.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xplug_fixtures::command::{self, CommandError};
use xplug_fixtures::iree_e2e::{self, E2eError, IreeTools};
use xplug_fixtures::models;

/// One measured process (or, in a [`Row`], the medians of many).
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Wall time, seconds.
    pub seconds: f64,
    /// CPU time, user plus system, seconds.
    pub cpu_seconds: f64,
}

/// One scenario's medians for both tools.
#[derive(Clone, Debug)]
pub struct Row {
    /// What runs.
    pub scenario: String,
    /// The device both tools ran it on (with the worker count on
    /// `local-task`).
    pub device: String,
    /// Measured pairs (one run of each tool).
    pub pairs: usize,
    /// Pairs in which xplug's run took less wall time than IREE's.
    pub xplug_faster: usize,
    /// `iree-run-module`'s medians.
    pub iree: Sample,
    /// `xplug run`'s medians.
    pub xplug: Sample,
    /// `iree-run-module`'s peak resident set, KiB ([`peak_rss_kib`]).
    pub iree_rss_kib: u64,
    /// `xplug run`'s peak resident set, KiB ([`peak_rss_kib`]).
    pub xplug_rss_kib: u64,
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
        self.xplug_rss_kib as f64 / self.iree_rss_kib as f64
    }
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> E2eError {
    move |source| E2eError::Io { context, source }
}

/// Runs `command` to its end with stdout and stderr discarded; its wall
/// and CPU time.
fn measure(command: &mut Command) -> Result<Sample, E2eError> {
    let line = format!("{command:?}");
    let start = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| E2eError::Command { source: CommandError::start(command, source) })?;
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
        use std::os::unix::process::ExitStatusExt as _;
        let status = std::process::ExitStatus::from_raw(status);
        // Its output was discarded: rerun it to see why.
        return Err(E2eError::Command {
            source: CommandError::Failed { command: line, status, stderr: String::new() },
        });
    }
    let timeval = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 * 1e-6;
    let cpu_seconds = timeval(usage.ru_utime) + timeval(usage.ru_stime);
    Ok(Sample { seconds, cpu_seconds })
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
    }
}

/// GNU time, which [`peak_rss_kib`] runs the tools under (Debian's `time`
/// package).
pub const GNU_TIME: &str = "/usr/bin/time";

/// How many runs of each tool [`peak_rss_kib`] takes the median of.
pub const RSS_RUNS: usize = 3;

/// The peak resident set of `program args`, KiB: the median of
/// [`RSS_RUNS`] runs under [`GNU_TIME`] (`-f %M`, written to `report`). Not `wait4`'s
/// `ru_maxrss` of the timed runs: the kernel counts in it the peak of the
/// memory image a process replaced on `exec`, and a child started from
/// xtask starts out as a copy of xtask (about 10 MiB resident), so every
/// tool would show at least that much. GNU time's own image is small.
///
/// # Errors
/// When GNU time is missing and cannot be installed (not root: the
/// command to run is named), a run fails or its figure cannot be read.
pub fn peak_rss_kib(program: &Path, args: &[String], report: &Path) -> Result<u64, E2eError> {
    let measure_error = |reason: String| E2eError::Measure { tool: GNU_TIME.to_owned(), reason };
    if !Path::new(GNU_TIME).exists() {
        xplug_fixtures::packages::ensure(&["time"], None)
            .map_err(|error| measure_error(error.to_string()))?;
    }
    let mut peaks = Vec::new();
    for _ in 0..RSS_RUNS {
        let mut command = Command::new(GNU_TIME);
        command.args(["-f", "%M", "-o"]).arg(report).arg(program).args(args).stdout(Stdio::null());
        command::output(&mut command).map_err(|source| E2eError::Command { source })?;
        let text =
            std::fs::read_to_string(report).map_err(io(format!("cannot read {}", report.display())))?;
        let peak = text.lines().last().and_then(|line| line.trim().parse::<u64>().ok());
        peaks.push(peak.ok_or_else(|| measure_error(format!("no peak resident set in {text:?}")))?);
    }
    peaks.sort_unstable();
    Ok(peaks[peaks.len() / 2])
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

/// The 16x16 matrix products `many_dispatches.mlir` runs in the
/// dispatch-bound scenario, one dispatch each.
pub const DISPATCHES: usize = 50_000;

/// What `model-bench` measures, beyond the scenarios' own arguments.
#[derive(Clone, Debug)]
pub struct Options {
    /// The devices every scenario runs on, in order.
    pub devices: Vec<String>,
    /// Worker threads on `local-task`, the same for both tools.
    pub task_workers: usize,
    /// Size of the large archive, MiB.
    pub archive_mib: usize,
    /// Measured pairs per scenario and device, at least.
    pub runs: usize,
    /// Time per scenario and device: short scenarios run more pairs until
    /// it has passed.
    pub budget: Duration,
    /// Only the scenarios whose name contains one of these (all when
    /// empty).
    pub only: Vec<String>,
}

/// The device arguments both tools take: the device, and on `local-task`
/// the worker count, in the one spelling both take.
fn device_args(device: &str, task_workers: usize) -> Vec<String> {
    let mut flags = vec![format!("--device={device}")];
    if device == "local-task" {
        flags.push(format!("--task_topology_group_count={task_workers}"));
    }
    flags
}

fn device_label(device: &str, task_workers: usize) -> String {
    if device == "local-task" { format!("{device}, {task_workers} workers") } else { device.to_owned() }
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

/// Measures every scenario on every device in pairs (see the module
/// docs): at least `options.runs` pairs, and more until `options.budget`
/// has passed, with the `xplug` binary at `xplug`.
///
/// # Errors
/// When IREE cannot be set up, a model does not import or compile, or a
/// run fails.
pub fn run(root: &Path, xplug: &Path, options: &Options) -> Result<Vec<Row>, E2eError> {
    let Options { devices, task_workers, archive_mib, runs, budget, only } = options;
    let (task_workers, archive_mib, runs, budget) = (*task_workers, *archive_mib, (*runs).max(1), *budget);
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

    let program = |file: &str| -> Result<PathBuf, E2eError> {
        let module = work.join(file.replace(".mlir", ".vmfb"));
        iree_e2e::compile_file(&tools, &root.join("tests").join("iree").join(file), &module)?;
        Ok(module)
    };
    let many_dispatches = program("many_dispatches.mlir")?;
    let large_matmul = program("large_matmul.mlir")?;

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
    let dispatch_bound = vec![
        format!("--module={}", many_dispatches.display()),
        "--input=16x16xf32=1".to_owned(),
        "--input=16x16xf32=0.0625".to_owned(),
        format!("--input={DISPATCHES}"),
    ];
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
        Scenario::same(
            &format!("dispatch-bound: {DISPATCHES} dispatches of a 16x16 matmul (many_dispatches)"),
            dispatch_bound.clone(),
        ),
        // The same with the program in xplug's own process: the row above
        // against this one is what the supervised child costs.
        Scenario {
            xplug_only: vec!["--in-process".to_owned()],
            ..Scenario::same(
                &format!("dispatch-bound: {DISPATCHES} dispatches of a 16x16 matmul, xplug --in-process"),
                dispatch_bound,
            )
        },
        Scenario::same(
            "compute-bound: one 1024x1024 matmul (large_matmul)",
            vec![
                format!("--module={}", large_matmul.display()),
                "--input=1024x1024xf32=1".to_owned(),
                "--input=1024x1024xf32=0.5".to_owned(),
            ],
        ),
    ];
    let iree_run_module = native_run_module(&tools)?;
    let rss_report = work.join("peak-rss.txt");
    let mut rows = Vec::new();
    let chosen = scenarios
        .iter()
        .filter(|scenario| only.is_empty() || only.iter().any(|part| scenario.name.contains(part)));
    for Scenario { name, args, xplug_only } in chosen {
        for device in devices {
            let label = device_label(device, task_workers);
            eprintln!(
                "model-bench: {name}, {label} (at least {runs} pairs, {:.0} s) ...",
                budget.as_secs_f64()
            );
            let device_flags = device_args(device, task_workers);
            let run_iree = || measure(Command::new(&iree_run_module).args(&device_flags).args(args));
            let run_xplug =
                || measure(Command::new(xplug).arg("run").args(&device_flags).args(args).args(xplug_only));
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
            let xplug_faster =
                iree.iter().zip(&ours).filter(|(iree, ours)| ours.seconds < iree.seconds).count();
            let iree_args: Vec<String> = device_flags.iter().chain(args).cloned().collect();
            let xplug_args: Vec<String> = std::iter::once("run".to_owned())
                .chain(iree_args.iter().cloned())
                .chain(xplug_only.iter().cloned())
                .collect();
            rows.push(Row {
                scenario: name.clone(),
                device: label,
                pairs: iree.len(),
                xplug_faster,
                iree: median(&iree),
                xplug: median(&ours),
                iree_rss_kib: peak_rss_kib(&iree_run_module, &iree_args, &rss_report)?,
                xplug_rss_kib: peak_rss_kib(xplug, &xplug_args, &rss_report)?,
            });
        }
    }
    Ok(rows)
}

/// The dispatch counts of the instruction count ([`instructions`]): the
/// difference between the two runs is what the extra dispatches cost.
pub const COUNTED_DISPATCHES: [usize; 2] = [1_000, 3_000];

/// Instructions per dispatch of both tools on one device
/// ([`instructions`]).
#[derive(Clone, Debug)]
pub struct DispatchCost {
    /// The device (with the worker count on `local-task`).
    pub device: String,
    /// `iree-run-module`'s instructions per dispatch.
    pub iree: f64,
    /// `xplug run`'s instructions per dispatch.
    pub xplug: f64,
}

/// Counts the instructions per dispatch of both tools under callgrind on
/// each of `options.devices`: `many_dispatches.mlir` run with each of
/// [`COUNTED_DISPATCHES`], the difference in instructions over the
/// difference in dispatches, so start-up and module loading cancel out.
/// Instructions do not depend on the machine's load, where times do. Under
/// valgrind IREE's proactor takes its POSIX path in both tools
/// (`xplug_fixtures::valgrind::callgrind_command`). Each profile is kept,
/// as `target/model-bench/callgrind.TOOL.DEVICE.DISPATCHES.out`, for
/// `callgrind_annotate` to say which functions the difference is in.
///
/// # Errors
/// When IREE cannot be set up, the program does not compile, valgrind is
/// missing or a run fails.
pub fn instructions(root: &Path, xplug: &Path, options: &Options) -> Result<Vec<DispatchCost>, E2eError> {
    let tools: IreeTools = iree_e2e::toolchain(root)?;
    let work = root.join("target").join("model-bench");
    std::fs::create_dir_all(&work).map_err(io(format!("cannot create {}", work.display())))?;
    let module = work.join("many_dispatches.vmfb");
    iree_e2e::compile_file(&tools, &root.join("tests/iree/many_dispatches.mlir"), &module)?;
    let iree_run_module = native_run_module(&tools)?;
    let program_args = |dispatches: usize| {
        vec![
            format!("--module={}", module.display()),
            "--input=16x16xf32=1".to_owned(),
            "--input=16x16xf32=0.0625".to_owned(),
            format!("--input={dispatches}"),
        ]
    };
    let count =
        |program: &Path, leading: &[String], dispatches: usize, name: &str| -> Result<u64, E2eError> {
            let out = work.join(format!("callgrind.{name}.{dispatches}.out"));
            let mut command = xplug_fixtures::valgrind::callgrind_command(program, &out)
                .map_err(|reason| E2eError::Measure { tool: "valgrind".to_owned(), reason })?;
            command.args(leading).args(program_args(dispatches)).stdin(Stdio::null());
            command::output(&mut command).map_err(|source| E2eError::Command { source })?;
            let profile =
                std::fs::read_to_string(&out).map_err(io(format!("cannot read {}", out.display())))?;
            xplug_fixtures::valgrind::callgrind_total(&profile).ok_or_else(|| E2eError::Measure {
                tool: "callgrind".to_owned(),
                reason: format!("{} has no total", out.display()),
            })
        };
    let [low, high] = COUNTED_DISPATCHES;
    let mut costs = Vec::new();
    for device in &options.devices {
        let label = device_label(device, options.task_workers);
        eprintln!("model-bench: instructions per dispatch, {label} ...");
        let device_flags = device_args(device, options.task_workers);
        // The program in callgrind's process (a supervised child would run
        // outside it); per dispatch the code is the same either way.
        let xplug_leading: Vec<String> = ["run".to_owned(), "--in-process".to_owned()]
            .into_iter()
            .chain(device_flags.iter().cloned())
            .collect();
        let per_dispatch = |program: &Path, leading: &[String], tool: &str| -> Result<f64, E2eError> {
            let name = format!("{tool}.{device}");
            let (few, many) = (count(program, leading, low, &name)?, count(program, leading, high, &name)?);
            Ok((many as f64 - few as f64) / (high - low) as f64)
        };
        costs.push(DispatchCost {
            device: label,
            iree: per_dispatch(&iree_run_module, &device_flags, "iree-run-module")?,
            xplug: per_dispatch(xplug, &xplug_leading, "xplug")?,
        });
    }
    Ok(costs)
}

/// The table of [`instructions`].
#[must_use]
pub fn instructions_table(costs: &[DispatchCost]) -> String {
    let mut table = xplug_table::Table::new(["device", "iree-run-module", "xplug run", "ratio"]);
    for cost in costs {
        table.row([
            cost.device.clone(),
            format!("{:.0}", cost.iree),
            format!("{:.0}", cost.xplug),
            format!("{:.3}x", cost.xplug / cost.iree),
        ]);
    }
    table.render(xplug_table::Style::stdout())
}

/// The table `model-bench` prints.
#[must_use]
pub fn table(rows: &[Row]) -> String {
    let mut table = xplug_table::Table::new([
        "scenario",
        "device",
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
            row.device.clone(),
            format!("{:.1} ms", row.iree.seconds * 1e3),
            format!("{:.1} ms", row.xplug.seconds * 1e3),
            format!("{:.2}x", row.time_ratio()),
            format!("{:.2} / {:.2} ms", row.iree.cpu_seconds * 1e3, row.xplug.cpu_seconds * 1e3),
            format!("{:.2}x", row.cpu_ratio()),
            format!("{} of {}", row.xplug_faster, row.pairs),
            format!("{:.1} / {:.1} MiB", row.iree_rss_kib as f64 / 1024.0, row.xplug_rss_kib as f64 / 1024.0),
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
    command::status(Command::new(cargo).current_dir(root).args(["build", "--release", "-p", "xplug-cli"]))
        .map_err(|source| E2eError::Command { source })?;
    Ok(root.join("target").join("release").join("xplug"))
}
