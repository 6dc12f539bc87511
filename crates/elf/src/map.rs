//! The mapping half of the embedded loader: the only code here that
//! touches memory. It reserves one private anonymous mapping for a
//! validated [`ElfPlan`], copies the segments in, applies the planned
//! relocations, then sets each segment's final protections (RELRO
//! read-only) and, where the architecture needs it, makes the instruction
//! cache see the new code. The mapping is released when the image drops.

use std::ffi::c_void;

use xplug_abi::QueryFn;

use crate::error::EmbeddedElfError;
use crate::plan::ElfPlan;

/// A loaded image: one private mapping holding the plugin's segments.
#[cfg_attr(not(unix), expect(dead_code, reason = "only the Unix mapping step creates images"))]
pub(crate) struct MappedImage {
    base: *mut c_void,
    size: usize,
    /// The address ranges whose instruction cache was synchronised with
    /// the data written there (whole cache lines), on architectures that
    /// need it; empty on x86_64.
    synchronized: Vec<std::ops::Range<usize>>,
}

// SAFETY: after `map` returns, the mapping is never written by this side
// again (only the plugin's own code writes its writable segment, which the
// v0 ABI requires to be thread-safe); unmapping happens once, in `Drop`,
// when no one holds the image.
unsafe impl Send for MappedImage {}
// SAFETY: as above; `&MappedImage` only exposes addresses.
unsafe impl Sync for MappedImage {}

#[cfg_attr(not(unix), expect(dead_code, reason = "only the Unix mapping step creates images"))]
impl MappedImage {
    /// The address of `offset` bytes past the image base.
    pub(crate) fn address(&self, offset: u64) -> usize {
        self.base as usize + offset as usize
    }

    /// The ranges [`flush_instruction_cache`] synchronised.
    pub(crate) fn synchronized(&self) -> &[std::ops::Range<usize>] {
        &self.synchronized
    }

    /// The function at `offset` bytes past the image base.
    ///
    /// # Safety
    /// `offset` lies inside an executable segment of this image and a
    /// function of [`QueryFn`]'s type in the host's C calling convention
    /// starts there; the pointer is valid while the image lives.
    pub(crate) unsafe fn function(&self, offset: u64) -> QueryFn {
        let address = self.base.cast::<u8>().wrapping_add(offset as usize);
        // SAFETY: data and function pointers have the same size on every
        // supported host; the caller vouches that `address` is a `QueryFn`.
        unsafe { std::mem::transmute::<*mut u8, QueryFn>(address) }
    }
}

impl Drop for MappedImage {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: `base`/`size` are exactly the mapping `map` created, and
        // nothing refers into it any more: the plugin that ran from it was
        // unloaded before its keep-alive (this image) was released.
        unsafe {
            libc::munmap(self.base, self.size);
        }
    }
}

/// The host's page size.
pub(crate) fn page_size() -> Result<u64, EmbeddedElfError> {
    #[cfg(unix)]
    {
        // SAFETY: `sysconf` has no preconditions.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(size)
            .ok()
            .filter(|size| size.is_power_of_two())
            .ok_or(EmbeddedElfError::UnsupportedHost { reason: "the page size is unknown" })
    }
    #[cfg(not(unix))]
    {
        Err(EmbeddedElfError::UnsupportedHost {
            reason: "the mapping step is implemented for Unix hosts only (mmap/mprotect)",
        })
    }
}

#[cfg(unix)]
fn os_error(action: &'static str, size: u64) -> EmbeddedElfError {
    EmbeddedElfError::Memory { action, size, source: std::sync::Arc::new(std::io::Error::last_os_error()) }
}

/// Maps `plan` (validated for this host) from `elf`, the bytes of the ELF
/// it was validated from (`&input[plan.elf()]`).
#[cfg(unix)]
pub(crate) fn map(plan: &ElfPlan, elf: &[u8]) -> Result<MappedImage, EmbeddedElfError> {
    let size = usize::try_from(plan.image_size()).map_err(|_| EmbeddedElfError::TooLarge {
        what: "image",
        size: plan.image_size(),
        limit: usize::MAX as u64,
    })?;
    // SAFETY: a fresh private anonymous mapping at an address the kernel
    // chooses; no existing memory is affected.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(os_error("reserve memory", plan.image_size()));
    }
    // From here on the mapping is released on every error path.
    let mut image = MappedImage { base, size, synchronized: Vec::new() };
    let bytes = base.cast::<u8>();
    for segment in plan.segments() {
        let file = &elf[segment.file_range.start as usize..segment.file_range.end as usize];
        // SAFETY: `validate` checked that the segment (`mem_size >=
        // file.len()` bytes at `image_offset`) lies inside the image, whose
        // `size` bytes are mapped read-write; the source is the caller's
        // slice, which cannot overlap a fresh mapping. Anonymous memory is
        // already zero past the copied bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(file.as_ptr(), bytes.add(segment.image_offset as usize), file.len())
        };
    }
    let load_base = base as u64;
    for relocation in &plan.relocations {
        let (value, width) = relocation.bytes(load_base)?;
        // SAFETY: `validate` checked that `width` bytes at `image_offset`
        // lie inside one segment, hence inside the read-write mapping;
        // the write is unaligned-safe (byte copy).
        unsafe {
            std::ptr::copy_nonoverlapping(value.as_ptr(), bytes.add(relocation.image_offset as usize), width)
        };
    }
    protect(&mut image, plan)?;
    Ok(image)
}

