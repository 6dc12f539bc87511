//! `cargo xtask build-plugins` end to end: build the example plugins, then
//! load each shared library from a plain C host (dlopen, header checks,
//! counting host allocator, resolve, `simple_mul_workgroup` on real data,
//! unload with every allocation freed). Also checks that the SDK's no-`std`
//! path compiles.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use xplug_fixtures::{c_compiler, workspace_root as root};

/// Where `build-plugins` (without `--release`) puts the plugins.
fn plugin_dir() -> PathBuf {
    xplug_fixtures::plugins::output_dir(&root(), xplug_fixtures::plugins::PluginProfile::Debug)
}

fn run_build_plugins() -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("build-plugins")
        .output()
        .expect("cannot run the xtask binary");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "build-plugins failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Builds the plugins once per test process, twice in a row to show the
/// command is idempotent, and the C host.
fn built() -> &'static (String, PathBuf) {
    static BUILT: OnceLock<(String, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let first = run_build_plugins();
        let second = run_build_plugins();
        assert_eq!(first, second, "a second build-plugins run must report the same files and sizes");
        let host = plugin_dir().join("c_host_test");
        let output = Command::new(c_compiler())
            .arg("-std=c99")
            .args(xplug_fixtures::C_WARNINGS_AS_ERRORS)
            .args(["-D_POSIX_C_SOURCE=200809L", "-D_ISOC11_SOURCE"])
            .arg("-I")
            .arg(root().join("include"))
            .arg(root().join("plugins/c_host/c_host.c"))
            .arg("-o")
            .arg(&host)
            .arg("-ldl")
            .output()
            .expect("cannot run the C compiler (set CC)");
        assert!(
            output.status.success(),
            "c_host failed to compile:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        (second, host)
    })
}

fn host(plugin: &str, multiplier: &str, params: &[&str]) -> String {
    let (_, host) = built();
    let library = plugin_dir().join(format!("lib{plugin}.so"));
    let output = Command::new(host).arg(&library).arg(multiplier).args(params).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "c_host on {plugin} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn table_lists_every_plugin_with_a_size() {
    let (table, _) = built();
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("name") && lines[0].contains("kind") && lines[0].contains("size"),
        "{table}"
    );
    for (name, kind) in [
        ("sample_standalone", "rust"),
        ("sample_system", "rust"),
        ("sample_static", "rust"),
        ("c_sample", "c"),
    ] {
        let line = lines
            .iter()
            .find(|line| line.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{table}"));
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[1], kind, "{line}");
        assert_eq!(fields[2], format!("target/plugins/debug/lib{name}.so"), "{line}");
        let size: u64 = fields[3].parse().unwrap();
        let on_disk = std::fs::metadata(root().join(fields[2])).unwrap().len();
        assert_eq!(size, on_disk, "{line}");
    }
}

#[test]
fn c_host_runs_sample_standalone() {
    let stdout = host("sample_standalone", "1", &[]);
    assert!(stdout.contains("name: sample_standalone\n"), "{stdout}");
    assert!(stdout.contains("features: 1\n"), "standalone bit: {stdout}");
    assert!(
        stdout
            .contains("exports: dot matmul_relu_workgroup saxpy simple_add_workgroup simple_mul_workgroup\n"),
        "{stdout}"
    );
    assert!(stdout.contains("allocations after load: 0\n"), "a stateless plugin allocates nothing: {stdout}");
    assert!(stdout.contains("simple_mul_workgroup: 100 elements ok"), "{stdout}");
    assert!(stdout.ends_with("ok\n"), "{stdout}");
}

#[test]
fn c_host_runs_sample_system_with_params() {
    let stdout = host("sample_system", "2.5", &["multiplier=2.5"]);
    assert!(stdout.contains("name: sample_system\n"), "{stdout}");
    assert!(stdout.contains("features: 0\n"), "{stdout}");
    // The state and the call counter inside it, both through the host.
    assert!(stdout.contains("allocations after load: 2\n"), "{stdout}");
    assert!(stdout.contains("allocations: 2 total, 0 live after unload"), "{stdout}");
    assert!(stdout.ends_with("ok\n"), "{stdout}");
}

#[test]
fn c_host_runs_the_c_sample() {
    let stdout = host("c_sample", "1", &[]);
    assert!(stdout.contains("name: c_sample\n"), "{stdout}");
    assert!(!stdout.contains("exports:"), "the C sample has no xplug_plugin_exports: {stdout}");
    assert!(stdout.ends_with("ok\n"), "{stdout}");
}

#[test]
fn exported_symbols_are_exactly_the_entry_points_the_tool_exports_and_the_link_conflict_marker() {
    built();
    let library = plugin_dir().join("libsample_system.so");
    let Ok(output) = Command::new("nm").args(["-D", "--defined-only"]).arg(&library).output() else {
        eprintln!("nm not available; skipping the symbol check");
        return;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let mut symbols: Vec<&str> = text.lines().filter_map(|line| line.split_whitespace().nth(2)).collect();
    symbols.sort_unstable();
    // The marker is a one-byte static whose name explains the linker's
    // error when two exporting plugins are linked into one binary.
    assert_eq!(
        symbols,
        [
            "iree_hal_executable_plugin_query",
            "xplug_import_layouts",
            "xplug_plugin_exports",
            "xplug_plugin_load_error",
            "xplug_plugin_params",
            "xplug_two_plugins_export_c_entry_points__enable_the_static_feature_of_plugins_linked_into_a_binary"
        ],
        "{text}"
    );
}

#[test]
fn sample_standalone_builds_without_std() {
    // The SDK's no-`std` path: the plugin crate as an rlib with the SDK's
    // `std` and `static-registration` features off (a cdylib would need a
    // panic handler of its own).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root())
        .args(["rustc", "-p", "sample_standalone", "--lib", "--crate-type", "rlib", "--no-default-features"])
        .args(["--target-dir"])
        .arg(root().join("target").join("plugin-build"))
        .output()
        .unwrap();
    assert!(output.status.success(), "no_std build failed:\n{}", String::from_utf8_lossy(&output.stderr));
}
