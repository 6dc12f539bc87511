//! `xplug run` judged against IREE's own `iree-run-module`, on failures as
//! well as successes: for the same module, flags and plugins, stdout is the
//! same bytes and the exit code the same number; every file an `--output`
//! writes is the same bytes. Then what xplug promises beyond IREE's tool:
//! inputs it refuses at once, a failed write that is an error, and one
//! JSON object for every outcome.

mod common;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{json, json_output, xplug};
use xplug_fixtures::iree_e2e::{self, MUL_CALL, Prepared, Program};
use xplug_fixtures::plugins::PluginProfile;

/// `double(i32) -> i32`, `scale(f32, i64) -> (f32, i64)` and
/// `square(tensor<f32>) -> tensor<f32>`: scalars and a 0-d tensor.
const SCALARS: Program = Program { file: "scalars.mlir", function: "double", outputs: &[] };
/// A module and a function named with the byte 0xFF.
const NON_UTF8: Program = Program { file: "non_utf8_names.mlir", function: "dbl\u{ff}", outputs: &[] };

fn prepared() -> Prepared {
    iree_e2e::prepare(&xplug_fixtures::workspace_root(), PluginProfile::Debug).expect("IREE is ready")
}

fn compiled(prepared: &Prepared, program: Program) -> PathBuf {
    iree_e2e::compile(&xplug_fixtures::workspace_root(), &prepared.tools, program, &prepared.work)
        .expect("the program compiles")
}

/// Runs `tool` with `args` (stdin closed), bounded: a hang fails the test
/// instead of stalling it.
fn run_bounded(mut command: Command) -> Output {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).env("NO_COLOR", "1");
    let child = command.spawn().expect("the tool starts");
    let id = child.id();
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match waited.recv_timeout(Duration::from_secs(120)) {
        Ok(output) => output.expect("the tool runs"),
        Err(_) => {
            // SAFETY: a plain kill of the child this test started.
            unsafe { libc::kill(i32::try_from(id).unwrap(), libc::SIGKILL) };
            panic!("{command:?} did not finish within 120 s");
        }
    }
}

/// One comparison: the same flags to both tools, `{out}` in a flag
/// replaced by a file name of each tool's own (compared afterwards).
struct Case {
    module: PathBuf,
    flags: Vec<OsString>,
}

fn case(module: &Path, flags: &[&str]) -> Case {
    Case { module: module.to_owned(), flags: flags.iter().map(OsString::from).collect() }
}

/// `flag` with `{out}` replaced by `out` and `{raw}` by `out` with the
/// extension `.bin` (IREE writes raw bytes to a name not ending in `.npy`).
fn with_out(flag: &OsString, out: &Path) -> OsString {
    let text = flag.to_string_lossy();
    if !text.contains("{out}") && !text.contains("{raw}") {
        return flag.clone();
    }
    OsString::from(
        text.replace("{out}", &out.display().to_string())
            .replace("{raw}", &out.with_extension("bin").display().to_string()),
    )
}

