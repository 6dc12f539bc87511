//! No import circles: within each crate of each workspace member, no module
//! reaches (directly or through other modules) a module that reaches it
//! back. The graph is built from every path in the code, read with `syn`:
//! `use` trees (groups, renames and globs included), every path in
//! expressions, types, patterns and attributes (`visit_path`), the
//! `crate::…`/`super::…` paths inside macro bodies, and names taken
//! through a module's `use` re-exports, so `crate::Error` counts as an edge
//! to the module that defines `Error`. A module and its own ancestors or
//! descendants do not count (a parent re-exporting its children is how Rust
//! crates are built); `#[cfg(test)]` items do not count either. A `super::`
//! that climbs above the crate root fails the test. `docs/src/design/architecture.md`
//! says why: a circle means two modules that cannot be understood, or
//! changed, one without the other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::Visit;
use xplug_fixtures::workspace_root;
use xplug_tests::{rust_files_under, workspace_members};

/// A module path (`raw::library`; empty for the crate root).
type Module = Vec<String>;

/// Where a path was read: the file (relative to the member) and line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Location {
    file: PathBuf,
    line: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// One path as written in a module, before resolution.
#[derive(Debug)]
struct Reference {
    /// The segments, `crate`, `super` and `self` included.
    segments: Vec<String>,
    location: Location,
}

/// What one module's code says: its `use` bindings, the names it defines
/// and every path it writes.
#[derive(Debug, Default)]
struct ModuleCode {
    /// Local name to the (still relative) path a `use` binds it to.
    uses: BTreeMap<String, Vec<String>>,
    /// Paths of `use …::*` items.
    globs: Vec<Vec<String>>,
    /// Items this module defines (types, functions, constants, macros, ...).
    defines: BTreeSet<String>,
    /// Child modules.
    children: BTreeSet<String>,
    /// Every path written in the module, `use` trees included.
    references: Vec<Reference>,
}

/// One crate's modules, read from its root file by following `mod` items.
#[derive(Debug, Default)]
struct Crate {
    modules: BTreeMap<Module, ModuleCode>,
    /// Files reached (including those of `#[cfg(test)]` modules).
    files: BTreeSet<PathBuf>,
}

/// The problems of one crate: circles (the modules of each strongly
/// connected component, with every edge inside it) and paths that cannot
/// be resolved.
#[derive(Debug, Default)]
struct Findings {
    circles: Vec<Circle>,
    unresolved: Vec<String>,
    edges: usize,
}

#[derive(Debug)]
struct Circle {
    modules: Vec<String>,
    /// `from -> to` with where each such path is written.
    edges: Vec<(String, String, Vec<Location>)>,
}

impl std::fmt::Display for Circle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "circle {{{}}}:", self.modules.join(", "))?;
        for (from, to, locations) in &self.edges {
            let shown: Vec<String> = locations.iter().take(4).map(ToString::to_string).collect();
            let more = locations.len().saturating_sub(4);
            let more = if more > 0 { format!(" (+{more} more)") } else { String::new() };
            writeln!(f, "    {from} -> {to}: {}{more}", shown.join(", "))?;
        }
        Ok(())
    }
}

fn display(module: &[String]) -> String {
    if module.is_empty() { "crate".to_owned() } else { module.join("::") }
}

/// True when a `#[cfg(...)]` among `attrs` holds only in test builds
/// (`test`, or `all(...)` with `test` in it).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    fn requires_test(meta: &syn::Meta) -> bool {
        match meta {
            syn::Meta::Path(path) => path.is_ident("test"),
            syn::Meta::List(list) if list.path.is_ident("all") => list
                .parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                .is_ok_and(|inner| inner.iter().any(requires_test)),
            syn::Meta::List(list) if list.path.is_ident("any") => list
                .parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                .is_ok_and(|inner| !inner.is_empty() && inner.iter().all(requires_test)),
            _ => false,
        }
    }
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.parse_args::<syn::Meta>().is_ok_and(|m| requires_test(&m))
    })
}