/// Sets final protections: pages outside every segment inaccessible, each
/// segment's pages its own flags (validated not to share pages with other
/// flags), the RELRO pages read-only. Pages are grouped into runs of equal
/// protection, one `mprotect` per run; runs that stay read-write (the
/// reservation's protection) need no call.
#[cfg(unix)]
fn protect(image: &mut MappedImage, plan: &ElfPlan) -> Result<(), EmbeddedElfError> {
    let page = page_size()? as usize;
    // Every byte of code is in its final state (copied, relocated) and not
    // yet executable: synchronise the instruction cache with it now.
    for segment in plan.segments().iter().filter(|segment| segment.flags.execute) {
        let start = segment.image_offset as usize;
        let synchronized =
            flush_instruction_cache(image.base.cast::<u8>().wrapping_add(start), segment.mem_size as usize);
        image.synchronized.extend(synchronized);
    }
    let pages = image.size / page;
    let mut protections = vec![libc::PROT_NONE; pages];
    for segment in plan.segments() {
        let first = segment.image_offset as usize / page;
        let end = ((segment.image_offset + segment.mem_size) as usize).div_ceil(page).min(pages);
        let mut protection = libc::PROT_NONE;
        if segment.flags.read {
            protection |= libc::PROT_READ;
        }
        if segment.flags.write {
            protection |= libc::PROT_WRITE;
        }
        if segment.flags.execute {
            protection |= libc::PROT_EXEC;
        }
        protections[first..end].fill(protection);
    }
    if let Some(relro) = plan.relro() {
        let (first, end) = (relro.start as usize / page, (relro.end as usize / page).min(pages));
        protections[first..end].fill(libc::PROT_READ);
    }
    for (start, end, protection) in protection_calls(&protections, libc::PROT_READ | libc::PROT_WRITE) {
        // SAFETY: pages `start..end` are inside the mapping; changing
        // their protection affects only this image, which no one executes
        // yet.
        let result = unsafe {
            libc::mprotect(image.base.cast::<u8>().add(start * page).cast(), (end - start) * page, protection)
        };
        if result != 0 {
            return Err(os_error("set page protections", ((end - start) * page) as u64));
        }
    }
    Ok(())
}

/// The fewest `mprotect` calls (page ranges and protections, applied in
/// order) that turn pages mapped with `initial` into `protections`.
///
/// Either every run of equal protection other than `initial` gets its own
/// call, or one call first sets the whole image to some protection `base`
/// and then the runs other than `base` get theirs; whichever needs fewer
/// calls wins. A typical image, `[r--][r-x][r--]` (headers, code, RELRO),
/// takes two calls instead of three: each call costs several microseconds
/// of page-table work on a virtual machine.
fn protection_calls(protections: &[i32], initial: i32) -> Vec<(usize, usize, i32)> {
    let runs = || {
        let mut start = 0;
        std::iter::from_fn(move || {
            let &protection = protections.get(start)?;
            let end = protections[start..]
                .iter()
                .position(|&p| p != protection)
                .map_or(protections.len(), |run| start + run);
            let run = (start, end, protection);
            start = end;
            Some(run)
        })
    };
    let calls_over = |base: i32| runs().filter(move |&(_, _, protection)| protection != base);
    let mut best: Vec<(usize, usize, i32)> = calls_over(initial).collect();
    for (_, _, base) in runs() {
        if base == initial {
            continue;
        }
        let count = 1 + calls_over(base).count();
        if count < best.len() {
            best = std::iter::once((0, protections.len(), base)).chain(calls_over(base)).collect();
        }
    }
    best
}

