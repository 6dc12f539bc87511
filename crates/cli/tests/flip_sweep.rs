//! The byte-flip sweep, strided for CI: every `STRIDE`-th byte of the
//! compiled `tests/iree/mul_call.mlir` set to `0xff`, each copy run by
//! `xplug run` and by IREE's `iree-run-module` (the `iree-base-runtime`
//! package's, and the one built in xplug's tree for candidates) with the
//! same flags; no offset may kill `xplug run` by a signal, whatever IREE's
//! tools do; none may fault its supervised program or hang it where IREE's
//! tool exits normally, unless the sweep's checks show the fault is IREE's
//! own; and none outside the embedded executables' machine code may fault
//! the program at all. The full sweep (every
//! byte) is `cargo xtask flip-sweep`; both run
//! [`xplug_fixtures::flip_sweep::sweep`].

use std::time::Duration;

use xplug_fixtures::flip_sweep::{self, Config, End};
use xplug_fixtures::iree_e2e::{self, MUL_CALL};
use xplug_fixtures::plugins::PluginProfile;

/// Every 7th byte: about 1 300 offsets of the 9 221-byte module, both
/// tools on each.
const STRIDE: usize = 7;

/// The residue swept: offsets 3, 10, 17, ... The module's bytes are the
/// same in every checkout (`the_swept_module_is_the_same_in_every_checkout`),
/// so this choice is fixed: it takes in offset 6793, where xplug and IREE's
/// tool built like xplug's runtime both crash and the `iree-base-runtime`
/// package's tool does not (docs/src/embedding/iree.md, "Damaged modules"), so
/// every check of the sweep runs here, the build of that tool included.
const FIRST: usize = 3;

#[test]
fn no_flipped_byte_kills_xplug_run_nor_faults_it_where_iree_run_module_survives() {
    let root = xplug_fixtures::workspace_root();
    let prepared = iree_e2e::prepare(&root, PluginProfile::Debug).expect("IREE is ready");
    let module = flip_sweep::compile_module(&root, &prepared, MUL_CALL).expect("the module compiles");
    let config = Config {
        module,
        xplug: env!("CARGO_BIN_EXE_xplug").into(),
        iree_run_module: flip_sweep::native_iree_run_module(&prepared.tools),
        flags: Config::mul_flags(MUL_CALL.function, prepared.library("sample_system")),
        value: 0xff,
        stride: STRIDE,
        first: FIRST,
        jobs: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
        // Bounds a hang; a normal run takes well under a second.
        timeout: Duration::from_secs(30),
        iree_reruns: 5,
        layout_rerun: true,
        iree_memcheck: xplug_fixtures::valgrind::available(),
        reference_build: Some(
            flip_sweep::runtime_build_dir(&root, PluginProfile::Debug)
                .expect("xplug's IREE runtime was built"),
        ),
        work: prepared.work.join("flip-sweep-test"),
    };
    let report = flip_sweep::sweep(&config, |_| {}).expect("the sweep runs");
    let table = report.table();
    eprintln!("{table}");
    assert!(report.findings().is_empty(), "{table}");
    // Whatever IREE's tools do, no copy kills `xplug run` by a signal: the
    // program runs in a supervised child, whose faults are reported as
    // errors.
    assert!(report.crashes().is_empty(), "{table}");
    // Some copies do fault the program (flipped machine code is another
    // program): the supervision is exercised, not only claimed.
    assert!(!report.faults().is_empty(), "{table}");
    // No copy damaged outside the embedded executables' machine code (the
    // VM bytecode, the FlatBuffer, the executables' ELF structure) faults
    // the program either: verification refuses it first. A flipped byte
    // of machine code is another program no check of the module can tell
    // from the compiled one; those faults are listed in the table
    // (docs/src/embedding/iree.md, "Damaged modules").
    assert!(!report.code.is_empty(), "the module embeds an executable: {table}");
    assert!(report.faults_outside_code().is_empty(), "{table}");
    // The sweep reached the module's contents: most copies are refused by
    // both tools, and some still run (a byte that does not matter).
    let swept = report.results.len();
    assert!(swept + report.unchanged.len() >= report.module_len / STRIDE, "{table}");
    let refused = report.results.iter().filter(|result| result.iree.end == End::Exited(1)).count();
    let ran = report.results.iter().filter(|result| result.iree.end == End::Exited(0)).count();
    assert!(refused > 0 && ran > 0, "{table}");
}