/// The `#[path = "..."]` of a `mod` item.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find(|attr| attr.path().is_ident("path")).and_then(|attr| match &attr.meta {
        syn::Meta::NameValue(syn::MetaNameValue {
            value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(text), .. }),
            ..
        }) => Some(text.value()),
        _ => None,
    })
}

/// The paths a `use` tree names, each with the local name it binds
/// (`None` for a glob) and its line: `a::{b, c::{d as e}, f::*}` gives
/// `a::b` (`b`), `a::c::d` (`e`), `a::f` (glob).
fn use_paths(prefix: &[String], tree: &syn::UseTree, into: &mut Vec<(Vec<String>, Option<String>, usize)>) {
    let joined = |name: &syn::Ident| {
        let mut path = prefix.to_vec();
        path.push(name.to_string());
        path
    };
    match tree {
        syn::UseTree::Path(path) => use_paths(&joined(&path.ident), &path.tree, into),
        syn::UseTree::Name(name) if name.ident == "self" => {
            into.push((prefix.to_vec(), prefix.last().cloned(), name.ident.span().start().line));
        }
        syn::UseTree::Name(name) => {
            into.push((joined(&name.ident), Some(name.ident.to_string()), name.ident.span().start().line));
        }
        syn::UseTree::Rename(rename) => {
            let path = if rename.ident == "self" { prefix.to_vec() } else { joined(&rename.ident) };
            into.push((path, Some(rename.rename.to_string()), rename.ident.span().start().line));
        }
        syn::UseTree::Glob(glob) => into.push((prefix.to_vec(), None, glob.star_token.span.start().line)),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_paths(prefix, tree, into);
            }
        }
    }
}

/// Reads one module's items (a file's or an inline `mod`'s).
struct Reader<'a> {
    krate: &'a mut Crate,
    sources: &'a dyn Fn(&Path) -> Option<String>,
    /// Directory of the source files, for locations.
    base: &'a Path,
    problems: &'a mut Vec<String>,
}