fn compare(prepared: &Prepared, case: &Case, index: usize) {
    let dir = prepared.work.join("parity");
    std::fs::create_dir_all(&dir).unwrap();
    let theirs_out = dir.join(format!("iree-{index}.npy"));
    let ours_out = dir.join(format!("xplug-{index}.npy"));
    for (out, raw) in [
        (&theirs_out, dir.join(format!("iree-{index}.bin"))),
        (&ours_out, dir.join(format!("xplug-{index}.bin"))),
    ] {
        let _ = std::fs::remove_file(out);
        let _ = std::fs::remove_file(raw);
    }
    let mut iree = Command::new(&prepared.tools.run_module);
    iree.arg("--device=local-sync").arg(format!("--module={}", case.module.display()));
    let mut ours = Command::new(env!("CARGO_BIN_EXE_xplug"));
    ours.arg("run").arg(format!("--module={}", case.module.display())).arg("--device=local-sync");
    // Freed memory read back (an error status's text, say) shows as garbage.
    ours.env("MALLOC_PERTURB_", common::MALLOC_PERTURB);
    for flag in &case.flags {
        iree.arg(with_out(flag, &theirs_out));
        ours.arg(with_out(flag, &ours_out));
    }
    let theirs = run_bounded(iree);
    let ours = run_bounded(ours);
    let flags: Vec<_> = case.flags.iter().map(|flag| flag.to_string_lossy()).collect();
    assert!(
        theirs.status.code().is_some() && ours.status.code().is_some(),
        "{flags:?}: iree {:?}, xplug {:?}\nxplug stderr: {}",
        theirs.status,
        ours.status,
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_eq!(
        (ours.status.code(), String::from_utf8_lossy(&ours.stdout)),
        (theirs.status.code(), String::from_utf8_lossy(&theirs.stdout)),
        "{flags:?}\niree stderr: {}\nxplug stderr: {}",
        String::from_utf8_lossy(&theirs.stderr),
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_eq!(ours.stdout, theirs.stdout, "{flags:?}: the same bytes");
    for (ours_file, theirs_file) in [
        (ours_out.clone(), theirs_out.clone()),
        (ours_out.with_extension("bin"), theirs_out.with_extension("bin")),
    ] {
        assert_eq!(
            std::fs::read(&ours_file).ok(),
            std::fs::read(&theirs_file).ok(),
            "{flags:?}: {}, byte for byte",
            ours_file.display()
        );
    }
    if ours.status.success() {
        assert!(ours.stderr.is_empty(), "{flags:?}: {}", String::from_utf8_lossy(&ours.stderr));
    } else {
        assert!(!ours.stderr.is_empty(), "{flags:?}: a failure says why on stderr");
    }
}

#[test]
fn stdout_exit_code_and_files_match_iree_run_module_on_successes_and_failures() {
    let prepared = prepared();
    let scalars = compiled(&prepared, SCALARS);
    let mul = prepared.module(MUL_CALL).to_owned();
    let plugin = format!("--executable_plugin={}", prepared.library("c_sample").display());
    let dir = tempfile::tempdir().unwrap();
    let zero_d = dir.path().join("zero_d.npy");
    std::fs::write(
        &zero_d,
        xplug_npy::encode(&xplug_npy::NpyArray {
            descr: "<f4".into(),
            shape: vec![],
            data: 1.5f32.to_le_bytes().to_vec(),
        }),
    )
    .unwrap();
    let not_npy = dir.path().join("input.bin");
    std::fs::write(&not_npy, [0u8; 4]).unwrap();
    // Two 0-d arrays in one file, and raw bytes.
    let several = dir.path().join("several.npy");
    let scalar = |value: f32| {
        xplug_npy::encode(&xplug_npy::NpyArray {
            descr: "<f4".into(),
            shape: vec![],
            data: value.to_le_bytes().to_vec(),
        })
    };
    std::fs::write(&several, [scalar(2.0), scalar(-5.0)].concat()).unwrap();
    let raw = dir.path().join("raw.bin");
    std::fs::write(
        &raw,
        [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
    )
    .unwrap();
    let (several, raw) = (several.display().to_string(), raw.display().to_string());
    let zero_d_input = format!("--input=@{}", zero_d.display());
    let not_npy_input = format!("--input=@{}", not_npy.display());
    let missing_input = format!("--input=@{}", dir.path().join("missing.npy").display());
    let cases = vec![
        // Scalars in and out.
        case(&scalars, &["--function=double", "--input=21"]),
        case(&scalars, &["--function=double", "--input= 0x10 "]),
        case(&scalars, &["--function=double", "--input=(null)"]),
        case(&scalars, &["--function=double", "--input=-7", "--output=-"]),
        case(&scalars, &["--function=double", "--input=21", "--output=@{out}"]),
        case(&scalars, &["--function=scale", "--input=1.5", "--input=3"]),
        case(&scalars, &["--function=scale", "--input=1.5", "--input=3", "--output=", "--output=-"]),
        case(
            &scalars,
            &["--function=scale", "--input=-2.5", "--input=3", "--output=@{out}", "--output=+{out}"],
        ),
        // 0-d tensors, from text and from a 0-d .npy, written as .npy.
        case(&scalars, &["--function=square", "--input=f32=3"]),
        case(&scalars, &["--function=square", &zero_d_input, "--output=@{out}"]),
        case(
            &scalars,
            &["--function=scale", "--input=0.5", "--input=-9", "--output=@{raw}", "--output=+{raw}"],
        ),
        // Several arguments from one file: `@`, `+`, `*`, and raw bytes.
        case(&scalars, &["--function=square", &format!("--input=@{several}")]),
        case(&scalars, &["--function=square", &format!("--input=+{several}")]),
        case(&scalars, &["--function=square", &format!("--input=*{several}")]),
        case(
            &scalars,
            &["--function=square", &format!("--input=@{several}"), &format!("--input=+{several}")],
        ),
        case(&scalars, &["--function=square", &format!("--input=f32=@{raw}")]),
        case(&scalars, &["--function=square", &format!("--input=2xf32=@{raw}")]),
        case(
            &mul,
            &["--function=mul", &plugin, &format!("--input=2xf32=@{raw}"), &format!("--input=2xf32=+{raw}")],
        ),
        case(
            &mul,
            &["--function=mul", &plugin, &format!("--input=4xf32=@{raw}"), &format!("--input=4xf32=+{raw}")],
        ),
        case(&scalars, &["--function=square", &format!("--input=&f32=@{raw}")]),
        // Tensors through a plugin; `-` prints without `result[0]: `.
        case(
            &mul,
            &["--function=mul", &plugin, "--input=4xf32=1,2,3,4", "--input=4xf32=2,2,2,2", "--output=-"],
        ),
        case(
            &mul,
            &["--function=mul", &plugin, "--input=4xf32=1,2,3,4", "--input=4xf32=2,2,2,2", "--output=@{out}"],
        ),
        case(
            &mul,
            &["--function=mul", &plugin, "--input=4xf32=1,2,3,4", "--input=4xf32=2,2,2,2", "--output=@{raw}"],
        ),
        case(
            &mul,
            &[
                "--function=mul",
                &plugin,
                "--input=2xf32=1,2",
                "--input=2xf32=3,4",
                "--output_max_element_count=1",
            ],
        ),
        // Failures before the call: no `EXEC`, exit 1.
        case(&scalars, &["--function=nope", "--input=1"]),
        case(&scalars, &["--function=module.double", "--input=1"]),
        case(&scalars, &["--function=hal.ex.file.from_memory", "--input=1"]),
        case(&scalars, &["--input=1"]),
        case(&scalars, &["--function=double", "--input=i32=21"]),
        case(&scalars, &["--function=double", "--input=1", "--input=2"]),
        case(&scalars, &["--function=double", "--input="]),
        case(&scalars, &["--function=double", "--input=twelve"]),
        case(&scalars, &["--function=square", "--input=3"]),
        case(&scalars, &["--function=square", "--input=f32=1,zz"]),
        case(&scalars, &["--function=square", &missing_input]),
        case(&scalars, &["--function=square", &not_npy_input]),
        case(&scalars, &["--function=double", &zero_d_input]),
        case(&mul, &["--function=mul", &plugin, "--input=4xf32=1,2,3,4", "--input=4xf32=1,2,bad,4"]),
        case(&dir.path().join("missing.vmfb"), &["--function=double", "--input=1"]),
        // Failures in or after the call: `EXEC` and what came before, exit 1.
        case(&scalars, &["--function=double"]),
        case(&scalars, &["--function=square", "--input=2xf32=1,2"]),
        case(&scalars, &["--function=square", "--input=i32=1"]),
        case(&scalars, &["--function=scale", "--input=1.5", "--input=3", "--output=-"]),
        case(&scalars, &["--function=scale", "--input=1.5", "--input=3", "--output=-", "--output=#x"]),
    ];
    for (index, case) in cases.iter().enumerate() {
        compare(&prepared, case, index);
    }
}

/// Names are bytes: a module and a function named with 0xFF run, with the
/// function given or found as the only export, and `EXEC` prints the bytes.
#[test]
fn names_that_are_not_utf8_run_as_in_iree() {
    let prepared = prepared();
    let module = compiled(&prepared, NON_UTF8);
    let function = OsString::from_vec(b"--function=dbl\xff".to_vec());
    compare(&prepared, &Case { module: module.clone(), flags: vec![function, "--input=4".into()] }, 100);
    compare(&prepared, &case(&module, &["--input=4"]), 101);
    let output = xplug(&["run", module.to_str().unwrap(), "--input=4"]);
    assert_eq!(output.stdout, b"EXEC @dbl\xff\nresult[0]: i32=8\n");
}

/// A closed stdout ends both tools the same way: killed by SIGPIPE,
/// nothing on stderr (no panic, no backtrace).
#[test]
fn a_closed_pipe_ends_xplug_as_it_ends_iree_run_module() {
    let prepared = prepared();
    let scalars = compiled(&prepared, SCALARS);
    let module = format!("--module={}", scalars.display());
    let flags = ["--function=double", "--input=21"];
    // The pip package's `iree-run-module` is a Python script that runs the
    // real binary and turns its death by a signal into exit status 243:
    // the binary itself is judged here.
    let lib = iree_e2e::venv_dir(&xplug_fixtures::workspace_root()).join("lib");
    let binary = std::fs::read_dir(&lib)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("site-packages/iree/_runtime_libs/iree-run-module"))
        .find(|path| path.is_file())
        .expect("the runtime package holds the iree-run-module binary");
    // As a shell starts them: with SIGPIPE's default action (this test
    // process, like every Rust program, ignores it, and children inherit
    // that).
    let mut iree = Command::new(binary);
    // SAFETY: `signal` is async-signal-safe; the closure allocates nothing.
    unsafe {
        iree.pre_exec(|| {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            Ok(())
        });
    }
    for mut command in [iree, {
        let mut xplug = Command::new(env!("CARGO_BIN_EXE_xplug"));
        xplug.arg("run");
        xplug
    }] {
        command.arg(&module).args(flags);
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = command.stdout(writer).stderr(Stdio::piped()).output().unwrap();
        assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "{command:?}: {:?}", output.status);
        assert!(output.stderr.is_empty(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    for args in [vec!["--json", "run", &module, "--input=1"], vec!["run", "--help"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "{args:?}: {:?}", output.status);
        assert!(output.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
}

/// A result that cannot be written is a failure (iree-run-module exits 0
/// with the output lost; xplug does not).
#[test]
fn a_failed_write_of_a_result_is_an_error_exit() {
    let prepared = prepared();
    let scalars = compiled(&prepared, SCALARS);
    let module = scalars.display().to_string();
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for args in [
        vec!["run", module.as_str(), "--function=double", "--input=21"],
        vec!["--json", "run", module.as_str(), "--function=double", "--input=21"],
        vec!["run", module.as_str(), "--function=double", "--input=21", "--output=-"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_xplug"))
            .args(&args)
            .stdout(full())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("stdout") && stderr.contains("No space left"), "{args:?}: {stderr}");
    }
    for args in [vec!["run", "--help"], vec!["--json", "run", "--help"], vec!["--version"]] {
        let output = Command::new(env!("CARGO_BIN_EXE_xplug")).args(&args).stdout(full()).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}: the help did not arrive");
    }
    // A stderr that cannot be written loses the message, not the exit code
    // (no panic: 101).
    for (args, code) in [(vec!["run", "/nonexistent.vmfb"], 1), (vec!["run", "--bogus"], 2)] {
        let output = Command::new(env!("CARGO_BIN_EXE_xplug")).args(&args).stderr(full()).output().unwrap();
        assert_eq!(output.status.code(), Some(code), "{args:?}");
    }
    let failure = json(&["run", &module, "--function=double", "--input=21", "--output=@/dev/full"], 1);
    assert_eq!(failure["error"]["kind"], "file", "{failure}");
    assert!(failure["error"]["message"].as_str().unwrap().contains("/dev/full"), "{failure}");
}

/// Devices, FIFOs, directories and oversized files are refused before a
/// byte is read, naming the file; IREE's tool refuses them too.
#[test]
fn module_input_and_args_files_that_are_not_regular_or_too_large_are_refused_at_once() {
    let prepared = prepared();
    let scalars = compiled(&prepared, SCALARS).display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.npy");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let zero = dir.path().join("zero.npy");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let big = dir.path().join("big.npy");
    std::fs::File::create(&big).unwrap().set_len(3 << 30).unwrap();
    let big_args = dir.path().join("big.args");
    std::fs::File::create(&big_args).unwrap().set_len(5 << 20).unwrap();
    let input = |path: &Path| format!("--input=@{}", path.display());
    let plugin = prepared.library("c_sample").display().to_string();
    let cases: Vec<(Vec<String>, &str, String)> = vec![
        (vec!["run".into(), "/dev/zero".into()], "not_a_file", "/dev/zero".into()),
        (
            vec!["run".into(), format!("--module={}", dir.path().display())],
            "not_a_file",
            dir.path().display().to_string(),
        ),
        (
            vec!["run".into(), scalars.clone(), "--function=square".into(), input(&zero)],
            "not_a_file",
            zero.display().to_string(),
        ),
        (
            vec!["run".into(), scalars.clone(), "--function=square".into(), input(&fifo)],
            "not_a_file",
            fifo.display().to_string(),
        ),
        (
            vec!["run".into(), scalars.clone(), "--function=square".into(), input(&big)],
            "file_too_large",
            "1073741824".into(),
        ),
        (
            vec!["call".into(), plugin.clone(), "x".into(), "--file".into(), "/dev/zero".into()],
            "not_a_file",
            "/dev/zero".into(),
        ),
        (
            vec!["call".into(), plugin, "x".into(), "--file".into(), big_args.display().to_string()],
            "file_too_large",
            "4194304".into(),
        ),
    ];
    for (args, kind, named) in cases {
        let mut command = Command::new(env!("CARGO_BIN_EXE_xplug"));
        command.arg("--json").args(&args);
        let output = run_bounded(command);
        let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
        assert_eq!(output.status.code(), Some(1), "{args:?}: {value}");
        assert_eq!(value["error"]["kind"], kind, "{args:?}: {value}");
        assert!(value["error"]["causes"].to_string().contains(&named), "{args:?}: {value}");
    }
    // A 20 MB header that is not one xplug reads: quoted in part only.
    let huge = dir.path().join("huge_header.npy");
    let header = format!("{{'descr': '<f4', 'fortran_order': True, 'junk': '{}'}}\n", "A".repeat(20 << 20));
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&u32::try_from(header.len()).unwrap().to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    std::fs::write(&huge, bytes).unwrap();
    let huge_input = input(&huge);
    let text = xplug(&["run", &scalars, "--function=square", &huge_input]);
    assert_eq!(text.status.code(), Some(1));
    assert!(text.stderr.len() < 1000, "{} bytes on stderr", text.stderr.len());
    let value = json(&["run", &scalars, "--function=square", &huge_input], 1);
    assert_eq!(value["error"]["kind"], "npy", "{value}");
    assert!(value.to_string().len() < 1000, "{} bytes of JSON", value.to_string().len());
    // IREE's tool refuses the FIFO-backed and device inputs too (it does
    // not hang or grow either).
    let mut iree = Command::new(&prepared.tools.run_module);
    iree.arg(format!("--module={scalars}")).arg("--function=square").arg(input(&zero));
    assert_eq!(run_bounded(iree).status.code(), Some(1));
}

/// `--json` prints exactly one object whatever happens: clap's argument
/// errors (exit 2), --help (exit 0), a failed run, a probe child's crash.
#[test]
fn json_is_one_object_for_argument_errors_help_and_crashes() {
    for args in [
        vec!["run"],
        vec!["run", "m.vmfb", "--bogus"],
        vec!["no-such-command"],
        vec!["call", "p.so"],
        vec!["--timeout", "0", "inspect", "p.so"],
    ] {
        let value = json(&args, 2);
        assert_eq!(value["ok"], false, "{args:?}: {value}");
        assert_eq!(value["error"]["kind"], "usage", "{args:?}: {value}");
        assert!(!value["error"]["message"].as_str().unwrap().is_empty(), "{args:?}: {value}");
    }
    let (code, help) = json_output(&["run", "--help"]);
    assert_eq!(code, Some(0));
    assert!(help["text"].as_str().unwrap().contains("--in-process"), "{help}");
    // The human form is clap's, unchanged.
    let plain = xplug(&["run", "--bogus"]);
    assert_eq!(plain.status.code(), Some(2));
    assert!(plain.stdout.is_empty() && String::from_utf8_lossy(&plain.stderr).contains("--bogus"));
    // A plugin crashing in the probe child under `call`.
    let dir = tempfile::tempdir().unwrap();
    let source = xplug_fixtures::workspace_root().join("crates/providers/tests/c/configurable_plugin.c");
    let crashing =
        xplug_fixtures::build_c_plugin(&source, dir.path(), "crash_resolve", &["-DCRASH_IN=resolve"]);
    let value = json(&["call", crashing.to_str().unwrap(), "anything", "--field", "i32:1"], 1);
    assert_eq!(value["error"]["fault"]["signal"], "SIGSEGV", "{value}");
}

/// `--in-process`'s help is true for every command: `run` runs its
/// program in a supervised child unless told or traced, and the help says
/// so (`tests/supervised_run.rs` checks both).
#[test]
fn in_process_help_says_which_commands_use_a_child() {
    let help = String::from_utf8_lossy(&xplug(&["run", "--help"]).stdout).into_owned();
    let flag = help.split("--in-process").nth(1).expect("the flag is listed");
    let text: String = flag.split("\n  -").next().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("inspect, check, bench, call and run: work in this process"), "{text}");
    assert!(text.contains("`run` picks it by itself under one"), "{text}");
}
