//! `xplug pin PLUGIN...`: each spec with the SHA-256 of its code
//! (`?sha256=HEX`), and the hash line `inspect` and `check` show.
//!
//! The hash is taken of the bytes the spec's loader reads for a pinned
//! open ([`xplug_providers::Loader::read`]: the whole `.so` or `.sos`
//! file), so it is what `sha256sum FILE` prints and what the loader checks
//! (`docs/src/reference/loading.md#pinned-plugins`). Nothing of the plugin runs.

use serde_json::json;
use xplug_manager::spec::PluginSpec;
use xplug_providers::{ALLOW_LIST_VAR, AllowList, Code, Error as LoadError, Sha256Digest};

use crate::error::CliError;
use crate::globals::GlobalArgs;
use crate::output::{print_json, safe};

/// The hash of a spec's code, and what it means.
pub(crate) struct CodeHash {
    /// The hash, or `None` for a plugin linked into xplug (not hashed).
    pub(crate) sha256: Option<Sha256Digest>,
    /// What the hash is: pinned and checked, the file's now, or why there
    /// is none.
    pub(crate) status: String,
}

impl CodeHash {
    /// `HEX (status)`, or the status alone.
    pub(crate) fn shown(&self) -> String {
        match &self.sha256 {
            Some(sha256) => format!("{sha256} ({})", self.status),
            None => self.status.clone(),
        }
    }
}

/// The hash of the code `spec` names: the one `opened` was checked against
/// when it was opened pinned, or else the hash of what the loader reads now.
pub(crate) fn code_hash(spec: &PluginSpec, opened: Option<&Code>) -> Result<CodeHash, CliError> {
    if let Some(sha256) = opened.and_then(Code::sha256) {
        let status = if spec.sha256().is_some() {
            "pinned: checked before the code was mapped"
        } else {
            "on the allow-list: checked before the code was mapped"
        };
        return Ok(CodeHash { sha256: Some(*sha256), status: status.to_owned() });
    }
    let target = spec.target();
    match target.loader().read(target.as_str()) {
        Ok(bytes) => {
            let found = *bytes.sha256();
            let allow_list = AllowList::from_env().map_err(|source| CliError::load(spec.as_str(), source))?;
            // A pin or list that refuses the file makes every load fail,
            // and that error is the command's report: only a file that
            // passes is described here.
            let status = if spec.sha256() == Some(&found) {
                "pinned: the file matches; every load checks the bytes it maps".to_owned()
            } else if let Some(list) = allow_list.filter(|list| list.allows(&found)) {
                format!("on the allow-list {}: every load checks the bytes it maps", list.path().display())
            } else {
                "not pinned: the file's hash now; `xplug pin` prints the pinned spec".to_owned()
            };
            Ok(CodeHash { sha256: Some(found), status })
        }
        Err(LoadError::PinUnsupported { .. }) if spec.sha256().is_none() => Ok(CodeHash {
            sha256: None,
            status: format!(
                "none: not a file xplug reads ({} loader); allow-lists ({ALLOW_LIST_VAR}) do not apply \
                 to plugins linked into xplug",
                target.loader().name()
            ),
        }),
        Err(source) => Err(CliError::load(spec.as_str(), source)),
    }
}

/// Print each plugin's spec pinned to the SHA-256 of its code
/// (`path?sha256=HEX`): a pinned spec loads only those bytes. Nothing
/// of the plugin runs.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  xplug run m.vmfb --plugin=\"$(xplug pin ./libfast.so?threads=4)\"\n                        xplug pin --allow-list ./libfast.so k.sos > allowed.txt   # for XPLUG_ALLOWED_PLUGINS"
)]
pub(crate) struct PinArgs {
    /// Plugin specs (`path[?key=value&...]`, `.sos` files included);
    /// a spec already pinned gets the file's hash now.
    #[arg(required = true, value_name = "PLUGIN")]
    plugins: Vec<String>,
    /// Print `sha256sum` lines (`HEX  FILE`), the allow-list format of
    /// XPLUG_ALLOWED_PLUGINS, instead of specs.
    #[arg(long)]
    allow_list: bool,
}

impl PinArgs {
    /// Runs the command: prints each spec pinned to its hash (or, with
    /// `--allow-list`, one `sha256sum` line per plugin); returns the exit
    /// code.
    pub(crate) fn run(&self, globals: &GlobalArgs) -> Result<u8, CliError> {
        run(&self.plugins, self.allow_list, globals.json)
    }
}

fn run(plugins: &[String], allow_list: bool, json: bool) -> Result<u8, CliError> {
    let mut pins = Vec::new();
    for plugin in plugins {
        let spec = PluginSpec::parse(plugin)
            .map_err(|source| CliError::Manager { context: format!("cannot pin `{plugin}`"), source })?;
        let target = spec.target();
        let bytes = target.loader().read(target.as_str()).map_err(|source| CliError::load(plugin, source))?;
        let sha256 = *bytes.sha256();
        pins.push((spec.pinned(&sha256), sha256, target.as_str().to_owned()));
    }
    if json {
        print_json(&json!({
            "ok": true,
            "plugins": pins.iter().map(|(pinned, sha256, file)| json!({
                "spec": pinned,
                "sha256": sha256.to_string(),
                "file": file,
            })).collect::<Vec<_>>(),
        }));
    } else {
        for (pinned, sha256, file) in &pins {
            if allow_list {
                // `sha256sum`'s format, which `XPLUG_ALLOWED_PLUGINS` reads.
                println!("{sha256}  {}", safe(file));
            } else {
                println!("{}", safe(pinned));
            }
        }
    }
    Ok(0)
}
