//! `xplug new NAME [--path DIR] [--template add|workgroup|kernel]
//! [--standalone]`: scaffolds a plugin crate that builds with plain `cargo
//! build --release` into a loadable shared library.
//!
//! Three templates: `add` (the default: one scalar import); `workgroup` (a
//! stateful dispatch kernel in IREE's workgroup convention with a declared
//! load parameter, a host test over host slices, an `.mlir` program and the
//! IREE commands that run it; `no_std`, with a `sos` feature, so `xplug
//! build --sos` also makes it a `.sos`); `kernel` ([`kernel`]: a stateless
//! workgroup kernel that also builds as an object and bitcode linked into
//! the executable). `--standalone` asks for a crate that builds as both a
//! shared library and a `.sos` and selects `workgroup`.
//!
//! The crate depends on `xplug-sdk` (and, for its test, `xplug-manager`)
//! where this `xplug` came from, a fact of its build (`build.rs`), so the
//! first `cargo build` resolves them with no network question asked here:
//! - a packaged `xplug` (`cargo install xplug-cli`, from crates.io or the
//!   registry the user's Cargo replaces it with): by version, its own,
//!   which that registry has, as it had this `xplug`;
//! - an `xplug` built from a checkout: the crates are not on crates.io yet,
//!   so by path on that checkout, and `xplug new` says so;
//! - `--sdk DIR`: by path on the checkout at DIR, whatever the build.

mod kernel;

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::output::{Style, print_json};

/// Create a plugin crate that `cargo build --release` turns into a
/// loadable shared library (one import and a test that loads it).
///
/// Its xplug dependencies resolve on the first `cargo build`: an xplug
/// installed from a registry (`cargo install xplug-cli`) writes its own
/// version, which that registry has; an xplug built from a checkout
/// writes path dependencies on that checkout and says so (the crates
/// are not on crates.io yet); `--sdk DIR` names the checkout. It prints
/// the commands to run next, in order, from this directory.
#[derive(Debug, clap::Args)]
pub(crate) struct NewArgs {
    /// The crate and plugin name (`my_plugin`).
    name: String,
    /// The directory to create (default: ./NAME).
    #[arg(long, value_name = "DIR")]
    path: Option<PathBuf>,
    /// An xplug checkout for the crate to depend on by path (default:
    /// the checkout this xplug was built from, or, for an xplug
    /// installed from a registry, its crates there by version).
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
    /// What the crate holds: `add` (one scalar import, the default),
    /// `workgroup` (a stateful dispatch kernel with a load parameter, a
    /// host test, an .mlir program; also builds as a .sos) or `kernel` (a
    /// stateless dispatch kernel for every deployment: a .so, a .sos, and
    /// an object and bitcode linked into IREE's executables).
    #[arg(long, value_enum, value_name = "TEMPLATE")]
    template: Option<Template>,
    /// A crate that builds as a shared library and, with `xplug build
    /// --sos`, as a standalone embedded ELF (selects `workgroup`).
    #[arg(long)]
    standalone: bool,
}

impl NewArgs {
    /// Runs the command; returns the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        run(self, globals.json)
    }
}

/// The kinds of crate `xplug new` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Template {
    /// One scalar import (`result = a + b`); a shared library.
    Add,
    /// A stateful workgroup kernel with a declared load parameter, a host
    /// test, an `.mlir` program; a shared library and a `.sos`.
    Workgroup,
    /// A stateless workgroup kernel, a host test, an `.mlir` program; a
    /// shared library, a `.sos`, and an object and bitcode linked into the
    /// executable.
    Kernel,
}

impl Template {
    /// Its name on the command line and in `--json`.
    fn name(self) -> &'static str {
        match self {
            Self::Add => "add",
            Self::Workgroup => "workgroup",
            Self::Kernel => "kernel",
        }
    }
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

/// The xplug checkout this `xplug` was built from, set by `build.rs`;
/// `None` for a packaged `xplug-cli` (from a registry, which has the
/// crates of its version).
const BUILT_FROM: Option<&str> = option_env!("XPLUG_CLI_CHECKOUT");

