//! `XPLUG_PLUGINS` splitting: no empty entry, every entry comes from the
//! input, and each parses or is refused without a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use xplug_manager::spec::{EMBEDDED_PREFIX, PluginSpec, split_spec_list};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for separator in [':', ';'] {
        let specs = split_spec_list(text, separator);
        let mut bytes = 0;
        for spec in &specs {
            assert!(!spec.is_empty());
            let bare = spec.strip_prefix(EMBEDDED_PREFIX).filter(|_| separator == ':').unwrap_or(spec);
            assert!(bare.is_empty() || text.contains(bare), "{spec:?} is not from {text:?}");
            assert!(!bare.contains(separator) || bare.is_empty());
            bytes += spec.len();
            let _ = PluginSpec::parse(spec);
        }
        // Splitting never invents text: what it returns is at most the input
        // (plus a re-joined `embedded:` per entry).
        assert!(bytes <= text.len() + specs.len());
    }
});
