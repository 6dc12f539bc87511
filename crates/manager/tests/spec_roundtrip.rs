//! Round trips of the two text formats a user hands the manager: plugin
//! specs (`path?key=value&...`) and `XPLUG_PLUGINS` lists. The same parsers
//! are fuzzed by `cargo xtask fuzz` (`fuzz/fuzz_targets/spec.rs`,
//! `env_list.rs`); these properties run in CI.

use proptest::prelude::*;
use xplug_manager::spec::{EMBEDDED_PREFIX, PluginSpec, SpecTarget, split_spec_list};

/// Percent-encodes every byte that is not ASCII alphanumeric or `_-.`.
fn encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &byte in bytes {
        if byte.is_ascii_alphanumeric() || b"_-.".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A library path: no `?` (the grammar's delimiter), no `:` (the list
/// separator), not empty.
fn path() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_./ +-]{1,24}"
}

/// Parameters: any bytes, non-empty keys.
fn params() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
    proptest::collection::vec(
        (proptest::collection::vec(any::<u8>(), 1..8), proptest::collection::vec(any::<u8>(), 0..8)),
        0..5,
    )
}

fn render(embedded: bool, path: &str, params: &[(Vec<u8>, Vec<u8>)]) -> String {
    let mut spec = String::new();
    if embedded {
        spec.push_str(EMBEDDED_PREFIX);
    }
    spec.push_str(path);
    for (index, (key, value)) in params.iter().enumerate() {
        spec.push(if index == 0 { '?' } else { '&' });
        spec.push_str(&encode(key));
        spec.push('=');
        spec.push_str(&encode(value));
    }
    spec
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_rendered_spec_parses_back(embedded in any::<bool>(), path in path(), params in params()) {
        let text = render(embedded, &path, &params);
        let spec = PluginSpec::parse(&text).unwrap();
        prop_assert_eq!(spec.as_str(), text.as_str());
        prop_assert_eq!(spec.target().as_str(), path.as_str());
        prop_assert_eq!(spec.params(), params.as_slice());
        let expected = if embedded || path.ends_with(".sos") {
            SpecTarget::new(&xplug_manager::providers::EMBEDDED_ELF, path.clone())
        } else {
            SpecTarget::new(&xplug_manager::providers::SYSTEM_LIBRARY, path.clone())
        };
        prop_assert_eq!(spec.target(), &expected);
        prop_assert_eq!(spec.load_params().len(), params.len());
    }

    #[test]
    fn any_text_parses_or_is_refused_quoting_it(text in "\\PC{0,40}") {
        match PluginSpec::parse(&text) {
            Ok(spec) => {
                prop_assert!(!spec.target().as_str().is_empty());
                prop_assert!(!spec.target().as_str().contains('?'));
            }
            Err(error) => {
                let quoted = format!("`{text}`");
                prop_assert!(error.to_string().contains(&quoted), "{}", error);
            }
        }
    }

    #[test]
    fn a_joined_list_splits_back(
        specs in proptest::collection::vec((any::<bool>(), path(), params()), 0..6),
        doubled in any::<bool>(),
    ) {
        // A bare `embedded` path is the one ambiguity of the `:` format
        // (`embedded:x` is also `embedded` then `x`): documented, excluded.
        let specs: Vec<String> = specs
            .iter()
            .filter(|(_, path, _)| path != "embedded")
            .map(|(embedded, path, params)| render(*embedded, path, params))
            .collect();
        // Empty entries (`a::b`, a leading or trailing `:`) are skipped.
        let separator = if doubled { "::" } else { ":" };
        let joined = specs.join(separator);
        prop_assert_eq!(split_spec_list(&joined, ':'), specs.clone());
        prop_assert_eq!(split_spec_list(&format!(":{joined}:"), ':'), specs);
    }
}
