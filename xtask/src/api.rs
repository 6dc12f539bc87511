//! `cargo xtask api`: the public API of the crates users build on, as one
//! line per item, against the committed baseline in `api/<crate>.txt`.
//!
//! The listing comes from rustdoc's JSON output (`--output-format json`,
//! unstable, so rustdoc runs with `RUSTC_BOOTSTRAP=1` on the stable
//! toolchain: no nightly, no tool to install). Every public item reachable
//! from the crate root is listed with its path and signature: functions and
//! methods with their parameters, return type, generics and qualifiers;
//! structs and unions with their public fields; enums with their variants;
//! traits with their items; constants with their values; re-exports; and
//! the trait implementations of public types (auto traits and blanket
//! implementations left out, as they follow from the rest). A shape this
//! renderer does not know is listed as its JSON, so it still shows in a
//! diff. `--check` fails on any difference (docs/publishing.md: an intended
//! change is a reviewed baseline update, `cargo xtask api`).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The crates whose API is recorded: (package, library name).
pub const CRATES: [(&str, &str); 7] = [
    ("xplug-abi", "xplug_abi"),
    ("xplug-debug", "xplug_debug"),
    ("xplug-sdk", "xplug_sdk"),
    ("xplug-providers", "xplug_providers"),
    ("xplug-profile", "xplug_profile"),
    ("xplug-manager", "xplug_manager"),
    ("xplug-iree", "xplug_iree"),
];

/// The rustdoc JSON format this renderer reads (rustdoc-types'
/// `FORMAT_VERSION`, 57 in Rust 1.95).
pub const FORMAT_VERSION: u64 = 57;

/// Why a listing could not be made or compared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// `cargo rustdoc` could not run or failed.
    #[error("`cargo rustdoc -p {package}` (JSON output) failed: {detail}")]
    Rustdoc {
        /// The package.
        package: String,
        /// Its exit status or why it could not start.
        detail: String,
    },
    /// A file could not be read or written.
    #[error("cannot access {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// rustdoc's output is not the JSON this renderer reads.
    #[error(
        "{}: rustdoc JSON format {found}, but xtask/src/api.rs reads format {FORMAT_VERSION}; update \
         its renderer (and the baselines, `cargo xtask api`) for this toolchain",
        path.display()
    )]
    Format {
        /// The JSON file.
        path: PathBuf,
        /// The format version found (0: none or not JSON).
        found: u64,
    },
}

/// The listing of `package` (library `library`) under `root`: one line per
/// public item, sorted, with a header naming the crate.
///
/// # Errors
/// When rustdoc fails or writes a format this renderer does not read.
pub fn listing(root: &Path, package: &str, library: &str) -> Result<String, ApiError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .current_dir(root)
        .args([
            "rustdoc",
            "--quiet",
            "--lib",
            "-p",
            package,
            "--",
            "-Z",
            "unstable-options",
            "--output-format",
            "json",
        ])
        .env("RUSTC_BOOTSTRAP", "1")
        .status()
        .map_err(|error| ApiError::Rustdoc { package: package.to_owned(), detail: error.to_string() })?;
    if !status.success() {
        return Err(ApiError::Rustdoc {
            package: package.to_owned(),
            detail: format!("exited with {status}"),
        });
    }
    let path = root.join("target").join("doc").join(format!("{library}.json"));
    let text =
        std::fs::read_to_string(&path).map_err(|source| ApiError::File { path: path.clone(), source })?;
    let json: Value =
        serde_json::from_str(&text).map_err(|_| ApiError::Format { path: path.clone(), found: 0 })?;
    let found = json["format_version"].as_u64().unwrap_or(0);
    if found != FORMAT_VERSION {
        return Err(ApiError::Format { path, found });
    }
    let mut lines = BTreeSet::new();
    let walker = Walker { index: &json["index"] };
    if let Some(root_id) = json["root"].as_u64() {
        walker.item(&root_id.to_string(), library, &mut lines);
    }
    let mut out = format!("# The public API of {package} (cargo xtask api; docs/publishing.md)\n");
    for line in lines {
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// The committed baseline of `package`.
#[must_use]
pub fn baseline_path(root: &Path, package: &str) -> PathBuf {
    root.join("api").join(format!("{package}.txt"))
}

/// Lines only in `old` (`- `) and only in `new` (`+ `).
#[must_use]
pub fn diff(old: &str, new: &str) -> Vec<String> {
    let old_lines: BTreeSet<&str> = old.lines().collect();
    let new_lines: BTreeSet<&str> = new.lines().collect();
    let mut out: Vec<String> = old_lines.difference(&new_lines).map(|line| format!("- {line}")).collect();
    out.extend(new_lines.difference(&old_lines).map(|line| format!("+ {line}")));
    out
}

/// Writes every crate's listing to its baseline; the files written.
///
/// # Errors
/// When a listing cannot be made or written.
pub fn bless(root: &Path) -> Result<Vec<PathBuf>, ApiError> {
    let mut written = Vec::new();
    for (package, library) in CRATES {
        let text = listing(root, package, library)?;
        let path = baseline_path(root, package);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|source| ApiError::File { path: parent.to_owned(), source })?;
        }
        std::fs::write(&path, text).map_err(|source| ApiError::File { path: path.clone(), source })?;
        written.push(path);
    }
    Ok(written)
}

