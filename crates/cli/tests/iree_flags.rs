//! `xplug run` against the flags of the pinned `iree-run-module`: every flag
//! IREE's tool lists for local devices is named in `xplug run --help` (taken
//! or refused with a reason), every IREE flag the book (docs/src/cli/models.md) says `xplug run`
//! takes is one IREE's tool lists, and the flags answered for IREE
//! (`--dump_task_topologies`, `--list_devices`, `--list_drivers`) print what
//! IREE's tool prints. A flag a new IREE adds fails here until it is taken
//! or refused.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::xplug;
use xplug_fixtures::iree_e2e;

/// Sections of `iree-run-module --help` for GPU drivers, which xplug does
/// not run.
const GPU_SECTIONS: [&str; 3] = ["/cuda/", "/hip/", "/vulkan/"];

/// The flags `iree-run-module --help` lists outside the GPU drivers'
/// sections. The help is a flagfile: a section starts with `# Flags in
/// FILE`, and each flag is a line `--name=default` or `# --name=...`.
fn iree_local_flags(help: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let mut gpu = false;
    for line in help.lines() {
        if let Some(file) = line.strip_prefix("# Flags in ") {
            gpu = GPU_SECTIONS.iter().any(|section| file.contains(section));
            continue;
        }
        let line = line.strip_prefix("# ").unwrap_or(line);
        if let Some(flag) = line.strip_prefix("--")
            && !gpu
        {
            let name: String = flag.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() && flag[name.len()..].starts_with(['=', ' ']) || flag == name {
                flags.insert(name);
            }
        }
    }
    flags
}

/// True when `text` names `--flag` as a whole flag (not a prefix of a
/// longer one).
fn names_flag(text: &str, flag: &str) -> bool {
    let needle = format!("--{flag}");
    text.match_indices(&needle).any(|(at, _)| {
        !text[at + needle.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn iree_help() -> (iree_e2e::IreeTools, String) {
    let tools = iree_e2e::toolchain(&xplug_fixtures::workspace_root()).expect("IREE is ready");
    let output = Command::new(&tools.run_module).arg("--help").output().expect("iree-run-module runs");
    (tools, String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn every_local_flag_of_iree_run_module_is_taken_or_refused_by_name() {
    let (_, help) = iree_help();
    let flags = iree_local_flags(&help);
    // The parse found the sections: flags of every kind are there.
    for expected in ["module", "function", "task_topology_group_count", "device_allocator", "flagfile"] {
        assert!(flags.contains(expected), "--{expected} not found in iree-run-module --help: {flags:?}");
    }
    assert!(!flags.iter().any(|flag| flag.starts_with("cuda_")), "GPU sections are left out");
    let ours = xplug(&["run", "--help"]);
    assert!(ours.status.success());
    let ours = String::from_utf8_lossy(&ours.stdout);
    let missing: Vec<&String> = flags.iter().filter(|flag| !names_flag(&ours, flag)).collect();
    assert!(
        missing.is_empty(),
        "iree-run-module flags that `xplug run --help` does not name (take each with IREE's meaning \
         or refuse it with a reason in crates/cli/src/iree_flags.rs): {missing:?}"
    );
    // Every refused flag is refused by name, with exit code 2: the help's
    // refused lines are `--a, --b: reason`.
    let mut refused = 0;
    for line in ours.lines() {
        let Some((names, _)) = line.trim_start().split_once(": ") else { continue };
        for name in names.split(", ").filter_map(|name| name.strip_prefix("--")) {
            if !flags.contains(name) || !names.starts_with("--") {
                continue;
            }
            refused += 1;
            let output = xplug(&["run", "--module=m.vmfb", &format!("--{name}=1")]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "--{name}: {stderr}");
            assert!(stderr.contains(&format!("--{name}: ")), "--{name} is named: {stderr}");
        }
    }
    assert!(refused >= 10, "the help lists {refused} refused flags");
}

#[test]
fn the_readme_names_only_flags_both_tools_take() {
    let (_, help) = iree_help();
    let flags = iree_local_flags(&help);
    let readme =
        std::fs::read_to_string(xplug_fixtures::workspace_root().join("docs/src/cli/models.md")).unwrap();
    let start =
        readme.find("IREE flags `xplug run` takes").expect("the book's `xplug run` page lists IREE's flags");
    // The paragraph ends at a blank line or with the page.
    let paragraph = &readme[start..start + readme[start..].find("\n\n").unwrap_or(readme.len() - start)];
    // Up to where the page turns to xplug's own flags.
    let paragraph = paragraph.split("xplug adds").next().unwrap();
    let ours = String::from_utf8_lossy(&xplug(&["run", "--help"]).stdout).into_owned();
    let mut named = 0;
    for (at, _) in paragraph.match_indices("`--") {
        let name: String =
            paragraph[at + 3..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if paragraph[at + 3 + name.len()..].starts_with('-') {
            // xplug's own flags are spelt with `-` (`--list-imports`).
            continue;
        }
        if paragraph[at + 3 + name.len()..].starts_with('*') {
            // A family (`--task_*`): IREE has flags of it.
            assert!(flags.iter().any(|flag| flag.starts_with(&name)), "the book's `--{name}*`: none in IREE");
            continue;
        }
        named += 1;
        assert!(
            flags.contains(&name),
            "the book names `--{name}` as IREE's; iree-run-module does not list it"
        );
        assert!(names_flag(&ours, &name), "the book names `--{name}`; `xplug run --help` does not");
    }
    assert!(named > 20, "the book's paragraph names {named} flags");
}

#[test]
fn flags_answered_for_iree_print_what_iree_prints() {
    let (tools, _) = iree_help();
    for flags in [
        &["--dump_task_topologies", "--task_topology_group_count=2"][..],
        &["--dump_task_topologies"],
        &["--list_devices"],
    ] {
        let theirs = Command::new(&tools.run_module).args(flags).output().unwrap();
        let mut all = vec!["run"];
        all.extend_from_slice(flags);
        let ours = xplug(&all);
        assert_eq!(ours.status.code(), theirs.status.code(), "{flags:?}");
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "{flags:?}: the same text"
        );
    }
    // IREE's parser judges the task flags: its message names the bad value.
    let root = xplug_fixtures::workspace_root();
    let prepared =
        iree_e2e::prepare(&root, xplug_fixtures::plugins::PluginProfile::Debug).expect("IREE is ready");
    let module = iree_e2e::compile(&root, &prepared.tools, iree_e2e::MUL_CALL, &prepared.work).unwrap();
    let output = xplug(&[
        "run",
        &format!("--module={}", module.display()),
        "--device=local-task",
        "--task_topology_mode=bogus",
        "--function=mul",
        "--input=1xf32=1",
        "--input=1xf32=2",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--task_topology_mode=bogus"), "{stderr}");
}

#[test]
fn the_flag_parse_reads_sections_and_forms() {
    let help = "# Flags in c/runtime/src/iree/task/api.c\n--task_x=0\n# --task_list=...\n\
                # Flags in c/runtime/src/iree/hal/drivers/cuda/registration/driver_module.c\n--cuda_y=1\n\
                # Flags in c/runtime/src/iree/tooling/device_util.c\n# --list_drivers\n";
    assert_eq!(
        iree_local_flags(help).into_iter().collect::<Vec<_>>(),
        ["list_drivers", "task_list", "task_x"]
    );
    assert!(names_flag("a --task_x, b", "task_x") && !names_flag("--task_xy", "task_x"));
}
