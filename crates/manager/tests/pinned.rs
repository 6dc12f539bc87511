//! Pinned plugins (`docs/src/reference/loading.md#pinned-plugins`): a spec's `?sha256=`
//! and a manager's allow-list are checked against the bytes the loader
//! maps, so a file replaced after the check still loads the checked bytes,
//! and refused code never runs.
//!
//! The swap-after-check race is exercised through the raw layer's stage
//! hook: it replaces the file at the moment the loader enters `open` (after
//! the bytes were read and hashed, before the OS loader maps anything). The
//! same swap without a pin loads the replacement, which shows the hook hits
//! the window.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use xplug_manager::providers::raw::{Stage, set_stage_hook};
use xplug_manager::providers::{AllowList, Error as LoadError, Sha256Digest};
use xplug_manager::{Error, Manager};

/// Every test of this binary holds it: the stage hook is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// The swap the hook makes at the next `open`: rename `.0` over `.1`, or
/// re-point the symbolic link `.1` at `.0`.
static SWAP: Mutex<Option<Swap>> = Mutex::new(None);

enum Swap {
    Rename { replacement: PathBuf, target: PathBuf },
    Relink { new_target: PathBuf, link: PathBuf },
}

fn hook(stage: Stage) {
    if stage != Stage::Open {
        return;
    }
    match SWAP.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
        Some(Swap::Rename { replacement, target }) => std::fs::rename(replacement, target).unwrap(),
        Some(Swap::Relink { new_target, link }) => {
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink(new_target, link).unwrap();
        }
        None => {}
    }
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    let _ = set_stage_hook(hook);
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Builds the configurable test plugin under the header name `name`, with
/// `flags`, into `dir/lib<file>.so`.
fn plugin(dir: &Path, file: &str, name: &str, flags: &[&str]) -> PathBuf {
    let source = xplug_fixtures::workspace_root().join("crates/providers/tests/c/configurable_plugin.c");
    let define = format!("-DPLUGIN_NAME=\"{name}\"");
    let mut all = vec![define.as_str()];
    all.extend_from_slice(flags);
    xplug_fixtures::build_c_plugin(&source, dir, file, &all)
}

fn sha256(path: &Path) -> Sha256Digest {
    Sha256Digest::of(&std::fs::read(path).unwrap())
}

fn spec(path: &Path, digest: &Sha256Digest) -> String {
    format!("{}?sha256={digest}", path.display())
}

/// Loads `spec` into a fresh manager; the provider names it holds.
fn load(spec: &str) -> Result<Vec<String>, Error> {
    let manager = Manager::new();
    // SAFETY: the test plugins are well-formed v0 plugins built above.
    unsafe { manager.load_spec(spec) }?;
    Ok(manager.providers())
}

#[test]
fn a_file_replaced_after_the_check_still_loads_the_checked_bytes() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let approved = plugin(dir.path(), "approved", "approved", &[]);
    let evil = plugin(dir.path(), "evil", "evil", &[]);
    let digest = sha256(&approved);

    // Unpinned, the swap at `open` wins: the window is real.
    let target = dir.path().join("libplugin.so");
    std::fs::copy(&approved, &target).unwrap();
    let replacement = dir.path().join("replacement.so");
    std::fs::copy(&evil, &replacement).unwrap();
    *SWAP.lock().unwrap() = Some(Swap::Rename { replacement: replacement.clone(), target: target.clone() });
    assert_eq!(load(&target.display().to_string()).unwrap(), ["evil"], "the hook swaps inside the window");
    assert!(SWAP.lock().unwrap().is_none(), "the swap happened");

    // Pinned, the same swap changes nothing: the checked bytes load.
    std::fs::copy(&approved, &target).unwrap();
    std::fs::copy(&evil, &replacement).unwrap();
    *SWAP.lock().unwrap() = Some(Swap::Rename { replacement, target: target.clone() });
    assert_eq!(load(&spec(&target, &digest)).unwrap(), ["approved"]);
    assert!(SWAP.lock().unwrap().is_none(), "the swap happened");
    assert_eq!(sha256(&target), sha256(&evil), "the file on disk is the replacement now");
    // And the replacement is refused by the same pin on the next load.
    let error = load(&spec(&target, &digest)).unwrap_err();
    assert!(
        matches!(&error, Error::PluginLoad { source: LoadError::HashMismatch { expected, found, .. }, .. }
            if *expected == digest && *found == sha256(&evil)),
        "{error:?}"
    );
}

