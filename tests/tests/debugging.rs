//! Debuggable plugins (`docs/src/operating/debugging.md`): gdb names the function a
//! `.sos` kernel crashes in, the opt-in crash reporter names it on stderr,
//! the perf map lists an image's functions, and GDB JIT registration stays
//! balanced when one thread loads while another unloads.
//!
//! The crashing runs happen in a child: this test binary re-run with
//! [`CHILD_ENV`] set, running only [`crash_host`], which loads
//! `crash_plugin.sos?crash=kernel` through a `Manager` and calls its
//! kernel. The tests in this file that count registrations hold [`SERIAL`].

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use xplug_debug::{CodeAnnouncement, MappedRegion, code_mapped};
use xplug_elf::ElfImage;
use xplug_manager::Manager;
use xplug_manager::providers::Loader as _;

/// Set (to the `.sos` path) in the child that loads and crashes.
const CHILD_ENV: &str = "XPLUG_TEST_CRASH_HOST_SOS";
/// Set in that child to install the crash reporter first.
const REPORT_ENV: &str = "XPLUG_TEST_CRASH_HOST_REPORT";

/// Serialises the tests that count GDB JIT entries or write the perf map.
static SERIAL: Mutex<()> = Mutex::new(());

/// `crash_plugin.sos`, built once for this binary.
fn crash_sos() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| xplug_fixtures::build_rust_sos_plugin("crash_plugin"))
}

/// `bytes` mapped by `xplug-elf` and announced through the debugging
/// services' hook, as the embedded-ELF loader does; the announcement comes
/// first, so the pair drops it before the image is unmapped.
fn load_announced(bytes: &[u8]) -> (CodeAnnouncement, ElfImage) {
    let image = ElfImage::load(bytes).unwrap();
    (code_mapped(MappedRegion::elf_image("crash_plugin.sos", &image, bytes)), image)
}

/// The child's body: does nothing unless [`CHILD_ENV`] is set.
#[test]
fn crash_host() {
    let Some(sos) = std::env::var_os(CHILD_ENV) else { return };
    if std::env::var_os(REPORT_ENV).is_some() {
        Manager::builder().crash_reporter().build().expect("the crash reporter installs");
    }
    let manager = Manager::new();
    // SAFETY: the test's own fixture, a v0 plugin.
    unsafe { manager.load_spec(&format!("{}?crash=kernel", sos.to_string_lossy())) }.expect("the .sos loads");
    let imports = manager.resolve_imports(["crashing_kernel"]).expect("the kernel resolves");
    let mut args = [0i32; 1];
    // SAFETY: `crashing_kernel` takes a `KernelArgs` (one i32).
    let status = unsafe { imports.import(0).unwrap().call(&mut args) };
    panic!("the kernel returned {status} instead of crashing");
}

/// This binary re-run as the crashing child, under `wrapper` if given.
fn run_child(wrapper: &[&str], report: bool) -> Output {
    let exe = std::env::current_exe().unwrap();
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg("--args").arg(&exe);
            command
        }
        None => Command::new(&exe),
    };
    command.args(["--exact", "crash_host", "--nocapture", "--test-threads=1"]).env(CHILD_ENV, crash_sos());
    if report {
        command.env(REPORT_ENV, "1");
    }
    command.output().expect("the child runs")
}

#[test]
fn gdb_backtrace_names_the_kernel_of_a_crashing_sos() {
    if Command::new("gdb").arg("--version").output().is_err() {
        println!("skipped: gdb is not installed (`.ci/run` installs Debian's gdb)");
        return;
    }
    // Registration is on by default: no switch is set (and one the
    // environment of the test run might carry is cleared).
    let output =
        run_child(&["env", "-u", "XPLUG_GDB_JIT", "gdb", "-batch", "-nx", "-ex", "run", "-ex", "bt"], false);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.contains("SIGSEGV"), "the kernel did not crash under gdb:\n{stdout}\n{stderr}");
    let frame = stdout
        .lines()
        .find(|line| line.starts_with("#0"))
        .unwrap_or_else(|| panic!("no backtrace:\n{stdout}"));
    assert!(frame.contains("crash_plugin_kernel"), "frame #0 is not the kernel: {frame}\n{stdout}");
}

