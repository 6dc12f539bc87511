//! `xplug run` as a drop-in for `iree-run-module` in IREE's own test style:
//! every plugin program under `tests/iree/` carries lit-style `RUN:` lines
//! (`iree-compile %s ... | iree-run-module --module=- ... | filecheck %s`)
//! and the CHECK lines they must pass, plugins' printed lines included.
//!
//! Each RUN line runs twice through `bash -o pipefail`: once as written, with the pinned
//! pip `iree-run-module`, and once with a directory first on `PATH` whose
//! `iree-run-module` is `exec xplug run "$@"`, which is how a script
//! switches tools. Both must pass `filecheck`, and the tool's whole output
//! (the pipeline up to `filecheck`) must be the same bytes from both, on a
//! pipe, written to a file and on a terminal.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::text;
use xplug_fixtures::iree_e2e::{self, Prepared};
use xplug_fixtures::plugins::PluginProfile;

/// The programs with RUN lines, and how many each must have (a program
/// that loses its RUN lines fails here instead of passing vacuously).
const PROGRAMS: [(&str, usize); 4] =
    [("mul_call.mlir", 4), ("mul_ukernel.mlir", 4), ("two_imports.mlir", 4), ("mul_weights.mlir", 4)];

/// The RUN lines of `source`, each continued line (`\` at its end) joined
/// to the next as lit joins them.
fn run_lines(source: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in source.lines() {
        let Some(rest) = line.trim_start().strip_prefix("// RUN:") else { continue };
        let rest = rest.trim();
        if let Some(continued) = rest.strip_suffix('\\') {
            current.push_str(continued.trim_end());
            current.push(' ');
        } else {
            current.push_str(rest);
            commands.push(std::mem::take(&mut current));
        }
    }
    assert!(current.is_empty(), "a RUN line ends with `\\` and nothing continues it");
    commands
}

/// `command` with lit's `%s`, the tests' `%plugin{NAME}` and
/// `%weights-irpa` replaced.
fn substitute(command: &str, source: &Path, prepared: &Prepared) -> String {
    let mut out = String::new();
    let mut rest = command;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("%weights-irpa") {
            out.push_str(&weights_archive(prepared).display().to_string());
            rest = after;
        } else if let Some(after) = tail.strip_prefix("%s") {
            out.push_str(&source.display().to_string());
            rest = after;
        } else if let Some(after) = tail.strip_prefix("%plugin{") {
            let end = after.find('}').expect("`%plugin{NAME}` is closed");
            out.push_str(&plugin_path(&after[..end], prepared).display().to_string());
            rest = &after[end + 1..];
        } else {
            panic!("unknown substitution in RUN line: {tail}");
        }
    }
    out.push_str(rest);
    out
}

/// The archive `mul_weights.mlir`'s RUN lines give: parameter `weights`
/// of 1000 twos, written once with IREE's Python package.
fn weights_archive(prepared: &Prepared) -> PathBuf {
    let path = prepared.work.join("piped-weights").join("weights.irpa");
    if !path.is_file() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        xplug_fixtures::models::write_archive(&prepared.tools, &path, &[("weights", &[2.0; 1000])], 0)
            .expect("the archive is written");
    }
    path
}

/// A plugin a RUN line names: the end-to-end plugins of `prepared`, or a
/// test plugin crate under `tests/plugins/` (`print_plugin`), built here.
fn plugin_path(name: &str, prepared: &Prepared) -> PathBuf {
    match prepared.libraries.iter().find(|(known, _)| known == name) {
        Some((_, path)) => path.clone(),
        None => xplug_fixtures::build_rust_plugin(name),
    }
}

/// Runs `script` with `bash -o pipefail -c` (so a failing tool fails the
/// line, as lit's pipelines do), `path_first` first on `PATH` and the
/// pinned venv's tools next.
fn shell(script: &str, path_first: Option<&Path>, prepared: &Prepared) -> Output {
    let venv_bin = prepared.tools.run_module.parent().expect("the venv's bin directory");
    let mut path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect::<Vec<_>>();
    path.insert(0, venv_bin.to_owned());
    if let Some(first) = path_first {
        path.insert(0, first.to_owned());
    }
    Command::new("bash")
        .args(["-o", "pipefail", "-c", script])
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("sh runs")
}

