//! The functions an ELF file names in its symbol tables, as offsets from
//! where its code is loaded: what crash reports, gdb and perf are told
//! about a plugin's code (`docs/src/operating/debugging.md`).
//!
//! Read with `object`, which bounds-checks every table and string of the
//! (possibly hostile) file; nothing here trusts a count or an offset.

use object::{Object, ObjectSymbol, SymbolKind};

/// Symbols read from one file at most: a table claiming more is cut short
/// (the functions past it stay unnamed).
pub const MAX_FUNCTIONS: usize = 1 << 16;

/// Bytes of one function name kept at most (longer names are cut).
pub const MAX_NAME_LEN: usize = 1024;

/// One function of an image: its name and where its code lies, relative to
/// the address the image's first page is loaded at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageFunction {
    /// The symbol's name as the file spells it (a Rust name stays
    /// mangled unless it was `#[no_mangle]`).
    pub name: String,
    /// Offset of its first instruction from the image base.
    pub offset: u64,
    /// Its size in bytes (never 0).
    pub size: u64,
}

/// The functions of the ELF `elf` (not a FatELF container): its `.symtab`
/// when it has one, else its `.dynsym`; only function symbols with a size,
/// defined in the file, sorted by offset, without duplicates. Offsets are
/// `st_value - base_vaddr`, so with `base_vaddr` the address the loader
/// puts at its base (0 for the OS loader, [`ElfPlan`](crate::ElfPlan)'s
/// for xplug's) they are offsets from where the image was loaded. A file
/// `object` cannot read, or with no such symbols, has none.
#[must_use]
pub fn image_functions(elf: &[u8], base_vaddr: u64) -> Vec<ImageFunction> {
    let Ok(file) = object::File::parse(elf) else {
        return Vec::new();
    };
    let mut functions = collect(file.symbols(), base_vaddr);
    if functions.is_empty() {
        functions = collect(file.dynamic_symbols(), base_vaddr);
    }
    functions.sort_by(|a, b| (a.offset, &a.name).cmp(&(b.offset, &b.name)));
    // Aliases (ICF folds identical functions): keep one name per address.
    functions.dedup_by_key(|function| function.offset);
    functions
}

fn collect<'data>(
    symbols: impl Iterator<Item = impl ObjectSymbol<'data>>,
    base_vaddr: u64,
) -> Vec<ImageFunction> {
    symbols
        .take(MAX_FUNCTIONS)
        .filter(|symbol| symbol.kind() == SymbolKind::Text && symbol.is_definition() && symbol.size() != 0)
        .filter_map(|symbol| {
            let offset = symbol.address().checked_sub(base_vaddr)?;
            offset.checked_add(symbol.size())?;
            let name = symbol.name_bytes().ok().filter(|name| !name.is_empty())?;
            let name = String::from_utf8_lossy(&name[..name.len().min(MAX_NAME_LEN)]).into_owned();
            Some(ImageFunction { name, offset, size: symbol.size() })
        })
        .collect()
}

/// The function of `functions` (sorted as [`image_functions`] returns
/// them) that contains `offset`, and how far into it `offset` is.
#[must_use]
pub fn function_at(functions: &[ImageFunction], offset: u64) -> Option<(&ImageFunction, u64)> {
    let after = functions.partition_point(|function| function.offset <= offset);
    let function = functions.get(after.checked_sub(1)?)?;
    let into = offset - function.offset;
    (into < function.size).then_some((function, into))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_has_no_functions() {
        assert!(image_functions(b"not an elf file at all", 0).is_empty());
        assert!(image_functions(&[], 0).is_empty());
    }

    #[test]
    fn this_test_binary_names_its_own_functions() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let functions = image_functions(&exe, 0);
        assert!(
            functions.iter().any(|f| f.name.contains("image_functions")),
            "{} functions",
            functions.len()
        );
        assert!(functions.windows(2).all(|pair| pair[0].offset < pair[1].offset));
        let first = &functions[0];
        assert_eq!(function_at(&functions, first.offset + first.size - 1), Some((first, first.size - 1)));
    }

    #[test]
    fn an_offset_between_functions_names_none() {
        let functions = [
            ImageFunction { name: "a".into(), offset: 16, size: 8 },
            ImageFunction { name: "b".into(), offset: 32, size: 8 },
        ];
        assert_eq!(function_at(&functions, 15), None);
        assert_eq!(function_at(&functions, 16).map(|(f, o)| (f.name.as_str(), o)), Some(("a", 0)));
        assert_eq!(function_at(&functions, 24), None);
        assert_eq!(function_at(&functions, 39).map(|(f, o)| (f.name.as_str(), o)), Some(("b", 7)));
        assert_eq!(function_at(&functions, 40), None);
    }
}
