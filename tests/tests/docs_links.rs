//! Keeps the citations of the book honest: every `docs/<path>.md#<anchor>`
//! written anywhere in the repository (code comments cite chapters as
//! `docs/src/reference/abi.md#query`) must name a page that exists and a
//! heading that page has. Citations of the old out-of-repo specification
//! are refused. The links between the book's own pages are checked on the
//! built HTML by `cargo xtask book`, which CI runs.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use xplug_fixtures::workspace_root;

/// Extensions of the files scanned for citations.
const SCANNED: &[&str] = &["rs", "c", "h", "toml", "md", "sh", "yml", "yaml", "txt"];

/// The anchor GitHub derives from a heading's text: lower case, letters,
/// digits, `-` and `_` kept, spaces turned into `-`, everything else dropped.
fn slug(heading: &str) -> String {
    let mut out = String::new();
    for c in heading.trim().chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if c == ' ' {
            out.push('-');
        } else if c == '-' || c == '_' {
            out.push(c);
        }
    }
    out
}

/// The anchors of a Markdown page, from its ATX headings outside fenced code
/// blocks. A heading that appears twice is an error: its second anchor would
/// silently get a suffix.
fn anchors(page: &Path, text: &str) -> Result<BTreeSet<String>, String> {
    let mut found = BTreeSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let anchor = slug(&line[hashes..]);
        if !found.insert(anchor.clone()) {
            return Err(format!("{}: two headings give the anchor `#{anchor}`", page.display()));
        }
    }
    Ok(found)
}

/// True for the characters of an anchor.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// True for the characters of a page's path below `docs/`.
fn is_path_char(c: char) -> bool {
    is_name_char(c) || c == '/'
}

/// The longest prefix of `text` made of name characters.
fn name_prefix(text: &str) -> &str {
    let end = text.find(|c| !is_name_char(c)).unwrap_or(text.len());
    &text[..end]
}

/// A reference to a page of `docs/`, with its anchor when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Citation {
    page: String,
    anchor: Option<String>,
}

/// Every `docs/<page>.md[#<anchor>]` in `text`.
fn citations(text: &str) -> Vec<Citation> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("docs/") {
        rest = &rest[at + "docs/".len()..];
        let end = rest.find(|c| !is_path_char(c)).unwrap_or(rest.len());
        let page = &rest[..end];
        let Some(after) = rest[page.len()..].strip_prefix(".md") else { continue };
        if page.is_empty() || after.starts_with(is_name_char) {
            continue;
        }
        let anchor = after.strip_prefix('#').map(name_prefix).filter(|a| !a.is_empty());
        found.push(Citation { page: page.to_owned(), anchor: anchor.map(str::to_owned) });
    }
    found
}

/// The scanned files under `dir`, skipping build output and hidden folders.
fn scanned_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()));
    for entry in entries {
        let entry = entry.expect("directory entry");
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            if name != "target" && !name.starts_with('.') {
                scanned_files(&path, out);
            }
        } else if kind.is_file()
            && path.extension().and_then(|e| e.to_str()).is_some_and(|e| SCANNED.contains(&e))
        {
            out.push(path);
        }
    }
}

/// The pages under `docs/` (the book's chapters), keyed by their path
/// below `docs/` without `.md`, with their anchors.
fn docs_pages(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let docs = root.join("docs");
    let mut files = Vec::new();
    scanned_files(&docs, &mut files);
    let mut pages = BTreeMap::new();
    for path in files.into_iter().filter(|path| path.extension().is_some_and(|e| e == "md")) {
        let text = fs::read_to_string(&path).expect("docs pages are UTF-8");
        let name = path.strip_prefix(&docs).expect("below docs/").with_extension("");
        let name = name.to_string_lossy().into_owned();
        pages.insert(name, anchors(&path, &text).unwrap_or_else(|error| panic!("{error}")));
    }
    pages
}

/// Why `page#anchor` does not resolve, if it does not.
fn check(pages: &BTreeMap<String, BTreeSet<String>>, page: &str, anchor: Option<&str>) -> Option<String> {
    let Some(anchors) = pages.get(page) else {
        return Some(format!("there is no page docs/{page}.md"));
    };
    match anchor {
        Some(anchor) if !anchors.contains(anchor) => Some(format!(
            "docs/{page}.md has no heading with anchor `#{anchor}`; its anchors: {}",
            anchors.iter().map(|a| format!("#{a}")).collect::<Vec<_>>().join(", ")
        )),
        _ => None,
    }
}

#[test]
fn every_docs_citation_in_the_repository_resolves() {
    let root = workspace_root();
    let pages = docs_pages(&root);
    let mut files = Vec::new();
    scanned_files(&root, &mut files);
    // The old specification's name, assembled so this file does not cite it.
    let old_spec = "spec".to_uppercase();
    let mut problems = Vec::new();
    let mut cited = 0;
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else { continue };
        let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        for (number, line) in text.lines().enumerate() {
            for citation in citations(line) {
                cited += 1;
                if let Some(problem) = check(&pages, &citation.page, citation.anchor.as_deref()) {
                    problems.push(format!("{shown}:{}: {problem}", number + 1));
                }
            }
            if line.contains(&format!("{old_spec} \u{a7}")) || line.contains(&format!("{old_spec}.md")) {
                problems.push(format!(
                    "{shown}:{}: cites the out-of-repo specification; cite docs/<page>.md#<section>",
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "broken documentation citations:\n{}", problems.join("\n"));
    // The code cites the docs; a scanner that finds nothing is broken.
    assert!(cited > 0, "no docs/<page>.md citation found under {}", root.display());
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug(" Layout summary"), "layout-summary");
    assert_eq!(slug(" Divergences from IREE"), "divergences-from-iree");
    assert_eq!(slug(" Step 1: find the `query`"), "step-1-find-the-query");
    assert_eq!(slug(" snake_case and-dash"), "snake_case-and-dash");
}

#[test]
fn headings_give_anchors_and_duplicates_are_refused() {
    let page = Path::new("page.md");
    let text = "# Title\n\n## Load checks\n```text\n## not a heading\n```\n#no-space\n### Sub part\n";
    let found = anchors(page, text).unwrap();
    assert_eq!(found, ["load-checks", "sub-part", "title"].map(str::to_owned).into());
    let error = anchors(page, "## Same\n## Same\n").unwrap_err();
    assert!(error.contains("#same"), "{error}");
}

#[test]
fn citations_are_found_with_and_without_anchors() {
    let text = "see docs/src/reference/abi.md#query and `docs/src/reference/specs.md`, not docs/<page>.md or docs/src/reference/abi.mdx";
    assert_eq!(
        citations(text),
        [
            Citation { page: "src/reference/abi".into(), anchor: Some("query".into()) },
            Citation { page: "src/reference/specs".into(), anchor: None },
        ]
    );
}

#[test]
fn missing_pages_and_anchors_are_reported() {
    let pages: BTreeMap<String, BTreeSet<String>> =
        [("abi".to_owned(), ["query".to_owned()].into())].into_iter().collect();
    assert_eq!(check(&pages, "abi", Some("query")), None);
    assert_eq!(check(&pages, "abi", None), None);
    assert!(check(&pages, "abi", Some("nope")).unwrap().contains("no heading with anchor `#nope`"));
    let problem = check(&pages, "missing", None).unwrap();
    assert!(problem.starts_with("there is no page docs/") && problem.ends_with("missing.md"), "{problem}");
}
