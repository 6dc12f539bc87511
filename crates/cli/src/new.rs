//! `xplug new NAME [--path DIR]`: scaffolds a plugin crate that builds with
//! plain `cargo build --release` into a loadable shared library.
//!
//! The crate depends on `xplug-sdk` (and, for its test, `xplug-manager`) by
//! path to the checkout this `xplug` was built from, since neither is
//! published; `--sdk DIR` points at another checkout.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::CliError;
use crate::output::{Style, print_json};

/// What `xplug new` was asked for.
pub(crate) struct Options<'a> {
    /// The crate (and plugin) name.
    pub(crate) name: &'a str,
    /// Where to create the crate (default `./NAME`).
    pub(crate) path: Option<&'a Path>,
    /// The xplug checkout whose crates the new crate depends on.
    pub(crate) checkout: Option<&'a Path>,
}

/// Words a crate name cannot be: Rust keywords (the name is also the
/// crate's identifier) and the crates every program already has.
#[rustfmt::skip]
const RESERVED: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try", "typeof",
    "unsized", "virtual", "yield", "core", "std", "alloc", "proc_macro", "test",
];

/// Checks `name` as a crate name whose identifier form (`-` → `_`) is a
/// Rust identifier; returns that identifier.
pub(crate) fn crate_ident(name: &str) -> Result<String, String> {
    let ident = name.replace('-', "_");
    let valid_chars = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let starts_well = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if !valid_chars || !starts_well || name.len() > 64 {
        return Err(format!(
            "`{name}` is not a usable plugin crate name: use 1 to 64 ASCII letters, digits, `_` or `-`, \
             starting with a letter (e.g. `my_plugin`)"
        ));
    }
    if RESERVED.contains(&ident.as_str()) {
        return Err(format!(
            "`{name}` is a reserved word in Rust; choose another name (e.g. `{name}_plugin`)"
        ));
    }
    Ok(ident)
}

/// The xplug checkout this binary was built from (its `crates/cli/../..`).
fn default_checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// Runs `xplug new`.
pub(crate) fn run(options: &Options<'_>, json_output: bool) -> Result<u8, CliError> {
    let ident = crate_ident(options.name).map_err(|message| CliError::Usage { message })?;
    let dir = options.path.map_or_else(|| PathBuf::from(options.name), Path::to_path_buf);
    let checkout = options.checkout.map_or_else(default_checkout, Path::to_path_buf);
    let sdk = checkout.join("crates").join("plugin-sdk");
    let checkout = std::fs::canonicalize(&checkout)
        .ok()
        .filter(|_| sdk.join("Cargo.toml").is_file())
        .ok_or_else(|| CliError::Usage {
            message: format!(
                "the xplug sources are not at {} (no crates/plugin-sdk/Cargo.toml there); \
                 pass --sdk with the path of an xplug checkout",
                checkout.display()
            ),
        })?;
    if dir.exists() && std::fs::read_dir(&dir).map_or(true, |mut entries| entries.next().is_some()) {
        return Err(CliError::Usage {
            message: format!(
                "{} already exists and is not an empty directory; choose another --path",
                dir.display()
            ),
        });
    }

    let files = scaffold(options.name, &ident, &checkout);
    for (relative, contents) in &files {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| CliError::Usage {
                message: format!("cannot create {}: {error}", parent.display()),
            })?;
        }
        std::fs::write(&path, contents).map_err(|error| CliError::Usage {
            message: format!("cannot write {}: {error}", path.display()),
        })?;
    }

    let library = format!("{}{ident}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let built = Path::new("target").join("release").join(&library);
    if json_output {
        print_json(&json!({
            "ok": true,
            "name": options.name,
            "plugin": ident,
            "path": dir.display().to_string(),
            "files": files.iter().map(|(relative, _)| *relative).collect::<Vec<_>>(),
            "library": built.display().to_string(),
        }));
    } else {
        let style = Style::stdout();
        println!("{} plugin crate `{}` in {}", style.good("created"), options.name, dir.display());
        for (relative, _) in &files {
            println!("  {relative}");
        }
        println!("next:");
        println!("  cd {} && cargo build --release && cargo test", dir.display());
        println!("  xplug check {}", dir.join(&built).display());
        println!(
            "  xplug call {} {ident}_add_f32 --field f32:2.5 --field f32:4 --field f32:0",
            dir.join(&built).display()
        );
    }
    Ok(0)
}

