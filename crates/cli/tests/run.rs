//! `xplug run` against `iree-run-module`: for the same compiled program,
//! inputs and plugins, xplug's stdout is IREE's, byte for byte; what xplug
//! adds (listing imports, JSON) is checked on the same programs.

mod common;

use std::process::Command;

use common::{json, xplug};
use xplug_fixtures::iree_e2e::{self, MUL_CALL, TWO_IMPORTS};
use xplug_fixtures::plugins::PluginProfile;

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn xplug_run_prints_what_iree_run_module_prints() {
    let prepared =
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready");
    let a_npy = prepared.work.join("run-a.npy");
    std::fs::write(&a_npy, xplug_npy::encode_f32(&[0.5, -3.0, 1e-3, 7.25, 1e6, -0.0])).unwrap();
    let cases: Vec<(iree_e2e::Program, Vec<String>, Vec<String>)> = vec![
        (
            MUL_CALL,
            vec![prepared.library("c_sample").display().to_string()],
            vec!["6xf32=1,2,3,4,5,6".into(), "6xf32=-1.5,2.25,3,4e10,5,0.1".into()],
        ),
        (
            MUL_CALL,
            vec![
                prepared.library("sample_standalone.sos").display().to_string(),
                // No `?key=value`: iree-run-module's --executable_plugin
                // passes no load parameters (xplug's do reach plugins).
                prepared.library("sample_system").display().to_string(),
            ],
            vec![format!("@{}", a_npy.display()), "6xf32=2,2,2,2,2,2".into()],
        ),
        (
            TWO_IMPORTS,
            vec![
                prepared.library("c_sample.sos").display().to_string(),
                prepared.library(iree_e2e::SUB_PLUGIN).display().to_string(),
            ],
            vec!["3xf32=1,2,3".into(), "3xf32=4,5,6".into()],
        ),
    ];
    for (program, plugins, inputs) in cases {
        let module = prepared.module(program).display().to_string();
        let mut iree = Command::new(&prepared.tools.run_module);
        iree.arg("--device=local-sync").arg(format!("--module={module}"));
        iree.arg(format!("--function={}", program.function));
        let mut ours = vec!["run".to_owned(), module.clone(), format!("--function={}", program.function)];
        for plugin in &plugins {
            iree.arg(format!("--executable_plugin={plugin}"));
            ours.push(format!("--executable_plugin={plugin}"));
        }
        for input in &inputs {
            iree.arg(format!("--input={input}"));
            ours.push(format!("--input={input}"));
        }
        let theirs = iree.output().expect("iree-run-module runs");
        assert!(theirs.status.success(), "{}", String::from_utf8_lossy(&theirs.stderr));
        for device in ["local-sync", "local-task"] {
            let mut args: Vec<&str> = ours.iter().map(String::as_str).collect();
            let device_flag = format!("--device={device}");
            args.push(&device_flag);
            let output = xplug(&args);
            assert!(output.status.success(), "xplug {args:?}: {}", String::from_utf8_lossy(&output.stderr));
            assert_eq!(stdout(&output), stdout(&theirs), "xplug {args:?} on {device}");
        }
    }
}

#[test]
fn list_imports_names_every_missing_import_and_its_provider() {
    let prepared =
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready");
    let module = prepared.module(TWO_IMPORTS).display().to_string();
    // Nothing registered: both imports are missing, listed at once.
    let listing = json(&["run", &module, "--list-imports"], 1);
    let imports = &listing["executables"][0]["imports"];
    let mut names: Vec<&str> =
        imports.as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["e2e_sub_workgroup", "simple_mul_workgroup"], "{listing}");
    assert_eq!(listing["missing_required"], 2, "{listing}");
    // With one plugin: one resolved (named with its spec), one missing.
    let c_sample = prepared.library("c_sample").display().to_string();
    let listing = json(&["run", &module, "--list-imports", "--plugin", &c_sample], 1);
    let imports = listing["executables"][0]["imports"].as_array().unwrap().clone();
    let import = |name: &str| imports.iter().find(|import| import["name"] == name).unwrap().clone();
    assert!(import("simple_mul_workgroup")["provider"].as_str().unwrap().contains(&c_sample), "{listing}");
    assert!(import("e2e_sub_workgroup")["provider"].is_null(), "{listing}");
    // The human listing says which is missing.
    let text = stdout(&xplug(&["run", &module, "--list-imports", "--plugin", &c_sample]));
    assert!(text.contains("e2e_sub_workgroup") && text.contains("MISSING"), "{text}");
}