/// Where a new crate's xplug dependencies come from.
#[derive(Debug, PartialEq, Eq)]
enum Source {
    /// A registry, at this `xplug`'s version.
    Version(&'static str),
    /// The xplug checkout at this (canonical) directory, by path: the one
    /// `--sdk` names (`named`) or the one this `xplug` was built from.
    Checkout {
        /// The checkout's directory.
        dir: PathBuf,
        /// Named by `--sdk`.
        named: bool,
    },
}

impl Source {
    /// Where the crates come from, given `--sdk` (`sdk`) and the checkout
    /// this `xplug` was built from (`built_from`, [`BUILT_FROM`]).
    fn choose(sdk: Option<&Path>, built_from: Option<&Path>) -> Result<Self, CliError> {
        let (dir, named) = match (sdk, built_from) {
            (Some(sdk), _) => (sdk, true),
            (None, Some(built_from)) => (built_from, false),
            (None, None) => return Ok(Self::Version(env!("CARGO_PKG_VERSION"))),
        };
        std::fs::canonicalize(dir)
            .ok()
            .filter(|dir| dir.join("crates").join("plugin-sdk").join("Cargo.toml").is_file())
            .map(|dir| Self::Checkout { dir, named })
            .ok_or_else(|| CliError::Usage {
                message: if named {
                    format!(
                        "the xplug sources are not at {} (no crates/plugin-sdk/Cargo.toml there); pass --sdk \
                         with the path of an xplug checkout",
                        dir.display()
                    )
                } else {
                    format!(
                        "xplug's crates are not on crates.io yet, and the checkout this xplug was built from, \
                         {}, has no crates/plugin-sdk/Cargo.toml any more; pass --sdk with the path of an xplug \
                         checkout",
                        dir.display()
                    )
                },
            })
    }

    /// The TOML inline table of the xplug crate `package` (at `crate_dir`
    /// in a checkout), with `extra` (`, key = value` pairs) appended.
    fn dependency(&self, crate_dir: &str, extra: &str) -> String {
        match self {
            Source::Version(version) => format!("{{ version = \"{version}\"{extra} }}"),
            Source::Checkout { dir, .. } => {
                format!("{{ path = {}{extra} }}", toml_string(&dir.join("crates").join(crate_dir)))
            }
        }
    }

    /// The comment above the dependencies.
    fn comment(&self) -> &'static str {
        match self {
            Source::Version(_) => {
                "# xplug's crates from the registry (crates.io unless your Cargo replaces it)."
            }
            Source::Checkout { named: true, .. } => {
                "# xplug's crates from a checkout (`xplug new --sdk DIR`)."
            }
            Source::Checkout { named: false, .. } => {
                "# xplug's crates from the checkout `xplug` was built from (they are not on\n\
                 # crates.io yet; `xplug new --sdk DIR` names another checkout)."
            }
        }
    }

    /// What `xplug new` tells the user about the dependencies, when there
    /// is something to tell: they are not on the registry.
    fn note(&self) -> Option<String> {
        match self {
            Source::Checkout { dir, named: false } => Some(format!(
                "xplug's crates are not on crates.io yet: the crate depends on them by path, on the checkout \
                 this xplug was built from ({}); `--sdk DIR` names another checkout",
                dir.display()
            )),
            _ => None,
        }
    }

    /// The dependencies for `--json`.
    fn json(&self) -> serde_json::Value {
        match self {
            Source::Version(version) => json!({ "from": "registry", "version": version }),
            Source::Checkout { dir, named } => json!({
                "from": if *named { "sdk" } else { "built_from" },
                "path": dir.display().to_string(),
                "note": self.note(),
            }),
        }
    }
}

/// `word` as one shell word: as it is when it needs no quoting, else in
/// single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./+:,=@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// How the "next:" commands run `xplug`: by the name it was run by when
/// the shell found it on `PATH`, else by its absolute path (a relative one
/// would break after the `cd`).
fn xplug_command() -> String {
    let invoked = std::env::args_os().next().unwrap_or_default();
    let invoked = Path::new(&invoked);
    if invoked.components().count() == 1 && !invoked.as_os_str().is_empty() {
        return shell_word(&invoked.to_string_lossy());
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| invoked.to_path_buf());
    shell_word(&exe.to_string_lossy())
}

