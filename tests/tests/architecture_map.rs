//! `docs/src/design/architecture.md` matches the code file for file: its "File by
//! file" section has one `### `DIR` (package)` heading per workspace member
//! and, under it, one table row per `.rs` file in `DIR/src`; a file added,
//! moved or deleted without the map fails here.

use std::collections::BTreeSet;
use xplug_fixtures::workspace_root;
use xplug_tests::{rust_files_under, workspace_members};

/// The "File by file" section: each heading's directory and the files its
/// table lists (without the `src/` prefix).
fn mapped_files(architecture: &str) -> Vec<(String, BTreeSet<String>)> {
    let start = architecture
        .find("\n## File by file\n")
        .expect("docs/src/design/architecture.md has a File by file section");
    let section = &architecture[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];
    let mut crates: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in section.lines() {
        if let Some(heading) = line.strip_prefix("### `") {
            let dir = heading.split('`').next().unwrap().to_owned();
            crates.push((dir, BTreeSet::new()));
        } else if let Some(row) = line.strip_prefix("| `src/") {
            let file = row.split('`').next().unwrap().to_owned();
            let (dir, files) =
                crates.last_mut().unwrap_or_else(|| panic!("a file row before any heading: {line}"));
            assert!(files.insert(file), "`{dir}`: a file is listed twice: {line}");
        }
    }
    crates
}

#[test]
fn the_architecture_map_lists_every_source_file_of_every_member() {
    let root = workspace_root();
    let architecture = std::fs::read_to_string(root.join("docs/src/design/architecture.md")).unwrap();
    let mapped = mapped_files(&architecture);

    let headings: BTreeSet<String> = mapped.iter().map(|(dir, _)| dir.clone()).collect();
    assert_eq!(headings.len(), mapped.len(), "a member has two headings");
    let members: BTreeSet<String> = workspace_members(&root).into_iter().collect();
    let unmapped: Vec<_> = members.difference(&headings).collect();
    let stale: Vec<_> = headings.difference(&members).collect();
    assert!(
        unmapped.is_empty(),
        "workspace members without a heading in docs/src/design/architecture.md: {unmapped:?}"
    );
    assert!(
        stale.is_empty(),
        "headings in docs/src/design/architecture.md that are not workspace members: {stale:?}"
    );

    let mut problems = Vec::new();
    for (dir, listed) in &mapped {
        let src = root.join(dir).join("src");
        let present: BTreeSet<String> = rust_files_under(&src)
            .iter()
            .map(|path| path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/"))
            .collect();
        for missing in present.difference(listed) {
            problems.push(format!("{dir}/src/{missing} is not in the map"));
        }
        for gone in listed.difference(&present) {
            problems.push(format!("{dir}/src/{gone} is in the map but not in the tree"));
        }
    }
    assert!(problems.is_empty(), "docs/src/design/architecture.md, File by file:\n{}", problems.join("\n"));
}