#[test]
fn a_failed_run_is_one_json_error_naming_the_missing_import() {
    let prepared =
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready");
    let module = prepared.module(MUL_CALL).display().to_string();
    let failure = json(&["run", &module, "--input=1xf32=1", "--input=1xf32=2"], 1);
    assert_eq!(failure["error"]["kind"], "unresolved_imports", "{failure}");
    let causes = failure["error"]["causes"].to_string();
    assert!(causes.contains("simple_mul_workgroup"), "{failure}");
    let unknown = json(
        &["run", &module, "--function=mull", "--plugin", &prepared.library("c_sample").display().to_string()],
        1,
    );
    assert_eq!(unknown["error"]["kind"], "no_such_function", "{unknown}");
    assert!(unknown["error"]["causes"].to_string().contains("did you mean `mul`"), "{unknown}");
}

/// A kernel that crashes under `xplug run`: by default the program runs in
/// a supervised child, so xplug survives it and exits 1 with one error
/// naming the signal, the stage, the faulting function and its `.sos`, the
/// function run and `--in-process` (as one JSON error with `--json`);
/// `EXEC @mul` came out before the call, the result never does. With
/// `--in-process` xplug dies of the signal as before, and `--crash-report`
/// names the function and the `.sos` in one line before it dies; without
/// the flag (and without `XPLUG_CRASH_REPORT`), the same death and no line.
#[test]
fn a_kernel_crash_under_xplug_run_is_a_reported_fault_or_in_process_a_death() {
    use std::os::unix::process::ExitStatusExt;
    let prepared =
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready");
    let sos = xplug_fixtures::build_rust_sos_plugin("crash_plugin");
    let module = prepared.module(MUL_CALL).display().to_string();
    let plugin = format!("--plugin={}?crash=kernel", sos.display());
    let function = format!("--function={}", MUL_CALL.function);
    let args = ["run", &module, &function, "--input=4xf32=1,2,3,4", "--input=4xf32=5,6,7,8", &plugin];
    let run = |extra: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_xplug"))
            .args(&all)
            .env_remove("XPLUG_CRASH_REPORT")
            .output()
            .expect("the xplug binary runs")
    };
    // Supervised, without the crash reporter (it costs a read of each
    // plugin's symbol table): the signal, the stage and the function run.
    let supervised = run(&["--device=local-sync"]);
    let stderr = String::from_utf8_lossy(&supervised.stderr);
    assert_eq!((supervised.status.code(), supervised.status.signal()), (Some(1), None), "{stderr}");
    // The words the flip sweep reads a reported fault by.
    let fault = xplug_fixtures::flip_sweep::FAULT_REPORT;
    assert!(
        stderr.contains(&format!("{fault}SIGSEGV during call, running @mul: "))
            && stderr.contains("--crash-report")
            && stderr.contains("--in-process")
            && !stderr.contains("xplug: SIGSEGV"),
        "{stderr}"
    );
    assert_eq!(stdout(&supervised), "EXEC @mul\n", "the output before the call, no result");
    // With --crash-report, the faulting function and its file too.
    let named = run(&["--device=local-sync", "--crash-report"]);
    let stderr = String::from_utf8_lossy(&named.stderr);
    assert_eq!((named.status.code(), named.status.signal()), (Some(1), None), "{stderr}");
    let _ = xplug_fixtures::crash_plugin_kernel_report(&stderr);
    assert!(
        stderr.contains(&format!("{fault}SIGSEGV during call at crash_plugin_kernel+0x"))
            && stderr.contains(" in crash_plugin.sos, running @mul: ")
            && !stderr.contains("--crash-report"),
        "{stderr}"
    );
    let value = json(&[&args[..], &["--device=local-task", "--crash-report"]].concat(), 1);
    assert_eq!(value["error"]["kind"], "program_crashed", "{value}");
    assert_eq!(value["error"]["code"], "INTERNAL", "{value}");
    assert_eq!(value["error"]["fault"]["signal"], "SIGSEGV", "{value}");
    assert_eq!(value["error"]["fault"]["symbol"], "crash_plugin_kernel", "{value}");
    assert_eq!(value["error"]["fault"]["stage"], "call", "{value}");
    let value = json(&[&args[..], &["--device=local-sync"]].concat(), 1);
    assert_eq!(value["error"]["kind"], "program_crashed", "{value}");
    assert_eq!(value["error"]["fault"]["signal"], "SIGSEGV", "{value}");
    assert_eq!(value["error"]["fault"]["symbol"], serde_json::Value::Null, "{value}");

    let reported = run(&["--device=local-sync", "--crash-report", "--in-process"]);
    let stderr = String::from_utf8_lossy(&reported.stderr);
    assert_eq!(reported.status.signal(), Some(libc::SIGSEGV), "{stderr}");
    let _ = xplug_fixtures::crash_plugin_kernel_report(&stderr);
    // `EXEC @mul` is printed before the call, as iree-run-module does; the
    // result never is.
    assert!(!stdout(&reported).contains("4xf32="), "no result is printed: {}", stdout(&reported));
    let quiet = run(&["--device=local-sync", "--in-process"]);
    assert_eq!(quiet.status.signal(), Some(libc::SIGSEGV));
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("xplug: SIGSEGV"));
}

