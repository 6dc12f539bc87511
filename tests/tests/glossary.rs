//! One word per meaning in public names: the glossary (the `Glossary`
//! section of the docs) gives each term the words that name it in public
//! items and the crates whose items may use them (`Names: `param`
//! (xplug-abi, ...).`); the API baseline (`api/*.txt`, `cargo xtask api`)
//! lists every public item. A public item whose name uses a glossary word
//! in a crate the glossary does not give it, or a word the glossary gives
//! two terms, means the word is used for something else: the test fails
//! naming the item, the word and the term.
//!
//! Words are read from the item's own path (not its signature): segments
//! split at `_` and at lower-to-upper case changes, lower-cased; a word
//! matches a glossary word with a trailing `s`, `ed` or `ing` too
//! (`params`, `checked`). Names the glossary lists as kept from IREE's C
//! header (`Kept as IREE spells them: ...`) are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use xplug_fixtures::workspace_root;

/// A glossary term's name words and the crates whose public items may use
/// them.
#[derive(Debug)]
struct Term {
    term: String,
    words: Vec<String>,
    crates: BTreeSet<String>,
}

/// What the glossary says about names.
#[derive(Debug, Default)]
struct Glossary {
    terms: Vec<Term>,
    /// Item names kept as IREE's C header spells them.
    kept: BTreeSet<String>,
}

/// The text between backquotes in `text`, in order.
fn quoted(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// Reads the glossary from the section `text` (its bullets, each
/// continued on indented lines).
fn parse_glossary(text: &str) -> Result<Glossary, String> {
    let mut glossary = Glossary::default();
    let mut bullets: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("- ") {
            bullets.push(rest.to_owned());
        } else if line.starts_with("  ")
            && let Some(last) = bullets.last_mut()
        {
            last.push(' ');
            last.push_str(line.trim());
        } else if let Some(rest) = line.strip_prefix("Kept as IREE spells them:") {
            glossary.kept.extend(quoted(rest));
        }
    }
    for bullet in bullets {
        let Some(names) = bullet.split("Names: ").nth(1) else { continue };
        let term =
            bullet.split("**").nth(1).ok_or_else(|| format!("a bullet without a **term**: {bullet}"))?;
        let (words, crates) = names
            .split_once('(')
            .and_then(|(words, rest)| rest.split_once(')').map(|(crates, _)| (words, crates)))
            .ok_or_else(|| format!("`{term}`: write `Names: `word` (crate, ...).`"))?;
        let words = quoted(words);
        if words.is_empty() {
            return Err(format!("`{term}`: `Names:` lists no `word`"));
        }
        let crates = crates.split(',').map(|name| name.trim().to_owned()).filter(|name| !name.is_empty());
        glossary.terms.push(Term { term: term.to_owned(), words, crates: crates.collect() });
    }
    if glossary.terms.is_empty() {
        return Err("the glossary gives no term a `Names:` line".to_owned());
    }
    Ok(glossary)
}

/// The words of a path segment: `ParamDeclInfo` → `param`, `decl`, `info`;
/// `load_params` → `load`, `params`.
fn words(segment: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in segment.split('_').filter(|part| !part.is_empty()) {
        let mut word = String::new();
        let mut previous_lower = false;
        for c in part.chars() {
            if c.is_uppercase() && previous_lower && !word.is_empty() {
                words.push(std::mem::take(&mut word).to_lowercase());
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            word.push(c);
        }
        if !word.is_empty() {
            words.push(word.to_lowercase());
        }
    }
    words
}

/// True when `word` is `glossary_word`, or it with a plural or verb ending.
fn is_form_of(word: &str, glossary_word: &str) -> bool {
    word.strip_prefix(glossary_word).is_some_and(|rest| ["", "s", "ed", "ing"].contains(&rest))
}

/// The path a baseline line declares (`pub fn xplug_x::A::b(...)` →
/// `xplug_x::A::b`); `None` for `impl` lines and comments.
fn declared_path(line: &str) -> Option<&str> {
    let line = line.trim();
    if (line.starts_with('#') && !line.starts_with("#[")) || line.starts_with("impl") {
        return None;
    }
    let start = line.find("xplug_")?;
    let rest = &line[start..];
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches(':'))
}

