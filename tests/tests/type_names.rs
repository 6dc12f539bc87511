//! Public type names say one thing across the workspace: no two members
//! declare a `pub` struct, enum, union, trait or type alias of the same
//! name in their `src/`, so a name in a message, a doc or a review points
//! at one type. `Error` is the exception, one per crate by design (each
//! crate's error enum, docs/src/design/internals.md#errors).

use std::collections::{BTreeMap, BTreeSet};

use xplug_fixtures::workspace_root;
use xplug_tests::{rust_files_under, workspace_members};

/// Names every crate may declare.
const ONE_PER_CRATE: [&str; 1] = ["Error"];

/// The name `line` declares as a public type, if it does.
fn public_type_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("pub ")?;
    let rest =
        ["struct ", "enum ", "union ", "trait ", "type "].iter().find_map(|kind| rest.strip_prefix(kind))?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let name = &rest[..end];
    name.starts_with(|c: char| c.is_ascii_uppercase()).then_some(name)
}

#[test]
fn public_type_names_are_unique_across_the_workspace() {
    let root = workspace_root();
    let mut declared: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for member in workspace_members(&root) {
        let src = root.join(&member).join("src");
        if !src.is_dir() {
            continue;
        }
        for path in rust_files_under(&src) {
            let text = std::fs::read_to_string(&path).unwrap();
            for name in text.lines().filter_map(public_type_name) {
                let place = path.strip_prefix(&root).unwrap().display().to_string();
                declared.entry(name.to_owned()).or_default().insert(format!("{member} ({place})"));
            }
        }
    }
    assert!(declared.len() > 100, "only {} public type names were read", declared.len());
    let clashes: Vec<String> = declared
        .iter()
        .filter(|(name, places)| {
            let members: BTreeSet<&str> =
                places.iter().map(|place| place.split(' ').next().unwrap()).collect();
            members.len() > 1 && !ONE_PER_CRATE.contains(&name.as_str())
        })
        .map(|(name, places)| format!("{name}: {}", places.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect();
    assert!(
        clashes.is_empty(),
        "public type names declared by several members (rename one):\n{}",
        clashes.join("\n")
    );
}

#[test]
fn the_scan_reads_declarations_and_nothing_else() {
    assert_eq!(public_type_name("pub struct Report(Box<dyn Error>);"), Some("Report"));
    assert_eq!(public_type_name("    pub enum Stage {"), Some("Stage"));
    assert_eq!(public_type_name("pub trait Loader: Send + Sync {"), Some("Loader"));
    assert_eq!(public_type_name("pub type ImportFn = unsafe extern \"C\" fn();"), Some("ImportFn"));
    assert_eq!(public_type_name("pub(crate) struct Hidden;"), None);
    assert_eq!(public_type_name("pub fn structure() {}"), None);
    assert_eq!(public_type_name("// pub struct Commented;"), None);
}