/// `xplug run --profile` on a compiled program whose call counts are known:
/// `two_imports.mlir` calls each of its two imports once per 64-element
/// workgroup, so 640 elements make 10 calls of each, on `local-sync` and on
/// `local-task`'s workers. The table is on stderr, stdout is the run's as
/// without the flag, the JSON file parses with every figure consistent, and
/// the trace is trace-event JSON with at most `--profile-slices` slices per
/// import, each on a thread the trace names.
#[test]
fn xplug_run_profile_counts_every_import_call_on_both_devices() {
    let prepared =
        iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready");
    let module = prepared.module(TWO_IMPORTS).display().to_string();
    let (mul, sub) = (prepared.library("c_sample"), prepared.library(iree_e2e::SUB_PLUGIN));
    let dir = tempfile::tempdir().unwrap();
    let (json_path, trace_path) = (dir.path().join("profile.json"), dir.path().join("trace.json"));
    let base = [
        "run".to_owned(),
        module.clone(),
        format!("--function={}", TWO_IMPORTS.function),
        "--input=640xf32=2".to_owned(),
        "--input=640xf32=3".to_owned(),
        format!("--plugin={}", mul.display()),
        format!("--plugin={}", sub.display()),
    ];
    for device in ["--device=local-sync", "--device=local-task"] {
        let mut plain: Vec<&str> = base.iter().map(String::as_str).collect();
        plain.extend([device, "--task_topology_group_count=2"]);
        let unprofiled = xplug(&plain);
        assert!(unprofiled.status.success(), "{}", String::from_utf8_lossy(&unprofiled.stderr));
        let json_flag = format!("--profile-json={}", json_path.display());
        let trace_flag = format!("--profile-trace={}", trace_path.display());
        let mut profiled = plain.clone();
        profiled.extend(["--profile", &json_flag, &trace_flag, "--profile-slices=4"]);
        let output = xplug(&profiled);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert_eq!(stdout(&output), stdout(&unprofiled), "the results are the same with --profile");

        // The table: one row per import with its 10 calls.
        assert!(stderr.contains("import profile"), "{stderr}");
        for column in
            ["executable", "import", "provider", "calls", "total", "mean", "p50", "p99", "max", "share"]
        {
            assert!(
                stderr.lines().any(|line| line.split_whitespace().any(|cell| cell == column)),
                "{column}: {stderr}"
            );
        }
        for name in ["simple_mul_workgroup", "e2e_sub_workgroup"] {
            let row =
                stderr.lines().find(|line| line.contains(name)).unwrap_or_else(|| panic!("{name}: {stderr}"));
            assert!(row.split_whitespace().any(|cell| cell == "10"), "{row}");
        }

        // The JSON: every figure, consistent.
        let profile: serde_json::Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
        let imports = profile["imports"].as_array().unwrap();
        assert_eq!(imports.len(), 2, "{profile}");
        for import in imports {
            let plugin = if import["name"] == "simple_mul_workgroup" { &mul } else { &sub };
            assert_eq!(
                (import["calls"].as_u64(), import["failures"].as_u64()),
                (Some(10), Some(0)),
                "{import}"
            );
            assert!(import["provider"].as_str().unwrap().contains(&plugin.display().to_string()), "{import}");
            let ns = |key: &str| import[key].as_u64().unwrap_or_else(|| panic!("{key}: {import}"));
            assert!(ns("p50_ns") <= ns("p99_ns") && ns("p99_ns") <= ns("max_ns"), "{import}");
            assert!(ns("max_ns") > 0 && ns("max_ns") <= ns("total_ns"), "{import}");
            assert_eq!(ns("mean_ns"), ns("total_ns") / 10, "{import}");
            let counted: u64 = import["histogram"]
                .as_array()
                .unwrap()
                .iter()
                .map(|bucket| bucket["count"].as_u64().unwrap())
                .sum();
            assert_eq!(counted, 10, "{import}");
            assert_eq!(import["slices"], 4, "{import}");
            let share = import["share"].as_f64().unwrap();
            assert!(share > 0.0 && share < 2.0, "{import}");
        }
        assert!(profile["run_ns"].as_u64().unwrap() > 0, "{profile}");

        // The trace: complete events in µs, at most 4 per import, on named threads.
        let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace_path).unwrap()).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        let named: Vec<&serde_json::Value> =
            events.iter().filter(|event| event["ph"] == "M" && event["name"] == "thread_name").collect();
        for name in ["simple_mul_workgroup", "e2e_sub_workgroup"] {
            let slices: Vec<&serde_json::Value> =
                events.iter().filter(|event| event["ph"] == "X" && event["name"] == name).collect();
            assert_eq!(slices.len(), 4, "at most --profile-slices=4, and 10 calls were made: {trace}");
            for slice in slices {
                assert!(
                    slice["ts"].as_f64().unwrap() >= 0.0 && slice["dur"].as_f64().unwrap() >= 0.0,
                    "{slice}"
                );
                assert_eq!(slice["pid"], u64::from(output_pid(events)), "{slice}");
                let thread = named
                    .iter()
                    .find(|meta| meta["tid"] == slice["tid"])
                    .expect("the slice's thread is named");
                if device.ends_with("local-task") {
                    assert!(thread["args"]["name"].as_str().unwrap().starts_with("iree-worker"), "{thread}");
                }
            }
        }
    }
    // With --json the profile is in the one object.
    let mut args: Vec<&str> = base.iter().map(String::as_str).collect();
    args.push("--profile");
    let object = json(&args, 0);
    let calls: Vec<u64> = object["profile"]["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|import| import["calls"].as_u64().unwrap())
        .collect();
    assert_eq!(calls, [10, 10], "{object}");
    // Without a profile flag, none.
    args.pop();
    assert!(json(&args, 0)["profile"].is_null());
}

/// The process id a trace's events carry (its process-name event's).
fn output_pid(events: &[serde_json::Value]) -> u32 {
    let meta = events.iter().find(|event| event["name"] == "process_name").expect("a process name");
    u32::try_from(meta["pid"].as_u64().unwrap()).unwrap()
}