#[test]
fn a_symbolic_link_is_pinned_to_the_bytes_it_points_at_when_read() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let approved = plugin(dir.path(), "approved", "approved", &[]);
    let evil = plugin(dir.path(), "evil", "evil", &[]);
    let link = dir.path().join("libcurrent.so");
    std::os::unix::fs::symlink(&approved, &link).unwrap();
    let digest = sha256(&link);
    assert_eq!(digest, sha256(&approved), "the link's hash is its target's");

    // The link re-pointed between the check and the mapping.
    *SWAP.lock().unwrap() = Some(Swap::Relink { new_target: evil.clone(), link: link.clone() });
    let manager = Manager::new();
    // SAFETY: the test plugins are well-formed v0 plugins built above.
    unsafe { manager.load_spec(&spec(&link, &digest)) }.unwrap();
    assert!(SWAP.lock().unwrap().is_none(), "the swap happened");
    assert_eq!(manager.providers(), ["approved"]);
    drop(manager);

    // Re-pointed before the check, the link is refused.
    let error = load(&spec(&link, &digest)).unwrap_err();
    assert!(
        matches!(&error, Error::PluginLoad { source: LoadError::HashMismatch { target, .. }, .. }
            if *target == link.display().to_string()),
        "{error:?}"
    );
    // A link to something that is not a regular file is refused too.
    let to_dir = dir.path().join("libdir.so");
    std::os::unix::fs::symlink(dir.path(), &to_dir).unwrap();
    let error = load(&spec(&to_dir, &digest)).unwrap_err();
    assert!(error.to_string().contains(&to_dir.display().to_string()), "{error}");
    assert!(
        matches!(&error, Error::PluginLoad { source: LoadError::NotSharedObject { .. }, .. }),
        "{error:?}"
    );
}

#[test]
fn a_wrong_hash_is_refused_before_any_code_runs() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // Its constructor crashes: were it mapped, this test process would die.
    let crashing = plugin(dir.path(), "crashing", "crashing", &["-DCRASH_IN=open"]);
    let wrong = Sha256Digest::of(b"the approved build");
    let manager = Manager::new();
    // SAFETY: refused before anything is mapped (the point of the test).
    let error = unsafe { manager.load_spec(&spec(&crashing, &wrong)) }.unwrap_err();
    assert!(manager.is_empty(), "nothing registered");
    let Error::PluginLoad { source: LoadError::HashMismatch { target, expected, found }, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*target, crashing.display().to_string());
    assert_eq!(*expected, wrong);
    assert_eq!(*found, sha256(&crashing));
    let message = xplug_manager::providers::Report::from(error.clone()).to_string();
    for part in [&crashing.display().to_string(), &wrong.to_string(), &found.to_string()] {
        assert!(message.contains(part.as_str()), "{message}");
    }
    assert_eq!(error.code(), xplug_manager::providers::abi::StatusCode::PERMISSION_DENIED);

    // An embedded ELF is checked alike (its bytes are what is validated
    // and mapped).
    let standalone = xplug_fixtures::build_standalone_c_sample(dir.path());
    let right = sha256(&standalone);
    let elf_spec = format!("embedded:{}", standalone.display());
    let error = load(&format!("{elf_spec}?sha256={wrong}")).unwrap_err();
    assert!(matches!(&error, Error::PluginLoad { source: LoadError::HashMismatch { .. }, .. }), "{error:?}");
    assert_eq!(load(&format!("{elf_spec}?sha256={right}")).unwrap(), ["c_sample"]);
}

#[test]
fn a_malformed_hash_is_refused_with_the_spec() {
    let _serial = serial();
    let manager = Manager::new();
    for (pin, says) in [
        ("abc", "64 hex digits"),
        (&"g".repeat(64)[..], "not a hex digit"),
        ("", "64 hex digits"),
        (&format!("{}&sha256={}", "a".repeat(64), "a".repeat(64))[..], "given twice"),
    ] {
        let spec = format!("/nonexistent/libx.so?sha256={pin}");
        // SAFETY: refused while parsing; nothing is opened.
        let error = unsafe { manager.load_spec(&spec) }.unwrap_err();
        assert!(
            matches!(&error, Error::InvalidSpec { spec: quoted, reason } if *quoted == spec && reason.contains(says)),
            "{error:?}"
        );
    }
    assert!(manager.is_empty());
}

