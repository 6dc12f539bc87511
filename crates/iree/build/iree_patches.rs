//! xplug's patches to IREE's runtime sources: each closes a hole through
//! which a damaged module crashes IREE's runtime (docs/src/embedding/iree.md,
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

/// The checks of the library table's pointers (the embedded-ELF loader's
/// patch): C inserted before `iree_hal_elf_executable_query_library`.
macro_rules! library_checks {
    () => {
        r#"#include <string.h>

// xplug: the library an executable's query function returns is data of the
// image, and the loader and the dispatcher follow its pointers unchecked; in a
// damaged module (a flipped relocation addend or export count) they point
// anywhere. Each pointer they follow must lie, with the bytes read through
// it, in one loaded segment of the image (an executable one for an entry
// point), and each string must end in that segment. The segments come from
// the ELF's program headers, which xplug's ELF checks have already vetted.
typedef struct xplug_library_image_t {
  const iree_elf_module_t* module;
  iree_const_byte_span_t elf;
} xplug_library_image_t;

// The end of the loaded segment holding |ptr| (executable ones only, when
// asked), or 0.
static uintptr_t xplug_library_segment_end(const xplug_library_image_t* image,
                                           const void* ptr, bool executable) {
  iree_elf_ehdr_t ehdr;
  if (image->elf.data_length < sizeof(ehdr)) return 0;
  memcpy(&ehdr, image->elf.data, sizeof(ehdr));
  for (iree_host_size_t i = 0; i < ehdr.e_phnum; ++i) {
    iree_host_size_t at = (iree_host_size_t)ehdr.e_phoff + i * ehdr.e_phentsize;
    iree_elf_phdr_t phdr;
    if (at > image->elf.data_length ||
        image->elf.data_length - at < sizeof(phdr)) {
      return 0;
    }
    memcpy(&phdr, image->elf.data + at, sizeof(phdr));
    if (phdr.p_type != IREE_ELF_PT_LOAD) continue;
    if (executable && !(phdr.p_flags & IREE_ELF_PF_X)) continue;
    uintptr_t start = (uintptr_t)image->module->vaddr_bias + phdr.p_vaddr;
    uintptr_t address = (uintptr_t)ptr;
    if (address >= start && address - start < phdr.p_memsz) {
      return start + phdr.p_memsz;
    }
  }
  return 0;
}

// Whether |count| elements of |size| bytes at |ptr| lie in one segment.
static bool xplug_library_holds(const xplug_library_image_t* image,
                                const void* ptr, iree_host_size_t count,
                                iree_host_size_t size) {
  uintptr_t end = xplug_library_segment_end(image, ptr, false);
  if (!end) return false;
  iree_host_size_t available = end - (uintptr_t)ptr;
  return size == 0 || count <= available / size;
}

// Whether |string| and its NUL lie in one segment.
static bool xplug_library_string(const xplug_library_image_t* image,
                                 const char* string) {
  uintptr_t end = xplug_library_segment_end(image, string, false);
  return end && memchr(string, 0, end - (uintptr_t)string) != NULL;
}

static iree_status_t xplug_library_check(
    const xplug_library_image_t* image,
    const iree_hal_executable_library_header_t* const* header_ptr) {
#define XPLUG_LIBRARY_REFUSE(what)                                         \
  return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,                    \
                          "executable library's %s lies outside its image " \
                          "(xplug's check of the library's pointers)",     \
                          what)
  const iree_hal_executable_library_v0_t* library =
      (const iree_hal_executable_library_v0_t*)header_ptr;
  if (!xplug_library_holds(image, library, 1, sizeof(*library))) {
    XPLUG_LIBRARY_REFUSE("table");
  }
  if (!xplug_library_holds(image, library->header, 1,
                           sizeof(*library->header))) {
    XPLUG_LIBRARY_REFUSE("header");
  }
  if (!xplug_library_string(image, library->header->name)) {
    XPLUG_LIBRARY_REFUSE("name");
  }
  const iree_hal_executable_import_table_v0_t* imports = &library->imports;
  if (imports->count) {
    if (!xplug_library_holds(image, imports->symbols, imports->count,
                             sizeof(*imports->symbols))) {
      XPLUG_LIBRARY_REFUSE("import table");
    }
    for (uint32_t i = 0; i < imports->count; ++i) {
      if (!xplug_library_string(image, imports->symbols[i])) {
        XPLUG_LIBRARY_REFUSE("import name");
      }
    }
  }
  const iree_hal_executable_export_table_v0_t* exports = &library->exports;
  if (exports->count) {
    if (!xplug_library_holds(image, exports->ptrs, exports->count,
                             sizeof(*exports->ptrs))) {
      XPLUG_LIBRARY_REFUSE("export table");
    }
    for (uint32_t i = 0; i < exports->count; ++i) {
      if (!xplug_library_segment_end(image, (const void*)exports->ptrs[i],
                                     true)) {
        XPLUG_LIBRARY_REFUSE("entry point");
      }
    }
    if (exports->attrs &&
        !xplug_library_holds(image, exports->attrs, exports->count,
                             sizeof(*exports->attrs))) {
      XPLUG_LIBRARY_REFUSE("dispatch attribute table");
    }
    if (exports->names) {
      if (!xplug_library_holds(image, exports->names, exports->count,
                               sizeof(*exports->names))) {
        XPLUG_LIBRARY_REFUSE("export name table");
      }
      for (uint32_t i = 0; i < exports->count; ++i) {
        if (exports->names[i] &&
            !xplug_library_string(image, exports->names[i])) {
          XPLUG_LIBRARY_REFUSE("export name");
        }
      }
    }
  }
#undef XPLUG_LIBRARY_REFUSE
  return iree_ok_status();
}

"#
    };
}

/// The patches, in the order they are applied.
pub const PATCHES: &[Patch] = &[
    Patch {
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
    },
    Patch {
        file: "iree/hal/local/loaders/embedded_elf_loader.c",
        target: "iree_hal_local_loaders_embedded_elf_loader.objects",
        why: "the pointers of an executable's library table are checked to lie in its image before they are followed",
        edits: &[
            (
                // The checks, before the function that queries the library; it
                // gets the executable's bytes for the program headers.
                "static iree_status_t iree_hal_elf_executable_query_library(
    iree_hal_elf_executable_t* executable) {",
                concat!(
                    library_checks!(),
                    "static iree_status_t iree_hal_elf_executable_query_library(
    iree_hal_elf_executable_t* executable,
    iree_const_byte_span_t executable_data) {"
                ),
            ),
            (
                // Checked before IREE reads the header through the pointer.
                "        IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST);
  }
  const iree_hal_executable_library_header_t* header =",
                "        IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST);
  }
  // xplug: the library's pointers lie in the image (see above).
  const xplug_library_image_t xplug_image = {&executable->module,
                                             executable_data};
  IREE_RETURN_IF_ERROR(
      xplug_library_check(&xplug_image, executable->library.header));
  const iree_hal_executable_library_header_t* header =",
            ),
            (
                "    status = iree_hal_elf_executable_query_library(executable);",
                "    status = iree_hal_elf_executable_query_library(
        executable, executable_params->executable_data);",
            ),
        ],
    },
];
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
