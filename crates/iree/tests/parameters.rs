//! Sessions with parameter archives (`SessionBuilder::parameter_archive`): a
//! program whose weights come from an `.irpa`, a `.safetensors` and a
//! `.gguf` file and whose hot loop is a Rust plugin's, each giving the
//! plain product; and failures that leave nothing open behind them.

use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use xplug_fixtures::iree_e2e::{self, Prepared};
use xplug_fixtures::plugins::PluginProfile;
use xplug_fixtures::{archives, models};
use xplug_iree::{Device, DeviceKind, Error, Module, ParameterArchiveMode, Runtime, Session, Tensor, Value};
use xplug_manager::Manager;

// Linked in with its `static` feature: serves `simple_mul_workgroup`.
use sample_system as _;

const N: usize = 1000;

struct Fixture {
    _prepared: Prepared,
    dir: PathBuf,
    module: PathBuf,
    weights: Vec<f32>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = xplug_fixtures::workspace_root();
        let prepared = iree_e2e::prepare(&root, PluginProfile::Debug).expect("IREE is ready");
        let dir = prepared.work.join("parameters");
        std::fs::create_dir_all(&dir).unwrap();
        let module = dir.join("mul_weights.vmfb");
        iree_e2e::compile_file(&prepared.tools, &root.join("tests/iree/mul_weights.mlir"), &module).unwrap();
        let (_, weights) = iree_e2e::inputs(N);
        models::write_archive(&prepared.tools, &dir.join("weights.irpa"), &[("weights", &weights)], 0)
            .unwrap();
        models::write_archive(&prepared.tools, &dir.join("other.irpa"), &[("other", &weights)], 0).unwrap();
        std::fs::write(dir.join("weights.safetensors"), archives::safetensors("weights", &weights)).unwrap();
        std::fs::write(dir.join("weights.gguf"), archives::gguf_one("weights", &weights)).unwrap();
        Fixture { _prepared: prepared, dir, module, weights }
    })
}

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new().expect("IREE's runtime starts"))
}

fn device(kind: DeviceKind) -> Device {
    let manager = Manager::builder().static_plugins().build().expect("the static plugins register");
    runtime().device(kind, manager).expect("the device is made")
}

/// Held by each test: the descriptor count is only meaningful while no
/// other test of this binary opens files.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("Linux lists descriptors").count()
}

/// The lines of this process's memory map naming a file of `dir`.
fn mappings_of(dir: &Path) -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("Linux lists mappings");
    let dir = dir.display().to_string();
    maps.lines().filter(|line| line.contains(&dir)).map(str::to_owned).collect()
}

#[test]
fn weights_from_every_archive_format_feed_a_plugins_hot_loop() {
    let _serial = serial();
    let fixture = fixture();
    let module = Module::from_file(runtime(), &fixture.module).unwrap();
    let (a, _) = iree_e2e::inputs(N);
    for kind in [DeviceKind::LocalSync, DeviceKind::LocalTask { workers: 2 }] {
        let device = device(kind);
        for (archive, mode) in ["weights.irpa", "weights.safetensors", "weights.gguf"]
            .into_iter()
            .flat_map(|archive| ParameterArchiveMode::ALL.map(|mode| (archive, mode)))
        {
            let session = Session::builder(&device, &module)
                .parameter_archive("model", fixture.dir.join(archive))
                .parameter_archive_mode(mode)
                .build()
                .unwrap_or_else(|error| panic!("{archive} {mode:?}: {error:?}"));
            // Only a mapped archive stays mapped while the session lives.
            let mapped = mappings_of(&fixture.dir);
            assert_eq!(
                !mapped.is_empty(),
                mode == ParameterArchiveMode::Mmap,
                "{archive} {mode:?}: {mapped:?}"
            );
            let call = session.prepare("mul_weights", &[Tensor::from_f32(&a)]).unwrap();
            let results = call.invoke().unwrap().values().unwrap();
            let [Value::Tensor(product)] = results.as_slice() else { panic!("one tensor: {results:?}") };
            let product = product.to_f32().unwrap();
            for i in 0..N {
                assert_eq!(
                    product[i].to_bits(),
                    (a[i] * fixture.weights[i]).to_bits(),
                    "{archive} {mode:?} element {i}"
                );
            }
            drop(results);
            drop(session);
            assert_eq!(mappings_of(&fixture.dir), Vec::<String>::new(), "{archive} {mode:?}: unmapped");
        }
    }
}