/// Runs `xplug new`.
fn run(options: &NewArgs, json_output: bool) -> Result<u8, CliError> {
    let ident = crate_ident(&options.name).map_err(|message| CliError::Usage { message })?;
    let dir = options.path.clone().unwrap_or_else(|| PathBuf::from(&options.name));
    let source = Source::choose(options.sdk.as_deref(), BUILT_FROM.map(Path::new))?;
    if dir.exists() && std::fs::read_dir(&dir).map_or(true, |mut entries| entries.next().is_some()) {
        return Err(CliError::Usage {
            message: format!(
                "{} already exists and is not an empty directory; choose another --path",
                dir.display()
            ),
        });
    }

    let template = match (options.template, options.standalone) {
        (Some(Template::Add), true) => {
            return Err(CliError::Usage {
                message: "the `add` template is a shared library only; `--standalone` scaffolds the \
                          `workgroup` template (drop `--template add`)"
                    .to_owned(),
            });
        }
        (Some(template), _) => template,
        (None, true) => Template::Workgroup,
        (None, false) => Template::Add,
    };
    let files = match template {
        Template::Add => scaffold(&options.name, &ident, &source),
        Template::Workgroup => scaffold_workgroup(&options.name, &ident, &source),
        Template::Kernel => kernel::scaffold(&options.name, &ident, &source),
    };
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
    let sos =
        (template != Template::Add).then(|| Path::new("target").join("sos").join(format!("{ident}.sos")));
    let next = next_steps(&dir, &built, sos.as_deref(), template, &ident);
    if json_output {
        print_json(&json!({
            "ok": true,
            "name": options.name,
            "plugin": ident,
            "template": template.name(),
            "path": dir.display().to_string(),
            "files": files.iter().map(|(relative, _)| *relative).collect::<Vec<_>>(),
            "dependencies": source.json(),
            "library": built.display().to_string(),
            "sos": sos.as_ref().map(|sos| sos.display().to_string()),
            "next": next,
        }));
    } else {
        let style = Style::stdout();
        println!("{} plugin crate `{}` in {}", style.good("created"), options.name, dir.display());
        for (relative, _) in &files {
            println!("  {relative}");
        }
        if let Some(note) = source.note() {
            eprintln!("{} {note}", Style::stderr().warn("note:"));
        }
        println!("next:");
        for line in &next {
            println!("  {line}");
        }
    }
    Ok(0)
}

/// The commands to run next, in order, as they work when pasted into a
/// shell in the directory where `xplug new` ran: `cd` into the crate, then
/// paths relative to it (`built`: the shared library, `sos`: the `.sos` of
/// a `workgroup` or `kernel` crate, both under the default target
/// directory).
fn next_steps(dir: &Path, built: &Path, sos: Option<&Path>, template: Template, ident: &str) -> Vec<String> {
    let xplug = xplug_command();
    let built = shell_word(&built.display().to_string());
    let mut steps = vec![
        format!("cd {}", shell_word(&dir.display().to_string())),
        "cargo build --release".to_owned(),
        "cargo test".to_owned(),
        format!("{xplug} check {built}"),
    ];
    match sos {
        None => steps.push(format!(
            "{xplug} call {built} {ident}_add_f32 --field f32:2.5 --field f32:4 --field f32:0"
        )),
        Some(sos) => {
            steps.push(format!("{xplug} build --sos"));
            steps.push(format!("{xplug} inspect {}", shell_word(&sos.display().to_string())));
            if template == Template::Kernel {
                steps.push(format!("{xplug} build --object --bitcode --program {}", kernel::PROGRAM));
                steps.push(
                    "# README.md: the .mlir programs and the IREE commands that run each deployment"
                        .to_owned(),
                );
            } else {
                steps.push("# README.md: the .mlir program and the IREE commands that run it".to_owned());
            }
        }
    }
    steps
}