impl Reader<'_> {
    /// Reads the file `file` as module `module`; `child_dir` is where its
    /// `mod x;` children live.
    fn read_file(&mut self, module: Module, file: &Path, child_dir: &Path) {
        self.krate.files.insert(file.to_path_buf());
        let Some(text) = (self.sources)(file) else {
            self.problems.push(format!("{}: cannot be read", file.display()));
            return;
        };
        let parsed = match syn::parse_file(&text) {
            Ok(parsed) => parsed,
            Err(error) => {
                self.problems.push(format!("{}: {error}", file.display()));
                return;
            }
        };
        self.read_items(module, &parsed.items, file, child_dir, false);
    }

    fn read_items(
        &mut self,
        module: Module,
        items: &[syn::Item],
        file: &Path,
        child_dir: &Path,
        inline: bool,
    ) {
        let relative = file.strip_prefix(self.base).unwrap_or(file).to_path_buf();
        let mut code = ModuleCode::default();
        let mut children = Vec::new();
        for item in items {
            let attrs: &[syn::Attribute] = match item {
                syn::Item::Mod(item) => &item.attrs,
                syn::Item::Use(item) => &item.attrs,
                syn::Item::Fn(item) => &item.attrs,
                syn::Item::Impl(item) => &item.attrs,
                syn::Item::Struct(item) => &item.attrs,
                syn::Item::Enum(item) => &item.attrs,
                syn::Item::Const(item) => &item.attrs,
                syn::Item::Static(item) => &item.attrs,
                syn::Item::Trait(item) => &item.attrs,
                syn::Item::Type(item) => &item.attrs,
                syn::Item::Macro(item) => &item.attrs,
                syn::Item::Union(item) => &item.attrs,
                _ => &[],
            };
            let is_test = test_only(attrs);
            if let syn::Item::Mod(item) = item {
                // A test module's files are reached, but not read.
                children.push((item, is_test));
                if !is_test {
                    code.children.insert(item.ident.to_string());
                }
                continue;
            }
            if is_test {
                continue;
            }
            match item {
                syn::Item::Use(item) => {
                    let mut paths = Vec::new();
                    use_paths(&[], &item.tree, &mut paths);
                    for (path, name, line) in paths {
                        match name {
                            Some(name) if name != "_" => {
                                code.uses.insert(name, path.clone());
                            }
                            Some(_) => {}
                            None => code.globs.push(path.clone()),
                        }
                        code.references.push(Reference {
                            segments: path,
                            location: Location { file: relative.clone(), line },
                        });
                    }
                    continue;
                }
                syn::Item::Fn(item) => {
                    code.defines.insert(item.sig.ident.to_string());
                }
                syn::Item::Struct(item) => {
                    code.defines.insert(item.ident.to_string());
                }
                syn::Item::Enum(item) => {
                    code.defines.insert(item.ident.to_string());
                }
                syn::Item::Union(item) => {
                    code.defines.insert(item.ident.to_string());
                }
                syn::Item::Const(item) => {
                    code.defines.insert(item.ident.to_string());
                }
                syn::Item::Static(item) => {
                    code.defines.insert(item.ident.to_string());
                }
                syn::Item::Trait(item) => {
                    code.defines.insert(item.ident.to_string());
                }
                syn::Item::Type(item) => {
                    code.defines.insert(item.ident.to_string());
                }
                syn::Item::Macro(item) => {
                    if let Some(ident) = &item.ident {
                        code.defines.insert(ident.to_string());
                    }
                }
                _ => {}
            }
            let mut visitor = PathVisitor { file: &relative, references: &mut code.references };
            visitor.visit_item(item);
        }
        self.krate.modules.insert(module.clone(), code);
        for (item, is_test) in children {
            let name = item.ident.to_string();
            let mut child = module.clone();
            child.push(name.clone());
            let explicit = path_attribute(&item.attrs);
            if let Some((_, items)) = &item.content {
                if is_test {
                    continue;
                }
                let dir = match &explicit {
                    Some(path) => child_dir.join(path),
                    None => child_dir.join(&name),
                };
                self.read_items(child, items, file, &dir, true);
                continue;
            }
            let (child_file, grandchildren) = match explicit {
                Some(path) => {
                    // Relative to the file's directory at a file's top level,
                    // to the inline module's directory inside one.
                    let relative_to = if inline { child_dir } else { file.parent().unwrap_or(child_dir) };
                    let path = relative_to.join(path);
                    let dir = path.parent().unwrap_or(child_dir).to_path_buf();
                    (path, dir)
                }
                None => {
                    let flat = child_dir.join(format!("{name}.rs"));
                    if (self.sources)(&flat).is_some() {
                        (flat, child_dir.join(&name))
                    } else {
                        (child_dir.join(&name).join("mod.rs"), child_dir.join(&name))
                    }
                }
            };
            if is_test {
                self.mark_reached(&child_file, &grandchildren);
            } else {
                self.read_file(child, &child_file, &grandchildren);
            }
        }
    }

    /// Marks a test module's file, and the files of its own `mod` items,
    /// as reached without reading their paths.
    fn mark_reached(&mut self, file: &Path, child_dir: &Path) {
        self.krate.files.insert(file.to_path_buf());
        let Some(parsed) = (self.sources)(file).and_then(|text| syn::parse_file(&text).ok()) else { return };
        for item in parsed.items {
            if let syn::Item::Mod(item) = item
                && item.content.is_none()
            {
                let name = item.ident.to_string();
                let flat = child_dir.join(format!("{name}.rs"));
                let child =
                    if (self.sources)(&flat).is_some() { flat } else { child_dir.join(&name).join("mod.rs") };
                self.mark_reached(&child, &child_dir.join(&name));
            }
        }
    }
}

/// Collects every path of an item (not its `use` items, read apart).
struct PathVisitor<'a> {
    file: &'a Path,
    references: &'a mut Vec<Reference>,
}