#[test]
fn failed_sessions_name_the_problem_and_leave_nothing_open() {
    let _serial = serial();
    let fixture = fixture();
    let module = Module::from_file(runtime(), &fixture.module).unwrap();
    let device = device(DeviceKind::LocalSync);
    let attempt = |scope: &str, archive: &Path, mode: ParameterArchiveMode| {
        Session::builder(&device, &module)
            .parameter_archive(scope, archive)
            .parameter_archive_mode(mode)
            .build()
            .err()
            .expect("the session fails")
    };
    // Warm up IREE's lazily made state before counting descriptors.
    let _ = attempt("model", &fixture.dir.join("other.irpa"), ParameterArchiveMode::File);
    let before = open_descriptors();
    for mode in ParameterArchiveMode::ALL.into_iter().cycle().take(21) {
        let attempt = |scope: &str, archive: &Path| attempt(scope, archive, mode);
        match attempt("model", &fixture.dir.join("other.irpa")) {
            Error::ParameterMissing { key, scopes, archives, .. } => {
                assert_eq!((key.as_str(), &*scopes), ("weights", ["model".to_owned()].as_slice()));
                assert_eq!(&*archives, [fixture.dir.join("other.irpa")]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(attempt("params", &fixture.dir.join("weights.irpa")), Error::ParameterScope { scope, .. } if scope == "model")
        );
        assert!(matches!(attempt("model", &fixture.dir.join("none.irpa")), Error::ParameterFile { .. }));
        assert!(matches!(attempt("model", &fixture.module), Error::ParameterArchive { .. }));
    }
    assert_eq!(open_descriptors(), before, "every archive opened by a failed session is closed");
    assert_eq!(mappings_of(&fixture.dir), Vec::<String>::new(), "and unmapped");
    // Without any archive, the program's scope is named.
    let error = Session::new(&device, &module).err().expect("no archive");
    assert!(matches!(&error, Error::ParameterScope { given, .. } if given.is_empty()), "{error:?}");
}

/// A missing key is named whole, whatever its characters; when several
/// scopes' archives lack it, each scope is named and each archive once.
#[test]
fn missing_keys_are_named_whole_with_every_scope_that_may_lack_them() {
    let _serial = serial();
    let fixture = fixture();
    let root = xplug_fixtures::workspace_root();
    let source = std::fs::read_to_string(root.join("tests/iree/mul_weights.mlir")).unwrap();
    let quoted = fixture.dir.join("mul_quoted_key.mlir");
    std::fs::write(&quoted, source.replace(r#""model"::"weights""#, r#""model"::"it's; 'x'""#)).unwrap();
    let compiled = fixture.dir.join("mul_quoted_key.vmfb");
    iree_e2e::compile_file(&fixture._prepared.tools, &quoted, &compiled).unwrap();
    let device = device(DeviceKind::LocalSync);
    let module = Module::from_file(runtime(), &compiled).unwrap();
    let weights = fixture.dir.join("weights.irpa");
    let error = Session::builder(&device, &module)
        .parameter_archive("model", &weights)
        .build()
        .err()
        .expect("missing");
    let Error::ParameterMissing { key, scopes, archives, .. } = &error else { panic!("{error:?}") };
    assert_eq!(
        (key.as_str(), &**scopes, &**archives),
        ("it's; 'x'", ["model".to_owned()].as_slice(), [weights.clone()].as_slice())
    );
    assert!(error.to_string().contains(r#"needs parameter "it's; 'x'" of scope "model""#), "{error}");
    // Two scopes lack `weights`, one archive serving both.
    let module = Module::from_file(runtime(), &fixture.module).unwrap();
    let other = fixture.dir.join("other.irpa");
    let error = Session::builder(&device, &module)
        .parameter_archive("model", &other)
        .parameter_archive("extra", &other)
        .build()
        .err()
        .expect("missing");
    let Error::ParameterMissing { key, scopes, archives, .. } = &error else { panic!("{error:?}") };
    assert_eq!(key, "weights");
    assert_eq!(&**scopes, ["model".to_owned(), "extra".to_owned()]);
    assert_eq!(&**archives, std::slice::from_ref(&other));
    let message = error.to_string();
    assert!(message.contains(r#"of one of the scopes "model", "extra", which"#), "{message}");
    assert_eq!(message.matches("other.irpa").count(), 1, "{message}");
}

#[test]
fn damaged_archives_are_refused_before_iree_reads_them_in_every_mode() {
    let _serial = serial();
    let fixture = fixture();
    let module = Module::from_file(runtime(), &fixture.module).unwrap();
    let device = device(DeviceKind::LocalSync);
    let corpus = archives::hostile_corpus("weights", &fixture.weights);
    let case = |name: &str| {
        let case = corpus.iter().find(|case| case.name == name).expect("in the corpus");
        let path = fixture.dir.join(&case.file_name);
        std::fs::write(&path, &case.bytes).unwrap();
        path
    };
    // The issue's archive: an entry 2^64 - 0x2000 into a storage segment
    // whose length wraps IREE's check.
    let wrapped = case("irpa-wrapped-offset-2");
    let misaligned = case("irpa-misaligned");
    let beyond = case("gguf-alignment-past-end");
    let before = open_descriptors();
    for mode in ParameterArchiveMode::ALL {
        let attempt = |path: &Path| {
            Session::builder(&device, &module)
                .parameter_archive("model", path)
                .parameter_archive_mode(mode)
                .build()
                .err()
                .expect("the session fails")
        };
        match attempt(&wrapped) {
            Error::ParameterLayout { path, scope, key, problem, code } => {
                assert_eq!((path, scope.as_str(), key), (wrapped.clone(), "model", None), "{mode:?}");
                assert_eq!(code, xplug_manager::providers::abi::StatusCode::OUT_OF_RANGE.0, "{mode:?}");
                assert!(
                    problem.contains("storage segment at [") && problem.contains("past 2^64"),
                    "{problem}"
                );
            }
            other => panic!("{mode:?}: {other:?}"),
        }
        match attempt(&misaligned) {
            Error::ParameterLayout { key, problem, code, .. } => {
                assert_eq!((key.as_deref(), code), (Some("weights"), 3), "{mode:?}: {problem}");
                assert!(problem.contains("not aligned to the 64 bytes"), "{problem}");
            }
            other => panic!("{mode:?}: {other:?}"),
        }
        // IREE's GGUF parser puts this tensor 2 GiB into an 8 KiB file;
        // xplug's check of IREE's index refuses it.
        let error = attempt(&beyond);
        let Error::ParameterLayout { key, problem, code, .. } = &error else { panic!("{mode:?}: {error:?}") };
        assert_eq!((key.as_deref(), *code), (Some("weights"), 11), "{mode:?}: {problem}");
        assert!(problem.contains("[2147483648, 2147487648) is past the end"), "{problem}");
        let message = error.to_string();
        assert!(message.contains("at parameter \"weights\""), "{message}");
        assert!(message.contains(&beyond.display().to_string()), "{message}");
    }
    assert_eq!(open_descriptors(), before, "every refused archive is closed");
    assert_eq!(mappings_of(&fixture.dir), Vec::<String>::new(), "and unmapped");
}

/// What each mode does when the archive changes under a live session
/// (docs/src/cli/models.md, docs/src/embedding/iree.md#parameters):
/// `file` (the default, as iree-run-module's) and `preload` keep the bytes
/// read at start-up through an in-place rewrite and a truncation; `mmap`
/// computes with rewritten bytes, and its mapping of a truncated archive
/// faults (SIGBUS), shown in a child process.
#[test]
fn archives_changed_under_a_session_keep_their_start_up_bytes_unless_mapped() {
    const CHILD: &str = "XPLUG_TEST_TRUNCATE_MAPPED";
    let _serial = serial();
    let fixture = fixture();
    let module = Module::from_file(runtime(), &fixture.module).unwrap();
    let device = device(DeviceKind::LocalSync);
    let (a, _) = iree_e2e::inputs(N);
    let doubled: Vec<f32> = fixture.weights.iter().map(|weight| weight * 2.0).collect();
    let archive = |weights: &[f32]| {
        let length = (weights.len() * 4) as u64;
        archives::irpa(&[archives::IrpaEntry::new("weights", 0, length)], &archives::f32_bytes(weights))
    };
    let (original, rewritten) = (archive(&fixture.weights), archive(&doubled));
    assert_eq!(original.len(), rewritten.len(), "the same layout, other values");
    let product = |session: &Session| -> Vec<u32> {
        let call = session.prepare("mul_weights", &[Tensor::from_f32(&a)]).unwrap();
        let results = call.invoke().unwrap().values().unwrap();
        let [Value::Tensor(product)] = results.as_slice() else { panic!("one tensor: {results:?}") };
        product.to_f32().unwrap().iter().map(|value| value.to_bits()).collect()
    };
    let expected =
        |weights: &[f32]| -> Vec<u32> { a.iter().zip(weights).map(|(a, w)| (a * w).to_bits()).collect() };
    let session = |path: &Path, mode: ParameterArchiveMode| {
        Session::builder(&device, &module)
            .parameter_archive("model", path)
            .parameter_archive_mode(mode)
            .build()
            .unwrap()
    };
    if std::env::var_os(CHILD).is_some() {
        let path = fixture.dir.join("truncated-while-mapped.irpa");
        std::fs::write(&path, &original).unwrap();
        let mapped = session(&path, ParameterArchiveMode::Mmap);
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        // Faults before it returns.
        let _ = product(&mapped);
        return;
    }
    assert_eq!(ParameterArchiveMode::default(), ParameterArchiveMode::File, "iree-run-module's default");
    for mode in ParameterArchiveMode::ALL {
        let path = fixture.dir.join(format!("changing-{}.irpa", mode.name()));
        std::fs::write(&path, &original).unwrap();
        let live = session(&path, mode);
        // In place, as `dd conv=notrunc` writes.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all_at(&rewritten, 0).unwrap();
        let seen = if mode == ParameterArchiveMode::Mmap { &doubled } else { &fixture.weights };
        assert_eq!(product(&live), expected(seen), "{mode:?} after an in-place rewrite");
        if mode != ParameterArchiveMode::Mmap {
            std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
            assert_eq!(product(&live), expected(&fixture.weights), "{mode:?} after a truncation");
        }
        drop(live);
        std::fs::remove_file(&path).unwrap();
    }
    // The child shares this process's prepared IREE without its lock, as
    // the valgrind rerun does; under that rerun there is no child.
    if std::env::var_os(xplug_fixtures::valgrind::RERUN_ENV).is_some() {
        return;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "archives_changed_under_a_session_keep_their_start_up_bytes_unless_mapped",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env(xplug_fixtures::valgrind::RERUN_ENV, "1")
        .output()
        .unwrap();
    assert_eq!(
        child.status.signal(),
        Some(7),
        "a mapped archive truncated under a session faults with SIGBUS: {:?}\n{}",
        child.status,
        String::from_utf8_lossy(&child.stderr)
    );
}

/// The other tests of this file again, under valgrind (memcheck, IREE's
/// proactor kept off `io_uring`): the parameter index, providers, archive
/// parsers and `io_parameters` module, on success and on every failure,
/// with no invalid access and no definite leak.
#[test]
fn every_test_here_is_memcheck_clean() {
    // The rerun's pipes would count as this process's descriptors.
    let _serial = serial();
    if std::env::var_os(xplug_fixtures::valgrind::RERUN_ENV).is_none() {
        // Made here first: the rerun does not take the lock this process holds.
        fixture();
    }
    let Some(output) = xplug_fixtures::valgrind::rerun_this_test_binary("every_test_here_is_memcheck_clean")
    else {
        return;
    };
    xplug_fixtures::valgrind::assert_clean(&output, 0, "xplug-iree's parameter tests");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("test result: ok. 5 passed"), "the 5 other tests ran under valgrind:\n{stdout}");
}
