//! Fuzzes the embedded ELF loader's pure validation: any input must be
//! accepted or refused with an error, never panic, hang or read outside
//! the input. Each input is checked for all three architectures (so the
//! seed records for aarch64 and riscv64 are explored on any host), and an
//! accepted plan is checked for internal consistency.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xplug_elf::{ElfTarget, validate_for};

fuzz_target!(|data: &[u8]| {
    for target in [ElfTarget::x86_64(4096), ElfTarget::aarch64(65536), ElfTarget::riscv64(4096)] {
        if let Ok(plan) = validate_for(data, target) {
            let elf = plan.elf();
            assert!(elf.end <= data.len());
            for segment in plan.segments() {
                assert!(segment.image_offset + segment.mem_size <= plan.image_size());
                assert!(segment.file_range.end <= elf.len() as u64);
                assert!(!(segment.flags.write && segment.flags.execute));
            }
            assert!(plan.query_offset() < plan.image_size());
        }
    }
});