/// The files of the new crate: (path relative to its directory, contents).
fn scaffold(name: &str, ident: &str, source: &Source) -> Vec<(&'static str, String)> {
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
{comment}
xplug-sdk = {sdk}

[dev-dependencies]
xplug-manager = {manager}

# A workspace of its own; remove this table to make the crate a member of
# an enclosing workspace.
[workspace]
"#,
        library = format_args!("{}{ident}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX),
        comment = source.comment(),
        sdk = source.dependency("plugin-sdk", ""),
        manager = source.dependency("manager", ""),
    );
    let lib_rs = format!(
        r#"//! `{name}`: an IREE executable import plugin written with xplug-sdk.
//!
//! `cargo build --release` makes the shared library a host loads (IREE's
//! `--executable_plugin=`, xplug's manager, `xplug check`).

use xplug_sdk::{{ImportError, ImportArgs}};

/// What an executable passes to `{ident}_add_f32`: the C struct
/// `struct {{ float a; float b; float result; }}`.
#[derive(Debug, Default, ImportArgs)]
#[repr(C)]
pub struct AddArgs {{
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
    fn add_f32(args: &mut AddArgs) -> Result<(), ImportError> {{
        let sum = args.a + args.b;
        if !sum.is_finite() {{
            return Err(ImportError::INVALID_ARGUMENT);
        }}
        args.result = sum;
        Ok(())
    }}
}}
"#
    );
    let test_rs = format!(
        r#"//! Loads the plugin the way a host does and calls its import.

use std::sync::Arc;

use xplug_manager::Manager;
use xplug_manager::providers::{{LoadParamList, STATIC}};

#[test]
fn loads_and_adds() {{
    let query = {ident}::plugin::PLUGIN.query();
    // SAFETY: the query function is this crate's plugin, generated by
    // xplug-sdk, so it obeys the v0 ABI.
    let code = unsafe {{ STATIC.query_code("{ident}", query) }};
    let plugin = code.load(&LoadParamList::new()).expect("the plugin loads");
    assert_eq!(plugin.name(), "{ident}");

    let manager = Manager::new();
    manager.register_plugin(plugin).expect("the manager takes the plugin");
    let imports = manager.resolve_imports(["{ident}_add_f32"]).expect("the import resolves");

    // SAFETY: `{ident}_add_f32` takes an `AddArgs`.
    let add = unsafe {{ imports.typed::<{ident}::AddArgs>("{ident}_add_f32") }}.expect("the import resolved");
    let mut args = {ident}::AddArgs {{ a: 2.5, b: 4.0, result: 0.0 }};
    let code = add.call(&mut args);
    assert_eq!((code, args.result), (0, 6.5));

    let mut overflow = {ident}::AddArgs {{ a: f32::MAX, b: f32::MAX, result: 0.0 }};
    let code = add.call(&mut overflow);
    assert_ne!(code, 0, "a non-finite sum is refused");
}}
"#
    );
    let header_rs = args_header_test(ident);
    let gitignore = "/target\n".to_owned();
    vec![
        ("Cargo.toml", cargo_toml),
        ("src/lib.rs", lib_rs),
        ("tests/load.rs", test_rs),
        ("tests/c_header.rs", header_rs),
        (".gitignore", gitignore),
    ]
}