/// Makes freshly written code visible to instruction fetch (aarch64 and
/// riscv64 need explicit cache maintenance; x86_64 keeps caches coherent).
/// Returns the address range synchronised (whole cache lines on aarch64),
/// `None` where nothing is needed: what [`crate::ElfImage::synchronized_code`]
/// reports, so a test proves every code segment was covered
/// (`docs/src/reference/embedded-elf.md`, "Caches"), which emulation cannot.
#[cfg(unix)]
fn flush_instruction_cache(start: *mut u8, size: usize) -> Option<std::ops::Range<usize>> {
    #[cfg(target_arch = "aarch64")]
    {
        // Clean the data cache to the point of unification, then invalidate
        // the instruction cache, line by line (the sequence the
        // architecture manual gives for self-modifying code); line sizes
        // come from CTR_EL0.
        let ctr: u64;
        // SAFETY: reading CTR_EL0 is allowed at EL0 on Linux and has no
        // side effects.
        unsafe { core::arch::asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack)) };
        let data_line = 4usize << ((ctr >> 16) & 0xf);
        let code_line = 4usize << (ctr & 0xf);
        let (first, end) = (start as usize, start as usize + size);
        let mut line = first & !(data_line - 1);
        let data_start = line;
        while line < end {
            // SAFETY: `line` is inside (or at the line start of) the
            // mapping's segment, which is mapped and readable; `dc cvau`
            // only writes back cache contents.
            unsafe { core::arch::asm!("dc cvau, {}", in(reg) line, options(nostack)) };
            line += data_line;
        }
        let data_end = line;
        // SAFETY: a barrier; no memory operands.
        unsafe { core::arch::asm!("dsb ish", options(nostack)) };
        let mut line = first & !(code_line - 1);
        let code_start = line;
        while line < end {
            // SAFETY: as above; `ic ivau` only invalidates cache lines.
            unsafe { core::arch::asm!("ic ivau, {}", in(reg) line, options(nostack)) };
            line += code_line;
        }
        // SAFETY: barriers; no memory operands.
        unsafe { core::arch::asm!("dsb ish", "isb", options(nostack)) };
        // Both passes covered this (line-aligned) range.
        Some(data_start.max(code_start)..data_end.min(line))
    }
    #[cfg(all(target_arch = "riscv64", target_os = "linux"))]
    {
        /// Linux's `riscv_flush_icache` system call (`__NR_arch_specific_syscall
        /// + 15`); the libc crate has no constant for it.
        const SYS_RISCV_FLUSH_ICACHE: libc::c_long = 259;
        // SAFETY: the system call only synchronises the instruction cache
        // for the range (a segment of the mapping) on every hart running
        // this process (flags 0); it reads no memory.
        unsafe { libc::syscall(SYS_RISCV_FLUSH_ICACHE, start, start.wrapping_add(size), 0usize) };
        Some(start as usize..start as usize + size)
    }
    #[cfg(not(any(target_arch = "aarch64", all(target_arch = "riscv64", target_os = "linux"))))]
    {
        let _ = (start, size);
        None
    }
}

/// Maps `plan`: unavailable on this platform.
#[cfg(not(unix))]
pub(crate) fn map(_plan: &ElfPlan, _elf: &[u8]) -> Result<MappedImage, EmbeddedElfError> {
    Err(EmbeddedElfError::UnsupportedHost {
        reason: "the mapping step is implemented for Unix hosts only (mmap/mprotect)",
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::protection_calls;

    const RW: i32 = libc::PROT_READ | libc::PROT_WRITE;
    const R: i32 = libc::PROT_READ;
    const RX: i32 = libc::PROT_READ | libc::PROT_EXEC;
    const NONE: i32 = libc::PROT_NONE;

    /// Applies `calls` to pages that start as `initial`.
    fn apply(initial: i32, pages: usize, calls: &[(usize, usize, i32)]) -> Vec<i32> {
        let mut result = vec![initial; pages];
        for &(start, end, protection) in calls {
            result[start..end].fill(protection);
        }
        result
    }

    #[test]
    fn fewest_calls_reach_every_page_protection() {
        let cases: [&[i32]; 7] = [
            &[R, RX, R],
            &[R, RX, RW],
            &[RW, RW],
            &[R, R, RX, RX, R, RW, RW, NONE],
            &[RX],
            &[R, NONE, RX, NONE, R, RW],
            &[],
        ];
        for wanted in cases {
            let calls = protection_calls(wanted, RW);
            assert_eq!(apply(RW, wanted.len(), &calls), wanted, "calls {calls:?}");
            // Never more calls than one per run that differs from RW.
            let runs = wanted.chunk_by(|a, b| a == b).filter(|run| run[0] != RW).count();
            assert!(calls.len() <= runs, "{wanted:?}: {} calls for {runs} runs", calls.len());
        }
        assert_eq!(protection_calls(&[R, RX, R], RW).len(), 2);
        assert!(protection_calls(&[RW, RW], RW).is_empty());
    }
}