#[test]
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn the_crash_reporter_names_the_kernel_and_the_process_still_dies_of_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let output = run_child(&[], true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.signal(), Some(libc::SIGSEGV), "{stderr}");
    let _ = xplug_fixtures::crash_plugin_kernel_report(&stderr);
    // Without the reporter: the same death, no line.
    let quiet = run_child(&[], false);
    assert_eq!(quiet.status.signal(), Some(libc::SIGSEGV));
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("xplug: SIGSEGV"));
}

#[test]
fn the_perf_map_lists_the_functions_of_the_image() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let bytes = std::fs::read(crash_sos()).unwrap();
    let map = xplug_debug::perf::map_path();
    let before = std::fs::read_to_string(&map).unwrap_or_default();
    xplug_debug::perf::enable();
    let (_announced, image) = load_announced(&bytes);
    let written = std::fs::read_to_string(&map).unwrap();
    let _ = std::fs::remove_file(&map);

    // What the file's symbol table says, placed at the image's base.
    let plan = image.plan();
    let expected = xplug_elf::image_functions(&bytes[plan.elf()], plan.base_vaddr());
    assert!(expected.iter().any(|function| function.name == "crash_plugin_kernel"), "{expected:?}");
    assert!(expected.iter().any(|function| function.name == "crash_plugin_load"), "{expected:?}");
    let expected: Vec<String> = expected
        .iter()
        .map(|function| {
            format!("{:x} {:x} {}", image.base() as u64 + function.offset, function.size, function.name)
        })
        .collect();
    let appended: Vec<&str> = written[before.len()..].lines().collect();
    assert_eq!(appended, expected);
    // Every line is perf's `START SIZE name`, hex without 0x.
    for line in &appended {
        let mut fields = line.splitn(3, ' ');
        let (start, size) = (fields.next().unwrap(), fields.next().unwrap());
        assert!(u64::from_str_radix(start, 16).is_ok() && u64::from_str_radix(size, 16).is_ok(), "{line}");
        assert!(!start.starts_with("0x"), "{line}");
    }
}

#[test]
fn gdb_registration_is_balanced_when_one_thread_loads_and_another_unloads() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // On by default in this (debug-assertions) build; said explicitly so a
    // release-mode run of the test counts the same.
    xplug_debug::gdb::set_enabled(true);
    let bytes = std::fs::read(crash_sos()).unwrap();
    let listed_before = xplug_debug::gdb::registered_images();
    assert_eq!(listed_before, 0, "no image is mapped in this process yet");
    let (added_before, removed_before) = xplug_debug::gdb::registration_counts();
    const CYCLES: usize = 10_000;
    let (send, receive) = std::sync::mpsc::sync_channel::<(CodeAnnouncement, ElfImage)>(64);
    let unloader = std::thread::spawn(move || {
        let mut most_listed = 0;
        for (announced, image) in receive {
            most_listed = most_listed.max(xplug_debug::gdb::registered_images());
            drop(announced);
            drop(image);
        }
        most_listed
    });
    for _ in 0..CYCLES {
        send.send(load_announced(&bytes)).unwrap();
    }
    drop(send);
    let most_listed = unloader.join().unwrap();
    let (added, removed) = xplug_debug::gdb::registration_counts();
    assert_eq!(added - added_before, CYCLES);
    assert_eq!(removed - removed_before, CYCLES);
    assert_eq!(xplug_debug::gdb::registered_images(), listed_before, "the descriptor list is empty again");
    assert!(most_listed > listed_before, "images were listed while loaded");
}

#[test]
fn the_embedded_elf_loader_announces_its_images_through_the_hook() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    xplug_debug::gdb::set_enabled(true);
    let listed_before = xplug_debug::gdb::registered_images();
    // Armed for the kernel, so its load does not crash.
    let params = xplug_manager::providers::LoadParamList::new().with("crash", "kernel");
    // SAFETY: the test's own fixture, a v0 plugin.
    let plugin = unsafe {
        xplug_manager::providers::EMBEDDED_ELF
            .open(&std::path::Path::new(&crash_sos()).to_string_lossy())
            .and_then(|code| code.load(&params))
    }
    .unwrap();
    assert_eq!(xplug_debug::gdb::registered_images(), listed_before + 1, "the loader called code_mapped");
    drop(plugin);
    assert_eq!(xplug_debug::gdb::registered_images(), listed_before, "and withdrew it on unload");
}
