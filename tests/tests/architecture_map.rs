//! `docs/architecture.md` matches the code file for file: its "File by
//! file" section has one `### `DIR` (package)` heading per workspace member
//! and, under it, one table row per `.rs` file in `DIR/src`; a file added,
//! moved or deleted without the map fails here.

use std::collections::BTreeSet;
use std::path::Path;

use xplug_fixtures::workspace_root;

/// The `.rs` files under `dir`, as paths relative to it with `/`.
fn rust_files(dir: &Path, under: &Path, into: &mut BTreeSet<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, under, into);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            let relative = path.strip_prefix(under).unwrap();
            into.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The members of the workspace, from the root manifest's `members` list.
fn workspace_members(manifest: &str) -> BTreeSet<String> {
    let start = manifest.find("\nmembers = [").expect("the root manifest lists its members");
    let list = &manifest[start..];
    let list = &list[..list.find(']').expect("the members list ends")];
    list.lines()
        .filter_map(|line| line.trim().strip_prefix('"')?.split('"').next().map(str::to_owned))
        .collect()
}

/// The "File by file" section: each heading's directory and the files its
/// table lists (without the `src/` prefix).
fn mapped_files(architecture: &str) -> Vec<(String, BTreeSet<String>)> {
    let start =
        architecture.find("\n## File by file\n").expect("docs/architecture.md has a File by file section");
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
    let architecture = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mapped = mapped_files(&architecture);

    let headings: BTreeSet<String> = mapped.iter().map(|(dir, _)| dir.clone()).collect();
    assert_eq!(headings.len(), mapped.len(), "a member has two headings");
    let members = workspace_members(&manifest);
    assert!(members.len() > 20, "{} members read from Cargo.toml", members.len());
    let unmapped: Vec<_> = members.difference(&headings).collect();
    let stale: Vec<_> = headings.difference(&members).collect();
    assert!(unmapped.is_empty(), "workspace members without a heading in docs/architecture.md: {unmapped:?}");
    assert!(stale.is_empty(), "headings in docs/architecture.md that are not workspace members: {stale:?}");

    let mut problems = Vec::new();
    for (dir, listed) in &mapped {
        let src = root.join(dir).join("src");
        let mut present = BTreeSet::new();
        rust_files(&src, &src, &mut present);
        for missing in present.difference(listed) {
            problems.push(format!("{dir}/src/{missing} is not in the map"));
        }
        for gone in listed.difference(&present) {
            problems.push(format!("{dir}/src/{gone} is in the map but not in the tree"));
        }
    }
    assert!(problems.is_empty(), "docs/architecture.md, File by file:\n{}", problems.join("\n"));
}
