//! The SDK's own [`AnyBitPattern`] types; the trait itself lives in
//! `xplug-abi`, so hosts can require it too.

pub use xplug_abi::{AnyBitPattern, assert_any_bit_pattern};

use crate::{Buffer, BufferMut};

// SAFETY: `#[repr(transparent)]` over `*const T`, which may hold any
// address; reading through it is `unsafe` (`Buffer::as_slice`).
unsafe impl<T> AnyBitPattern for Buffer<T> {}
// SAFETY: `#[repr(transparent)]` over `*mut T`, as above; reading or
// writing through it is `unsafe` (`BufferMut::as_mut_slice`).
unsafe impl<T> AnyBitPattern for BufferMut<T> {}

#[cfg(test)]
mod tests {
    use core::mem::size_of;

    use super::*;

    #[test]
    fn buffers_have_the_layout_of_a_pointer() {
        assert_eq!(size_of::<Buffer<u64>>(), size_of::<*const u64>());
        assert_eq!(size_of::<BufferMut<u8>>(), size_of::<*mut u8>());
    }
}