#[test]
fn a_plugin_missing_from_the_allow_list_is_refused_and_a_listed_one_loads() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let approved = plugin(dir.path(), "approved", "approved", &[]);
    let crashing = plugin(dir.path(), "crashing", "crashing", &["-DCRASH_IN=open"]);
    let list_path = dir.path().join("allowed.txt");
    std::fs::write(&list_path, format!("# approved\n{}  {}\n", sha256(&approved), approved.display()))
        .unwrap();
    let manager = Manager::builder().allow_only(AllowList::read(&list_path).unwrap()).build().unwrap();

    // SAFETY: the approved plugin is a well-formed v0 plugin; the crashing
    // one is refused before it is mapped.
    let listed = unsafe { manager.load_spec(&approved.display().to_string()) };
    assert_eq!(listed.unwrap().name(), "approved");
    // SAFETY: as above.
    let error = unsafe { manager.load_spec(&crashing.display().to_string()) }.unwrap_err();
    assert!(
        matches!(&error, Error::PluginLoad { source: LoadError::NotAllowed { target, found, list }, .. }
            if *target == crashing.display().to_string() && *found == sha256(&crashing) && *list == list_path),
        "{error:?}"
    );
    assert_eq!(manager.providers(), ["approved"], "the refusal registered nothing and lost nothing");
    // A pin does not bypass the list.
    // SAFETY: as above.
    let error = unsafe { manager.load_spec(&spec(&crashing, &sha256(&crashing))) }.unwrap_err();
    assert!(matches!(&error, Error::PluginLoad { source: LoadError::NotAllowed { .. }, .. }), "{error:?}");
    assert_eq!(manager.len(), 1);
}

#[test]
fn malformed_allow_list_lines_name_the_file_and_line() {
    let _serial = serial();
    let good = Sha256Digest::of(b"x");
    for (text, line, says) in [
        (format!("{good}  a.so\nnothex  b.so\n"), 2, "64 hex digits"),
        (format!("# c\n\n{good}\n"), 3, "not `HASH  NAME`"),
        (format!("{good}  \n"), 1, "no file name"),
        (format!("{}  a.so\n", "z".repeat(64)), 1, "not a hex digit"),
    ] {
        let error = AllowList::parse(&text, "/etc/xplug/allowed.txt").unwrap_err();
        assert!(
            matches!(&error, LoadError::AllowListInvalid { path, line: at, reason }
                if path == Path::new("/etc/xplug/allowed.txt") && *at == line && reason.contains(says)),
            "{text:?}: {error:?}"
        );
        assert!(error.to_string().contains(&format!("/etc/xplug/allowed.txt line {line}")), "{error}");
    }
    let list = AllowList::parse(&format!("{good} *a.so\r\n{good}  b c.so\n"), "l").unwrap();
    assert_eq!(list.entries().iter().map(|(_, name)| name.as_str()).collect::<Vec<_>>(), ["a.so", "b c.so"]);
}

#[test]
fn an_allow_list_that_is_not_a_small_regular_file_is_refused_without_waiting() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("allowed.fifo");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    for (list, says) in
        [(fifo.as_path(), "not a regular file"), (Path::new("/dev/zero"), "not a regular file")]
    {
        let error = AllowList::read(list).unwrap_err();
        let message = xplug_manager::providers::Report::from(error).to_string();
        assert!(message.contains(&list.display().to_string()) && message.contains(says), "{message}");
    }
    let large = dir.path().join("large.txt");
    std::fs::write(&large, "#".repeat(5 << 20)).unwrap();
    let message = xplug_manager::providers::Report::from(AllowList::read(&large).unwrap_err()).to_string();
    assert!(message.contains("larger than 4 MiB"), "{message}");
}

/// `swap_scale_i32`'s args (`tests/c/swap_plugin.c`).
#[repr(C)]
struct ScaleArgs {
    value: i32,
    out: i32,
}