impl PathVisitor<'_> {
    fn push(&mut self, segments: Vec<String>, line: usize) {
        self.references
            .push(Reference { segments, location: Location { file: self.file.to_path_buf(), line } });
    }

    /// The `a::b::c` paths in a macro's tokens (`$crate::x` counts as
    /// `crate::x`).
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut index = 0;
        while index < tokens.len() {
            match &tokens[index] {
                TokenTree::Group(group) => {
                    self.scan_tokens(group.stream());
                    index += 1;
                }
                TokenTree::Ident(ident) => {
                    // Continuation of an earlier path (`x::ident`) is read with it.
                    let follows_path = index >= 2
                        && matches!(&tokens[index - 1], TokenTree::Punct(p) if p.as_char() == ':')
                        && matches!(&tokens[index - 2], TokenTree::Punct(p) if p.as_char() == ':');
                    let line = ident.span().start().line;
                    let mut segments = vec![ident.to_string()];
                    let mut next = index + 1;
                    while next + 2 < tokens.len()
                        && matches!(&tokens[next], TokenTree::Punct(p) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
                        && matches!(&tokens[next + 1], TokenTree::Punct(p) if p.as_char() == ':')
                    {
                        match &tokens[next + 2] {
                            TokenTree::Ident(ident) => segments.push(ident.to_string()),
                            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                                // A `use` tree in a macro body: `a::{b, c}`.
                                segments.push("{}".to_owned());
                            }
                            _ => break,
                        }
                        next += 3;
                    }
                    if !follows_path && segments.len() > 1 && segments.last().is_some_and(|last| last != "{}")
                    {
                        self.push(segments, line);
                    }
                    index += 1;
                }
                TokenTree::Punct(_) | TokenTree::Literal(_) => index += 1,
            }
        }
    }
}

impl<'ast> Visit<'ast> for PathVisitor<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|segment| segment.ident.to_string()).collect();
        if segments.len() > 1 {
            self.push(segments, path.span().start().line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Fn(item) => &item.attrs,
            syn::Item::Impl(item) => &item.attrs,
            syn::Item::Const(item) => &item.attrs,
            syn::Item::Static(item) => &item.attrs,
            syn::Item::Struct(item) => &item.attrs,
            syn::Item::Use(item) => &item.attrs,
            syn::Item::Mod(item) => &item.attrs,
            _ => &[],
        };
        if test_only(attrs) {
            return;
        }
        // Items nested in functions (`use` inside a body) are the enclosing
        // module's: read their `use` trees as paths too.
        if let syn::Item::Use(item) = item {
            let mut paths = Vec::new();
            use_paths(&[], &item.tree, &mut paths);
            for (path, _, line) in paths {
                self.push(path, line);
            }
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match item {
            syn::ImplItem::Fn(item) => &item.attrs,
            syn::ImplItem::Const(item) => &item.attrs,
            syn::ImplItem::Type(item) => &item.attrs,
            _ => &[],
        };
        if !test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.scan_tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }

    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {
        // `pub(in crate::a)` names an ancestor, not a dependency.
    }
}

/// Reads the crate whose root file is `root` (`src/lib.rs`, ...).
fn read_crate(
    root: &Path,
    base: &Path,
    sources: &dyn Fn(&Path) -> Option<String>,
    problems: &mut Vec<String>,
) -> Crate {
    let mut krate = Crate::default();
    let dir = root.parent().unwrap().to_path_buf();
    let mut reader = Reader { krate: &mut krate, sources, base, problems };
    reader.read_file(Vec::new(), root, &dir);
    krate
}

