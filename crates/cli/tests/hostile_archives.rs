//! The hostile parameter archives of `xplug_fixtures::archives` (each
//! format: offsets that wrap, lengths past the end, huge counts,
//! overlapping entries, truncated headers, bad JSON or metadata, duplicate
//! keys) given to a program that reads one parameter, run by `xplug run`
//! in every parameter mode and by `iree-run-module` in its modes: xplug
//! never crashes, refuses what would make it read outside the archive
//! with its own check, and otherwise fails where IREE fails and prints
//! what IREE prints.

mod common;

use std::process::{Command, Output};

use common::{text, xplug};
use xplug_fixtures::archives::{self, Verdict};
use xplug_fixtures::iree_e2e;
use xplug_fixtures::plugins::PluginProfile;

#[test]
fn hostile_archives_are_refused_or_read_as_iree_reads_them_in_every_mode() {
    let root = xplug_fixtures::workspace_root();
    let prepared = iree_e2e::prepare(&root, PluginProfile::Debug).expect("IREE is ready");
    let work = prepared.work.join("hostile-archives");
    std::fs::create_dir_all(&work).unwrap();
    let module = work.join("mul_weights.vmfb");
    iree_e2e::compile_file(&prepared.tools, &root.join("tests/iree/mul_weights.mlir"), &module)
        .expect("mul_weights compiles");
    let (a, weights) = iree_e2e::inputs(1000);
    let a_npy = work.join("a.npy");
    std::fs::write(&a_npy, xplug_npy::encode_f32(&a)).unwrap();
    let plugin = prepared.library("c_sample").display().to_string();
    let corpus = archives::hostile_corpus("weights", &weights);
    let (mut refused, mut iree_crashed, mut agreed) = (0, 0, 0);
    for case in &corpus {
        let path = work.join(&case.file_name);
        std::fs::write(&path, &case.bytes).unwrap();
        let args = [
            format!("--module={}", module.display()),
            format!("--parameters=model={}", path.display()),
            format!("--input=@{}", a_npy.display()),
            format!("--executable_plugin={plugin}"),
            "--device=local-sync".to_owned(),
        ];
        let iree = |mode: &str| -> Output {
            Command::new(&prepared.tools.run_module)
                .args(&args)
                .arg(format!("--parameter_mode={mode}"))
                .output()
                .expect("iree-run-module runs")
        };
        let (iree_file, iree_preload) = (iree("file"), iree("preload"));
        for mode in ["mmap", "file", "preload"] {
            let mut all: Vec<&str> = vec!["run"];
            all.extend(args.iter().map(String::as_str));
            let mode_flag = format!("--parameter_mode={mode}");
            all.push(&mode_flag);
            let ours = xplug(&all);
            let what = format!("{} in mode {mode}: xplug {}", case.name, text(&ours.stderr));
            assert!(ours.status.code().is_some(), "{what}: xplug died by a signal ({:?})", ours.status);
            // IREE has no mmap mode: its default (file) judges xplug's.
            let judge = if mode == "preload" { &iree_preload } else { &iree_file };
            if !ours.status.success() {
                assert!(ours.stdout.is_empty(), "{what}: printed {}", text(&ours.stdout));
                assert!(text(&ours.stderr).contains(&path.display().to_string()), "{what}: names no archive");
            }
            match case.verdict {
                Verdict::Refused => {
                    assert!(!ours.status.success(), "{what}: accepted");
                    assert!(text(&ours.stderr).contains("is damaged"), "{what}: not xplug's check");
                    refused += 1;
                }
                Verdict::AsIree if judge.status.code().is_none() => {
                    // IREE crashed on it: xplug must have refused it.
                    assert!(!ours.status.success(), "{what}: accepted what crashes IREE");
                    iree_crashed += 1;
                }
                Verdict::AsIree => {
                    assert_eq!(
                        ours.status.success(),
                        judge.status.success(),
                        "{what}; iree-run-module {}",
                        text(&judge.stderr)
                    );
                    assert_eq!(text(&ours.stdout), text(&judge.stdout), "{what}");
                    agreed += 1;
                }
            }
        }
    }
    eprintln!(
        "{} archives x 3 modes: {refused} refused by xplug's check, {iree_crashed} crashed \
         iree-run-module and were refused, {agreed} as iree-run-module",
        corpus.len()
    );
    // The corpus exercises each outcome.
    assert!(refused > 0 && agreed > 0, "{refused} {agreed}");
    // Well-formed archives of each format print the product.
    for good in ["irpa-good", "safetensors-good", "gguf-good"] {
        assert!(corpus.iter().any(|case| case.name == good), "{good}");
    }
}
