//! Compiles `glue/xplug_iree.c`, the few calls into IREE's runtime whose
//! declarations the eerie-sys bindings lack, against the headers of the IREE
//! tree eerie-sys bundles. The runtime itself is eerie-sys's archive.
//!
//! eerie-sys's archive (`eerie_runtime`, IREE's `iree::runtime::impl`) does
//! not contain IREE's parameter support: the parameter index and its
//! provider, the scope map, the file cache the provider reads through, the
//! irpa, gguf and safetensors parsers and the `io_parameters` VM module.
//! Those are compiled here from the same IREE tree, with the same
//! configuration, into the glue's archive (`docs/iree-runtime.md`,
//! "Parameters"). So are IREE's result comparison (`tooling/comparison.cc`
//! and its buffer view matchers) behind `--expected_output`.

/// The IREE sources compiled here, relative to its `runtime/src`.
const EXTRA_SOURCES: [&str; 12] = [
    // safetensors headers are JSON.
    "iree/base/internal/json.c",
    "iree/io/parameter_index.c",
    "iree/io/parameter_index_provider.c",
    "iree/io/parameter_provider.c",
    "iree/io/scope_map.c",
    "iree/io/formats/parser_registry.c",
    "iree/io/formats/irpa/irpa_parser.c",
    "iree/io/formats/gguf/gguf_parser.c",
    "iree/io/formats/safetensors/safetensors_parser.c",
    "iree/hal/utils/file_cache.c",
    "iree/modules/io/parameters/module.c",
    // `--expected_output`: IREE's buffer view matchers.
    "iree/tooling/buffer_view_matchers.c",
];

/// IREE's result comparison (`--expected_output`), C++ in IREE's tree.
const COMPARISON_SOURCE: &str = "iree/tooling/comparison.cc";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=glue/xplug_iree.c");
    let runtime_src = xplug_iree_sources::runtime_src_dir();
    let root = xplug_iree_sources::iree_root_dir(&runtime_src);
    cc::Build::new()
        .file("glue/xplug_iree.c")
        .files(EXTRA_SOURCES.iter().map(|source| runtime_src.join(source)))
        .include(&runtime_src)
        .include(root.join("third_party/flatcc/include"))
        // The configuration IREE's CMake build of the runtime uses.
        .define("IREE_ALLOCATOR_SYSTEM_CTL", "iree_allocator_libc_ctl")
        .define("IREE_THREADING_ENABLE", "1")
        .warnings(false)
        .compile("xplug_iree_glue");
    // No exceptions or RTTI, as IREE builds its runtime's C++.
    cc::Build::new()
        .cpp(true)
        .file(runtime_src.join(COMPARISON_SOURCE))
        .include(&runtime_src)
        .include(root.join("third_party/flatcc/include"))
        .flag_if_supported("-fno-exceptions")
        .flag_if_supported("-fno-rtti")
        .define("IREE_ALLOCATOR_SYSTEM_CTL", "iree_allocator_libc_ctl")
        .define("IREE_THREADING_ENABLE", "1")
        .warnings(false)
        .compile("xplug_iree_comparison");
}