/// Compares every crate's listing with its baseline: (package, differing
/// lines) for each crate that differs.
///
/// # Errors
/// When a listing cannot be made or a baseline read.
pub fn check(root: &Path) -> Result<Vec<(String, Vec<String>)>, ApiError> {
    let mut changed = Vec::new();
    for (package, library) in CRATES {
        let text = listing(root, package, library)?;
        let path = baseline_path(root, package);
        let old = std::fs::read_to_string(&path).map_err(|source| ApiError::File { path, source })?;
        let lines = diff(&old, &text);
        if !lines.is_empty() {
            changed.push((package.to_owned(), lines));
        }
    }
    Ok(changed)
}

/// Walks rustdoc's item index from the crate root.
struct Walker<'a> {
    index: &'a Value,
}

impl Walker<'_> {
    fn get(&self, id: &Value) -> Option<&Value> {
        let key = id.as_u64().map_or_else(|| id.as_str().unwrap_or_default().to_owned(), |id| id.to_string());
        self.index.get(key)
    }

    /// Lists the item `id` (at `path`) and what it holds.
    fn item(&self, id: &str, path: &str, out: &mut BTreeSet<String>) {
        let Some(item) = self.index.get(id) else { return };
        let Some((kind, inner)) = item["inner"].as_object().and_then(|inner| inner.iter().next()) else {
            return;
        };
        match kind.as_str() {
            "module" => {
                out.insert(format!("mod {path}"));
                self.children(path, inner, out);
            }
            "use" => {
                // Reached only for a re-export of something rustdoc did not
                // document here (another crate's item).
                let glob = if inner["is_glob"] == true { "::*" } else { "" };
                out.insert(format!("pub use {path} = {}{glob}", inner["source"].as_str().unwrap_or("?")));
            }
            "function" => {
                out.insert(function(path, inner));
            }
            "struct" | "union" => {
                out.insert(format!("{kind} {path}{}", generics(&inner["generics"])));
                let fields = match &inner["kind"] {
                    Value::Object(shape) if shape.contains_key("plain") => shape["plain"]["fields"].clone(),
                    Value::Object(shape) if shape.contains_key("tuple") => shape["tuple"].clone(),
                    _ => inner["fields"].clone(),
                };
                self.fields(path, &fields, out);
                self.impls(path, inner, out);
            }
            "enum" => {
                out.insert(format!("enum {path}{}", generics(&inner["generics"])));
                for variant in inner["variants"].as_array().into_iter().flatten() {
                    let Some(variant_item) = self.get(variant) else { continue };
                    let name = format!("{path}::{}", variant_item["name"].as_str().unwrap_or("_"));
                    let shape = &variant_item["inner"]["variant"]["kind"];
                    let rendered = match shape {
                        Value::String(unit) if unit == "plain" => String::new(),
                        Value::Object(shape) if shape.contains_key("tuple") => {
                            self.fields(&name, &shape["tuple"], out);
                            "(..)".to_owned()
                        }
                        Value::Object(shape) if shape.contains_key("struct") => {
                            self.fields(&name, &shape["struct"]["fields"], out);
                            " {..}".to_owned()
                        }
                        other => format!(" {other}"),
                    };
                    let discriminant = variant_item["inner"]["variant"]["discriminant"]["expr"]
                        .as_str()
                        .map(|expr| format!(" = {expr}"))
                        .unwrap_or_default();
                    out.insert(format!("variant {name}{rendered}{discriminant}"));
                }
                self.impls(path, inner, out);
            }
            "trait" => {
                let unsafety = if inner["is_unsafe"] == true { "unsafe " } else { "" };
                let bounds = bounds(&inner["bounds"]);
                let bounds = if bounds.is_empty() { String::new() } else { format!(": {bounds}") };
                out.insert(format!("{unsafety}trait {path}{}{bounds}", generics(&inner["generics"])));
                for member in inner["items"].as_array().into_iter().flatten() {
                    self.member(path, member, out);
                }
            }
            "constant" => {
                let value = inner["const"]["expr"].as_str().unwrap_or("?");
                out.insert(format!("const {path}: {} = {value}", ty(&inner["type"])));
            }
            "static" => {
                let mutability = if inner["is_mutable"] == true { "mut " } else { "" };
                out.insert(format!("static {mutability}{path}: {}", ty(&inner["type"])));
            }
            "type_alias" => {
                out.insert(format!("type {path}{} = {}", generics(&inner["generics"]), ty(&inner["type"])));
            }
            "macro" => {
                out.insert(format!("macro_rules! {path}"));
            }
            "proc_macro" => {
                out.insert(format!("proc_macro {path} ({})", inner["kind"].as_str().unwrap_or("?")));
            }
            other => {
                out.insert(format!("{other} {path} {inner}"));
            }
        }
    }

    /// The public items of the module `inner` at `path`; a re-export of an
    /// item of this crate lists that item under its public path.
    fn children(&self, path: &str, inner: &Value, out: &mut BTreeSet<String>) {
        for child in inner["items"].as_array().into_iter().flatten() {
            let Some(child_item) = self.get(child) else { continue };
            if child_item["visibility"] != "public" {
                continue;
            }
            let reexport = &child_item["inner"]["use"];
            if reexport.is_null() {
                let name = child_item["name"].as_str().unwrap_or("_");
                self.item(&key(child), &format!("{path}::{name}"), out);
                continue;
            }
            match self.get(&reexport["id"]) {
                Some(target) if reexport["is_glob"] == true => {
                    self.children(path, &target["inner"]["module"], out)
                }
                Some(_) => {
                    let name = reexport["name"].as_str().unwrap_or("_");
                    self.item(&key(&reexport["id"]), &format!("{path}::{name}"), out);
                }
                None => {
                    let name = reexport["name"].as_str().unwrap_or("_");
                    self.item(&key(child), &format!("{path}::{name}"), out);
                }
            }
        }
    }

    /// The public fields `ids` of the struct or variant at `path`.
    fn fields(&self, path: &str, ids: &Value, out: &mut BTreeSet<String>) {
        for (position, field) in ids.as_array().into_iter().flatten().enumerate() {
            let Some(field_item) = self.get(field) else { continue };
            if field_item["visibility"] != "public" && field_item["visibility"] != "default" {
                continue;
            }
            let name = field_item["name"].as_str().map_or_else(|| position.to_string(), str::to_owned);
            out.insert(format!("field {path}.{name}: {}", ty(&field_item["inner"]["struct_field"])));
        }
    }

    /// The implementations of the type at `path`: trait impls as a line,
    /// inherent impls' public items.
    fn impls(&self, path: &str, inner: &Value, out: &mut BTreeSet<String>) {
        for id in inner["impls"].as_array().into_iter().flatten() {
            let Some(implementation) = self.get(id) else { continue };
            let body = &implementation["inner"]["impl"];
            if body["is_synthetic"] == true || !body["blanket_impl"].is_null() {
                continue;
            }
            if body["trait"].is_null() {
                for member in body["items"].as_array().into_iter().flatten() {
                    let Some(member_item) = self.get(member) else { continue };
                    if member_item["visibility"] == "public" {
                        self.member(path, member, out);
                    }
                }
            } else {
                let negative = if body["is_negative"] == true { "!" } else { "" };
                let unsafety = if body["is_unsafe"] == true { "unsafe " } else { "" };
                out.insert(format!(
                    "{unsafety}impl{} {negative}{} for {}",
                    generics(&body["generics"]),
                    path_type(&body["trait"]),
                    ty(&body["for"])
                ));
            }
        }
    }

    /// A method, associated type or constant of the type or trait at `owner`.
    fn member(&self, owner: &str, id: &Value, out: &mut BTreeSet<String>) {
        let Some(member) = self.get(id) else { return };
        let name = format!("{owner}::{}", member["name"].as_str().unwrap_or("_"));
        let Some((kind, inner)) = member["inner"].as_object().and_then(|inner| inner.iter().next()) else {
            return;
        };
        let line = match kind.as_str() {
            "function" => function(&name, inner),
            "assoc_type" => {
                let bounds = bounds(&inner["bounds"]);
                let default = if inner["type"].is_null() {
                    String::new()
                } else {
                    format!(" = {}", ty(&inner["type"]))
                };
                format!("type {name}{}: {bounds}{default}", generics(&inner["generics"]))
            }
            "assoc_const" => {
                let value = inner["value"].as_str().map(|value| format!(" = {value}")).unwrap_or_default();
                format!("const {name}: {}{value}", ty(&inner["type"]))
            }
            other => format!("{other} {name} {inner}"),
        };
        out.insert(line);
    }
}

