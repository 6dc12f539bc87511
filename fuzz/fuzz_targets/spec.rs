//! Plugin specs (`path?key=value&...`): any text parses or is refused with
//! the spec quoted, and a parsed spec renders back to an equal one.

#![no_main]

use libfuzzer_sys::fuzz_target;
use xplug_manager::spec::{EMBEDDED_PREFIX, LoaderKind, PluginSpec};

fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("%{byte:02X}")).collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match PluginSpec::parse(text) {
        Err(error) => assert!(error.to_string().contains(&format!("`{text}`")), "{error}"),
        Ok(spec) => {
            assert_eq!(spec.as_str(), text);
            assert!(!spec.path().is_empty() && !spec.path().contains('?'));
            assert!(spec.params().iter().all(|(key, _)| !key.is_empty()));
            // Render with every byte escaped and parse again.
            let mut rendered = String::new();
            if spec.loader() == LoaderKind::Embedded && text.starts_with(EMBEDDED_PREFIX) {
                rendered.push_str(EMBEDDED_PREFIX);
            }
            rendered.push_str(spec.path());
            for (index, (key, value)) in spec.params().iter().enumerate() {
                rendered.push(if index == 0 { '?' } else { '&' });
                rendered.push_str(&encode(key));
                rendered.push('=');
                rendered.push_str(&encode(value));
            }
            let again = PluginSpec::parse(&rendered).expect("a rendered spec parses");
            assert_eq!(again.path(), spec.path());
            assert_eq!(again.params(), spec.params());
            assert_eq!(again.loader(), spec.loader());
        }
    }
});
