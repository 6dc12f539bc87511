//! Fuzzes xplug-iree's checks of parameter archives
//! (`crates/iree/src/archive.rs`, compiled in here as it is in
//! xplug-iree, so the fuzzer needs no IREE runtime): any input, read as
//! an `.irpa`, `.safetensors` or `.gguf`, must give data regions inside
//! the input or a fault, never panic, hang or read outside it; and
//! entries built from the input's bytes pass the entry check only when
//! they lie inside the input and a region.
#![no_main]

#[path = "../../crates/iree/src/archive.rs"]
#[allow(dead_code, reason = "the fuzzer calls the checks, not every helper")]
mod archive;

use archive::{Entry, Format, check_entries, layout};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let len = data.len() as u64;
    for format in [Format::Irpa, Format::Safetensors, Format::Gguf] {
        let Ok(regions) = layout(format, data) else { continue };
        for region in &regions {
            assert!(region.start <= region.end && region.end <= len, "{format:?}: {region:?} of {len}");
        }
        // The input's tail, read as (offset, length) pairs, as entries.
        let entries: Vec<Entry> = data
            .rchunks_exact(16)
            .take(8)
            .map(|pair| Entry {
                key: String::new(),
                in_file: true,
                in_archive: true,
                offset: u64::from_le_bytes(pair[..8].try_into().unwrap()),
                length: u64::from_le_bytes(pair[8..].try_into().unwrap()),
            })
            .collect();
        if check_entries(len, &regions, &entries).is_ok() {
            for entry in &entries {
                let end = entry.offset.checked_add(entry.length).expect("accepted entries do not wrap");
                assert!(end <= len);
                assert!(regions.iter().any(|region| entry.offset >= region.start && end <= region.end));
            }
        }
    }
});