fn key(id: &Value) -> String {
    id.as_u64().map_or_else(|| id.as_str().unwrap_or_default().to_owned(), |id| id.to_string())
}

/// `fn path<generics>(params) -> output where ...` with its qualifiers.
fn function(path: &str, inner: &Value) -> String {
    let header = &inner["header"];
    let mut qualifiers = String::new();
    for (flag, word) in [("is_const", "const "), ("is_async", "async "), ("is_unsafe", "unsafe ")] {
        if header[flag] == true {
            qualifiers.push_str(word);
        }
    }
    match &header["abi"] {
        Value::String(rust) if rust == "Rust" => {}
        other => {
            let _ = write!(qualifiers, "extern {} ", abi(other));
        }
    }
    let signature = &inner["sig"];
    let params: Vec<String> = signature["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pair| format!("{}: {}", pair[0].as_str().unwrap_or("_"), ty(&pair[1])))
        .collect();
    let output = if signature["output"].is_null() {
        String::new()
    } else {
        format!(" -> {}", ty(&signature["output"]))
    };
    format!(
        "{qualifiers}fn {path}{}({}){output}{}",
        generics(&inner["generics"]),
        params.join(", "),
        where_clause(&inner["generics"])
    )
}

/// `<'a, T: Bound, const N: usize>` (empty without parameters).
fn generics(generics: &Value) -> String {
    let params: Vec<String> = generics["params"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|param| param["kind"]["type"]["is_synthetic"] != true)
        .map(|param| {
            let name = param["name"].as_str().unwrap_or("_");
            let kind = &param["kind"];
            if kind.get("lifetime").is_some() {
                name.to_owned()
            } else if let Some(parameter) = kind.get("type") {
                let bounds = bounds(&parameter["bounds"]);
                let default = if parameter["default"].is_null() {
                    String::new()
                } else {
                    format!(" = {}", ty(&parameter["default"]))
                };
                if bounds.is_empty() {
                    format!("{name}{default}")
                } else {
                    format!("{name}: {bounds}{default}")
                }
            } else if let Some(parameter) = kind.get("const") {
                format!("const {name}: {}", ty(&parameter["type"]))
            } else {
                compact(param)
            }
        })
        .collect();
    if params.is_empty() { String::new() } else { format!("<{}>", params.join(", ")) }
}

/// ` where T: Bound, ...` (empty without predicates).
fn where_clause(generics: &Value) -> String {
    let predicates: Vec<String> = generics["where_predicates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|predicate| match predicate.get("bound_predicate") {
            Some(bound) => format!("{}: {}", ty(&bound["type"]), bounds(&bound["bounds"])),
            None => compact(predicate),
        })
        .collect();
    if predicates.is_empty() { String::new() } else { format!(" where {}", predicates.join(", ")) }
}