/// The files of a `workgroup` crate: a stateful leaky-ReLU kernel in
/// IREE's workgroup convention with a declared `slope` parameter, buildable
/// as a shared library and as a `.sos`.
fn scaffold_workgroup(name: &str, ident: &str, source: &Source) -> Vec<(&'static str, String)> {
    let library = format!("{}{ident}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    // Named after the crate, whose one kernel it is (`NAME_workgroup`), not
    // after what the template happens to compute: the name stays right when
    // the author replaces the leaky ReLU with their own computation.
    let import = format!("{ident}_workgroup");
    let cargo_toml = standalone_cargo_toml(
        name,
        &library,
        &format!(
            "`xplug build --sos` builds the same library as\n# a standalone embedded ELF (target/sos/{ident}.sos)."
        ),
        source,
    );
    let lib_rs = format!(
        r#"//! `{name}`: a leaky-ReLU dispatch kernel for IREE executables, with
//! the negative slope as a load parameter.
//!
//! `{import}` follows IREE's workgroup convention: each call gets
//! its slice of the tensor as base pointer + element offset per operand,
//! the slice length `size`, the workgroup id `tid` (informational, never an
//! element index) and the processor fields of `hal.import.fields`, and
//! computes `out[i] = x[i] >= 0 ? x[i] : slope * x[i]` for `i < size`.
//!
//! Builds two ways from this one source:
//! - `cargo build --release`: the shared library target/release/{library};
//! - `xplug build --sos`: the standalone embedded ELF target/sos/{ident}.sos
//!   (`no_std`, allocating only through the host allocator).
#![no_std]

use xplug_sdk::abi::StatusCode;
use xplug_sdk::{{Buffer, BufferMut, Environment, Error, ImportError, ImportArgs, LoadParams, PluginState}};

/// The args struct IREE passes to `{import}` (C layout, 64-bit:
/// `const float* x; size_t x_offset; float* out; size_t out_offset;
/// size_t size; size_t tid; uint32_t processor_id; const uint64_t*
/// processor_data;`; `include/{ident}_args.h` is generated from it).
#[derive(Debug, ImportArgs)]
#[repr(C)]
pub struct LeakyReluArgs {{
    /// The input tensor's base pointer.
    pub x: Buffer<f32>,
    /// Element offset of this call's slice in `x`.
    pub x_offset: usize,
    /// The output tensor's base pointer.
    pub out: BufferMut<f32>,
    /// Element offset of this call's slice in `out`.
    pub out_offset: usize,
    /// Elements in this call's slice.
    pub size: usize,
    /// The calling workgroup's id (informational).
    pub tid: usize,
    /// The processor running the workgroup (`hal.import.fields`).
    pub processor_id: u32,
    /// That processor's feature bits (`hal.import.fields`).
    pub processor_data: Buffer<u64>,
}}

/// The plugin's state: created by `load` from the `slope` parameter,
/// shared by every call.
#[derive(Debug)]
pub struct LeakyRelu {{
    slope: f32,
}}

impl PluginState for LeakyRelu {{
    fn load(_env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, Error> {{
        // Declared below with its default, so `load` has already refused
        // unknown keys and non-numbers; `parse` sees the default when the
        // key is absent.
        let slope = params.parse::<f32>("slope")?.unwrap_or(0.25);
        if !(0.0..=1.0).contains(&slope) {{
            // The message is a `&'static str` (copied into a `String`
            // through the host allocator): `format!` would link the
            // standard library's unwinding code, which a `.sos` cannot have.
            return Err(Error::custom(
                StatusCode::OUT_OF_RANGE,
                "`slope` must be between 0 and 1 (a leaky ReLU keeps the sign of its input); pass e.g. `slope=0.1`",
            ));
        }}
        Ok(Self {{ slope }})
    }}
}}

#[xplug_sdk::plugin(
    name = "{ident}",
    description = "leaky ReLU workgroup kernel",
    features(standalone),
    state = LeakyRelu,
    params(slope: f32 = 0.25 "the slope applied to negative inputs, between 0 and 1")
)]
pub mod plugin {{
    use super::*;

    /// `out[out_offset + i] = leaky_relu(x[x_offset + i])` for `i < size`.
    #[import("{import}")]
    fn leaky_relu(args: &mut LeakyReluArgs, state: &LeakyRelu) -> Result<(), ImportError> {{
        let size = args.size;
        if size == 0 {{
            return Ok(());
        }}
        // IREE passes non-NULL, aligned bindings; damaged code may not, and
        // a slice of such a pointer would be undefined.
        if args.x.is_null() || args.out.is_null() || !(args.x.is_aligned() && args.out.is_aligned()) {{
            return Err(ImportError::INVALID_ARGUMENT);
        }}
        let (Some(x_end), Some(out_end)) =
            (args.x_offset.checked_add(size), args.out_offset.checked_add(size))
        else {{
            return Err(ImportError::INVALID_ARGUMENT);
        }};
        // SAFETY: IREE's dispatch convention: each binding is valid for
        // `offset + size` elements, the input is only read during the
        // dispatch and `[out_offset, out_offset + size)` is this call's
        // alone.
        let (x, out) = unsafe {{
            (&args.x.as_slice(x_end)[args.x_offset..], &mut args.out.as_mut_slice(out_end)[args.out_offset..])
        }};
        for (out, &x) in out.iter_mut().zip(x) {{
            *out = if x >= 0.0 {{ x }} else {{ state.slope * x }};
        }}
        Ok(())
    }}
}}
"#
    );
    let test_rs = format!(
        r#"//! Loads the plugin the way a host does and calls its kernel over host
//! slices, as IREE would for one workgroup.

use std::sync::Arc;

use xplug_manager::Manager;
use xplug_manager::providers::{{Error, LoadParamList, Plugin, STATIC}};
use xplug_sdk::{{Buffer, BufferMut}};
use {ident}::LeakyReluArgs;

fn load(params: &LoadParamList) -> Result<Plugin, Error> {{
    let query = {ident}::plugin::PLUGIN.query();
    // SAFETY: the query function is this crate's plugin, generated by
    // xplug-sdk, so it obeys the v0 ABI.
    let code = unsafe {{ STATIC.query_code("{ident}", query) }};
    code.load(params)
}}

/// Runs the kernel on the slice `x[offset..offset + size]`, like one
/// workgroup, and returns the whole output tensor.
fn run(params: &LoadParamList, x: &[f32], offset: usize, size: usize) -> (i32, Vec<f32>) {{
    let manager = Manager::new();
    manager.register_plugin(load(params).expect("the plugin loads")).expect("the manager takes it");
    let imports = manager.resolve_imports(["{import}"]).expect("the import resolves");
    // SAFETY: `{import}` takes a `LeakyReluArgs`.
    let kernel = unsafe {{ imports.typed::<LeakyReluArgs>("{import}") }}.expect("resolved");
    let mut out = vec![0.0_f32; x.len()];
    let mut call = LeakyReluArgs {{
        // Valid for the call: `x` and `out` outlive it, `offset + size`
        // elements are in both.
        x: Buffer::from_slice(x),
        x_offset: offset,
        out: BufferMut::from_mut_slice(&mut out),
        out_offset: offset,
        size,
        tid: 1,
        processor_id: 0,
        processor_data: Buffer::from_slice(&[]),
    }};
    let code = kernel.call(&mut call);
    (code, out)
}}

#[test]
fn the_kernel_writes_its_slice_with_the_declared_default_slope() {{
    let x = [-4.0, -2.0, 0.0, 2.0, -8.0, 6.0];
    let (code, out) = run(&LoadParamList::new(), &x, 1, 4);
    assert_eq!(code, 0);
    // Only the slice [1, 5) is written; 0.25 is the declared default.
    assert_eq!(out, [0.0, -0.5, 0.0, 2.0, -2.0, 0.0]);
}}

#[test]
fn the_slope_parameter_is_used() {{
    let x = [-4.0, 3.0];
    let (code, out) = run(&LoadParamList::new().with("slope", "0.5"), &x, 0, 2);
    assert_eq!((code, out), (0, vec![-2.0, 3.0]));
}}

#[test]
fn bad_parameters_refuse_the_load() {{
    for bad in [("slop", "0.5"), ("slope", "abc"), ("slope", "2")] {{
        let error = load(&LoadParamList::new().with(bad.0, bad.1)).expect_err("refused");
        assert!(matches!(error, Error::LoadFailed {{ .. }}), "{{error}}");
    }}
}}
"#
    );
    let header_rs = args_header_test(ident);
    let mlir = format!(
        r#"// `{name}`'s kernel in an IREE program: `iree_codegen.ukernel.generic`
// calls the imported `{import}` from 4 workgroups, each on its
// slice of `ceil(n / 4)` elements (the last ones shorter or empty). IREE
// passes the operands as base pointer + element offset, then the slice
// length and the workgroup id, then the fields of `hal.import.fields`:
// exactly `LeakyReluArgs`.
func.func @leaky_relu(%x: tensor<?xf32>) -> tensor<?xf32> {{
  %zero = arith.constant 0 : index
  %one = arith.constant 1 : index
  %groups = arith.constant 4 : index
  %n = tensor.dim %x, %zero : tensor<?xf32>
  %init = tensor.empty(%n) : tensor<?xf32>
  %result = flow.dispatch.region[%groups] -> (tensor<?xf32>{{%n}}) {{
    %group = flow.dispatch.workgroup.id[0] : index
    %count = flow.dispatch.workgroup.count[0] : index
    %tile = affine.apply affine_map<()[s0, s1] -> (s0 ceildiv s1)>()[%n, %count]
    %first = affine.min affine_map<()[s0, s1, s2] -> (s0 * s1, s2)>()[%group, %tile, %n]
    %size = affine.min affine_map<()[s0, s1, s2] -> (s1, s2 - s0)>()[%first, %tile, %n]
    %in = tensor.extract_slice %x[%first] [%size] [1] : tensor<?xf32> to tensor<?xf32>
    %out = tensor.extract_slice %init[%first] [%size] [1] : tensor<?xf32> to tensor<?xf32>
    %slice = iree_codegen.ukernel.generic "{import}"
      ins(%in : tensor<?xf32>)
      outs(%out : tensor<?xf32>)
      (%size, %group : index, index)
      fn_def_attrs {{hal.import.fields = ["processor_id", "processor_data"]}}
      strided_dims([[], []]) -> tensor<?xf32>
    %whole = tensor.insert_slice %slice into %init[%first] [%size] [1]
        : tensor<?xf32> into tensor<?xf32>
    flow.return %whole : tensor<?xf32>
  }} count(%workload: index) -> (index, index, index) {{
    flow.return %workload, %one, %one : index, index, index
  }}
  return %result : tensor<?xf32>
}}
"#
    );
    let readme = format!(
        r#"# {name}

A leaky-ReLU kernel for IREE executables, written with xplug-sdk:
`{import}` computes `out[i] = x[i] >= 0 ? x[i] : slope * x[i]` over
its workgroup's slice, with `slope` a declared load parameter (default
0.25).

## Build

```sh
cargo build --release   # target/release/{library}
cargo test              # the kernel over host slices; include/{ident}_args.h
xplug build --sos       # target/sos/{ident}.sos (standalone embedded ELF)
```

`xplug inspect target/sos/{ident}.sos` lists the import and the `slope`
parameter.

## Run it in IREE

`leaky_relu.mlir` calls the kernel from 4 workgroups. With IREE's pip
packages (`pip install iree-base-compiler iree-base-runtime`):

```sh
iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \
  --iree-llvmcpu-target-cpu=generic leaky_relu.mlir -o leaky_relu.vmfb
iree-run-module --device=local-sync --executable_plugin=target/sos/{ident}.sos \
  --module=leaky_relu.vmfb --function=leaky_relu --input="6xf32=-4,-2,0,2,-8,6"
```

(`--executable_plugin=target/release/{library}` runs the shared library
instead.) IREE's `--executable_plugin` passes no load parameters, so IREE
uses the default slope. xplug's runtime passes them from the spec:

```sh
xplug run leaky_relu.vmfb --function=leaky_relu --input="6xf32=-4,-2,0,2,-8,6" \
  --plugin='target/sos/{ident}.sos?slope=0.5'
```

A misspelled key (`?slop=0.5`) or a value that is not a number
(`?slope=abc`) is refused by xplug's loader, from the declaration the
plugin exports, before `load` runs; one outside [0, 1] (`?slope=2`) by the
plugin's `load`, with its message.

In the `.sos` build, `alloc` works through the host allocator, but the
precompiled standard library's formatting (`format!`, `to_string`) links
unwinding code a `.sos` cannot have: `xplug build --sos` then fails naming
`_Unwind_Resume`. Keep messages static, as `load` does here.
"#
    );
    vec![
        ("Cargo.toml", cargo_toml),
        ("src/lib.rs", lib_rs),
        ("tests/kernel.rs", test_rs),
        ("tests/c_header.rs", header_rs),
        ("leaky_relu.mlir", mlir),
        ("README.md", readme),
        (".gitignore", "/target\n*.vmfb\n".to_owned()),
    ]
}