/// A directory whose `iree-run-module` runs `xplug run` with the same
/// arguments.
fn xplug_shim(prepared: &Prepared) -> PathBuf {
    let dir = prepared.work.join("piped-shim");
    std::fs::create_dir_all(&dir).unwrap();
    let shim = dir.join("iree-run-module");
    let script = format!("#!/bin/sh\nexec '{}' run \"$@\"\n", env!("CARGO_BIN_EXE_xplug"));
    let temporary = dir.join("iree-run-module.tmp");
    std::fs::write(&temporary, script).unwrap();
    std::fs::set_permissions(&temporary, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::rename(&temporary, &shim).unwrap();
    dir
}

/// util-linux's `script`, which runs a command on a pseudo-terminal, when
/// installed (Debian's essential `bsdutils`); without it the terminal
/// comparison is skipped with a note.
fn terminal_runner() -> Option<&'static str> {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let found = *FOUND.get_or_init(|| {
        let found =
            Command::new("script").arg("--version").output().is_ok_and(|output| output.status.success());
        if !found {
            eprintln!("note: util-linux's `script` is missing; the terminal comparison is skipped");
        }
        found
    });
    found.then_some("script")
}

#[test]
fn iree_style_piped_runs_pass_with_either_tool() {
    let root = xplug_fixtures::workspace_root();
    let prepared = iree_e2e::prepare(&root, PluginProfile::Debug).expect("IREE is ready");
    let shim = xplug_shim(&prepared);
    for (program, expected_lines) in PROGRAMS {
        let source = root.join("tests").join("iree").join(program);
        let commands = run_lines(&std::fs::read_to_string(&source).unwrap());
        assert_eq!(commands.len(), expected_lines, "{program}: RUN lines");
        for command in &commands {
            let line = substitute(command, &source, &prepared);
            let (tool_part, check) = line.rsplit_once('|').expect("a RUN line ends in `| filecheck`");
            assert!(check.trim_start().starts_with("filecheck "), "{program}: {command}");
            let iree = shell(tool_part, None, &prepared);
            let ours = shell(tool_part, Some(&shim), &prepared);
            assert!(
                iree.status.success(),
                "{program}: iree-run-module failed: {command}\n{}",
                text(&iree.stderr)
            );
            assert!(ours.status.success(), "{program}: xplug run failed: {command}\n{}", text(&ours.stderr));
            assert_eq!(
                text(&ours.stdout),
                text(&iree.stdout),
                "{program}: xplug run's output differs from iree-run-module's: {command}"
            );
            assert_eq!(ours.stdout, iree.stdout, "{program}: the same bytes: {command}");
            // Into a file (fully buffered, as a pipe): the same bytes again.
            let files = [prepared.work.join("piped-iree.txt"), prepared.work.join("piped-xplug.txt")];
            for (file, path_first) in files.iter().zip([None, Some(shim.as_path())]) {
                let written = shell(&format!("{tool_part} > '{}'", file.display()), path_first, &prepared);
                assert!(written.status.success(), "{program}: {command} > file\n{}", text(&written.stderr));
            }
            let [theirs, ours_file] = files.map(|file| std::fs::read(file).unwrap());
            assert_eq!(text(&ours_file), text(&theirs), "{program}: written to a file: {command}");
            assert_eq!(ours_file, iree.stdout, "{program}: a file holds what the pipe did: {command}");
            // On a terminal (util-linux's `script` runs the tool on a
            // pseudo-terminal; C's stdout is then line-buffered): the same
            // bytes from both tools again.
            if let Some(script) = terminal_runner() {
                let [theirs, ours] = [None, Some(shim.as_path())].map(|path_first| {
                    let quoted = tool_part.replace('\'', "'\\''");
                    let run = shell(&format!("{script} -qec '{quoted}' /dev/null"), path_first, &prepared);
                    assert!(
                        run.status.success(),
                        "{program}: {command} on a terminal\n{}",
                        text(&run.stderr)
                    );
                    run.stdout
                });
                assert_eq!(text(&ours), text(&theirs), "{program}: on a terminal: {command}");
            }
            for (tool, path_first) in [("iree-run-module", None), ("xplug run", Some(shim.as_path()))] {
                let checked = shell(&line, path_first, &prepared);
                assert!(
                    checked.status.success(),
                    "{program}: filecheck fails with {tool}: {command}\nstdout: {}\nstderr: {}",
                    text(&checked.stdout),
                    text(&checked.stderr)
                );
            }
        }
    }
}

#[test]
fn run_lines_join_continuations_and_substitute() {
    let source = "// RUN: a %s | \\\n// RUN:   b --x | \\\n// RUN:   c\n// other\n// RUN: d\n";
    assert_eq!(run_lines(source), ["a %s | b --x | c", "d"]);
}