/// `A + B + 'a`.
fn bounds(bounds: &Value) -> String {
    bounds
        .as_array()
        .into_iter()
        .flatten()
        .map(|bound| {
            if let Some(trait_bound) = bound.get("trait_bound") {
                let modifier = if trait_bound["modifier"] == "maybe" { "?" } else { "" };
                format!("{modifier}{}", path_type(&trait_bound["trait"]))
            } else if let Some(lifetime) = bound.get("outlives") {
                lifetime.as_str().unwrap_or("?").to_owned()
            } else {
                compact(bound)
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// A path with its generic arguments (`Result<T, Error>`).
fn path_type(path: &Value) -> String {
    format!("{}{}", path["path"].as_str().unwrap_or("?"), arguments(&path["args"]))
}

/// `<A, B, Item = C>` or `(A) -> B` (empty without arguments).
fn arguments(args: &Value) -> String {
    if let Some(angle) = args.get("angle_bracketed") {
        let mut parts: Vec<String> = angle["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|arg| {
                if let Some(of) = arg.get("type") {
                    ty(of)
                } else if let Some(lifetime) = arg.get("lifetime") {
                    lifetime.as_str().unwrap_or("?").to_owned()
                } else if let Some(constant) = arg.get("const") {
                    constant["expr"].as_str().unwrap_or("?").to_owned()
                } else {
                    compact(arg)
                }
            })
            .collect();
        parts.extend(angle["constraints"].as_array().into_iter().flatten().map(|constraint| {
            let name = constraint["name"].as_str().unwrap_or("?");
            match constraint["binding"].get("equality").and_then(|term| term.get("type")) {
                Some(of) => format!("{name} = {}", ty(of)),
                None => format!("{name}: {}", compact(&constraint["binding"])),
            }
        }));
        if parts.is_empty() { String::new() } else { format!("<{}>", parts.join(", ")) }
    } else if let Some(parenthesized) = args.get("parenthesized") {
        let inputs: Vec<String> = parenthesized["inputs"].as_array().into_iter().flatten().map(ty).collect();
        let output = if parenthesized["output"].is_null() {
            String::new()
        } else {
            format!(" -> {}", ty(&parenthesized["output"]))
        };
        format!("({}){output}", inputs.join(", "))
    } else if args.is_null() {
        String::new()
    } else {
        compact(args)
    }
}

/// A type as Rust source (its JSON for a shape this renderer does not know).
fn ty(of: &Value) -> String {
    let Some((kind, inner)) = of.as_object().and_then(|object| object.iter().next()) else {
        return compact(of);
    };
    match kind.as_str() {
        "resolved_path" => path_type(inner),
        "generic" | "primitive" => inner.as_str().unwrap_or("?").to_owned(),
        "tuple" => {
            format!("({})", inner.as_array().into_iter().flatten().map(ty).collect::<Vec<_>>().join(", "))
        }
        "slice" => format!("[{}]", ty(inner)),
        "array" => format!("[{}; {}]", ty(&inner["type"]), inner["len"].as_str().unwrap_or("?")),
        "infer" => "_".to_owned(),
        "raw_pointer" => {
            format!("*{} {}", if inner["is_mutable"] == true { "mut" } else { "const" }, ty(&inner["type"]))
        }
        "borrowed_ref" => {
            let lifetime =
                inner["lifetime"].as_str().map(|lifetime| format!("{lifetime} ")).unwrap_or_default();
            let mutability = if inner["is_mutable"] == true { "mut " } else { "" };
            format!("&{lifetime}{mutability}{}", ty(&inner["type"]))
        }
        "impl_trait" => format!("impl {}", bounds(inner)),
        "dyn_trait" => {
            let mut parts: Vec<String> = inner["traits"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|poly| path_type(&poly["trait"]))
                .collect();
            if let Some(lifetime) = inner["lifetime"].as_str() {
                parts.push(lifetime.to_owned());
            }
            format!("dyn {}", parts.join(" + "))
        }
        "function_pointer" => {
            let header = &inner["header"];
            let unsafety = if header["is_unsafe"] == true { "unsafe " } else { "" };
            let abi = match &header["abi"] {
                Value::String(rust) if rust == "Rust" => String::new(),
                other => format!("extern {} ", abi(other)),
            };
            let signature = &inner["sig"];
            let params: Vec<String> =
                signature["inputs"].as_array().into_iter().flatten().map(|pair| ty(&pair[1])).collect();
            let output = if signature["output"].is_null() {
                String::new()
            } else {
                format!(" -> {}", ty(&signature["output"]))
            };
            format!("{unsafety}{abi}fn({}){output}", params.join(", "))
        }
        "qualified_path" => {
            let self_type = ty(&inner["self_type"]);
            let name = inner["name"].as_str().unwrap_or("?");
            if inner["trait"].is_null() {
                format!("{self_type}::{name}")
            } else {
                format!("<{self_type} as {}>::{name}", path_type(&inner["trait"]))
            }
        }
        _ => compact(of),
    }
}

fn compact(value: &Value) -> String {
    value.to_string()
}

/// An `extern` ABI: `"C"`, `"C-unwind"`, ...
fn abi(abi: &Value) -> String {
    match abi.as_object().and_then(|object| object.iter().next()) {
        Some((name, options)) => {
            let unwind = if options["unwind"] == true { "-unwind" } else { "" };
            format!("\"{name}{unwind}\"")
        }
        None => abi.as_str().map_or_else(|| compact(abi), |name| format!("\"{name}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_render_as_rust() {
        let of: Value = serde_json::from_str(
            r#"{"resolved_path": {"path": "Result", "id": 1, "args": {"angle_bracketed": {"args": [
                {"type": {"borrowed_ref": {"lifetime": "'a", "is_mutable": true, "type": {"slice": {"primitive": "u8"}}}}},
                {"type": {"raw_pointer": {"is_mutable": false, "type": {"generic": "T"}}}}], "constraints": []}}}}"#,
        )
        .unwrap();
        assert_eq!(ty(&of), "Result<&'a mut [u8], *const T>");
    }

    #[test]
    fn an_unknown_shape_is_kept_as_json() {
        let of: Value = serde_json::from_str(r#"{"new_kind": {"x": 1}}"#).unwrap();
        assert_eq!(ty(&of), r#"{"new_kind":{"x":1}}"#);
    }

    #[test]
    fn the_diff_names_removed_and_added_lines() {
        assert_eq!(diff("a\nb\n", "b\nc\n"), ["- a", "+ c"]);
        assert!(diff("a\n", "a\n").is_empty());
    }
}
