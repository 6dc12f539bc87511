//! Plugin specs (`path?key=value&...`): any text parses or is refused with
//! the spec quoted, and a parsed spec renders back to an equal one.

#![no_main]

use libfuzzer_sys::fuzz_target;
use xplug_manager::spec::{EMBEDDED_PREFIX, PluginSpec, STATIC_PREFIX};

fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("%{byte:02X}")).collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match PluginSpec::parse(text) {
        Err(error) => assert!(error.to_string().contains(&format!("`{text}`")), "{error}"),
        Ok(spec) => {
            assert_eq!(spec.as_str(), text);
            let named = spec.target().as_str();
            assert!(!named.is_empty() && !named.contains('?'));
            assert!(spec.params().iter().all(|(key, _)| !key.is_empty()));
            // Render with every byte escaped and parse again.
            let mut rendered = String::new();
            // The prefix that chose the loader, kept (a `.sos` suffix
            // chooses the embedded-ELF loader by itself).
            for prefix in [EMBEDDED_PREFIX, STATIC_PREFIX] {
                if text.starts_with(prefix) {
                    rendered.push_str(prefix);
                }
            }
            rendered.push_str(named);
            for (index, (key, value)) in spec.params().iter().enumerate() {
                rendered.push(if index == 0 { '?' } else { '&' });
                rendered.push_str(&encode(key));
                rendered.push('=');
                rendered.push_str(&encode(value));
            }
            let again = PluginSpec::parse(&rendered).expect("a rendered spec parses");
            assert_eq!(again.target(), spec.target());
            assert_eq!(again.params(), spec.params());
        }
    }
});