/// The swept module's bytes do not depend on where the checkout lies, so
/// the offsets the sweep reports (and docs/src/embedding/iree.md names) are the
/// same everywhere: the same program compiled from two directories of
/// different path lengths gives the same bytes, naming neither directory.
#[test]
fn the_swept_module_is_the_same_in_every_checkout() {
    let root = xplug_fixtures::workspace_root();
    let tools = iree_e2e::toolchain(&root).expect("IREE's tools are ready");
    let temp = tempfile::tempdir().expect("a temporary directory");
    let source = root.join("tests").join("iree").join(MUL_CALL.file);
    let mut modules = Vec::new();
    for checkout in ["a", "a-much-longer-checkout-directory/nested"] {
        let directory = temp.path().join(checkout);
        std::fs::create_dir_all(&directory).unwrap();
        let copy = directory.join(MUL_CALL.file);
        std::fs::copy(&source, &copy).unwrap();
        let module = directory.join("mul_call.vmfb");
        iree_e2e::compile_file_path_independent(&tools, &copy, &module).expect("the program compiles");
        let bytes = std::fs::read(&module).unwrap();
        let named = directory.to_str().unwrap().as_bytes();
        assert!(
            !bytes.windows(named.len()).any(|window| window == named),
            "{} names its directory",
            module.display()
        );
        modules.push(bytes);
    }
    assert!(modules[0] == modules[1], "the module's bytes depend on the directory it was compiled in");
    // A module compiled from the path names it: the check above can fail.
    let named = temp.path().join("a").join("named.vmfb");
    iree_e2e::compile_file(&tools, &temp.path().join("a").join(MUL_CALL.file), &named).unwrap();
    let bytes = std::fs::read(&named).unwrap();
    let directory = temp.path().join("a");
    let directory = directory.to_str().unwrap().as_bytes();
    assert!(bytes.windows(directory.len()).any(|window| window == directory));
}

/// A damaged executable is refused by xplug's ELF checks before IREE's
/// loader parses it: at offsets 5274 and 5386 (in the embedded ELF, which
/// starts at 5152) IREE's parser follows a damaged dynamic-table address
/// or RELRO range unchecked, and crashed `xplug run` under one memory
/// layout (docs/src/embedding/iree.md, "Damaged modules"). Now the run exits 1
/// naming what lies outside the file, and the undamaged module runs.
#[test]
fn damaged_modules_are_refused_by_xplugs_checks_and_patches() {
    let root = xplug_fixtures::workspace_root();
    let prepared = iree_e2e::prepare(&root, PluginProfile::Debug).expect("IREE is ready");
    let module = flip_sweep::compile_module(&root, &prepared, MUL_CALL).expect("the module compiles");
    let bytes = std::fs::read(&module).unwrap();
    let elf = bytes.windows(4).position(|window| window == b"\x7fELF").expect("an embedded ELF");
    assert_eq!(elf, 5152, "the embedded executable starts where the docs say");
    let flags = Config::mul_flags(MUL_CALL.function, prepared.library("sample_system"));
    let dir = prepared.work.join("elf-checks");
    std::fs::create_dir_all(&dir).unwrap();
    // Each a byte that killed `xplug run` before (docs/src/embedding/iree.md,
    // "Damaged modules"): the dynamic table and RELRO addresses, a
    // relocation addend, a segment's file offset, a PT_DYNAMIC address and
    // DT_RELA's tag (xplug-elf's checks); a register operand of the VM
    // bytecode (IREE's verifier, patched) and the export count and an
    // import-name pointer of the executable's library table (IREE's
    // loader, patched).
    let elf_checks = "refused before loading (xplug's ELF checks)";
    for (offset, reason) in [
        (None, None),
        (Some(5274), Some([elf_checks, "DT_STRTAB"])),
        (Some(5386), Some([elf_checks, "PT_GNU_RELRO"])),
        (Some(5740), Some([elf_checks, "outside the image"])),
        (Some(5336), Some([elf_checks, "differ modulo its alignment"])),
        (Some(5460), Some([elf_checks, "the dynamic section (PT_DYNAMIC)"])),
        (Some(6784), Some([elf_checks, "DT_RELA"])),
        (Some(2983), Some(["verifier.c", "i32 register required but ref register 65280 provided"])),
        (Some(6648), Some(["embedded_elf_loader.c", "lies outside its image"])),
        (Some(5928), Some(["embedded_elf_loader.c", "import name lies outside its image"])),
    ] {
        let mut copy = bytes.clone();
        if let Some(offset) = offset {
            copy[offset] = 0xff;
        }
        let path = dir.join(format!("mul_call-{}.vmfb", offset.unwrap_or(0)));
        std::fs::write(&path, &copy).unwrap();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_xplug"))
            .arg("run")
            .arg(format!("--module={}", path.display()))
            .args(&flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        match reason {
            None => assert!(output.status.success(), "the undamaged module runs: {stderr}"),
            Some(reason) => {
                assert_eq!(output.status.code(), Some(1), "offset {offset:?}: {stderr}");
                assert!(reason.iter().all(|part| stderr.contains(part)), "offset {offset:?}: {stderr}");
            }
        }
    }
}
