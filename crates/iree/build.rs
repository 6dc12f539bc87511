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
//! "Parameters").

/// IREE's parameter sources, relative to its `runtime/src`.
const PARAMETER_SOURCES: [&str; 11] = [
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
];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=glue/xplug_iree.c");
    let runtime_src = xplug_iree_sources::runtime_src_dir();
    let root = xplug_iree_sources::iree_root_dir(&runtime_src);
    cc::Build::new()
        .file("glue/xplug_iree.c")
        .files(PARAMETER_SOURCES.iter().map(|source| runtime_src.join(source)))
        .include(&runtime_src)
        .include(root.join("third_party/flatcc/include"))
        // The configuration IREE's CMake build of the runtime uses.
        .define("IREE_ALLOCATOR_SYSTEM_CTL", "iree_allocator_libc_ctl")
        .define("IREE_THREADING_ENABLE", "1")
        .warnings(false)
        .compile("xplug_iree_glue");
}