/// The files of the new crate: (path relative to its directory, contents).
fn scaffold(name: &str, ident: &str, checkout: &Path) -> Vec<(&'static str, String)> {
    let sdk = checkout.join("crates").join("plugin-sdk");
    let manager = checkout.join("crates").join("manager");
    let cargo_toml = format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# cdylib: the shared library hosts load (`cargo build --release` makes
# target/release/{library}); rlib: for tests and for runtimes that link the
# plugin into their binary.
crate-type = ["cdylib", "rlib"]

[features]
# Link the plugin into a runtime binary (a static registration found by
# `xplug_providers::static_plugins()`) instead of exporting its C entry
# points. A runtime opts in with `features = ["static"]`.
static = []

[dependencies]
# xplug is not published: the SDK comes from an xplug checkout.
xplug-sdk = {{ path = {sdk} }}

[dev-dependencies]
xplug-manager = {{ path = {manager} }}

# A workspace of its own; remove this table to make the crate a member of
# an enclosing workspace.
[workspace]
"#,
        library = format_args!("{}{ident}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX),
        sdk = toml_string(&sdk),
        manager = toml_string(&manager),
    );
    let lib_rs = format!(
        r#"//! `{name}`: an IREE executable import plugin written with xplug-sdk.
//!
//! `cargo build --release` makes the shared library a host loads (IREE's
//! `--executable_plugin=`, xplug's manager, `xplug check`).

use xplug_sdk::{{ImportError, ImportParams}};

/// What an executable passes to `{ident}_add_f32`: the C struct
/// `struct {{ float a; float b; float result; }}`.
#[derive(Debug, Default, ImportParams)]
#[repr(C)]
pub struct AddParams {{
    /// First operand.
    pub a: f32,
    /// Second operand.
    pub b: f32,
    /// Written by the import: `a + b`.
    pub result: f32,
}}

#[xplug_sdk::plugin(name = "{ident}", description = "adds two floats")]
pub mod plugin {{
    use super::*;

    /// `result = a + b`; refuses a non-finite sum.
    #[import("{ident}_add_f32")]
    fn add_f32(params: &mut AddParams) -> Result<(), ImportError> {{
        let sum = params.a + params.b;
        if !sum.is_finite() {{
            return Err(ImportError::INVALID_ARGUMENT);
        }}
        params.result = sum;
        Ok(())
    }}
}}
"#
    );
    let test_rs = format!(
        r#"//! Loads the plugin the way a host does and calls its import.

use std::sync::Arc;

use xplug_manager::Manager;
use xplug_manager::providers::{{LoadParamList, Plugin}};

#[test]
fn loads_and_adds() {{
    let query = {ident}::plugin::PLUGIN.query();
    // SAFETY: the query function is this crate's plugin, generated by
    // xplug-sdk, so it obeys the v0 ABI.
    let plugin = unsafe {{ Plugin::from_static_query(query, &LoadParamList::new()) }}.expect("the plugin loads");
    assert_eq!(plugin.name(), "{ident}");

    let manager = Arc::new(Manager::new());
    manager.register_plugin(plugin).expect("the manager takes the plugin");
    let imports = manager.resolve_imports(["{ident}_add_f32"]).expect("the import resolves");

    // SAFETY: `{ident}_add_f32` takes an `AddParams`.
    let add = unsafe {{ imports.typed::<{ident}::AddParams>("{ident}_add_f32") }}.expect("the import resolved");
    let mut params = {ident}::AddParams {{ a: 2.5, b: 4.0, result: 0.0 }};
    let code = add.call(&mut params);
    assert_eq!((code, params.result), (0, 6.5));

    let mut overflow = {ident}::AddParams {{ a: f32::MAX, b: f32::MAX, result: 0.0 }};
    let code = add.call(&mut overflow);
    assert_ne!(code, 0, "a non-finite sum is refused");
}}
"#
    );
    let header_rs = format!(
        r#"//! Keeps `include/{ident}_params.h`, the C declaration of the params
//! structs (for C hosts and kernels), in step with the Rust ones: written
//! when missing or when `XPLUG_BLESS=1`, a failure when it drifted.

#[test]
fn params_header_is_current() {{
    let generated = {ident}::plugin::PLUGIN.c_header();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/{ident}_params.h");
    if !path.exists() || std::env::var_os("XPLUG_BLESS").is_some() {{
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }}
    let committed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(committed, generated, "{{}} drifted; rerun with XPLUG_BLESS=1", path.display());
}}
"#
    );
    let gitignore = "/target\n".to_owned();
    vec![
        ("Cargo.toml", cargo_toml),
        ("src/lib.rs", lib_rs),
        ("tests/load.rs", test_rs),
        ("tests/c_header.rs", header_rs),
        (".gitignore", gitignore),
    ]
}

/// `path` as a TOML basic string.
fn toml_string(path: &Path) -> String {
    let text = path.display().to_string();
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_names_are_checked() {
        assert_eq!(crate_ident("my-plugin").unwrap(), "my_plugin");
        assert!(crate_ident("").unwrap_err().contains("ASCII letters"));
        assert!(crate_ident("9lives").unwrap_err().contains("starting with a letter"));
        assert!(crate_ident("a b").is_err());
        assert!(crate_ident("static").unwrap_err().contains("reserved"));
    }

    #[test]
    fn toml_strings_are_escaped() {
        assert_eq!(toml_string(Path::new("/a/\"b\"\\c")), r#""/a/\"b\"\\c""#);
    }
}
