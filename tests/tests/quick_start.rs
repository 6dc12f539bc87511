//! The README's Quick start is what CI runs: every command of its table is
//! run by `.ci/run`, the main job before the tests, and the book's Getting
//! started chapter gives the same table. A green test run does
//! not prove the main job works (it once failed on every fresh clone while
//! CI was green), so a Quick start command that `.ci/run` leaves out, or
//! runs only after the tests, fails here.

use std::fs;

use xplug_fixtures::workspace_root;

/// The commands of a page's Quick start table (under a `# Quick start` or
/// `## Quick start` heading), in table order, with each row's first
/// column (`main job: ...`, `tests`).
fn quick_start_commands(page: &str) -> Vec<(String, String)> {
    let section = format!("\n{page}")
        .split("\n#")
        .map(|section| section.trim_start_matches('#'))
        .find(|section| section.starts_with(" Quick start\n"))
        .expect("the page has a `Quick start` section")
        .to_owned();
    section
        .lines()
        .filter(|line| line.starts_with('|') && line.contains('`'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 2, "a Quick start row is `| what | command |`: {line}");
            let command = cells[1]
                .strip_prefix('`')
                .and_then(|cell| cell.strip_suffix('`'))
                .unwrap_or_else(|| panic!("a Quick start command is one code span: {line}"));
            (cells[0].to_owned(), command.to_owned())
        })
        .collect()
}

/// The lines of `.ci/run` that run a command: not comments, not blank, not
/// inside a shell conditional's header.
fn script_commands(script: &str) -> Vec<&str> {
    script.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).collect()
}

/// The index of the first script line that runs `command`: the line is the
/// command itself, or the command followed by more flags (`--locked`).
fn position(commands: &[&str], command: &str) -> Option<usize> {
    commands.iter().position(|line| {
        *line == command || line.strip_prefix(command).is_some_and(|rest| rest.starts_with(" --"))
    })
}

#[test]
fn ci_runs_the_quick_start_commands_main_job_first() {
    let root = workspace_root();
    let readme = fs::read_to_string(root.join("README.md")).expect("README.md is readable");
    let script = fs::read_to_string(root.join(".ci/run")).expect(".ci/run is readable");
    let rows = quick_start_commands(&readme);
    assert_eq!(
        rows.len(),
        2,
        "the Quick start has exactly two commands, the main job and the tests: {rows:?}"
    );
    assert!(rows[0].0.starts_with("main job"), "the first Quick start row is the main job: {rows:?}");
    assert_eq!(rows[1].0, "tests", "the second Quick start row is the tests: {rows:?}");
    let commands = script_commands(&script);
    let mut found = Vec::new();
    for (what, command) in &rows {
        let at = position(&commands, command)
            .unwrap_or_else(|| panic!(".ci/run does not run the Quick start's {what} command `{command}`"));
        found.push(at);
    }
    assert!(
        found[0] < found[1],
        ".ci/run runs the tests (`{}`) before the main job (`{}`); run the main job first",
        rows[1].1,
        rows[0].1
    );
}

#[test]
fn the_books_getting_started_gives_the_readmes_commands() {
    let root = workspace_root();
    let readme = fs::read_to_string(root.join("README.md")).expect("README.md is readable");
    let book = fs::read_to_string(root.join("docs/src/getting-started.md")).expect("the chapter is readable");
    assert_eq!(
        quick_start_commands(&book),
        quick_start_commands(&readme),
        "docs/src/getting-started.md's Quick start differs from the README's"
    );
}

#[test]
fn the_checks_see_a_missing_or_late_command() {
    let readme = "# x\n\n## Quick start\n\n| what | command |\n|---|---|\n| main job: demo | `cargo xtask demo` |\n| tests | `cargo test --workspace` |\n\n## Next\n";
    let rows = quick_start_commands(readme);
    assert_eq!(rows[0].1, "cargo xtask demo");
    let late =
        script_commands("set -e\n# cargo xtask demo\ncargo test --workspace --locked\ncargo xtask demo\n");
    assert_eq!(position(&late, "cargo xtask demo"), Some(2), "a commented line does not count");
    assert_eq!(position(&late, "cargo test --workspace"), Some(1), "extra flags after the command count");
    let other = script_commands("cargo xtask demo-other\ncargo test --workspace-x\n");
    assert_eq!(position(&other, "cargo xtask demo"), None, "a longer command is another command");
    assert_eq!(position(&other, "cargo test --workspace"), None);
}

/// The README's "Use it" commands that add a crate as a dependency work as
/// printed, `XPLUG` being this checkout: each `cargo add ... --path
/// XPLUG/...` adds that crate by path to a new crate (offline; nothing is
/// built).
#[test]
fn the_readme_s_cargo_add_commands_work_from_a_checkout() {
    let root = workspace_root();
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let commands: Vec<&str> = readme
        .split('`')
        .filter(|span| span.starts_with("cargo add ") && span.contains(" --path XPLUG/"))
        .collect();
    assert!(
        commands.len() >= 3,
        "the README's Use it table adds the SDK, the manager and xplug-iree: {commands:?}"
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for command in commands {
        let temp = tempfile::tempdir().unwrap();
        let created = std::process::Command::new(&cargo)
            .args(["new", "--lib", "--vcs", "none", "user"])
            .current_dir(temp.path())
            .output()
            .unwrap();
        assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
        let words: Vec<String> = command
            .split_whitespace()
            .skip(1)
            .map(|word| word.replace("XPLUG", root.to_str().expect("the checkout's path is UTF-8")))
            .collect();
        let added = std::process::Command::new(&cargo)
            .args(&words)
            .arg("--offline")
            .current_dir(temp.path().join("user"))
            .output()
            .unwrap();
        assert!(added.status.success(), "`{command}`:\n{}", String::from_utf8_lossy(&added.stderr));
        let manifest = fs::read_to_string(temp.path().join("user/Cargo.toml")).unwrap();
        let name = &words[1];
        let line = manifest.lines().find(|line| line.starts_with(&format!("{name} = "))).unwrap_or_default();
        assert!(line.contains("path = "), "`{command}` added {name} by path:\n{manifest}");
    }
}
