//! The error type of this crate.

use std::path::PathBuf;

use crate::element::ElementType;
use crate::sys;

/// An error IREE's runtime reported: its status code and IREE's own text
/// for it (code name, message and annotations).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct IreeStatus {
    /// IREE's status code (`iree_status_code_t`, the values of
    /// [`xplug_manager::providers::abi::StatusCode`]).
    pub code: u32,
    /// IREE's text for the status.
    pub text: String,
}

impl From<sys::Status> for IreeStatus {
    fn from(status: sys::Status) -> Self {
        Self { code: status.code(), text: status.text() }
    }
}

/// Everything that can go wrong running IREE programs through xplug.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// IREE's runtime could not be set up (VM instance, types, threads).
    #[error("cannot set up IREE's runtime ({what})")]
    Runtime {
        /// The step that failed.
        what: &'static str,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// A device could not be created.
    #[error("cannot create IREE device `{device}`")]
    Device {
        /// `local-sync` or `local-task`.
        device: &'static str,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// IREE's flag parser refused a flag ([`crate::set_iree_flags`]):
    /// IREE's message names it (`flag 'X' not recognized`, a bad value).
    #[error("IREE refused the flags {}", flags.join(" "))]
    IreeFlags {
        /// The flags given, as given.
        flags: Vec<String>,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// A module file could not be read.
    #[error("cannot read the IREE module {}; compile one with `iree-compile --iree-hal-target-device=local ...`", path.display())]
    ModuleFile {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file given to read (a module, an input, an args block) is not a
    /// regular file: reading it could block or never end.
    #[error("{what} {} is {kind}, not a regular file; give a regular file", path.display())]
    NotAFile {
        /// What the file was for (`the module`, `the input file`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What it is instead (`a character device`, `a FIFO`, ...).
        kind: &'static str,
    },
    /// A file given to read is larger than xplug reads for that purpose.
    #[error("{what} {} is larger than {limit} bytes, the most xplug reads for it", path.display())]
    FileTooLarge {
        /// What the file was for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The limit ([`crate::files::MODULE_LIMIT`], ...).
        limit: u64,
    },
    /// A file given to read cannot be opened or read.
    #[error("cannot read {what} {}", path.display())]
    FileRead {
        /// What the file was for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An `.npy` file given as an input is not one xplug reads.
    #[error("cannot read the input file {} as .npy", path.display())]
    Npy {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: xplug_npy::Error,
    },
    /// An argument does not fit the function's signature (too many, a
    /// tensor for a scalar, a file too short for its type), or is empty.
    #[error("argument {index} of `{function}` (`{input}`): {problem}")]
    Input {
        /// The function.
        function: String,
        /// The argument's position.
        index: usize,
        /// The argument as given, cut by [`xplug_npy::excerpt`].
        input: String,
        /// What is wrong and what to give instead.
        problem: String,
    },
    /// `xplug run` was not told which function to call and the module does
    /// not export exactly one (IREE's rule: names starting with `__` or
    /// holding `$` are not candidates).
    #[error(
        "give --function: module `{module}` exports {}",
        if functions.is_empty() { "no function".to_owned() } else { functions.join(", ") }
    )]
    FunctionNotGiven {
        /// The module's name.
        module: String,
        /// The candidates.
        functions: Vec<String>,
    },
    /// IREE refused the module's bytes (not a `.vmfb`, or compiled by an
    /// incompatible IREE).
    #[error("IREE cannot load the module `{module}`: is it a .vmfb compiled by IREE {IREE_RUNTIME_VERSION}?")]
    ModuleInvalid {
        /// Where the module came from.
        module: String,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// An executable of the module needs imports that xplug's manager could
    /// not resolve: the module did not load.
    #[error(
        "module `{module}` cannot load on device `{device}`: executable #{executable} has unresolved imports"
    )]
    UnresolvedImports {
        /// Where the module came from.
        module: String,
        /// The device.
        device: &'static str,
        /// The executable's position among those the device loaded.
        executable: usize,
        /// The manager's error (missing names with suggestions).
        #[source]
        source: Box<xplug_manager::Error>,
    },
    /// The module's initialisation failed for another reason (IREE's
    /// status says which).
    #[error("module `{module}` failed to initialise on device `{device}`")]
    ModuleInit {
        /// Where the module came from.
        module: String,
        /// The device.
        device: &'static str,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// The module exports no function of that name.
    #[error("module `{module}` has no function `{function}`{}", hint(suggestion))]
    NoSuchFunction {
        /// The module's name.
        module: String,
        /// The function asked for.
        function: String,
        /// The closest exported name, when one is close.
        suggestion: Option<String>,
    },
    /// An argument could not be made into an IREE value.
    #[error("argument {index} of `{function}` is invalid (`{input}`)")]
    Argument {
        /// The function.
        function: String,
        /// Its position.
        index: usize,
        /// The argument as given.
        input: String,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// The call failed inside IREE (wrong arguments, a failing import, ...).
    #[error("call to `{function}` failed")]
    Call {
        /// The function.
        function: String,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// A result could not be copied out.
    #[error("cannot read result {index} of `{function}`")]
    Result {
        /// The function.
        function: String,
        /// Its position.
        index: usize,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// A result read as a tensor ([`crate::CallResults::tensor`]) is a
    /// scalar or another kind of value.
    #[error("result {index} of `{function}` is not a tensor; read it with `CallResults::value`")]
    NotATensor {
        /// The function.
        function: String,
        /// The result's position.
        index: usize,
    },
    /// A tensor's bytes do not match its shape and element type.
    #[error(
        "tensor of shape {shape:?} and element type {element_type} needs {expected} bytes, found {found}"
    )]
    TensorSize {
        /// The shape.
        shape: Vec<usize>,
        /// The element type.
        element_type: ElementType,
        /// The bytes the shape needs.
        expected: usize,
        /// The bytes given.
        found: usize,
    },
    /// A tensor's elements were asked for as a Rust type its element type
    /// does not read as (see [`crate::Element::reads`]).
    #[error("a tensor of {element_type} cannot be read as `{rust_type}`; read it as its own element type")]
    TensorElementType {
        /// The tensor's element type.
        element_type: ElementType,
        /// The Rust type asked for.
        rust_type: &'static str,
    },
    /// An element's bytes are not a value of the Rust type (a `bool` that
    /// is neither 0 nor 1), or, read in place, not aligned for it.
    #[error("element {index} of the tensor (bytes {bytes:02x?}) is not a `{rust_type}` here")]
    TensorElementValue {
        /// The Rust type asked for.
        rust_type: &'static str,
        /// The element's position, row-major.
        index: usize,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// An `.npy` array has a dtype no IREE element type here matches.
    #[error(
        "the .npy dtype '{descr}' has no IREE element type here (use f16/f32/f64, i8/i16/i32/i64, u8/u16/u32/u64 or \
         bool; bf16 has no .npy form: give it as text, `4xbf16=1,2,3,4`, or raw, `4xbf16=@FILE`)"
    )]
    NpyDtype {
        /// The dtype.
        descr: String,
    },
    /// A parameter archive given to a session cannot be opened.
    #[error(
        "cannot open the parameter archive {} (scope {scope:?}); give an existing .irpa, .gguf or .safetensors file",
        path.display()
    )]
    ParameterFile {
        /// The archive.
        path: PathBuf,
        /// The scope it was given for (`""`: no scope).
        scope: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// IREE cannot index a parameter archive: not one of the formats its
    /// runtime reads (by the extension: `.irpa`, `.gguf`, `.safetensors`),
    /// or not a valid file of that format.
    #[error(
        "{} (scope {scope:?}) is not a parameter archive IREE reads; give an .irpa, .gguf or .safetensors file \
         (`iree-create-parameters` or `iree-import-onnx --externalize-params` make .irpa)",
        path.display()
    )]
    ParameterArchive {
        /// The archive.
        path: PathBuf,
        /// The scope it was given for.
        scope: String,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// A parameter archive whose structures or entries lie outside it,
    /// wrap past 2^64, overlap its header or are misaligned: xplug checks
    /// every archive before IREE reads its parameters, and refuses it with
    /// the status code IREE's parsers give such faults (`code`).
    #[error(
        "the parameter archive {} (scope {scope:?}) is damaged{}: {problem}; xplug refuses it before IREE reads \
         it, rewrite it with the tool that made it",
        path.display(),
        key.as_ref().map(|key| format!(" at parameter {key:?}")).unwrap_or_default()
    )]
    ParameterLayout {
        /// The archive.
        path: PathBuf,
        /// The scope it was given for.
        scope: String,
        /// The key of the entry at fault, when one is.
        key: Option<String>,
        /// What is wrong, with the byte range.
        problem: String,
        /// IREE's status code for it (`OUT_OF_RANGE`, `INVALID_ARGUMENT`).
        code: u32,
    },
    /// The program reads parameters of a scope no archive was given for.
    #[error(
        "module `{module}` reads parameters of scope {scope:?}, but {}; give --parameters={scope}=FILE",
        if given.is_empty() { "no parameter archive was given".to_owned() }
        else { format!("archives were given only for scope(s) {}", given.iter().map(|scope| format!("{scope:?}")).collect::<Vec<_>>().join(", ")) }
    )]
    ParameterScope {
        /// Where the module came from.
        module: String,
        /// The scope it reads.
        scope: String,
        /// The scopes archives were given for.
        given: Vec<String>,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
    /// The program reads a parameter that no archive of its scope holds.
    #[error(
        "module `{module}` needs parameter {key:?}{}, which {} {} not hold; give the archive the program was \
         compiled for",
        match scopes.as_ref() {
            [] => String::new(),
            [scope] => format!(" of scope {scope:?}"),
            several => format!(" of one of the scopes {}", several.iter().map(|scope| format!("{scope:?}")).collect::<Vec<_>>().join(", ")),
        },
        archives.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(", "),
        if archives.len() == 1 { "does" } else { "do" }
    )]
    ParameterMissing {
        /// Where the module came from.
        module: String,
        /// The parameter's key.
        key: String,
        /// The scopes whose archives lack it: the program's scope is one
        /// of them (IREE does not say which when several lack it).
        scopes: Box<[String]>,
        /// The archives of those scopes, each once.
        archives: Box<[PathBuf]>,
        /// IREE's status.
        #[source]
        source: IreeStatus,
    },
}

/// The IREE release whose runtime this crate builds (eerie-sys 0.5.0).
pub const IREE_RUNTIME_VERSION: &str = "3.13";

fn hint(suggestion: &Option<String>) -> String {
    suggestion.as_ref().map(|name| format!("; did you mean `{name}`?")).unwrap_or_default()
}
