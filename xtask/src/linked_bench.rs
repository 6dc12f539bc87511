//! `cargo xtask linked-bench`: one Rust kernel in each deployment
//! (`docs/src/plugins/dispatch.md#linked-kernels`), side by side with IREE's own code
//! for the same operation, timed by IREE's `iree-benchmark-module` on
//! `local-sync`.
//!
//! The programs are those of `crates/cli/tests/linked.rs`: `mul_call.mlir`
//! (one kernel call per 64 elements) at 1 Mi floats and
//! `matmul_relu_call.mlir` (one call per 16 rows) at 256 × 256 × 256, each
//! as an import resolved from `sample_standalone`'s release `.so`, linked
//! as the object and as bitcode that `xplug-build` made, and IREE's codegen
//! of the same operation. Rounds alternate the deployments (each round in
//! a rotated order) and the table gives medians of the per-iteration CPU
//! time. The import's cost per kernel call is the import's time less the
//! linked object's, over the calls one function call makes.

use std::path::{Path, PathBuf};
use std::process::Command;

use xplug_fixtures::iree_e2e::{self, E2eError, IreeTools};
use xplug_fixtures::linked::{
    KERNEL_CRATE, LinkedFormat, MATMUL_RELU_CODEGEN, MUL_CODEGEN, compile, link_program,
};
use xplug_fixtures::plugins::{self, PluginProfile};
use xplug_npy::NpyArray;

/// What to measure.
#[derive(Clone, Debug)]
pub struct Options {
    /// Rounds of alternating runs (medians reported).
    pub rounds: usize,
    /// Seconds `iree-benchmark-module` spends on one deployment per round.
    pub seconds: f64,
}

/// One deployment of one program, measured.
#[derive(Clone, Debug)]
pub struct Row {
    /// `mul` or `matmul_relu`.
    pub program: &'static str,
    /// `import (.so)`, `linked object`, `linked bitcode`, `IREE codegen`.
    pub deployment: &'static str,
    /// Median CPU time per function call, seconds.
    pub seconds: f64,
    /// Kernel calls per function call (none for IREE's codegen).
    pub calls: usize,
}

/// The deployments, in table order; the last is the reference.
const DEPLOYMENTS: [&str; 4] = ["import (.so)", "linked object", "linked bitcode", "IREE codegen"];

struct Program {
    name: &'static str,
    import_file: &'static str,
    function: &'static str,
    codegen: &'static str,
    inputs: Vec<NpyArray>,
    calls: usize,
}

fn array(shape: &[usize], values: impl Iterator<Item = f32>) -> NpyArray {
    NpyArray {
        descr: "<f4".to_owned(),
        shape: shape.to_vec(),
        data: values.flat_map(f32::to_le_bytes).collect(),
    }
}