/// The absolute form of `segments` written in `module`, or `None` for
/// paths into other crates, local items and generic parameters.
fn absolute(krate: &Crate, module: &[String], segments: &[String]) -> Result<Option<Vec<String>>, String> {
    let first = segments[0].as_str();
    let mut base: Vec<String>;
    let mut rest = &segments[1..];
    match first {
        "crate" => base = Vec::new(),
        "self" => base = module.to_vec(),
        "super" => {
            base = module.to_vec();
            if base.pop().is_none() {
                return Err(format!("`{}` climbs above the crate root", segments.join("::")));
            }
            while rest.first().is_some_and(|segment| segment == "super") {
                if base.pop().is_none() {
                    return Err(format!("`{}` climbs above the crate root", segments.join("::")));
                }
                rest = &rest[1..];
            }
        }
        name => {
            let code = &krate.modules[module];
            if code.children.contains(name) {
                base = module.to_vec();
                rest = segments;
            } else if let Some(bound) = code.uses.get(name)
                && bound.first().is_some_and(|head| head != name)
            {
                // A name a `use` binds: `use crate::b; b::f()`.
                let mut joined = bound.clone();
                joined.extend_from_slice(&segments[1..]);
                return absolute(krate, module, &joined);
            } else {
                return Ok(None);
            }
        }
    }
    base.extend(rest.iter().cloned());
    Ok(Some(base))
}

/// The module that defines what the absolute path `path` names, following
/// `use` re-exports of the modules it goes through (`crate::Error` to
/// `error` when the root says `pub use error::Error`).
fn defining_module(krate: &Crate, path: &[String], depth: usize) -> Result<Module, String> {
    let mut module: Module = Vec::new();
    let mut at = 0;
    while at < path.len() {
        let mut longer = module.clone();
        longer.push(path[at].clone());
        if krate.modules.contains_key(&longer) {
            module = longer;
            at += 1;
        } else {
            break;
        }
    }
    if at == path.len() || depth > 16 {
        return Ok(module);
    }
    let name = &path[at];
    let code = &krate.modules[&module];
    if code.defines.contains(name) {
        return Ok(module);
    }
    let follow = |bound: &[String], tail: &[String]| -> Result<Option<Module>, String> {
        let mut joined = bound.to_vec();
        joined.extend_from_slice(tail);
        match absolute(krate, &module, &joined)? {
            Some(target) => defining_module(krate, &target, depth + 1).map(Some),
            None => Ok(None),
        }
    };
    if let Some(bound) = code.uses.get(name) {
        return Ok(follow(bound, &path[at + 1..])?.unwrap_or(module));
    }
    for glob in &code.globs {
        let Some(target) = absolute(krate, &module, glob)? else { continue };
        let target = defining_module(krate, &target, depth + 1)?;
        if let Some(inner) = krate.modules.get(&target)
            && (inner.defines.contains(name)
                || inner.uses.contains_key(name)
                || inner.children.contains(name))
        {
            let mut joined = target.clone();
            joined.extend_from_slice(&path[at..]);
            return defining_module(krate, &joined, depth + 1);
        }
    }
    Ok(module)
}

/// True when one module contains the other (or they are the same).
fn nested(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Builds the graph of `krate` and finds its circles.
fn analyze(krate: &Crate) -> Findings {
    let mut findings = Findings::default();
    let mut edges: BTreeMap<(Module, Module), Vec<Location>> = BTreeMap::new();
    for (module, code) in &krate.modules {
        for reference in &code.references {
            let target = match absolute(krate, module, &reference.segments)
                .and_then(|path| path.map(|path| defining_module(krate, &path, 0)).transpose())
            {
                Ok(Some(target)) => target,
                Ok(None) => continue,
                Err(error) => {
                    findings.unresolved.push(format!("{}: {error}", reference.location));
                    continue;
                }
            };
            if !nested(module, &target) {
                edges.entry((module.clone(), target)).or_default().push(reference.location.clone());
            }
        }
    }
    for locations in edges.values_mut() {
        locations.sort();
        locations.dedup();
    }
    findings.edges = edges.len();
    let mut graph: BTreeMap<&Module, BTreeSet<&Module>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(from).or_default().insert(to);
        graph.entry(to).or_default();
    }
    for component in strongly_connected(&graph) {
        if component.len() < 2 {
            continue;
        }
        let members: BTreeSet<&Module> = component.iter().copied().collect();
        let mut circle =
            Circle { modules: component.iter().map(|module| display(module)).collect(), edges: Vec::new() };
        circle.modules.sort();
        for ((from, to), locations) in &edges {
            if members.contains(from) && members.contains(to) {
                circle.edges.push((display(from), display(to), locations.clone()));
            }
        }
        findings.circles.push(circle);
    }
    findings
}

