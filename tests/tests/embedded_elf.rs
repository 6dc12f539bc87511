//! The embedded ELF loader on the `.sos` files `cargo xtask build-plugins`
//! writes: the manager routes `embedded:` specs and `.sos` paths to it and
//! runs `simple_mul_workgroup` from the Rust and the C plugin; a `.sos` built
//! by a plain C toolchain loads; and every hostile mutation of a real image
//! is refused with its own typed error.

use std::path::{Path, PathBuf};

use iree_sample_args::WorkgroupArgs;

use xplug_abi::StatusCode;
use xplug_elf::{EmbeddedElfError, fatelf, validate};
use xplug_manager::Manager;
use xplug_manager::providers::{
    EMBEDDED_ELF, EmbeddedElfCode, Error as ProviderError, LoadParamList, Loader, Origin,
};

/// The debug example plugins, built once per test process.
fn plugins() -> &'static Path {
    xplug_fixtures::plugins::built_for_tests()
}

fn sos(name: &str) -> PathBuf {
    plugins().join(format!("{name}.sos"))
}

/// The host's ELF numbers, for mutating the host record: the tests run on
/// x86_64 and, under qemu, on aarch64 (`cargo xtask test-aarch64`), each
/// with its own relocation types.
#[cfg(target_arch = "x86_64")]
mod host {
    pub const MACHINE: u16 = 62;
    /// Another architecture (`e_machine`) and its label's start.
    pub const OTHER: (u16, &str) = (183, "aarch64");
    /// The 64-bit absolute relocation.
    pub const ABS64: u64 = 1;
    /// The relative relocation.
    pub const RELATIVE: u64 = 8;
    pub const TLS: (u64, &str) = (18, "R_X86_64_TPOFF64");
    pub const REFUSED: [(u64, &str); 2] = [(37, "R_X86_64_IRELATIVE"), (5, "R_X86_64_COPY")];
    pub fn target(page_size: u64) -> xplug_elf::ElfTarget {
        xplug_elf::ElfTarget::x86_64(page_size)
    }
    /// Pages lld lays this architecture's segments out on (the largest
    /// page size an image validates for).
    pub const MAX_PAGE: u64 = 4096;
}
#[cfg(target_arch = "aarch64")]
mod host {
    pub const MACHINE: u16 = 183;
    pub const OTHER: (u16, &str) = (62, "x86_64");
    pub const ABS64: u64 = 257; // R_AARCH64_ABS64
    pub const RELATIVE: u64 = 1027; // R_AARCH64_RELATIVE
    pub const TLS: (u64, &str) = (1030, "R_AARCH64_TLS_TPREL64");
    pub const REFUSED: [(u64, &str); 2] = [(1032, "R_AARCH64_IRELATIVE"), (1024, "R_AARCH64_COPY")];
    pub fn target(page_size: u64) -> xplug_elf::ElfTarget {
        xplug_elf::ElfTarget::aarch64(page_size)
    }
    pub const MAX_PAGE: u64 = 65536;
}

/// The host record of the Rust plugin's `.sos`: a plain ELF to mutate.
fn rust_elf() -> Vec<u8> {
    let bytes = std::fs::read(sos("sample_standalone")).unwrap();
    let plan = validate(&bytes).unwrap();
    assert!(plan.record().is_some(), "the .sos is a FatELF container");
    bytes[plan.elf()].to_vec()
}

/// Resolves and runs `simple_mul_workgroup` on 48 elements (one call, slice
/// from element 0, so either reading of `tid` gives the same result).
fn run_simple_mul(manager: &Manager) {
    let imports = manager.resolve_imports(["simple_mul_workgroup"]).unwrap();
    let lhs: Vec<f32> = (0..48).map(|i| i as f32 + 0.5).collect();
    let rhs: Vec<f32> = (0..48).map(|i| 3.0 - i as f32).collect();
    let mut out = vec![f32::NAN; 48];
    let mut args = WorkgroupArgs::whole(&lhs, &rhs, &mut out);
    // SAFETY: `simple_mul_workgroup` takes IREE's sample args; the three
    // buffers hold `size` elements and outlive the call.
    assert_eq!(unsafe { imports.import(0).unwrap().call(&mut args) }, 0);
    let expected: Vec<f32> = lhs.iter().zip(&rhs).map(|(a, b)| a * b).collect();
    assert_eq!(out, expected);
}

#[test]
fn manager_runs_simple_mul_from_the_rust_sos() {
    let spec = format!("embedded:{}", sos("sample_standalone").display());
    // SAFETY: the project's own standalone plugin.
    let manager = unsafe { Manager::from_specs([&spec]) }.unwrap();
    assert_eq!(manager.providers(), ["sample_standalone"]);
    run_simple_mul(&manager);
}

#[test]
fn manager_runs_simple_mul_from_the_c_sos_by_suffix() {
    // No prefix: the `.sos` suffix selects the embedded loader.
    let spec = sos("c_sample").display().to_string();
    // SAFETY: the project's own standalone C plugin.
    let manager = unsafe { Manager::from_specs([&spec]) }.unwrap();
    assert_eq!(manager.providers(), ["c_sample"]);
    run_simple_mul(&manager);
}