fn programs() -> [Program; 2] {
    let elements = 1 << 20;
    let (a, b) = iree_e2e::inputs(elements);
    let side = 256;
    let small = |index: usize, salt: usize| ((index * 7 + salt * 13) % 9) as f32 - 4.0;
    [
        Program {
            name: "mul",
            import_file: "mul_call.mlir",
            function: "mul",
            codegen: MUL_CODEGEN,
            inputs: vec![array(&[elements], a.into_iter()), array(&[elements], b.into_iter())],
            calls: elements.div_ceil(64),
        },
        Program {
            name: "matmul_relu",
            import_file: "matmul_relu_call.mlir",
            function: "matmul_relu",
            codegen: MATMUL_RELU_CODEGEN,
            inputs: vec![
                array(&[side, side], (0..side * side).map(|i| small(i, 1))),
                array(&[side, side], (0..side * side).map(|i| small(i, 2))),
            ],
            calls: side.div_ceil(16),
        },
    ]
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> E2eError {
    move |source| E2eError::Io { context, source }
}

/// Builds the deployments, compiles the programs and measures them.
///
/// # Errors
/// When a build, a compilation or a benchmark run fails.
pub fn run(root: &Path, options: &Options) -> Result<Vec<Row>, E2eError> {
    let tools = iree_e2e::toolchain(root)?;
    let work = xplug_fixtures::target_dir(root).join("linked-bench");
    std::fs::create_dir_all(&work).map_err(io(format!("cannot create {}", work.display())))?;
    eprintln!("building {KERNEL_CRATE} as a release plugin, object and bitcode");
    let plugin_dir = plugins::cargo_build_libraries(
        root,
        &[KERNEL_CRATE],
        &[],
        PluginProfile::Release,
        xplug_fixtures::TARGET,
    )
    .map_err(|source| E2eError::Build { source })?;
    let library = plugin_dir.join(plugins::library_file_name(KERNEL_CRATE));
    let objects = work.join("objects");
    let report =
        xplug_fixtures::linked::build(root, &objects).map_err(|source| E2eError::Build { source })?;

    let mut rows = Vec::new();
    for program in programs() {
        let name = program.name;
        let source_path = root.join("tests").join("iree").join(program.import_file);
        let import_source = std::fs::read_to_string(&source_path)
            .map_err(io(format!("cannot read {}", source_path.display())))?;
        let linked = |format: LinkedFormat| {
            let source =
                link_program(&report, &source_path, format).map_err(|source| E2eError::Build { source })?;
            compile(&tools, &work, &format!("{name}_{}", format.name()), &source, &objects, None)
        };
        let modules = [
            compile(&tools, &work, &format!("{name}_import"), &import_source, &objects, None)?,
            linked(LinkedFormat::Object)?,
            linked(LinkedFormat::Bitcode)?,
            compile(&tools, &work, &format!("{name}_codegen"), program.codegen, &objects, None)?,
        ];
        let inputs: Vec<PathBuf> = program
            .inputs
            .iter()
            .enumerate()
            .map(|(index, input)| {
                let path = work.join(format!("{name}_input{index}.npy"));
                std::fs::write(&path, xplug_npy::encode(input))
                    .map_err(io(format!("cannot write {}", path.display())))
                    .map(|()| path)
            })
            .collect::<Result<_, _>>()?;
        let mut samples: [Vec<f64>; 4] = Default::default();
        for round in 0..options.rounds {
            eprintln!("{name}: round {} of {}", round + 1, options.rounds);
            for offset in 0..DEPLOYMENTS.len() {
                let index = (round + offset) % DEPLOYMENTS.len();
                let plugin = (index == 0).then_some(library.as_path());
                samples[index].push(benchmark(
                    &tools,
                    &modules[index],
                    program.function,
                    &inputs,
                    plugin,
                    options,
                )?);
            }
        }
        for (index, deployment) in DEPLOYMENTS.into_iter().enumerate() {
            let calls = if index == 3 { 0 } else { program.calls };
            rows.push(Row { program: name, deployment, seconds: median(&mut samples[index]), calls });
        }
    }
    Ok(rows)
}

/// One `iree-benchmark-module` run: the CPU time per iteration, seconds.
fn benchmark(
    tools: &IreeTools,
    module: &Path,
    function: &str,
    inputs: &[PathBuf],
    plugin: Option<&Path>,
    options: &Options,
) -> Result<f64, E2eError> {
    let tool = tools.run_module.with_file_name("iree-benchmark-module");
    let mut command = Command::new(&tool);
    command
        .arg("--device=local-sync")
        .arg(format!("--module={}", module.display()))
        .arg(format!("--function={function}"))
        .args(inputs.iter().map(|input| format!("--input=@{}", input.display())))
        .arg("--benchmark_format=json")
        .arg(format!("--benchmark_min_time={}s", options.seconds));
    if let Some(plugin) = plugin {
        command.arg(format!("--executable_plugin={}", plugin.display()));
    }
    let output =
        xplug_fixtures::command::output(&mut command).map_err(|source| E2eError::Command { source })?;
    let measure = |reason: String| E2eError::Measure { tool: tool.display().to_string(), reason };
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|error| measure(format!("its report is not JSON: {error}")))?;
    let first = &json["benchmarks"][0];
    let unit = match first["time_unit"].as_str() {
        Some("ns") => 1e-9,
        Some("us") => 1e-6,
        Some("ms") => 1e-3,
        Some("s") => 1.0,
        other => return Err(measure(format!("unknown time unit {other:?}"))),
    };
    first["cpu_time"]
        .as_f64()
        .map(|time| time * unit)
        .ok_or_else(|| measure("no cpu_time in its report".to_owned()))
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The table `linked-bench` prints: time per function call, the ratio to
/// IREE's codegen, and for the import its cost per kernel call over the
/// linked object's.
#[must_use]
pub fn table(rows: &[Row]) -> String {
    let mut table = xplug_table::Table::new([
        "program",
        "deployment",
        "CPU per call",
        "vs IREE codegen",
        "kernel calls",
        "import cost",
    ]);
    for row in rows {
        let reference = rows
            .iter()
            .find(|other| other.program == row.program && other.deployment == "IREE codegen")
            .map_or(f64::NAN, |other| other.seconds);
        let object = rows
            .iter()
            .find(|other| other.program == row.program && other.deployment == "linked object")
            .map_or(f64::NAN, |other| other.seconds);
        // An import is never cheaper than the same kernel linked: a
        // difference below 2% of the object's time, or of the wrong sign,
        // is the machine's noise (few calls, long kernels).
        let import_cost = if row.deployment != "import (.so)" || row.calls == 0 {
            String::new()
        } else if row.seconds - object < 0.02 * object {
            format!("within noise ({:+.1}%)", (row.seconds / object - 1.0) * 100.0)
        } else {
            format!("{:.1} ns per call", (row.seconds - object) / row.calls as f64 * 1e9)
        };
        table.row([
            row.program.to_owned(),
            row.deployment.to_owned(),
            format!("{:.3} ms", row.seconds * 1e3),
            format!("{:.2}x", row.seconds / reference),
            if row.calls > 0 { row.calls.to_string() } else { "-".to_owned() },
            import_cost,
        ]);
    }
    table.render(xplug_table::Style::stdout())
}
