//! The C memory functions a Rust plugin linked as a standalone embedded ELF
//! file (`.sos`) needs: no libc, no `std`, nothing imported from the host.
//!
//! A plugin does not depend on it directly; its `.sos` build turns on
//! `xplug-sdk`'s `standalone` feature, which links this crate:
//!
//! ```toml
//! [dependencies]
//! xplug-sdk = { version = "0.1.0", default-features = false }
//!
//! [features]
//! default = ["std"]
//! std = ["xplug-sdk/std", "xplug-sdk/static-registration"]
//! # `xplug build --sos` builds with `--no-default-features --features sos`.
//! sos = ["xplug-sdk/standalone"]
//! ```
//!
//! A `.sos` is linked from a `no_std` static library with `-nostdlib
//! --no-undefined`, so everything the compiled code calls must be inside
//! it. The `*-linux-gnu` targets' `core`/`alloc` and `compiler_builtins`
//! leave `memcpy`, `memmove`, `memset`, `memcmp` and `bcmp` (the compiler
//! emits calls to them for copies, fills and comparisons) and `strlen`
//! (`CStr::from_ptr` calls it) to libc; this crate supplies them.
//!
//! It is a crate of its own because it must be `#![no_builtins]`, so the
//! loops below are not themselves turned into calls to the functions they
//! implement. `xplug-sdk`'s `standalone` feature links it, next to the
//! SDK's panic handler and global allocator (through the host allocator);
//! ordinary builds of a plugin use `std` and the system's libc.
#![no_std]
#![no_builtins]

use core::ffi::{c_int, c_void};

/// Copies `n` bytes from `src` to `dest` (non-overlapping).
///
/// # Safety
/// C's `memcpy` contract: both ranges valid for `n` bytes, not overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcpy(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    let (d, s) = (dest.cast::<u8>(), src.cast::<u8>());
    for i in 0..n {
        // SAFETY: `i < n`, both ranges valid for `n` bytes (C contract).
        unsafe { *d.add(i) = *s.add(i) };
    }
    dest
}

/// Copies `n` bytes from `src` to `dest`; the ranges may overlap.
///
/// # Safety
/// C's `memmove` contract: both ranges valid for `n` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memmove(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    let (d, s) = (dest.cast::<u8>(), src.cast::<u8>());
    if (d as usize) <= (s as usize) {
        for i in 0..n {
            // SAFETY: `i < n`, both ranges valid (C contract); copying
            // forwards never reads a byte already overwritten when the
            // destination starts at or before the source.
            unsafe { *d.add(i) = *s.add(i) };
        }
    } else {
        for i in (0..n).rev() {
            // SAFETY: as above, copying backwards for a later destination.
            unsafe { *d.add(i) = *s.add(i) };
        }
    }
    dest
}

/// Fills `n` bytes at `dest` with the low byte of `value`.
///
/// # Safety
/// C's `memset` contract: `dest` valid for `n` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memset(dest: *mut c_void, value: c_int, n: usize) -> *mut c_void {
    let d = dest.cast::<u8>();
    for i in 0..n {
        // SAFETY: `i < n`, `dest` valid for `n` bytes (C contract).
        unsafe { *d.add(i) = value as u8 };
    }
    dest
}

/// Compares `n` bytes; negative, zero or positive like C's `memcmp`.
///
/// # Safety
/// C's `memcmp` contract: both ranges valid for `n` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    let (a, b) = (a.cast::<u8>(), b.cast::<u8>());
    for i in 0..n {
        // SAFETY: `i < n`, both ranges valid for `n` bytes (C contract).
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return c_int::from(x) - c_int::from(y);
        }
    }
    0
}

/// Zero when `n` bytes are equal, non-zero otherwise.
///
/// # Safety
/// As [`memcmp`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    // SAFETY: same contract.
    unsafe { memcmp(a, b, n) }
}

/// The length of the NUL-terminated string at `s` (`CStr::from_ptr` calls
/// it).
///
/// # Safety
/// C's `strlen` contract: `s` points at a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strlen(s: *const core::ffi::c_char) -> usize {
    let mut n = 0;
    // SAFETY: every byte up to and including the NUL is readable (C
    // contract); the loop stops at the NUL.
    while unsafe { *s.add(n) } != 0 {
        n += 1;
    }
    n
}
