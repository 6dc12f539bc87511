//! The dynamic symbol table and the hash tables that index it: bounded
//! lookups by name.

use object::elf::Sym64;
use object::endian::Endianness;

use crate::error::EmbeddedElfError;

/// The dynamic symbol table and its string table.
pub(crate) struct Symbols<'a> {
    pub(crate) table: &'a [Sym64<Endianness>],
    pub(crate) strings: &'a [u8],
    pub(crate) endian: Endianness,
}

impl Symbols<'_> {
    /// The name of symbol `index` (which must be in the table).
    pub(crate) fn name(&self, index: u64) -> Result<String, EmbeddedElfError> {
        let symbol = &self.table[index as usize];
        let offset = u64::from(symbol.st_name.get(self.endian));
        string_at(self.strings, offset).ok_or(EmbeddedElfError::BadSymbolName {
            index,
            offset,
            size: self.strings.len() as u64,
        })
    }

    /// Whether symbol `index` (which must be in the table) is called
    /// `name`.
    fn name_is(&self, index: u64, name: &str) -> bool {
        let offset = self.table[index as usize].st_name.get(self.endian) as usize;
        self.strings
            .get(offset..)
            .is_some_and(|rest| rest.starts_with(name.as_bytes()) && rest.get(name.len()) == Some(&0))
    }
}

/// The NUL-terminated string at `offset`, lossily decoded.
pub(crate) fn string_at(strings: &[u8], offset: u64) -> Option<String> {
    let rest = strings.get(usize::try_from(offset).ok()?..)?;
    let end = rest.iter().position(|&byte| byte == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// A `DT_HASH` table.
pub(crate) struct SysvHash<'a> {
    pub(crate) buckets: &'a [object::U32<Endianness>],
    pub(crate) chains: &'a [object::U32<Endianness>],
    pub(crate) endian: Endianness,
}

/// A `DT_GNU_HASH` table, with the symbol count its chains imply.
pub(crate) struct GnuHash<'a> {
    pub(crate) nbucket: u64,
    pub(crate) symoffset: u64,
    pub(crate) buckets: &'a [object::U32<Endianness>],
    pub(crate) chains: &'a [object::U32<Endianness>],
    pub(crate) count: u64,
    pub(crate) endian: Endianness,
}

/// The hash table symbols are looked up through.
pub(crate) enum HashLookup<'a> {
    Sysv(SysvHash<'a>),
    Gnu(GnuHash<'a>),
}

impl HashLookup<'_> {
    /// Entries in the symbol table, as the hash table sizes it.
    pub(crate) fn symbol_count(&self) -> u64 {
        match self {
            Self::Sysv(table) => table.chains.len() as u64,
            Self::Gnu(table) => table.count,
        }
    }

    /// The index of symbol `name`, walking at most one chain, never more
    /// steps than there are symbols.
    pub(crate) fn find(&self, symbols: &Symbols<'_>, name: &str) -> Result<Option<u64>, EmbeddedElfError> {
        let count = symbols.table.len() as u64;
        match self {
            Self::Sysv(table) => {
                if table.buckets.is_empty() {
                    return Ok(None);
                }
                let hash = sysv_hash(name.as_bytes());
                let mut index =
                    u64::from(table.buckets[(hash % table.buckets.len() as u32) as usize].get(table.endian));
                let mut steps = 0u64;
                while index != 0 {
                    if index >= count {
                        return Err(EmbeddedElfError::SymbolIndexOutOfRange {
                            user: "a DT_HASH chain".to_owned(),
                            index,
                            count,
                        });
                    }
                    if symbols.name_is(index, name) {
                        return Ok(Some(index));
                    }
                    steps += 1;
                    if steps > count {
                        return Err(EmbeddedElfError::BadHashTable {
                            table: "DT_HASH",
                            reason: format!(
                                "a chain is longer than the {count}-entry symbol table (a cycle)"
                            ),
                        });
                    }
                    index = u64::from(table.chains[index as usize].get(table.endian));
                }
                Ok(None)
            }
            Self::Gnu(table) => {
                if table.nbucket == 0 {
                    return Ok(None);
                }
                let hash = gnu_hash(name.as_bytes());
                let mut index =
                    u64::from(table.buckets[(u64::from(hash) % table.nbucket) as usize].get(table.endian));
                if index < table.symoffset {
                    return Ok(None);
                }
                // Bounded: `index` grows by one each step and stops at the
                // symbol count computed (with an end marker) at parse time.
                while index < table.count {
                    let word = table.chains[(index - table.symoffset) as usize].get(table.endian);
                    if word | 1 == hash | 1 && symbols.name_is(index, name) {
                        return Ok(Some(index));
                    }
                    if word & 1 != 0 {
                        break;
                    }
                    index += 1;
                }
                Ok(None)
            }
        }
    }
}

/// The System V ELF hash.
fn sysv_hash(name: &[u8]) -> u32 {
    let mut hash = 0u32;
    for &byte in name {
        hash = (hash << 4).wrapping_add(u32::from(byte));
        let high = hash & 0xf000_0000;
        if high != 0 {
            hash ^= high >> 24;
        }
        hash &= !high;
    }
    hash
}

/// The GNU hash (djb2).
fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |hash, &byte| hash.wrapping_mul(33).wrapping_add(u32::from(byte)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_functions_match_the_elf_specifications() {
        // Reference values from the System V ABI and the GNU hash
        // description: "" and a plain name.
        assert_eq!(sysv_hash(b""), 0);
        assert_eq!(gnu_hash(b""), 5381);
        assert_eq!(sysv_hash(b"printf"), 0x077905a6);
        assert_eq!(gnu_hash(b"printf"), 0x156b2bb8);
    }
}