/// The `Cargo.toml` of a crate that builds as a shared library (`library`)
/// and, `no_std` with its `sos` feature, through `xplug build` (`builds`
/// says what, as comment lines).
fn standalone_cargo_toml(name: &str, library: &str, builds: &str, source: &Source) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
# cdylib: the shared library hosts load (`cargo build --release` makes
# target/release/{library}); rlib: for tests and for runtimes that link the
# plugin into their binary. {builds}
crate-type = ["cdylib", "rlib"]

[features]
default = ["std"]
# The shared-library build: the SDK catches panics at the C boundary,
# keeps load errors per thread and gives tests `Buffer::from_slice`.
std = ["xplug-sdk/std", "xplug-sdk/static-registration"]
# Link the plugin into a runtime binary instead of exporting its C entry
# points. A runtime opts in with `features = ["static"]`.
static = []
# The builds of `xplug build` (`--sos`, `--object`, `--bitcode` turn it on
# with `--no-default-features`): no_std, the SDK's standalone mode (global
# allocator through the host allocator, trapping panic handler, memory
# functions).
sos = ["xplug-sdk/standalone"]

[dependencies]
{comment}
xplug-sdk = {sdk}

[dev-dependencies]
xplug-manager = {manager}

# A workspace of its own; remove this table to make the crate a member of
# an enclosing workspace.
[workspace]
"#,
        comment = source.comment(),
        sdk = source.dependency("plugin-sdk", ", default-features = false"),
        manager = source.dependency("manager", ""),
    )
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

