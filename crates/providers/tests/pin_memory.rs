//! A pinned open reads its file in chunks: hashing a large file never
//! holds it in the process's memory, and a file over the limit is refused
//! before any of it is read (`docs/src/reference/loading.md#pinned-plugins`).
//!
//! Alone in its binary: the peak resident size (`getrusage`'s
//! `ru_maxrss`) is the process's, and no other test may raise it.

use xplug_providers::{
    CodeBytes, EMBEDDED_ELF, Error, PinPolicy, SYSTEM_LIBRARY, Sha256Digest, open_verified,
};

/// The process's peak resident size so far, in bytes.
fn peak_rss() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` fills the `rusage` it is given.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) }, 0);
    // SAFETY: filled above (and zeroed before).
    let usage = unsafe { usage.assume_init() };
    u64::try_from(usage.ru_maxrss).unwrap() * 1024
}

#[test]
fn hashing_a_large_file_keeps_the_process_small_and_a_huge_one_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = Sha256Digest::of(b"the approved plugin");
    let check = PinPolicy { sha256: Some(&wrong), allow_lists: &[] };

    // 64 MiB, sparse on disk: every byte is read and hashed, and the pin
    // refuses it, for both loaders.
    let large = dir.path().join("large.so");
    std::fs::File::create(&large).unwrap().set_len(64 << 20).unwrap();
    let before = peak_rss();
    for loader in [&SYSTEM_LIBRARY as &'static dyn xplug_providers::Loader, &EMBEDDED_ELF] {
        // SAFETY: refused before anything is mapped (the hash differs).
        let error = unsafe { open_verified(loader, &large.display().to_string(), &check) }.unwrap_err();
        assert!(matches!(&error, Error::HashMismatch { found, .. } if *found != wrong), "{error}");
    }
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < 16 << 20, "hashing 64 MiB raised the peak resident size by {grown} bytes");

    // 3 GiB, over the limit: refused from its size, unread.
    let huge = dir.path().join("huge.so");
    std::fs::File::create(&huge).unwrap().set_len(3 << 30).unwrap();
    for loader in [&SYSTEM_LIBRARY as &'static dyn xplug_providers::Loader, &EMBEDDED_ELF] {
        // SAFETY: refused before anything is read.
        let error = unsafe { open_verified(loader, &huge.display().to_string(), &check) }.unwrap_err();
        assert!(
            matches!(&error, Error::FileTooLarge { size, limit, .. } if *size == 3 << 30 && *limit == CodeBytes::LIMIT),
            "{error}"
        );
    }
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < 16 << 20, "refusing 3 GiB raised the peak resident size by {grown} bytes");
}
