//! Cross-crate integration tests for xplug (see `tests/`). The plugins the
//! tests load are built by `xplug-fixtures`; the args the tests call the
//! example kernels with are `iree_sample_args`' (its `host` feature).

use std::ops::Range;
use std::path::{Path, PathBuf};

use xplug_elf::ElfImage;

/// Where `image`'s executable segments landed, one range each.
#[must_use]
pub fn code_segments(image: &ElfImage) -> Vec<Range<usize>> {
    image
        .plan()
        .segments()
        .iter()
        .filter(|segment| segment.flags.execute)
        .map(|segment| {
            let start = image.base() + segment.image_offset as usize;
            start..start + segment.mem_size as usize
        })
        .collect()
}

/// Checks that every byte of code the loader wrote lies in a range whose
/// instruction cache it synchronised (aarch64: `dc cvau`/`ic ivau` per
/// line; riscv64), or, on x86_64, that none was needed. qemu executes
/// stale code all the same, so under `cargo xtask test-aarch64` only this
/// bookkeeping proves the flush (`docs/src/reference/embedded-elf.md`).
///
/// # Panics
/// When `image` (named `name` in messages) has no code, or code outside
/// every synchronised range.
pub fn assert_code_synchronized(name: &str, image: &ElfImage) {
    let synchronized = image.synchronized_code();
    let code = code_segments(image);
    assert!(!code.is_empty(), "{name}: no code segment");
    if cfg!(any(target_arch = "aarch64", target_arch = "riscv64")) {
        for segment in &code {
            assert!(
                synchronized.iter().any(|range| range.start <= segment.start && segment.end <= range.end),
                "{name}: code {segment:x?} not covered by the synchronised ranges {synchronized:x?}"
            );
        }
    } else {
        assert!(synchronized.is_empty(), "{name}: x86_64 needs no maintenance: {synchronized:x?}");
    }
}

/// The workspace's members, as directories relative to its root, sorted:
/// `cargo metadata`'s list (the layout tests' one reading of it).
///
/// # Panics
/// When `cargo metadata` fails on `root`'s manifest or lists few members.
#[must_use]
pub fn workspace_members(root: &Path) -> Vec<String> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .no_deps()
        .exec()
        .unwrap_or_else(|error| panic!("cargo metadata on {}: {error}", root.display()));
    let root = metadata.workspace_root.as_std_path();
    let mut members: Vec<String> = metadata
        .workspace_packages()
        .iter()
        .map(|package| {
            let dir = package.manifest_path.parent().expect("a manifest has a directory");
            dir.as_std_path()
                .strip_prefix(root)
                .expect("a member lies under the workspace root")
                .display()
                .to_string()
        })
        .collect();
    members.sort();
    assert!(members.len() > 20, "{} members listed by cargo metadata", members.len());
    members
}

/// Every `.rs` file under `dir`, sorted.
///
/// # Panics
/// When a directory cannot be read.
#[must_use]
pub fn rust_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The Rust examples of the README and the book's chapters under `docs/src/`,
/// compiled and run as this crate's doctests (`cargo test -p xplug-tests
/// --doc`) against the workspace's crates. A block that cannot run here says
/// why next to its `ignore`.
#[cfg(doctest)]
pub mod book {
    /// Every Rust block of one Markdown file, as a doctest.
    macro_rules! chapters {
        ($($name:ident = $path:literal;)*) => {$(
            #[doc = include_str!(concat!("../../", $path))]
            pub struct $name;
        )*};
    }
    chapters! {
        Readme = "README.md";
        WritingAPlugin = "docs/src/plugins/writing.md";
        HowIreeCallsAnImport = "docs/src/plugins/dispatch.md";
        UsingPluginsFromARuntime = "docs/src/embedding/runtimes.md";
        RunIreePrograms = "docs/src/cli/run.md";
        LiveSwap = "docs/src/operating/swap.md";
        TheAbi = "docs/src/reference/abi.md";
        PluginSpecs = "docs/src/reference/specs.md";
        LoadingAPlugin = "docs/src/reference/loading.md";
    }
}