/// Tarjan's strongly connected components of `graph`.
fn strongly_connected<'a>(graph: &BTreeMap<&'a Module, BTreeSet<&'a Module>>) -> Vec<Vec<&'a Module>> {
    struct State<'a> {
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        components: Vec<Vec<&'a Module>>,
    }
    fn connect<'a>(
        node: &'a Module,
        graph: &BTreeMap<&'a Module, BTreeSet<&'a Module>>,
        state: &mut State<'a>,
    ) {
        let index = state.index.len();
        state.index.insert(node, index);
        state.low.insert(node, index);
        state.stack.push(node);
        state.on_stack.insert(node);
        for &next in &graph[node] {
            if !state.index.contains_key(next) {
                connect(next, graph, state);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top);
                if top == node {
                    break;
                }
            }
            state.components.push(component);
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for &node in graph.keys() {
        if !state.index.contains_key(node) {
            connect(node, graph, &mut state);
        }
    }
    state.components
}

/// The crate roots under a member's `src/`: the library, the binary and
/// each `src/bin/` binary (each a crate of its own).
fn crate_roots(src: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> =
        ["lib.rs", "main.rs"].into_iter().map(|name| src.join(name)).filter(|path| path.is_file()).collect();
    let bin = src.join("bin");
    for path in if bin.is_dir() { rust_files_under(&bin) } else { Vec::new() } {
        let relative = path.strip_prefix(&bin).unwrap();
        if relative.components().count() == 1 || relative.ends_with("main.rs") {
            roots.push(path);
        }
    }
    roots
}

#[test]
fn no_module_reaches_a_module_that_reaches_it_back() {
    let root = workspace_root();
    let mut problems = Vec::new();
    let mut edges_seen = 0;
    for member in workspace_members(&root) {
        let src = root.join(&member).join("src");
        if !src.is_dir() {
            continue;
        }
        let base = root.join(&member);
        let read = |path: &Path| std::fs::read_to_string(path).ok();
        let mut reached = BTreeSet::new();
        for crate_root in crate_roots(&src) {
            let krate = read_crate(&crate_root, &base, &read, &mut problems);
            reached.extend(krate.files.iter().cloned());
            let findings = analyze(&krate);
            edges_seen += findings.edges;
            for unresolved in findings.unresolved {
                problems.push(format!("{member}/{unresolved}"));
            }
            for circle in findings.circles {
                problems.push(format!("{member}: {circle}"));
            }
        }
        // Every file is read (or a test module's): none escapes the graph.
        for file in rust_files_under(&src) {
            if !reached.contains(&file) {
                problems.push(format!("{}: reached by no `mod` item from a crate root", file.display()));
            }
        }
    }
    eprintln!("{edges_seen} edges between modules read");
    // The reader must see the graph at all: the workspace has about two
    // hundred edges between modules that are not parent and child.
    assert!(edges_seen > 150, "only {edges_seen} edges between modules were read");
    assert!(
        problems.is_empty(),
        "module graph problems (break a circle by moving what both sides need to one side):\n{}",
        problems.join("\n")
    );
}

/// Reads and analyses a crate given as `(path under src/, text)` pairs.
fn synthetic(files: &[(&str, &str)]) -> (Findings, Vec<String>) {
    let base = Path::new("/synthetic");
    let sources: BTreeMap<PathBuf, String> =
        files.iter().map(|(path, text)| (base.join("src").join(path), (*text).to_owned())).collect();
    let read = |path: &Path| sources.get(path).cloned();
    let mut problems = Vec::new();
    let krate = read_crate(&base.join("src/lib.rs"), base, &read, &mut problems);
    (analyze(&krate), problems)
}

fn circle_text(findings: &Findings) -> Vec<String> {
    findings.circles.iter().map(ToString::to_string).collect()
}

