//! `xplug call PLUGIN IMPORT`: call one import with real data.
//!
//! The args block an import receives is a C struct. Here it is described
//! field by field on the command line (`--field f32:2.5 --field
//! ptr:f32[8]=1,2,3`) and laid out with C's rules (each field at its natural
//! alignment, the size rounded up to the largest alignment), or given whole
//! as hex (`--hex`) or a file (`--file`). A `ptr:` field points at a buffer
//! xplug allocates (16-byte aligned) and shows after the call, so an
//! import's outputs through pointers are visible too.
//!
//! The plugin is loaded through a `Manager` and the import resolved and
//! called through a `ResolvedImport` handle, as a runtime does.

use std::fmt;
use std::path::PathBuf;

use serde_json::json;
use xplug_abi::bare_name;
use xplug_manager::Manager;
use xplug_manager::spec::PluginSpec;
use xplug_providers::raw::ImportLayoutInfo;

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::isolate::{self, Isolation};
use crate::output::{Style, Table, print_json, safe};
use crate::trust;

/// A scalar C type a field or buffer element can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    Usize,
    Isize,
}

impl Scalar {
    const ALL: [(&'static str, Self); 12] = [
        ("i8", Self::I8),
        ("u8", Self::U8),
        ("i16", Self::I16),
        ("u16", Self::U16),
        ("i32", Self::I32),
        ("u32", Self::U32),
        ("i64", Self::I64),
        ("u64", Self::U64),
        ("f32", Self::F32),
        ("f64", Self::F64),
        ("usize", Self::Usize),
        ("isize", Self::Isize),
    ];

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(known, _)| *known == name).map(|(_, scalar)| *scalar)
    }

    fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, scalar)| *scalar == self).map_or("?", |(name, _)| name)
    }

    /// Size in bytes, which is also the alignment on every supported target.
    fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::I64 | Self::U64 | Self::F64 => 8,
            Self::Usize | Self::Isize => size_of::<usize>(),
        }
    }

    /// The native-endian bytes of `text` as this type.
    fn encode(self, text: &str) -> Result<Vec<u8>, String> {
        let text = text.trim();
        let bad = |_| format!("`{text}` is not a valid {}", self.name());
        Ok(match self {
            Self::I8 => text.parse::<i8>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::U8 => text.parse::<u8>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::I16 => text.parse::<i16>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::U16 => text.parse::<u16>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::I32 => text.parse::<i32>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::U32 => text.parse::<u32>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::I64 => text.parse::<i64>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::U64 => text.parse::<u64>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::F32 => text
                .parse::<f32>()
                .map_err(|_| format!("`{text}` is not a valid f32"))?
                .to_ne_bytes()
                .to_vec(),
            Self::F64 => text
                .parse::<f64>()
                .map_err(|_| format!("`{text}` is not a valid f64"))?
                .to_ne_bytes()
                .to_vec(),
            Self::Usize => text.parse::<usize>().map_err(bad)?.to_ne_bytes().to_vec(),
            Self::Isize => text.parse::<isize>().map_err(bad)?.to_ne_bytes().to_vec(),
        })
    }

    /// The value in `bytes` (exactly [`Self::size`] long) as JSON.
    fn decode(self, bytes: &[u8]) -> serde_json::Value {
        fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
            let mut out = [0; N];
            out.copy_from_slice(&bytes[..N]);
            out
        }
        match self {
            Self::I8 => json!(i8::from_ne_bytes(array(bytes))),
            Self::U8 => json!(u8::from_ne_bytes(array(bytes))),
            Self::I16 => json!(i16::from_ne_bytes(array(bytes))),
            Self::U16 => json!(u16::from_ne_bytes(array(bytes))),
            Self::I32 => json!(i32::from_ne_bytes(array(bytes))),
            Self::U32 => json!(u32::from_ne_bytes(array(bytes))),
            Self::I64 => json!(i64::from_ne_bytes(array(bytes))),
            Self::U64 => json!(u64::from_ne_bytes(array(bytes))),
            Self::F32 => json!(f32::from_ne_bytes(array(bytes))),
            Self::F64 => json!(f64::from_ne_bytes(array(bytes))),
            Self::Usize => json!(usize::from_ne_bytes(array(bytes))),
            Self::Isize => json!(isize::from_ne_bytes(array(bytes))),
        }
    }
}