/// Calls `swap_scale_i32` (import 0 of `imports`) on `value`.
fn scale(imports: &xplug_manager::ResolvedImports, value: i32) -> i32 {
    let import = imports.import(0).expect("resolved");
    let mut args = ScaleArgs { value, out: 0 };
    // SAFETY: `swap_scale_i32` takes a `ScaleArgs`.
    assert_eq!(unsafe { import.call(&mut args) }, 0);
    args.out
}

/// Builds of `tests/c/swap_plugin.c` multiplying by 2, 3, 4 and 5 (each
/// both a `.so` and a valid `.sos`), each under its own file name.
fn swap_builds(dir: &Path) -> Vec<(i32, PathBuf)> {
    (2..=5)
        .map(|factor| {
            (factor, xplug_fixtures::build_swap_plugin(dir, &format!("swap_x{factor}"), factor, &[]))
        })
        .collect()
}

/// Swaps a pinned plugin through every build, then back to the first:
/// each call runs the code of the build just swapped in. `spec` writes a
/// build's spec.
fn swap_through(manager: &Manager, builds: &[(i32, PathBuf)], spec: impl Fn(&Path) -> String) {
    // SAFETY: the swap builds are well-formed v0 plugins.
    let handle = unsafe { manager.load_swappable(&spec(&builds[0].1)) }.unwrap();
    let imports = manager.resolve_imports(["swap_scale_i32"]).unwrap();
    assert_eq!(scale(&imports, 7), 7 * builds[0].0);
    for (factor, path) in builds[1..].iter().chain(&builds[..1]) {
        // SAFETY: as above.
        let swapped = unsafe { handle.replace(&spec(path)) }.unwrap();
        assert_eq!(scale(&imports, 7), 7 * factor, "after the swap to {} ({swapped:?})", path.display());
    }
}

#[test]
fn pinned_versions_swapped_in_turn_each_run_their_own_checked_code() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let builds = swap_builds(dir.path());
    // Each replaced `.so` stays mapped (`docs/src/operating/swap.md`), and its in-memory
    // file is closed: the next version must not be taken for it.
    swap_through(&Manager::new(), &builds, |path| spec(path, &sha256(path)));
    swap_through(&Manager::new(), &builds, |path| format!("embedded:{}", spec(path, &sha256(path))));
    let list_path = dir.path().join("allowed.txt");
    let lines: String =
        builds.iter().map(|(_, path)| format!("{}  {}\n", sha256(path), path.display())).collect();
    std::fs::write(&list_path, lines).unwrap();
    let listed = || Manager::builder().allow_only(AllowList::read(&list_path).unwrap()).build().unwrap();
    swap_through(&listed(), &builds, |path| path.display().to_string());
    swap_through(&listed(), &builds, |path| format!("embedded:{}", path.display()));
}

#[test]
fn a_pinned_load_after_other_plugins_were_loaded_and_dropped_gets_its_own_code() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let examples = xplug_fixtures::plugins::built_for_tests();
    // A Rust plugin is never unmapped (`docs/src/reference/loading.md#unload-policy`), so
    // its in-memory file's descriptor number is free again once it is
    // dropped while its library stays loaded.
    let rust = examples.join(xplug_fixtures::plugins::library_file_name("sample_system"));
    let c_example = examples.join(xplug_fixtures::plugins::library_file_name("c_sample"));
    let first = plugin(dir.path(), "first", "first", &[]);
    let second = plugin(dir.path(), "second", "second", &[]);
    let expected: [(&Path, &str); 5] = [
        (&rust, "sample_system"),
        (&first, "first"),
        (&c_example, "c_sample"),
        (&second, "second"),
        (&first, "first"),
    ];
    for (path, name) in expected {
        assert_eq!(load(&spec(path, &sha256(path))).unwrap(), [name], "{}", path.display());
    }
    let list_path = dir.path().join("allowed.txt");
    let lines: String =
        expected.iter().map(|(path, _)| format!("{}  {}\n", sha256(path), path.display())).collect();
    std::fs::write(&list_path, lines).unwrap();
    for (path, name) in expected.iter().rev() {
        let manager = Manager::builder().allow_only(AllowList::read(&list_path).unwrap()).build().unwrap();
        // SAFETY: the plugins are well-formed v0 plugins.
        unsafe { manager.load_spec(&path.display().to_string()) }.unwrap();
        assert_eq!(manager.providers(), [*name], "{}", path.display());
    }
}
