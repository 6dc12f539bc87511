//! The committed C header must equal a fresh cbindgen generation.

#[test]
fn committed_header_matches_a_fresh_generation() {
    match xtask::header::verify() {
        Ok(None) => {}
        Ok(Some(line)) => panic!(
            "{} is stale (first difference at line {line}); run `cargo xtask header` and commit it",
            xtask::header::HEADER_PATH
        ),
        Err(error) => panic!("cannot generate the header: {error}"),
    }
}

#[test]
fn the_generation_reflects_the_rust_types() {
    // The generated text must contain the Rust-derived structs, not only the
    // hand-written prelude: a change to a field type shows up here.
    let text = xtask::header::generate().unwrap();
    for needle in [
        "typedef struct iree_hal_executable_plugin_header_t {",
        "uint64_t reserved[8];",
        "typedef struct iree_hal_executable_plugin_v0_t {",
        "iree_hal_executable_plugin_resolve_fn_v0_t resolve;",
        "const char *const *symbol_names;",
        "void *self;",
    ] {
        assert!(text.contains(needle), "generated header lacks `{needle}`");
    }
}