/// One field of the args block, as given with `--field`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Field {
    /// A value of a scalar type.
    Value { scalar: Scalar, bytes: Vec<u8> },
    /// A pointer to a buffer of `len` elements, the first ones initialised.
    Buffer { element: Scalar, len: usize, init: Vec<u8> },
    /// A NULL pointer.
    Null,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Value { scalar, .. } => f.write_str(scalar.name()),
            Self::Buffer { element, len, .. } => write!(f, "ptr:{}[{len}]", element.name()),
            Self::Null => f.write_str("ptr:null"),
        }
    }
}

/// Parses `TYPE:VALUE`, `ptr:TYPE[N]`, `ptr:TYPE[N]=v,v,...`,
/// `ptr:TYPE=v,v,...` or `ptr:null`.
pub(crate) fn parse_field(text: &str) -> Result<Field, String> {
    let usage = || {
        format!(
            "invalid --field `{text}`: write TYPE:VALUE (e.g. f32:2.5), ptr:TYPE[N][=v,v,...] (e.g. \
             ptr:f32[8]=1,2) or ptr:null; TYPE is one of {}",
            Scalar::ALL.map(|(name, _)| name).join(", ")
        )
    };
    let (kind, rest) = text.split_once(':').ok_or_else(usage)?;
    if kind != "ptr" {
        let scalar = Scalar::parse(kind).ok_or_else(usage)?;
        return Ok(Field::Value { scalar, bytes: scalar.encode(rest)? });
    }
    if rest == "null" {
        return Ok(Field::Null);
    }
    let (declared, values) = match rest.split_once('=') {
        Some((declared, values)) => (declared, Some(values)),
        None => (rest, None),
    };
    let (element, len) = match declared.split_once('[') {
        Some((element, len)) => {
            let len = len.strip_suffix(']').ok_or_else(usage)?;
            (element, Some(len.parse::<usize>().map_err(|_| usage())?))
        }
        None => (declared, None),
    };
    let element = Scalar::parse(element).ok_or_else(usage)?;
    let mut init = Vec::new();
    let mut count = 0;
    for value in values.into_iter().flat_map(|values| values.split(',')).filter(|v| !v.trim().is_empty()) {
        init.extend(element.encode(value)?);
        count += 1;
    }
    let len = len.unwrap_or(count);
    if count > len {
        return Err(format!("invalid --field `{text}`: {count} values for a buffer of {len}"));
    }
    if len == 0 {
        return Err(format!(
            "invalid --field `{text}`: give the buffer a length (ptr:{}[N])",
            element.name()
        ));
    }
    len.checked_mul(element.size())
        .filter(|bytes| *bytes <= 1 << 30)
        .ok_or_else(|| format!("invalid --field `{text}`: buffers are limited to 1 GiB"))?;
    Ok(Field::Buffer { element, len, init })
}

/// Parses a hex string (whitespace and `0x` prefixes allowed) into bytes.
pub(crate) fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits: String = text.replace("0x", "").chars().filter(|c| !c.is_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("--hex has an odd number of digits ({})", digits.len()));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("--hex: `{}` is not hex", &digits[i..i + 2]))
        })
        .collect()
}

/// Where each field lives in the block: (offset, size).
fn layout(fields: &[Field]) -> (Vec<(usize, usize)>, usize) {
    let mut offset = 0usize;
    let mut max_align = 1usize;
    let mut places = Vec::with_capacity(fields.len());
    for field in fields {
        let size = match field {
            Field::Value { scalar, .. } => scalar.size(),
            Field::Buffer { .. } | Field::Null => size_of::<*mut u8>(),
        };
        offset = offset.next_multiple_of(size);
        max_align = max_align.max(size);
        places.push((offset, size));
        offset += size;
    }
    (places, offset.next_multiple_of(max_align))
}