#[test]
fn an_inline_path_circle_is_found_with_each_edge() {
    let (findings, problems) = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub fn f() {\n    crate::b::g();\n}\n"),
        ("b.rs", "pub fn g() {}\n\npub fn h() -> usize {\n    std::mem::size_of::<super::a::T>()\n}\n"),
    ]);
    assert!(problems.is_empty(), "{problems:?}");
    // `super::a::T`: `T` is no item of `a`, the path still ends there.
    assert_eq!(
        circle_text(&findings),
        ["circle {a, b}:\n    a -> b: src/a.rs:2\n    b -> a: src/b.rs:4\n"],
        "{findings:#?}"
    );
}

#[test]
fn a_name_through_a_root_re_export_is_an_edge_to_its_module() {
    let (findings, problems) = synthetic(&[
        ("lib.rs", "mod alpha;\nmod beta;\npub use alpha::Alpha;\nuse beta::*;\n"),
        ("alpha.rs", "use crate::Beta;\npub struct Alpha(Beta);\n"),
        ("beta.rs", "pub struct Beta;\nimpl Beta {\n    fn a(self) -> Option<crate::Alpha> { None }\n}\n"),
    ]);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        circle_text(&findings),
        ["circle {alpha, beta}:\n    alpha -> beta: src/alpha.rs:1\n    beta -> alpha: src/beta.rs:3\n"],
        "{findings:#?}"
    );
}

#[test]
fn groups_renames_macros_and_aliases_are_edges_and_tests_are_not() {
    let (findings, problems) = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n"),
        // A group with renames; `b` used through its alias.
        ("a.rs", "use crate::{b as bee, c::{C as Sea}};\nfn f() { bee::g(); }\n"),
        ("b/mod.rs", "mod inner;\npub fn g() {}\n"),
        // A path inside a macro body.
        ("b/inner.rs", "fn g() { println!(\"{}\", crate::d::D); }\n"),
        (
            "c.rs",
            "pub struct C;\n#[cfg(test)]\nmod tests {\n    use crate::a::*;\n}\n#[cfg(test)]\nfn t() { crate::a::f() }\n",
        ),
        // A path inside a `macro_rules!` body.
        ("d.rs", "pub const D: u8 = 0;\nmacro_rules! m { () => { $crate::a::f() } }\n"),
    ]);
    assert!(problems.is_empty(), "{problems:?}");
    // a -> b, a -> c, b::inner -> d, d -> a (macro body): no circle,
    // since c's paths back to `a` are test-only.
    assert!(findings.circles.is_empty(), "{findings:#?}");
    assert_eq!(findings.edges, 4, "{findings:#?}");
    // Closing it through the macro body: `b::inner` -> `d` -> `a` -> `b`.
    let (closed, _) = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\nmod d;\n"),
        ("a.rs", "use crate::{b as bee};\nfn f() { bee::g(); }\n"),
        ("b/mod.rs", "mod inner;\npub use inner::g;\n"),
        ("b/inner.rs", "pub fn g() { println!(\"{}\", crate::d::D); }\n"),
        ("d.rs", "pub const D: u8 = 0;\nmacro_rules! m { () => { $crate::a::f() } }\n"),
    ]);
    assert_eq!(
        circle_text(&closed),
        [
            "circle {a, b::inner, d}:\n    a -> b::inner: src/a.rs:2\n    b::inner -> d: src/b/inner.rs:1\n    d -> a: src/d.rs:2\n"
        ],
        "{closed:#?}"
    );
}

#[test]
fn a_super_above_the_root_fails() {
    let (findings, problems) = synthetic(&[
        ("lib.rs", "mod a;\n"),
        ("a.rs", "mod b;\n"),
        ("a/b.rs", "use super::super::super::X;\nfn f() { super::super::g(); }\n"),
    ]);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        findings.unresolved,
        ["src/a/b.rs:1: `super::super::super::X` climbs above the crate root"],
        "{findings:#?}"
    );
}
