//! No import circles: within each workspace member, no module imports
//! (with `use crate::…` or `use super::…`), directly or through other
//! modules, a module that imports it back. A module and its own ancestors
//! or descendants do not count (a parent re-exporting its children is how
//! Rust crates are built); test modules at the end of a file do not count
//! either. `docs/architecture.md` says why: a circle means two modules
//! that cannot be understood, or changed, one without the other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use xplug_fixtures::workspace_root;
use xplug_tests::{rust_files_under, workspace_members};

/// Module path (`raw::library`, `` for the crate root) to the file's text.
fn crate_modules(src: &Path) -> BTreeMap<String, String> {
    let mut modules = BTreeMap::new();
    for path in rust_files_under(src) {
        let relative = path.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> =
            relative.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
        if matches!(parts.last().map(String::as_str), Some("lib" | "main" | "mod")) {
            parts.pop();
        }
        // `src/bin/*.rs` are crates of their own.
        if parts.first().is_some_and(|first| first == "bin") {
            continue;
        }
        modules.insert(parts.join("::"), std::fs::read_to_string(&path).unwrap());
    }
    modules
}

/// The text of a file without comment lines and without the test modules
/// that close it (`#[cfg(test)]`, `#[cfg(all(test, loom))]`, ... `mod`).
fn production_code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(") && trimmed.contains("test") {
            let next = lines[index + 1..].iter().map(|line| line.trim_start()).find(|line| !line.is_empty());
            if next.is_some_and(|next| next.starts_with("mod ") || next.starts_with("pub(crate) mod ")) {
                break;
            }
        }
        if !trimmed.starts_with("//") {
            kept.push(*line);
        }
    }
    kept.join("\n")
}

/// The paths a `use` tree names: `a::{b, c::{d, e}}` gives `a::b`,
/// `a::c::d`, `a::c::e` (renames and globs keep their path).
fn expand_use_tree(prefix: &str, tree: &str, into: &mut Vec<String>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap().trim().trim_end_matches("::*");
        into.push(format!("{prefix}{path}"));
        return;
    };
    let head = format!("{prefix}{}", &tree[..open]);
    let inner = &tree[open + 1..tree.rfind('}').expect("a `use` group closes")];
    let (mut depth, mut start) = (0, 0);
    for (at, character) in inner.char_indices() {
        match character {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand_use_tree(&head, &inner[start..at], into);
                start = at + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        expand_use_tree(&head, &inner[start..], into);
    }
}

/// The modules of the crate that `module`'s `use crate::`/`use super::`
/// items name (the longest module prefix of each path).
fn imported_modules(module: &str, code: &str, modules: &BTreeMap<String, String>) -> BTreeSet<String> {
    let own: Vec<&str> = if module.is_empty() { Vec::new() } else { module.split("::").collect() };
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let preceded_by_word =
            rest[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_');
        let item = &rest[at + 4..];
        rest = &rest[at + 4..];
        if preceded_by_word {
            continue;
        }
        let Some(end) = item.find(';') else { break };
        let tree: String = item[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        let base: Vec<&str> = if tree.starts_with("crate::") {
            Vec::new()
        } else if tree.starts_with("super::") {
            own[..own.len().saturating_sub(1)].to_vec()
        } else {
            continue;
        };
        let mut paths = Vec::new();
        expand_use_tree("", tree.split_once("::").unwrap().1, &mut paths);
        for path in paths {
            let mut segments: Vec<&str> = base.clone();
            segments.extend(path.split("::").filter(|segment| !segment.is_empty()));
            if let Some(target) = (1..=segments.len())
                .rev()
                .map(|length| segments[..length].join("::"))
                .find(|candidate| modules.contains_key(candidate))
            {
                found.insert(target);
            }
        }
    }
    found
}

/// True when one module contains the other (or they are the same).
fn nested(a: &str, b: &str) -> bool {
    a == b
        || a.is_empty()
        || b.is_empty()
        || a.starts_with(&format!("{b}::"))
        || b.starts_with(&format!("{a}::"))
}

/// Every circle of `graph`, each as the modules on it, found by walking
/// from each module and coming back to it (graphs here have tens of nodes).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if next == start {
                    let mut circle = path.clone();
                    circle.sort();
                    found.insert(circle);
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    found
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let root = workspace_root();
    let mut problems = Vec::new();
    let mut edges_seen = 0;
    for member in workspace_members(&root) {
        let src = root.join(&member).join("src");
        if !src.is_dir() {
            continue;
        }
        let modules = crate_modules(&src);
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, text) in &modules {
            let imported = imported_modules(module, &production_code(text), &modules);
            let outward: BTreeSet<String> =
                imported.into_iter().filter(|target| !nested(module, target)).collect();
            edges_seen += outward.len();
            graph.insert(module.clone(), outward);
        }
        for circle in circles(&graph) {
            problems.push(format!("{member}: {}", circle.join(" <-> ")));
        }
    }
    // The parser must see the graph at all: the workspace has about a
    // hundred imports between modules that are not parent and child.
    assert!(edges_seen > 50, "only {edges_seen} imports between modules were read");
    assert!(
        problems.is_empty(),
        "import circles (break each by moving what both need to one side):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_parser_sees_a_circle_and_groups() {
    let modules: BTreeMap<String, String> =
        ["", "a", "b", "b::c", "d"].into_iter().map(|name| (name.to_owned(), String::new())).collect();
    let mut paths = Vec::new();
    expand_use_tree("", "{b::{c::{X, Y as Z}, W}, d::*}", &mut paths);
    assert_eq!(paths, ["b::c::X", "b::c::Y", "b::W", "d"]);
    let imported = imported_modules("a", "use crate::{b::c::X, d};\nfn f() {}\nuse super::b::W;", &modules);
    assert_eq!(imported, BTreeSet::from(["b::c".to_owned(), "d".to_owned(), "b".to_owned()]));
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["d".to_owned()])),
        ("d".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]
    .into();
    assert_eq!(circles(&graph), BTreeSet::from([vec!["a".to_owned(), "b".to_owned(), "d".to_owned()]]));
    let code = "use crate::a;\n// use crate::d;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n";
    assert_eq!(production_code(code), "use crate::a;");
}