/// A zeroed, 16-byte aligned byte buffer.
pub(crate) struct Aligned {
    words: Vec<u128>,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Self {
        Self { words: vec![0; len.div_ceil(16).max(1)], len }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` initialised bytes; u8 has no
        // alignment or validity requirements.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes the view unique.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len) }
    }
}

/// What the args block is made of.
pub(crate) enum Args {
    /// Typed fields laid out with C's rules.
    Fields(Vec<Field>),
    /// Raw bytes.
    Bytes(Vec<u8>),
}

/// An args block built from [`Args`], with the buffers its pointer
/// fields point at (alive as long as the block).
pub(crate) struct Block {
    fields: Vec<Field>,
    places: Vec<(usize, usize)>,
    block: Aligned,
    /// (field index, element type, buffer).
    buffers: Vec<(usize, Scalar, Aligned)>,
}

impl Block {
    /// Lays out `args` and allocates the buffers of its `ptr:` fields.
    pub(crate) fn build(args: &Args) -> Self {
        match args {
            Args::Bytes(bytes) => {
                let mut block = Aligned::new(bytes.len());
                block.bytes_mut().copy_from_slice(bytes);
                Self { fields: Vec::new(), places: Vec::new(), block, buffers: Vec::new() }
            }
            Args::Fields(fields) => {
                let (places, size) = layout(fields);
                let mut block = Aligned::new(size);
                let mut buffers: Vec<(usize, Scalar, Aligned)> = Vec::new();
                for (index, (field, &(offset, size))) in fields.iter().zip(&places).enumerate() {
                    match field {
                        Field::Value { bytes, .. } => {
                            block.bytes_mut()[offset..offset + size].copy_from_slice(bytes)
                        }
                        Field::Null => {}
                        Field::Buffer { element, len, init } => {
                            let mut buffer = Aligned::new(len * element.size());
                            buffer.bytes_mut()[..init.len()].copy_from_slice(init);
                            let address = buffer.words.as_mut_ptr() as usize;
                            block.bytes_mut()[offset..offset + size].copy_from_slice(&address.to_ne_bytes());
                            buffers.push((index, *element, buffer));
                        }
                    }
                }
                Self { fields: fields.clone(), places, block, buffers }
            }
        }
    }

    /// A block of `len` zero bytes.
    pub(crate) fn zeroed(len: usize) -> Self {
        Self { fields: Vec::new(), places: Vec::new(), block: Aligned::new(len), buffers: Vec::new() }
    }

    /// The block's size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.block.len
    }

    /// The first 16 bytes of the block, which an import receives a pointer
    /// to (the rest follows in memory).
    pub(crate) fn head(&mut self) -> &mut u128 {
        &mut self.block.words[0]
    }

    /// The value of the non-negative integer field given at `offset`, with
    /// the field's index, if one was given there.
    fn integer_at(&self, offset: usize) -> Option<(usize, u64)> {
        self.fields.iter().zip(&self.places).enumerate().find_map(|(index, (field, &(at, size)))| {
            let Field::Value { scalar, .. } = field else { return None };
            if at != offset {
                return None;
            }
            scalar.decode(&self.block.bytes()[at..at + size]).as_u64().map(|value| (index, value))
        })
    }
}

/// Whether a field named `name` is a length (`size`, `n`, `len`,
/// `count`, `*_size`, `num_*`, ...): one whose value the import likely
/// reads that many elements of its buffers for.
fn is_size_like(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(name.as_str(), "n" | "size" | "len" | "length" | "count" | "elements")
        || ["_size", "_len", "_length", "_count"].iter().any(|suffix| name.ends_with(suffix))
        || name.starts_with("num_")
        || name.starts_with("n_")
}

/// The `--field` a declared field type is given with (`ptr:f32[N]` for
/// `Buffer<f32>`, `usize:VALUE` for `usize`).
fn field_syntax(type_name: &str) -> String {
    let compact: String = type_name.chars().filter(|c| !c.is_whitespace()).collect();
    let pointee = ["Buffer<", "BufferMut<"]
        .iter()
        .find_map(|prefix| compact.strip_prefix(prefix).and_then(|rest| rest.strip_suffix('>')))
        .or_else(|| compact.strip_prefix("*const").or_else(|| compact.strip_prefix("*mut")));
    if let Some(pointee) = pointee {
        let element = Scalar::parse(pointee).map_or("u8", Scalar::name);
        return format!("ptr:{element}[N]");
    }
    match Scalar::parse(&compact) {
        Some(scalar) => format!("{}:VALUE", scalar.name()),
        None => format!("bytes of `{type_name}` (use --hex)"),
    }
}

/// What the plugin says of an import's args block, and what `call`
/// concluded from it.
#[derive(Debug, Default)]
pub(crate) struct LayoutReport {
    /// The declared layout, when the plugin gives one.
    pub(crate) declared: Option<ImportLayoutInfo>,
    /// Why the block could not be checked, when it could not.
    pub(crate) note: Option<String>,
    /// Things the block allows that the import may not survive.
    pub(crate) warnings: Vec<String>,
}

impl LayoutReport {
    /// The report as JSON: `{"checked", "type", "size", "fields", "note"}`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({
            "checked": self.declared.is_some(),
            "type": self.declared.as_ref().and_then(|d| d.type_name.clone()),
            "size": self.declared.as_ref().map(|d| d.size),
            "fields": self.declared.as_ref().and_then(|d| d.fields.as_ref()).map(|fields| fields.iter().map(|f| json!({
                "name": f.name, "type": f.type_name, "offset": f.offset, "size": f.size,
            })).collect::<Vec<_>>()),
            "note": self.note,
        })
    }

    /// Prints the note and warnings on stderr.
    pub(crate) fn print(&self) {
        let style = Style::stderr();
        if let Some(note) = &self.note {
            eprintln!("{} {}", style.warn("note:"), safe(note));
        }
        for warning in &self.warnings {
            eprintln!("{} {}", style.warn("warning:"), safe(warning));
        }
    }
}

/// Checks `block` against the layout the plugin declares for `import`
/// (`layouts` is what its `xplug_import_layouts` export listed, `None`
/// without the export): a block of another size is refused; a size-like
/// field larger than the buffers xplug allocated is a warning.
pub(crate) fn check_block(
    plugin: &str,
    import: &str,
    layouts: Option<&[ImportLayoutInfo]>,
    block: &Block,
) -> Result<LayoutReport, CliError> {
    let bare = String::from_utf8_lossy(bare_name(import.as_bytes())).into_owned();
    let Some(layouts) = layouts else {
        return Ok(LayoutReport {
            note: Some(format!(
                "plugin `{plugin}` does not describe its args layouts (no `xplug_import_layouts` export, as in \
                 C plugins and plugins linked into xplug): the {}-byte block is not checked against `{bare}`",
                block.len()
            )),
            ..LayoutReport::default()
        });
    };
    let Some(declared) = layouts.iter().find(|layout| layout.symbol == bare) else {
        return Ok(LayoutReport {
            note: Some(format!(
                "plugin `{plugin}` describes no args layout for `{bare}`: the {}-byte block is not checked",
                block.len()
            )),
            ..LayoutReport::default()
        });
    };
    let fields = declared.fields.as_deref().unwrap_or_default();
    if block.len() != declared.size {
        return Err(CliError::ArgsSize {
            plugin: plugin.to_owned(),
            import: bare,
            type_name: declared.type_name.clone().unwrap_or_else(|| "its args struct".to_owned()),
            expected: declared.size,
            found: block.len(),
            given: block.fields.len(),
            fields: fields
                .iter()
                .map(|f| {
                    format!(
                        "{}: {} @{} (--field {})",
                        f.name,
                        f.type_name,
                        f.offset,
                        field_syntax(&f.type_name)
                    )
                })
                .collect(),
        });
    }
    let mut warnings = Vec::new();
    if let Some(smallest) = block
        .buffers
        .iter()
        .map(|(index, element, buffer)| (*index, *element, buffer.len / element.size()))
        .min_by_key(|(_, _, len)| *len)
    {
        for field in fields.iter().filter(|field| is_size_like(&field.name)) {
            if let Some((index, value)) = block.integer_at(field.offset)
                && usize::try_from(value).map_or(true, |value| value > smallest.2)
            {
                warnings.push(format!(
                    "field {index} `{}` is {value}, but the smallest buffer xplug allocated (field {}, {}) has {} \
                     element(s): `{bare}` may read or write past it (and crash)",
                    field.name, smallest.0, block.fields[smallest.0], smallest.2
                ));
            }
        }
    }
    Ok(LayoutReport { declared: Some(declared.clone()), note: None, warnings })
}

/// Call one import with an args block built from typed fields (or
/// given as hex or a file) and show the result and the block after it.
#[derive(Debug, clap::Args)]
pub(crate) struct CallArgs {
    /// The plugin, as a spec (`path[?key=value&...]`).
    plugin: String,
    /// The import to call.
    import: String,
    /// A field of the args struct, in order: TYPE:VALUE (i8..u64,
    /// f32, f64, usize, isize), `ptr:TYPE[N][=v,v,...]` (a buffer xplug
    /// allocates and shows after the call) or ptr:null.
    #[arg(long = "field", value_name = "FIELD", conflicts_with_all = ["hex", "file"])]
    fields: Vec<String>,
    /// The whole args block as hex bytes.
    #[arg(long, value_name = "HEX", conflicts_with = "file")]
    hex: Option<String>,
    /// The whole args block from a file.
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
}

/// The largest args block `xplug call --file` reads: 4 MiB, far above any
/// import's args struct.
const ARGS_FILE_LIMIT: u64 = 4 << 20;

impl CallArgs {
    /// Builds the args block (a usage error stops here, in this process),
    /// then runs the call (in a probe child unless `--in-process`); returns
    /// the exit code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        let args = if let Some(hex) = &self.hex {
            Args::Bytes(parse_hex(hex).map_err(|message| CliError::Usage { message })?)
        } else if let Some(file) = &self.file {
            Args::Bytes(xplug_iree::files::read_bounded(file, "the args file", ARGS_FILE_LIMIT).map_err(
                |source| CliError::Input { context: "cannot read the args block".to_owned(), source },
            )?)
        } else {
            Args::Fields(
                self.fields
                    .iter()
                    .map(|field| parse_field(field))
                    .collect::<Result<_, _>>()
                    .map_err(|message| CliError::Usage { message })?,
            )
        };
        match globals.isolation() {
            Isolation::InProcess => run(&self.plugin, &self.import, &args, globals.json),
            Isolation::Child(timeout) => isolate::rerun_whole_command(&self.plugin, timeout),
        }
    }
}

/// Loads the plugin `spec` names into a fresh manager and returns the
/// manager with the args layouts the plugin describes (`None` without
/// its `xplug_import_layouts` export).
pub(crate) fn load_with_layouts(spec: &str) -> Result<(Manager, Option<Vec<ImportLayoutInfo>>), CliError> {
    let parsed = PluginSpec::parse(spec)
        .map_err(|source| CliError::Manager { context: format!("cannot use plugin `{spec}`"), source })?;
    let plugin = trust::load_parsed_spec(&parsed)?;
    let layouts = plugin.import_layouts().map(<[ImportLayoutInfo]>::to_vec);
    let manager = Manager::new();
    manager.register_plugin(plugin).map_err(|source| CliError::Plugin { source })?;
    Ok((manager, layouts))
}

/// Runs the command; returns the exit code (the import's result decides:
/// 0 for success, 1 otherwise).
fn run(plugin: &str, import_name: &str, args: &Args, json: bool) -> Result<u8, CliError> {
    let (manager, layouts) = load_with_layouts(plugin)?;
    let imports = manager.resolve_imports([import_name]).map_err(|source| CliError::Manager {
        context: format!("cannot resolve `{}` through `{}`", import_name, plugin),
        source,
    })?;
    let import = imports
        .import(0)
        .map_err(|source| CliError::Manager { context: format!("cannot call `{}`", import_name), source })?;

    let mut block = Block::build(args);
    let report = check_block(plugin, import_name, layouts.as_deref(), &block)?;
    report.print();

    xplug_probe::mark(xplug_probe::Stage::Call);
    // SAFETY: the user asserts, by naming the import and describing its
    // args, that this block (and the buffers its pointers point at, all
    // alive until after the call) is what the import expects; its size was
    // checked against the plugin's own layout when the plugin gives one.
    let result = unsafe { import.call(block.head()) };

    let Block { fields, places, block, mut buffers } = block;
    let field_values: Vec<serde_json::Value> = fields
        .iter()
        .zip(&places)
        .enumerate()
        .map(|(index, (field, &(offset, size)))| {
            let name = report
                .declared
                .as_ref()
                .and_then(|d| d.fields.as_ref())
                .and_then(|declared| declared.iter().find(|f| f.offset == offset))
                .map(|f| f.name.clone());
            match field {
                Field::Value { scalar, .. } => {
                    json!({"index": index, "name": name, "type": field.to_string(), "offset": offset, "value": scalar.decode(&block.bytes()[offset..offset + size])})
                }
                _ => json!({"index": index, "name": name, "type": field.to_string(), "offset": offset}),
            }
        })
        .collect();
    let buffer_values: Vec<serde_json::Value> = buffers
        .iter_mut()
        .map(|(index, element, buffer)| {
            let values: Vec<serde_json::Value> =
                buffer.bytes().chunks_exact(element.size()).map(|bytes| element.decode(bytes)).collect();
            json!({"field": index, "type": element.name(), "values": values})
        })
        .collect();
    let failure = (result != 0).then(|| CliError::ImportFailed { name: import_name.to_owned(), result });
    if json {
        print_json(&json!({
            "ok": result == 0,
            "error": failure.as_ref().map(CliError::to_json),
            "plugin": plugin,
            "import": import_name,
            "result": result,
            "result_code": (result != 0).then(|| crate::error::import_code_name(result)),
            "layout": report.to_json(),
            "warnings": report.warnings,
            "block_bytes": block.len,
            "block_hex": block.bytes().iter().map(|b| format!("{b:02x}")).collect::<String>(),
            "fields": field_values,
            "buffers": buffer_values,
        }));
    } else {
        let style = Style::stdout();
        let verdict = if result == 0 {
            style.good("0 (success)")
        } else {
            style.bad(&format!("{result} ({})", crate::error::import_code_name(result)))
        };
        println!("{} returned {verdict}", style.bold(import_name));
        let mut table = Table::new(["field", "name", "type", "offset", "after the call"]);
        for (index, value) in field_values.iter().enumerate() {
            let shown = match value.get("value") {
                Some(value) => value.to_string(),
                None => buffer_values
                    .iter()
                    .find(|buffer| buffer["field"] == index)
                    .map_or_else(|| "NULL".to_owned(), |buffer| buffer["values"].to_string()),
            };
            table.row([
                index.to_string(),
                safe(value["name"].as_str().unwrap_or("-")),
                value["type"].as_str().unwrap_or_default().to_owned(),
                value["offset"].to_string(),
                shown,
            ]);
        }
        if !fields.is_empty() {
            print!("{}", table.render(style));
        }
        println!(
            "block ({} bytes): {}",
            block.len,
            block.bytes().iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
    }
    if let Some(failure) = failure {
        if !json {
            crate::error::report_error(&failure);
        }
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_parse_and_lay_out_like_c() {
        let fields: Vec<Field> = ["u8:7", "f32:2.5", "ptr:f32[4]=1,2", "u16:9", "ptr:null", "usize:3"]
            .map(|t| parse_field(t).unwrap())
            .to_vec();
        assert_eq!(fields[0], Field::Value { scalar: Scalar::U8, bytes: vec![7] });
        assert_eq!(
            fields[2],
            Field::Buffer {
                element: Scalar::F32,
                len: 4,
                init: [1.0f32.to_ne_bytes(), 2.0f32.to_ne_bytes()].concat()
            }
        );
        let (places, size) = layout(&fields);
        let p = size_of::<usize>();
        // u8 @0, f32 @4, ptr @8 (64-bit) ...
        assert_eq!(places[0], (0, 1));
        assert_eq!(places[1], (4, 4));
        assert_eq!(places[2], (8, p));
        assert_eq!(places[3], (8 + p, 2));
        assert_eq!(places[4], ((8 + p + 2).next_multiple_of(p), p));
        assert_eq!(size % p, 0);
        assert_eq!(
            parse_field("ptr:i32=5,6,7").unwrap(),
            Field::Buffer {
                element: Scalar::I32,
                len: 3,
                init: [5i32.to_ne_bytes(), 6i32.to_ne_bytes(), 7i32.to_ne_bytes()].concat()
            }
        );
    }

    #[test]
    fn bad_fields_say_what_to_write() {
        for bad in
            ["f33:1", "f32", "i8:300", "ptr:f32[2]=1,2,3", "ptr:f32[x]", "ptr:f32", "ptr:f32[99999999999]"]
        {
            let message = parse_field(bad).unwrap_err();
            assert!(message.contains(bad) || message.contains("300"), "{bad}: {message}");
        }
        assert_eq!(parse_hex("0x01 ff").unwrap(), [1, 255]);
        assert!(parse_hex("abc").is_err());
        assert!(parse_hex("zz").is_err());
    }
}