/// The template's `tests/c_header.rs`: keeps `include/{ident}_args.h`,
/// the C declaration of the args structs, in step with the Rust ones.
fn args_header_test(ident: &str) -> String {
    format!(
        r#"//! Keeps `include/{ident}_args.h`, the C declaration of the args
//! structs (for C hosts and kernels), in step with the Rust ones: written
//! when missing or when `XPLUG_BLESS=1`, a failure when it drifted.

#[test]
fn args_header_is_current() {{
    let generated = {ident}::plugin::PLUGIN.c_header();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/{ident}_args.h");
    if !path.exists() || std::env::var_os("XPLUG_BLESS").is_some() {{
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }}
    let committed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(committed, generated, "{{}} drifted; rerun with XPLUG_BLESS=1", path.display());
}}
"#
    )
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

    /// The checkout this test is built from (this crate's `../..`).
    fn checkout() -> PathBuf {
        std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).unwrap()
    }

    #[test]
    fn dependencies_come_from_where_this_xplug_came_from() {
        // A packaged xplug (no checkout recorded): its own version, from
        // the registry it came from; nothing to tell.
        let packaged = Source::choose(None, None).unwrap();
        assert_eq!(packaged, Source::Version(env!("CARGO_PKG_VERSION")));
        assert_eq!(packaged.note(), None);
        assert_eq!(
            packaged.dependency("plugin-sdk", ""),
            format!("{{ version = \"{}\" }}", env!("CARGO_PKG_VERSION"))
        );

        // Built from a checkout: by path on it, and a note that says why.
        let root = checkout();
        let built = Source::choose(None, Some(&root)).unwrap();
        assert_eq!(built, Source::Checkout { dir: root.clone(), named: false });
        let note = built.note().expect("a note");
        assert!(
            note.contains("not on crates.io yet") && note.contains(&root.display().to_string()),
            "{note}"
        );
        assert_eq!(
            built.dependency("manager", ", default-features = false"),
            format!("{{ path = \"{}\", default-features = false }}", root.join("crates/manager").display())
        );
        // This very build records its checkout.
        assert_eq!(BUILT_FROM.map(PathBuf::from), Some(root.clone()));

        // `--sdk` wins over the build's checkout, with no note.
        let named = Source::choose(Some(&root), Some(Path::new("/elsewhere"))).unwrap();
        assert_eq!(named, Source::Checkout { dir: root, named: true });
        assert_eq!(named.note(), None);

        // A checkout that is gone, or not one, is refused naming what to do.
        let gone = Source::choose(None, Some(Path::new("/no/such/xplug"))).unwrap_err().to_string();
        assert!(gone.contains("/no/such/xplug") && gone.contains("pass --sdk"), "{gone}");
        let not_one = Source::choose(Some(Path::new("/")), None).unwrap_err().to_string();
        assert!(not_one.contains("no crates/plugin-sdk/Cargo.toml"), "{not_one}");
    }

    #[test]
    fn next_steps_are_shell_words_relative_to_the_crate_after_the_cd() {
        assert_eq!(shell_word("my_plugin"), "my_plugin");
        assert_eq!(shell_word("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        let steps =
            next_steps(Path::new("my dir"), Path::new("target/release/libp.so"), None, Template::Add, "p");
        assert_eq!(steps[..3], ["cd 'my dir'", "cargo build --release", "cargo test"]);
        assert!(steps[3].ends_with(" check target/release/libp.so"), "{steps:?}");
        assert!(steps.iter().skip(1).all(|step| !step.contains("my dir")), "{steps:?}");
    }

    #[test]
    fn toml_strings_are_escaped() {
        assert_eq!(toml_string(Path::new("/a/\"b\"\\c")), r#""/a/\"b\"\\c""#);
    }
}