#[test]
fn the_rust_sos_is_small_and_needs_only_relative_relocations() {
    let bytes = std::fs::read(sos("sample_standalone")).unwrap();
    let plan = validate(&bytes).unwrap();
    let host_record = plan.elf().len();
    assert!(host_record <= 16 * 1024, "the host record is {host_record} bytes");
    assert!(plan.relocation_count() > 0);
    // The query function and xplug's optional exports (the SDK's
    // `xplug_plugin_exports`, `xplug_plugin_load_error` and
    // `xplug_import_layouts`; the sample declares no parameters), nothing
    // else.
    let optional: Vec<&str> = plan.optional_exports().iter().map(|(name, _)| *name).collect();
    assert_eq!(optional, ["xplug_plugin_exports", "xplug_plugin_load_error", "xplug_import_layouts"]);
    assert_eq!(plan.symbol_count(), 5, "the null symbol, the query function and the optional exports");
    assert_eq!(plan.hash_table(), xplug_elf::SymbolHashTable::Sysv);
}

#[test]
fn the_plugin_source_names_the_file_and_record() {
    let path = sos("sample_standalone");
    // SAFETY: the project's own standalone plugin.
    let plugin = unsafe {
        EMBEDDED_ELF
            .open(&std::path::Path::new(&path).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap();
    assert_eq!(plugin.code().loader().name(), "embedded ELF");
    assert_eq!(plugin.code().origin(), Some(&Origin::File(path.clone())));
    let record = plugin
        .code()
        .downcast_ref::<EmbeddedElfCode>()
        .map(EmbeddedElfCode::image)
        .and_then(|image| image.plan().record())
        .expect("a FatELF record");
    // The first record of the host's architecture (x86_64's comes first).
    let bytes = std::fs::read(&path).unwrap();
    let expected = fatelf::records(&bytes).unwrap().iter().position(|r| r.machine == host::MACHINE).unwrap();
    assert_eq!(record.index, expected, "the host's record is chosen");
    assert!(plugin.code().to_string().contains(&format!("FatELF record {expected}")), "{}", plugin.code());
    assert_eq!(plugin.unload().live_allocations, 0);
}

#[test]
fn the_loader_reads_the_optional_exports_of_an_sdk_sos() {
    // SAFETY: the project's own standalone plugin.
    let plugin = unsafe {
        EMBEDDED_ELF
            .open(&std::path::Path::new(&sos("sample_standalone")).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap();
    // `xplug_plugin_exports`, called in the mapped image.
    assert_eq!(
        plugin.exports(),
        Some(
            &["dot", "matmul_relu_workgroup", "saxpy", "simple_add_workgroup", "simple_mul_workgroup"]
                .map(String::from)[..]
        )
    );
    // No `params(...)`: no `xplug_plugin_params`, every key reaches `load`.
    assert_eq!(plugin.param_decls(), None);
    // The C sample has none of xplug's exports.
    // SAFETY: the project's own standalone C plugin.
    let c = unsafe {
        EMBEDDED_ELF
            .open(&std::path::Path::new(&sos("c_sample")).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap();
    assert_eq!(c.exports(), None);
}

#[test]
fn a_sos_built_by_a_plain_c_toolchain_loads() {
    let dir = tempfile::tempdir().unwrap();
    // IREE's compile flags with the system compiler and linker (GNU ld).
    let output = xplug_fixtures::build_standalone_c_sample(dir.path());
    let bytes = std::fs::read(&output).unwrap();
    let plan = validate(&bytes).unwrap();
    assert!(plan.record().is_none(), "a plain ELF, no container");
    // SAFETY: the project's own standalone C plugin.
    let plugin = unsafe {
        EMBEDDED_ELF.open_image("c_sample_plain.so", &bytes).and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap();
    let manager = Manager::new();
    manager.register_plugin(plugin).unwrap();
    run_simple_mul(&manager);
}

#[test]
fn only_existing_regular_files_are_read() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: nothing is loaded: both paths are refused before any mapping.
    let error = unsafe {
        EMBEDDED_ELF
            .open(&std::path::Path::new(&dir.path()).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap_err();
    assert!(
        matches!(&error, ProviderError::NotSharedObject { path, reason }
            if path == dir.path() && reason.contains("a directory, not a regular file")),
        "{error:?}"
    );
    let missing = dir.path().join("missing.sos");
    // SAFETY: as above.
    let error = unsafe {
        EMBEDDED_ELF
            .open(&std::path::Path::new(&missing).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap_err();
    assert!(matches!(&error, ProviderError::FileNotFound { path } if *path == missing), "{error:?}");
    // A FIFO is refused at once, not waited on (nobody ever writes to it).
    let fifo = dir.path().join("plugin.sos");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    // SAFETY: as above.
    let error = unsafe {
        EMBEDDED_ELF
            .open(&std::path::Path::new(&fifo).to_string_lossy())
            .and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap_err();
    assert!(
        matches!(&error, ProviderError::NotSharedObject { reason, .. } if reason.contains("a FIFO")),
        "{error:?}"
    );
}

#[test]
fn a_plugin_without_the_standalone_feature_is_refused() {
    // Flip STANDALONE off in the C plugin's header: the bytes are the
    // `.features = 1` of a static const header; find them next to its
    // version field in .rodata/.data.rel.ro via the description string.
    let bytes = std::fs::read(sos("c_sample")).unwrap();
    let plan = validate(&bytes).unwrap();
    let mut elf = bytes[plan.elf()].to_vec();
    // The header is {u32 version=1, pad, name*, description*, u32 features=1,
    // i32 sanitizer=0, u64 reserved[8]}: in the file its pointer fields are
    // zero (filled by RELATIVE relocations), so look for the pattern
    // `01 00 00 00 | 4 pad | 16 zero | 01 00 00 00 | 00 00 00 00`.
    let mut pattern = vec![1u8, 0, 0, 0];
    pattern.extend([0u8; 20]);
    pattern.extend([1u8, 0, 0, 0, 0, 0, 0, 0]);
    let at =
        elf.windows(pattern.len()).position(|window| window == pattern).expect("the C header in the image");
    elf[at + 24] = 0;
    // SAFETY: the project's C plugin with one header field changed.
    let error = unsafe {
        EMBEDDED_ELF.open_image("no_standalone", &elf).and_then(|code| code.load(&LoadParamList::new()))
    }
    .unwrap_err();
    assert_eq!(error.code(), StatusCode::FAILED_PRECONDITION, "{error}");
    assert!(
        matches!(
            &error,
            ProviderError::Incompatible {
                reason: xplug_manager::providers::compatibility::Incompatibility::MissingFeatures {
                    loader: "embedded ELF",
                    ..
                },
                ..
            }
        ),
        "{error:?}"
    );
}

// --- Hostile images: each mutation of the real Rust image, its refusal ---

fn u16_at(elf: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(elf[at..at + 2].try_into().unwrap())
}
fn u32_at(elf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(elf[at..at + 4].try_into().unwrap())
}
fn u64_at(elf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(elf[at..at + 8].try_into().unwrap())
}
fn put_u16(elf: &mut [u8], at: usize, value: u16) {
    elf[at..at + 2].copy_from_slice(&value.to_le_bytes());
}
fn put_u32(elf: &mut [u8], at: usize, value: u32) {
    elf[at..at + 4].copy_from_slice(&value.to_le_bytes());
}
fn put_u64(elf: &mut [u8], at: usize, value: u64) {
    elf[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// File offsets of the program headers.
fn phdrs(elf: &[u8]) -> Vec<usize> {
    let (offset, count) = (u64_at(elf, 32) as usize, usize::from(u16_at(elf, 56)));
    (0..count).map(|i| offset + i * 56).collect()
}

fn phdr_of_type(elf: &[u8], p_type: u32) -> Vec<usize> {
    phdrs(elf).into_iter().filter(|&at| u32_at(elf, at) == p_type).collect()
}

/// File offset of virtual address `address`.
fn file_offset(elf: &[u8], address: u64) -> usize {
    for at in phdr_of_type(elf, 1) {
        let (offset, vaddr, filesz) = (u64_at(elf, at + 8), u64_at(elf, at + 16), u64_at(elf, at + 32));
        if (vaddr..vaddr + filesz).contains(&address) {
            return (offset + address - vaddr) as usize;
        }
    }
    panic!("address {address:#x} not in the file");
}

/// File offsets of the dynamic entries (up to DT_NULL).
fn dynamic_entries(elf: &[u8]) -> Vec<usize> {
    let at = phdr_of_type(elf, 2)[0];
    let (offset, size) = (u64_at(elf, at + 8) as usize, u64_at(elf, at + 32) as usize);
    (offset..offset + size).step_by(16).take_while(|&entry| u64_at(elf, entry) != 0).collect()
}

fn dynamic_value(elf: &[u8], tag: u64) -> u64 {
    let entry = dynamic_entries(elf).into_iter().find(|&entry| u64_at(elf, entry) == tag).unwrap();
    u64_at(elf, entry + 8)
}

/// Replaces the first entry with `tag` (or a harmless one) by `new_tag`.
fn set_dynamic(elf: &mut [u8], tag: u64, new_tag: u64, value: u64) {
    let entry = dynamic_entries(elf).into_iter().find(|&entry| u64_at(elf, entry) == tag).unwrap();
    put_u64(elf, entry, new_tag);
    put_u64(elf, entry + 8, value);
}

/// The file offset of the first RELA entry.
fn first_rela(elf: &[u8]) -> usize {
    file_offset(elf, dynamic_value(elf, 7))
}

/// The file offset of the query symbol's name in the string table.
fn query_name(elf: &[u8]) -> usize {
    let strtab = file_offset(elf, dynamic_value(elf, 5));
    let symtab = file_offset(elf, dynamic_value(elf, 6));
    strtab + u32_at(elf, symtab + 24) as usize
}

const DT_FLAGS_1: u64 = 0x6fff_fffb;

fn refused(elf: &[u8]) -> EmbeddedElfError {
    let error = validate(elf).expect_err("a hostile image must be refused");
    // The loader refuses it too, with the same cause, before mapping.
    // SAFETY: refused by validation before any code runs.
    match unsafe { EMBEDDED_ELF.open_image("hostile", elf).and_then(|code| code.load(&LoadParamList::new())) }
    {
        Err(ProviderError::EmbeddedElf { source, plugin, .. }) => {
            assert_eq!(source.to_string(), error.to_string());
            assert!(plugin.contains("hostile"));
        }
        other => panic!("expected an embedded ELF error, got {other:?}"),
    }
    error
}

#[test]
fn the_unmodified_image_is_valid() {
    let elf = rust_elf();
    let plan = validate(&elf).unwrap();
    assert!(plan.record().is_none());
    assert_eq!(plan.elf(), 0..elf.len());
}

#[test]
fn any_page_size_validates_without_panicking() {
    let elf = rust_elf();
    for page_size in [0, 1, 4096, host::MAX_PAGE] {
        let target = host::target(page_size);
        let plan = xplug_elf::validate_for(&elf, target).unwrap();
        assert_eq!(plan.image_size() % target.page_size(), 0, "page size {page_size}");
    }
    // lld lays x86_64 segments out on 4 KiB pages, aarch64's on 64 KiB:
    // with larger pages they share pages with different protections,
    // which is refused.
    for page_size in [host::MAX_PAGE * 4, host::MAX_PAGE * 16, u64::MAX] {
        let target = host::target(page_size);
        let error = xplug_elf::validate_for(&elf, target).unwrap_err();
        assert!(
            matches!(
                error,
                EmbeddedElfError::SegmentsOverlap { how: "share a page with different protections", .. }
            ),
            "{error}"
        );
    }
}

#[test]
fn truncated_images_are_refused_at_every_length() {
    let elf = rust_elf();
    assert!(matches!(refused(&elf[..40]), EmbeddedElfError::Truncated { needed: 64, available: 40, .. }));
    assert!(matches!(refused(&elf[..0]), EmbeddedElfError::BadMagic { .. }));
    for length in 0..elf.len() {
        assert!(validate(&elf[..length]).is_err(), "a {length}-byte prefix was accepted");
    }
}

#[test]
fn wrong_machine_is_refused() {
    let mut elf = rust_elf();
    let (machine, label) = host::OTHER;
    put_u16(&mut elf, 18, machine);
    let error = refused(&elf);
    assert!(
        matches!(&error, EmbeddedElfError::WrongArchitecture { found, .. } if found.starts_with(label)),
        "{error}"
    );
    // The same ELF checked as that target gets past the header.
    let other =
        if machine == 183 { xplug_elf::ElfTarget::aarch64(4096) } else { xplug_elf::ElfTarget::x86_64(4096) };
    assert!(!matches!(xplug_elf::validate_for(&elf, other), Err(EmbeddedElfError::WrongArchitecture { .. })));
}

#[test]
fn a_fatelf_without_a_host_record_names_what_it_has() {
    let mut other = rust_elf();
    put_u16(&mut other, 18, host::OTHER.0);
    let mut riscv = rust_elf();
    put_u16(&mut riscv, 18, 243);
    let container = fatelf::join(&[&other, &riscv]).unwrap();
    let error = refused(&container);
    assert!(
        matches!(&error, EmbeddedElfError::NoMatchingRecord { found, .. } if found.len() == 2),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&format!("{} (64-bit, little-endian", host::OTHER.1))
            && message.contains("riscv (64-bit"),
        "{message}"
    );
    // With the host record last, it is found.
    let host = rust_elf();
    let container = fatelf::join(&[&other, &host]).unwrap();
    assert_eq!(validate(&container).unwrap().record().unwrap().index, 1);
}

#[test]
fn not_a_shared_object_is_refused() {
    let mut elf = rust_elf();
    put_u16(&mut elf, 16, 2);
    assert!(matches!(refused(&elf), EmbeddedElfError::BadHeader { field: "e_type", found: 2, .. }));
    let mut elf = rust_elf();
    put_u16(&mut elf, 54, 32);
    assert!(matches!(refused(&elf), EmbeddedElfError::EntrySize { expected: 56, found: 32, .. }));
    let mut elf = rust_elf();
    put_u64(&mut elf, 32, u64::MAX - 8);
    assert!(matches!(refused(&elf), EmbeddedElfError::TableOutOfBounds { .. }));
}

#[test]
fn writable_and_executable_segments_are_refused() {
    let mut elf = rust_elf();
    let code = phdr_of_type(&elf, 1).into_iter().find(|&at| u32_at(&elf, at + 4) & 1 != 0).unwrap();
    put_u32(&mut elf, code + 4, 7);
    assert!(matches!(refused(&elf), EmbeddedElfError::WritableAndExecutable { flags: 7, .. }));
}

#[test]
fn file_size_over_memory_size_is_refused() {
    let mut elf = rust_elf();
    let load = phdr_of_type(&elf, 1)[0];
    let memsz = u64_at(&elf, load + 40);
    put_u64(&mut elf, load + 32, memsz + 1);
    assert!(
        matches!(refused(&elf), EmbeddedElfError::SegmentFileSize { file_size, mem_size, .. } if file_size == mem_size + 1)
    );
}

#[test]
fn overlapping_segments_are_refused() {
    let mut elf = rust_elf();
    let loads = phdr_of_type(&elf, 1);
    // Move the last segment onto the first one's addresses.
    let first_vaddr = u64_at(&elf, loads[0] + 16);
    let last = *loads.last().unwrap();
    put_u64(&mut elf, last + 16, first_vaddr + 8);
    // Its file offset moved to match modulo its alignment, which is checked
    // first.
    let (offset, align) = (u64_at(&elf, last + 8), u64_at(&elf, last + 48));
    put_u64(&mut elf, last + 8, offset - offset % align + (first_vaddr + 8) % align);
    assert!(matches!(refused(&elf), EmbeddedElfError::SegmentsOverlap { how: "overlap", .. }));
}

#[test]
fn absurd_sizes_are_refused() {
    let mut elf = rust_elf();
    let load = *phdr_of_type(&elf, 1).last().unwrap();
    put_u64(&mut elf, load + 40, 1 << 40);
    assert!(matches!(refused(&elf), EmbeddedElfError::TooLarge { .. }));
}

#[test]
fn thread_local_storage_is_refused() {
    let mut elf = rust_elf();
    let stack = phdr_of_type(&elf, 0x6474_e551)[0];
    put_u32(&mut elf, stack, 7);
    assert!(matches!(refused(&elf), EmbeddedElfError::ThreadLocalStorage { .. }));
    let mut elf = rust_elf();
    let rela = first_rela(&elf);
    let (tls, name) = host::TLS;
    put_u64(&mut elf, rela + 8, tls);
    let error = refused(&elf);
    assert!(
        matches!(&error, EmbeddedElfError::ThreadLocalStorage { found } if found.contains(name)),
        "{error}"
    );
}

#[test]
fn misaligned_relocation_entries_are_refused() {
    const DT_RELA: u64 = 7;
    const DT_RELASZ: u64 = 8;
    // The table starting between entries: read from there, its entries
    // would decode as NONE and the image would run unrelocated.
    let mut elf = rust_elf();
    let rela = dynamic_value(&elf, DT_RELA);
    set_dynamic(&mut elf, DT_RELA, DT_RELA, rela + 4);
    let error = refused(&elf);
    assert!(
        matches!(&error, EmbeddedElfError::Misaligned { what, value, alignment: 8 }
            if what.contains("DT_RELA") && *value == rela + 4),
        "{error}"
    );
    // A size that ends in a partial entry.
    let mut elf = rust_elf();
    let size = dynamic_value(&elf, DT_RELASZ);
    set_dynamic(&mut elf, DT_RELASZ, DT_RELASZ, size - 5);
    let error = refused(&elf);
    assert!(
        matches!(&error, EmbeddedElfError::Misaligned { what, alignment: 24, .. } if what.contains("DT_RELASZ")),
        "{error}"
    );
    // A pointer-sized field at an odd address.
    let mut elf = rust_elf();
    let first = first_rela(&elf);
    let target = u64_at(&elf, first);
    put_u64(&mut elf, first, target + 1);
    let error = refused(&elf);
    assert!(
        matches!(&error, EmbeddedElfError::Misaligned { alignment: 8, value, .. } if *value == target + 1),
        "{error}"
    );
    assert!(error.to_string().contains("corrupt or hostile"), "{error}");
}

#[test]
fn relocations_outside_the_image_are_refused() {
    let mut elf = rust_elf();
    let rela = first_rela(&elf);
    put_u64(&mut elf, rela, 0x4000_0000);
    assert!(matches!(
        refused(&elf),
        EmbeddedElfError::RelocationOutOfImage { address: 0x4000_0000, width: 8 }
    ));
    // Straddling the end of the last segment by one byte.
    let mut elf = rust_elf();
    let last = *phdr_of_type(&elf, 1).last().unwrap();
    let end = u64_at(&elf, last + 16) + u64_at(&elf, last + 40);
    put_u64(&mut elf, rela, end - 7);
    assert!(matches!(refused(&elf), EmbeddedElfError::RelocationOutOfImage { .. }));
}

#[test]
fn relative_relocations_pointing_outside_the_image_are_refused() {
    let elf = rust_elf();
    let last = *phdr_of_type(&elf, 1).last().unwrap();
    let end = u64_at(&elf, last + 16) + u64_at(&elf, last + 40);
    let rela = first_rela(&elf);
    assert_eq!(u64_at(&elf, rela + 8) & 0xffff_ffff, host::RELATIVE, "the first entry is relative");
    // One past the end is still a pointer into the image (an end marker).
    let mut copy = elf.clone();
    put_u64(&mut copy, rela + 16, end);
    validate(&copy).expect("a pointer one past the image's end is valid");
    for target in [end + 1, 0x00ff_0000_0000_0000, u64::MAX] {
        let mut copy = elf.clone();
        put_u64(&mut copy, rela + 16, target);
        let error = refused(&copy);
        assert!(
            matches!(&error, EmbeddedElfError::RelocationTargetOutOfImage { target: found, .. }
                if *found as u64 == target),
            "{target:#x}: {error}"
        );
        assert!(error.to_string().contains("outside the image"), "{error}");
    }
}

#[test]
fn a_segment_whose_offset_and_address_disagree_is_refused() {
    let mut elf = rust_elf();
    // The executable segment: its file bytes would land shifted in memory.
    let text = phdr_of_type(&elf, 1).into_iter().find(|&at| u32_at(&elf, at + 4) & 1 != 0).unwrap();
    let offset = u64_at(&elf, text + 8);
    put_u64(&mut elf, text + 8, offset + 1);
    assert!(matches!(refused(&elf), EmbeddedElfError::SegmentOffsetMismatch { .. }));
}

#[test]
fn a_dynamic_section_whose_address_names_other_bytes_is_refused() {
    let elf = rust_elf();
    let dynamic = phdr_of_type(&elf, 2)[0];
    let address = u64_at(&elf, dynamic + 16);
    let mut copy = elf.clone();
    put_u64(&mut copy, dynamic + 16, address + 0xff_0000);
    assert!(matches!(refused(&copy), EmbeddedElfError::AddressNotInFile { .. }));
    let mut copy = elf.clone();
    put_u64(&mut copy, dynamic + 16, address - 16);
    assert!(matches!(refused(&copy), EmbeddedElfError::DynamicAddressMismatch { .. }));
}

#[test]
fn relocation_sizes_without_their_table_are_refused() {
    let mut elf = rust_elf();
    // DT_RELA's tag damaged: its size and entry size remain.
    set_dynamic(&mut elf, 7, 0x7fff_0000, 0);
    assert!(matches!(refused(&elf), EmbeddedElfError::MissingDynamicEntry { tag: "DT_RELA" }));
}

#[test]
fn unknown_and_unsupported_relocations_are_refused_by_name() {
    for (r_type, name) in std::iter::once((99u64, "unknown")).chain(host::REFUSED) {
        let mut elf = rust_elf();
        let rela = first_rela(&elf);
        put_u64(&mut elf, rela + 8, r_type);
        let error = refused(&elf);
        assert!(
            matches!(&error, EmbeddedElfError::UnsupportedRelocation { name: found, .. } if *found == name),
            "{error}"
        );
    }
}

#[test]
fn a_symbol_index_out_of_range_is_refused() {
    let mut elf = rust_elf();
    let rela = first_rela(&elf);
    put_u64(&mut elf, rela + 8, (9 << 32) | host::ABS64); // against symbol 9
    assert!(matches!(refused(&elf), EmbeddedElfError::SymbolIndexOutOfRange { index: 9, count: 5, .. }));
}

#[test]
fn huge_and_cyclic_hash_chains_are_refused() {
    let hash = |elf: &[u8]| file_offset(elf, dynamic_value(elf, 4));
    let mut elf = rust_elf();
    let at = hash(&elf);
    put_u32(&mut elf, at + 4, 0x4000_0000); // nchain
    assert!(matches!(refused(&elf), EmbeddedElfError::AddressNotInFile { .. }));

    // A chain that points back at itself, walked for a name not there.
    let mut elf = rust_elf();
    let at = hash(&elf);
    let nbucket = u32_at(&elf, at) as usize;
    for bucket in 0..nbucket {
        put_u32(&mut elf, at + 8 + bucket * 4, 1);
    }
    put_u32(&mut elf, at + 8 + nbucket * 4 + 4, 1); // chain[1] = 1
    let name = query_name(&elf);
    elf[name + 4] = b'X';
    let error = refused(&elf);
    assert!(
        matches!(&error, EmbeddedElfError::BadHashTable { reason, .. } if reason.contains("cycle")),
        "{error}"
    );
}

#[test]
fn an_imported_symbol_is_refused_with_its_name() {
    let mut elf = rust_elf();
    let name = query_name(&elf);
    elf[name..name + 8].copy_from_slice(b"host_fn\0");
    let symtab = file_offset(&elf, dynamic_value(&elf, 6));
    put_u16(&mut elf, symtab + 24 + 6, 0); // st_shndx = SHN_UNDEF
    let error = refused(&elf);
    assert!(matches!(&error, EmbeddedElfError::UndefinedSymbol { name } if name == "host_fn"), "{error}");
    assert!(error.to_string().contains("not a standalone plugin: it imports `host_fn`"), "{error}");
}

#[test]
fn a_missing_query_symbol_is_refused() {
    let mut elf = rust_elf();
    let name = query_name(&elf);
    elf[name] = b'j';
    assert!(matches!(refused(&elf), EmbeddedElfError::MissingQuery { .. }));
}

#[test]
fn initializers_needed_libraries_and_unsupported_tables_are_refused() {
    let cases: [(u64, u64, &str); 6] = [
        (12, 0x1000, "DT_INIT"),
        (25, 0x1000, "DT_INIT_ARRAY"),
        (32, 0x1000, "DT_PREINIT_ARRAY"),
        (36, 0x1000, "DT_RELR"),
        (17, 0x1000, "DT_REL"),
        (1, 1, "DT_NEEDED"),
    ];
    for (tag, value, name) in cases {
        let mut elf = rust_elf();
        set_dynamic(&mut elf, DT_FLAGS_1, tag, value);
        let error = refused(&elf);
        let matched = match &error {
            EmbeddedElfError::Initializer { tag } => tag == &name,
            EmbeddedElfError::UnsupportedDynamicEntry { tag, .. } => tag.starts_with(name),
            EmbeddedElfError::NeededLibrary { .. } => name == "DT_NEEDED",
            _ => false,
        };
        assert!(matched, "{name}: {error}");
    }
}

#[test]
fn single_byte_corruptions_never_panic() {
    let elf = rust_elf();
    // Every byte of the headers and dynamic tables, three values each:
    // validation must answer (accept or refuse), never panic or hang.
    let limit = elf.len().min(0x1000);
    for at in 0..limit {
        for value in [0x00, 0xff, 0x80] {
            let mut copy = elf.clone();
            copy[at] = value;
            let _ = validate(&copy);
        }
    }
}

#[test]
fn every_record_of_the_rust_sos_validates_for_its_own_architecture() {
    let bytes = std::fs::read(sos("sample_standalone")).unwrap();
    let records = fatelf::records(&bytes).unwrap();
    for record in &records {
        let target = match record.machine {
            62 => xplug_elf::ElfTarget::x86_64(4096),
            183 => xplug_elf::ElfTarget::aarch64(65536),
            243 => xplug_elf::ElfTarget::riscv64(4096),
            other => panic!("unexpected record machine {other}"),
        };
        let plan =
            xplug_elf::validate_for(&bytes, target).unwrap_or_else(|error| panic!("{record}: {error}"));
        assert_eq!(plan.record(), Some(record), "the first record of each architecture is chosen");
        assert!(plan.relocation_count() > 0, "{record}");
    }
}

/// Every byte of code the loader wrote lies in a range whose instruction
/// cache it synchronised ([`xplug_tests::assert_code_synchronized`]).
#[test]
fn the_instruction_cache_is_synchronised_over_all_code() {
    for name in ["sample_standalone", "c_sample"] {
        let bytes = std::fs::read(sos(name)).unwrap();
        let image = xplug_elf::ElfImage::load(&bytes).unwrap();
        xplug_tests::assert_code_synchronized(name, &image);
    }
}

/// 4096 `f32` pairs spread over every exponent (subnormals, signed zeros,
/// products that overflow or underflow), without NaNs and infinities: an
/// invalid operation's NaN differs by architecture (x86_64's negative
/// quiet NaN, aarch64's default NaN), so those bits are not comparable.
fn spread_inputs() -> (Vec<f32>, Vec<f32>) {
    let mut state = 0x2545_f491_u32;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        // An exponent of all ones (inf/NaN) loses its top bit.
        let bits = if (state >> 23) & 0xff == 0xff { state & !(1 << 30) } else { state };
        f32::from_bits(bits)
    };
    (0..4096).map(|_| (next(), next())).unzip()
}

/// The example `.sos` kernels give bit-identical results on x86_64 and
/// aarch64: each run writes its inputs and outputs to
/// `target/arch-results/`, and the aarch64 run (`cargo xtask test-aarch64`
/// runs this test natively first) compares with the x86_64 file.
#[test]
fn simple_mul_computes_the_same_bits_on_x86_64_and_aarch64() {
    let (lhs, rhs) = spread_inputs();
    let results = xplug_fixtures::workspace_root().join("target").join("arch-results");
    std::fs::create_dir_all(&results).unwrap();
    for name in ["sample_standalone", "c_sample"] {
        let spec = format!("embedded:{}", sos(name).display());
        // SAFETY: the project's own standalone plugins.
        let manager = unsafe { Manager::from_specs([&spec]) }.unwrap();
        let imports = manager.resolve_imports(["simple_mul_workgroup"]).unwrap();
        let mut out = vec![f32::NAN; lhs.len()];
        let mut args = WorkgroupArgs::whole(&lhs, &rhs, &mut out);
        // SAFETY: `simple_mul_workgroup` takes IREE's sample args; the three
        // buffers hold `size` elements and outlive the call.
        assert_eq!(unsafe { imports.import(0).unwrap().call(&mut args) }, 0);
        // This architecture's own multiplication agrees bit for bit.
        let mismatches =
            out.iter().zip(lhs.iter().zip(&rhs)).filter(|(o, (a, b))| o.to_bits() != (*a * *b).to_bits());
        assert_eq!(mismatches.count(), 0, "{name}");
        let record: Vec<u8> = lhs
            .iter()
            .zip(&rhs)
            .zip(&out)
            .flat_map(|((a, b), o)| [a.to_bits(), b.to_bits(), o.to_bits()])
            .flat_map(u32::to_le_bytes)
            .collect();
        let file = |arch: &str| results.join(format!("simple_mul.{name}.{arch}.bin"));
        std::fs::write(file(std::env::consts::ARCH), &record).unwrap();
        if std::env::consts::ARCH != "x86_64" {
            let x86_64 = std::fs::read(file("x86_64")).unwrap_or_else(|error| {
                panic!("{}: {error}; run this test on x86_64 first", file("x86_64").display())
            });
            assert_eq!(x86_64.len(), record.len(), "{name}: another input set");
            let differing = x86_64.chunks(12).zip(record.chunks(12)).filter(|(x, here)| x != here).count();
            assert_eq!(differing, 0, "{name}: elements whose inputs or product bits differ from x86_64's");
        }
    }
}

// --- Damaged header pointers: refused before anything is read through them ---

/// The C plugin's host ELF, the virtual address of its header, and the
/// file offsets of its RELA entries (`r_offset`, `r_info`, `r_addend`).
fn c_header_and_relas() -> (Vec<u8>, u64, Vec<usize>) {
    let bytes = std::fs::read(sos("c_sample")).unwrap();
    let plan = validate(&bytes).unwrap();
    let elf = bytes[plan.elf()].to_vec();
    // The header's file bytes, as in the STANDALONE test above.
    let mut pattern = vec![1u8, 0, 0, 0];
    pattern.extend([0u8; 20]);
    pattern.extend([1u8, 0, 0, 0, 0, 0, 0, 0]);
    let at = elf.windows(pattern.len()).position(|window| window == pattern).expect("the C header");
    let vaddr = phdr_of_type(&elf, 1)
        .into_iter()
        .find_map(|phdr| {
            let (offset, vaddr, filesz) =
                (u64_at(&elf, phdr + 8), u64_at(&elf, phdr + 16), u64_at(&elf, phdr + 32));
            (offset..offset + filesz).contains(&(at as u64)).then(|| vaddr + at as u64 - offset)
        })
        .expect("the header is in a loaded segment");
    let first = first_rela(&elf);
    let count = dynamic_value(&elf, 8) as usize / 24;
    (elf, vaddr, (0..count).map(|i| first + i * 24).collect())
}

/// Loads the damaged image; returns the refusal's reason and its text.
fn header_refusal(elf: &[u8]) -> (xplug_manager::providers::compatibility::Incompatibility, String) {
    // SAFETY: the project's C plugin with one relocation addend changed;
    // the header pointers are checked against the image before any read.
    match unsafe {
        EMBEDDED_ELF.open_image("damaged_header.sos", elf).and_then(|code| code.load(&LoadParamList::new()))
    } {
        Err(error @ ProviderError::Incompatible { .. }) => {
            // The error names the plugin; its cause says what is wrong.
            assert!(error.to_string().contains("damaged_header.sos"), "{error}");
            let ProviderError::Incompatible { reason, .. } = error else { unreachable!() };
            let text = reason.to_string();
            (reason, text)
        }
        other => panic!("expected an incompatible plugin, got {other:?}"),
    }
}

/// An address no image of this test comes near: 1 GiB.
const FAR: u64 = 1 << 30;

/// Makes the relocation at `rela` write the absolute address [`FAR`]: a
/// 64-bit absolute relocation without a symbol. (A relative one pointing
/// outside the image is refused by the ELF checks, before the header is
/// read: `relative_relocations_pointing_outside_the_image_are_refused`.)
fn far_pointer(elf: &mut [u8], rela: usize) {
    put_u64(elf, rela + 8, host::ABS64);
    put_u64(elf, rela + 16, FAR);
}

#[test]
fn a_header_string_pointer_outside_the_image_is_refused_naming_the_field() {
    use xplug_manager::providers::compatibility::Incompatibility;
    for (field, offset) in [("name", 8), ("description", 16)] {
        let (mut elf, header, relas) = c_header_and_relas();
        // The RELATIVE relocation that writes the field's pointer.
        let rela =
            relas.into_iter().find(|&rela| u64_at(&elf, rela) == header + offset).expect("its relocation");
        far_pointer(&mut elf, rela);
        let (reason, message) = header_refusal(&elf);
        assert!(
            matches!(reason, Incompatibility::HeaderStringOutsideImage { field: found, .. } if found == field),
            "{reason:?}"
        );
        assert!(message.contains(&format!("`{field}`")) && message.contains("rebuild"), "{message}");
        assert_eq!(reason.code(), StatusCode::INVALID_ARGUMENT);
    }
}

#[test]
fn a_header_string_without_its_nul_inside_the_image_is_refused() {
    use xplug_manager::providers::compatibility::Incompatibility;
    let (mut elf, header, relas) = c_header_and_relas();
    let rela = relas.into_iter().find(|&rela| u64_at(&elf, rela) == header + 16).expect("its relocation");
    // Inside the image, a string is read: the header's `version` field,
    // `01 00 00 00`, is the one-character string "\u{1}".
    put_u64(&mut elf, rela + 16, header);
    // SAFETY: as in `header_refusal`; the pointer stays inside the image.
    let plugin = unsafe {
        EMBEDDED_ELF.open_image("damaged_header.sos", &elf).and_then(|code| code.load(&LoadParamList::new()))
    }
    .expect("a string inside the image loads");
    assert_eq!(plugin.info().description, "\u{1}");
    drop(plugin);
    // The last byte of a segment that is all file bytes, made non-zero:
    // no NUL follows it inside its segment.
    let (vaddr, size) = phdr_of_type(&elf, 1)
        .into_iter()
        .map(|phdr| (u64_at(&elf, phdr + 16), u64_at(&elf, phdr + 32), u64_at(&elf, phdr + 40)))
        .find(|&(_, filesz, memsz)| filesz == memsz && filesz > 0)
        .map(|(vaddr, filesz, _)| (vaddr, filesz))
        .expect("a segment without zero-filled memory");
    let last = file_offset(&elf, vaddr + size - 1);
    if elf[last] == 0 {
        elf[last] = b'x';
    }
    put_u64(&mut elf, rela + 16, vaddr + size - 1);
    let (reason, _) = header_refusal(&elf);
    assert!(
        matches!(reason, Incompatibility::HeaderStringOutsideImage { field: "description", .. }),
        "{reason:?}"
    );
}

#[test]
fn a_table_header_pointer_outside_the_image_is_refused() {
    use xplug_manager::providers::compatibility::Incompatibility;
    let (mut elf, header, relas) = c_header_and_relas();
    // The RELATIVE relocation that writes the table's header pointer.
    let rela = relas.into_iter().find(|&rela| u64_at(&elf, rela + 16) == header).expect("its relocation");
    far_pointer(&mut elf, rela);
    let (reason, message) = header_refusal(&elf);
    assert!(matches!(reason, Incompatibility::HeaderOutsideImage { .. }), "{reason:?}");
    assert!(message.contains("header pointer"), "{message}");
}
