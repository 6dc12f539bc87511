//! xplug's patches to IREE's runtime sources: each closes a hole through
//! which a damaged module crashes IREE's runtime (docs/iree-runtime.md,
//! "Damaged modules"). A patch is a list of exact edits to one file of the
//! IREE tree; `build.rs` applies them to a copy under the CMake build tree
//! (the registry's tree stays untouched) and `glue/CMakeLists.txt` compiles
//! the copy in place of the original, in the IREE target that owns it. An
//! edit whose text is not found exactly once stops the build: a new IREE
//! tree needs its patches looked at again.

use std::path::Path;

/// One patched file of IREE's runtime.
pub struct Patch {
    /// The file, relative to IREE's `runtime/src/`.
    pub file: &'static str,
    /// The CMake target (IREE's object library) that compiles it.
    pub target: &'static str,
    /// What the patch fixes, for the build's error messages.
    pub why: &'static str,
    /// Each edit: the text found exactly once, and its replacement.
    pub edits: &'static [(&'static str, &'static str)],
}

/// The patches, in the order they are applied.
pub const PATCHES: &[Patch] = &[Patch {
    file: "iree/vm/bytecode/verifier.c",
    target: "iree_vm_bytecode_module.objects",
    why: "the bytecode verifier checks every register ordinal and type id it decodes, against the registers \
          a frame has",
    edits: &[
        (
            // IREE's shared op decoder (`utils/isa_decoder.inl`) checks each
            // register ordinal and type id it decodes through the
            // `IREE_VM_ISA_VALIDATE_*` hooks, which default to nothing. The
            // verifier defines its checks as `IREE_VM_ISA_VERIFY_REG_*` and
            // `IREE_VM_ISA_VERIFY_TYPE_ID`, names the decoder never uses, so
            // no single register operand or result, and no type id, was
            // checked: a module whose `vm.const.i32` writes `%i32 65280`
            // passed verification and wrote past the frame (offset 2983 of
            // the flip sweep's module). Binding the hooks to the checks
            // makes the verifier check what it was written to check.
            "#include \"iree/vm/bytecode/utils/isa_decoder.inl\"\n",
            "// xplug: isa_decoder.inl checks what it decodes through the
// IREE_VM_ISA_VALIDATE_* hooks (no-ops unless defined); the checks above are
// named IREE_VM_ISA_VERIFY_*, so bind the hooks to them.
#define IREE_VM_ISA_VALIDATE_TYPE_ID(type_id) \\
  IREE_VM_ISA_VERIFY_TYPE_ID(type_id)
#define IREE_VM_ISA_VALIDATE_REG_I32(ordinal) IREE_VM_ISA_VERIFY_REG_I32(ordinal)
#define IREE_VM_ISA_VALIDATE_REG_I64(ordinal) IREE_VM_ISA_VERIFY_REG_I64(ordinal)
#define IREE_VM_ISA_VALIDATE_REG_F32(ordinal) IREE_VM_ISA_VERIFY_REG_F32(ordinal)
#define IREE_VM_ISA_VALIDATE_REG_F64(ordinal) IREE_VM_ISA_VERIFY_REG_F64(ordinal)
#define IREE_VM_ISA_VALIDATE_REG_ANY(ordinal) IREE_VM_ISA_VERIFY_REG_ANY(ordinal)
#define IREE_VM_ISA_VALIDATE_REG_REF_ALLOW_MOVE(ordinal) \\
  IREE_VM_ISA_VERIFY_REG_REF_ALLOW_MOVE(ordinal)
#define IREE_VM_ISA_VALIDATE_REG_REF_NO_MOVE(ordinal) \\
  IREE_VM_ISA_VERIFY_REG_REF_NO_MOVE(ordinal)

#include \"iree/vm/bytecode/utils/isa_decoder.inl\"\n",
        ),
        (
            // IREE's verifier accepts any ordinal below the function's register
            // count rounded up to a power of two, but the dispatcher
            // (`iree_vm_bytecode_function_enter`, dispatch.c) gives a frame
            // only `align(count * size, 16)` bytes of registers: with 9 i32
            // registers, ordinals 12 to 15 pass and read or write past the
            // frame, on the C stack.
            "  verify_state.i32_register_count = iree_math_round_up_to_pow2_u32(
      iree_max(1, function_descriptor->i32_register_count));
  verify_state.ref_register_count = iree_math_round_up_to_pow2_u32(
      iree_max(1, function_descriptor->ref_register_count));",
            "  // xplug: the registers the frame has, as iree_vm_bytecode_function_enter
  // (dispatch.c) sizes its storage, not the count rounded up to a power of
  // two, which let ordinals past the frame through.
  verify_state.i32_register_count = (uint32_t)(
      iree_host_align(function_descriptor->i32_register_count * sizeof(int32_t),
                      16) /
      sizeof(int32_t));
  verify_state.ref_register_count = (uint32_t)(
      iree_host_align(
          function_descriptor->ref_register_count * sizeof(iree_vm_ref_t), 16) /
      sizeof(iree_vm_ref_t));",
        ),
    ],
}];

/// Applies every patch to its file under `runtime_src`, writing the
/// patched copies under `out` (same relative paths, rewritten only when
/// their text changes, so an unchanged build recompiles nothing) and
/// `out/patches.cmake`, which sets `XPLUG_IREE_PATCHES` to
/// `target;original;copy` triples for `glue/CMakeLists.txt`.
///
/// # Panics
/// When a file cannot be read or written, or an edit's text is not found
/// exactly once (the message names the file, the patch and the edit).
pub fn apply(runtime_src: &Path, out: &Path) {
    let mut manifest = String::from(
        "# Written by crates/iree/build.rs (build/iree_patches.rs): IREE sources\n\
         # compiled from xplug's patched copies, as target;original;copy.\n\
         set(XPLUG_IREE_PATCHES\n",
    );
    for patch in PATCHES {
        let original = runtime_src.join(patch.file);
        let mut text = std::fs::read_to_string(&original)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", original.display()));
        for (index, (find, replace)) in patch.edits.iter().enumerate() {
            let found = text.matches(find).count();
            assert!(
                found == 1,
                "xplug's patch of {} ({}) does not apply: edit {} is found {found} times, not once; this IREE \
                 tree needs the patch looked at again (crates/iree/build/iree_patches.rs)",
                original.display(),
                patch.why,
                index + 1
            );
            text = text.replacen(find, replace, 1);
        }
        let copy = out.join(patch.file);
        if std::fs::read_to_string(&copy).ok().as_deref() != Some(text.as_str()) {
            let parent = copy.parent().expect("a patched file has a directory");
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|error| panic!("cannot create {}: {error}", parent.display()));
            std::fs::write(&copy, &text)
                .unwrap_or_else(|error| panic!("cannot write {}: {error}", copy.display()));
        }
        manifest.push_str(&format!(
            "  \"{}\" \"{}\" \"{}\"\n",
            patch.target,
            original.display(),
            copy.display()
        ));
    }
    manifest.push_str(")\n");
    let path = out.join("patches.cmake");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(manifest.as_str()) {
        std::fs::create_dir_all(out)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", out.display()));
        std::fs::write(&path, manifest)
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
    }
}
