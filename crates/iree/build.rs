//! Compiles `glue/xplug_iree.c`, the few calls into IREE's runtime whose
//! declarations the eerie-sys bindings lack, against the headers of the IREE
//! tree eerie-sys bundles. The runtime itself is eerie-sys's archive.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=glue/xplug_iree.c");
    let runtime_src = xplug_iree_sources::runtime_src_dir();
    let root = xplug_iree_sources::iree_root_dir(&runtime_src);
    cc::Build::new()
        .file("glue/xplug_iree.c")
        .include(&runtime_src)
        .include(root.join("third_party/flatcc/include"))
        // The configuration IREE's CMake build of the runtime uses.
        .define("IREE_ALLOCATOR_SYSTEM_CTL", "iree_allocator_libc_ctl")
        .define("IREE_THREADING_ENABLE", "1")
        .warnings(false)
        .compile("xplug_iree_glue");
}