/// Every breach of `glossary` by the items of the baseline `text` of
/// crate `krate` (`xplug-providers`).
fn breaches(glossary: &Glossary, krate: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(path) = declared_path(line) else { continue };
        let own: Vec<&str> = path.split("::").skip(1).collect();
        if own.iter().any(|segment| glossary.kept.contains(*segment)) {
            continue;
        }
        for segment in &own {
            for word in words(segment) {
                for term in &glossary.terms {
                    let Some(matched) = term.words.iter().find(|w| is_form_of(&word, w)) else { continue };
                    if !term.crates.contains(krate) {
                        found.push(format!(
                            "{krate}: `{path}` uses `{matched}`, the glossary's word for \"{}\", which it gives \
                             only to {}; rename the item, or say in the glossary what the word means here",
                            term.term,
                            if term.crates.is_empty() {
                                "no crate's public items".to_owned()
                            } else {
                                term.crates.iter().cloned().collect::<Vec<_>>().join(", ")
                            }
                        ));
                    }
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The `Glossary` section of the first docs page that has one.
fn glossary_section(docs: &Path) -> (PathBuf, String) {
    let mut pages = Vec::new();
    let mut dirs = vec![docs.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut lines = text.lines();
        let Some(heading) = lines.by_ref().find(|line| line.starts_with('#') && line.ends_with(" Glossary"))
        else {
            continue;
        };
        let level = heading.len() - heading.trim_start_matches('#').len();
        let section: Vec<&str> = lines
            .take_while(|line| {
                let depth = line.len() - line.trim_start_matches('#').len();
                !(depth > 0 && depth <= level && line[depth..].starts_with(' '))
            })
            .collect();
        return (page, section.join("\n"));
    }
    panic!("no page under {} has a `Glossary` heading", docs.display());
}

#[test]
fn public_names_use_each_glossary_word_for_its_term_only() {
    let root = workspace_root();
    let (page, section) = glossary_section(&root.join("docs"));
    let glossary = parse_glossary(&section).unwrap_or_else(|error| panic!("{}: {error}", page.display()));
    let mut problems = Vec::new();
    let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
    for term in &glossary.terms {
        for word in &term.words {
            if let Some(other) = owners.insert(word, &term.term) {
                problems
                    .push(format!("the glossary gives `{word}` to both \"{other}\" and \"{}\"", term.term));
            }
        }
    }
    let mut read = 0;
    for entry in std::fs::read_dir(root.join("api")).unwrap() {
        let path = entry.unwrap().path();
        let Some(krate) = path.file_stem().and_then(|stem| stem.to_str()).map(str::to_owned) else {
            continue;
        };
        if path.extension().is_none_or(|ext| ext != "txt") {
            continue;
        }
        read += 1;
        problems.extend(breaches(&glossary, &krate, &std::fs::read_to_string(&path).unwrap()));
    }
    assert!(read >= 5, "only {read} API baselines read from api/");
    assert!(
        problems.is_empty(),
        "public names against {}'s glossary:\n{}",
        page.display(),
        problems.join("\n")
    );
}

const SAMPLE: &str = "\
One word per meaning.

Kept as IREE spells them: `ResolveParamsV0`.

- **load parameter**: a pair given to `load`.
  Names: `param` (xplug-providers, xplug-sdk).
- **IREE parameter**: a value of a parameter archive.
  Names: `parameter` (xplug-iree).
- **check**: the CLI command.
  Names: `check` ().
- **slot**: no names line.
";

#[test]
fn a_word_used_for_another_term_is_a_breach() {
    let glossary = parse_glossary(SAMPLE).unwrap();
    assert_eq!(glossary.terms.len(), 3, "{glossary:#?}");
    let baseline = "\
# The public API of xplug-iree
pub enum xplug_iree::ParameterArchiveMode
pub fn xplug_iree::SessionBuilder::load_params(self) -> Self
pub struct xplug_iree::Comparison
impl core::clone::Clone for xplug_iree::Checked
";
    assert_eq!(
        breaches(&glossary, "xplug-iree", baseline),
        [
            "xplug-iree: `xplug_iree::SessionBuilder::load_params` uses `param`, the glossary's word for \"load \
          parameter\", which it gives only to xplug-providers, xplug-sdk; rename the item, or say in the glossary \
          what the word means here"
        ]
    );
    let baseline = "\
pub fn xplug_providers::AllowList::check(&self) -> bool
pub struct xplug_providers::ResolveParamsV0
pub fn xplug_providers::ParamDeclInfo::clone(&self) -> Self
pub mod xplug_providers::checks
";
    let found = breaches(&glossary, "xplug-providers", baseline);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].starts_with("xplug-providers: `xplug_providers::AllowList::check` uses `check`"),
        "{found:#?}"
    );
    assert!(found[0].contains("no crate's public items"), "{found:#?}");
    assert!(found[1].starts_with("xplug-providers: `xplug_providers::checks` uses `check`"), "{found:#?}");
}

#[test]
fn words_split_at_case_changes_and_underscores() {
    assert_eq!(words("ParamDeclInfo"), ["param", "decl", "info"]);
    assert_eq!(words("load_params"), ["load", "params"]);
    assert_eq!(words("ResolveParamsV0"), ["resolve", "params", "v0"]);
    assert!(is_form_of("checked", "check") && is_form_of("params", "param"));
    assert!(!is_form_of("parameter", "param"));
}
