//! IREE's own compiled executables as an outside corpus for the
//! embedded-ELF loader: every program under `tests/iree/` compiled by the
//! pinned pip `iree-compile` for x86_64 and aarch64 (`llvm-cpu`, embedded
//! ELF), the executables' binaries dumped. The host's are validated and
//! mapped (under qemu, `cargo xtask test-aarch64`, the aarch64 ones), the
//! other architecture's validated for it. They export IREE's library query
//! rather than a plugin's, and are otherwise the same format.

use std::path::PathBuf;

use xplug_elf::{ElfImage, ElfTarget, LIBRARY_QUERY_SYMBOL};

/// The executables of every test program for `triple`, with their names.
fn executables(triple: &str) -> Vec<(String, Vec<u8>)> {
    let root = xplug_fixtures::workspace_root();
    let tools = xplug_fixtures::iree_e2e::toolchain(&root).expect("IREE's pinned tools");
    let programs = root.join("tests").join("iree");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&programs)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "mlir"))
        .collect();
    sources.sort();
    let mut out = Vec::new();
    for source in &sources {
        let stem = source.file_stem().unwrap().to_string_lossy().into_owned();
        let dir = root.join("target").join("iree-executables").join(triple).join(&stem);
        let files = xplug_fixtures::iree_e2e::compile_executables(&tools, source, triple, &dir)
            .unwrap_or_else(|error| panic!("{error}"));
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, std::fs::read(&file).unwrap()));
        }
    }
    out
}

fn host_triple() -> &'static str {
    if cfg!(target_arch = "aarch64") { "aarch64-unknown-linux-gnu" } else { "x86_64-unknown-linux-gnu" }
}

fn other(page_size: u64) -> (&'static str, ElfTarget) {
    if cfg!(target_arch = "aarch64") {
        ("x86_64-unknown-linux-gnu", ElfTarget::x86_64(page_size))
    } else {
        ("aarch64-unknown-linux-gnu", ElfTarget::aarch64(page_size))
    }
}

#[test]
fn iree_compiled_executables_of_the_host_map() {
    let executables = executables(host_triple());
    // Nine of the eleven programs have dispatches (the others only call
    // imports or move data).
    assert!(executables.len() >= 9, "{} executables", executables.len());
    for (name, bytes) in &executables {
        let image = ElfImage::load_with_query(bytes, LIBRARY_QUERY_SYMBOL)
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        xplug_tests::assert_code_synchronized(name, &image);
        let query = image.base() + image.plan().query_offset() as usize;
        let code = xplug_tests::code_segments(&image);
        assert!(code.iter().any(|range| range.contains(&query)), "{name}: the query is not in code");
    }
    eprintln!("{} IREE-compiled {} executables mapped", executables.len(), host_triple());
}

#[test]
fn iree_compiled_executables_of_the_other_architecture_validate_for_it() {
    let (triple, target) = other(4096);
    let executables = executables(triple);
    assert!(executables.len() >= 9, "{} executables", executables.len());
    for (name, bytes) in &executables {
        let plan = xplug_elf::validate_for(bytes, target.with_query_symbol(LIBRARY_QUERY_SYMBOL))
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(plan.machine(), target.machine(), "{name}");
        // Not for this host: the loader refuses to map it, naming both.
        let error = ElfImage::load_with_query(bytes, LIBRARY_QUERY_SYMBOL).unwrap_err();
        assert!(matches!(error, xplug_elf::EmbeddedElfError::WrongArchitecture { .. }), "{name}: {error}");
    }
}
