//! Typed views of the buffer pointers an executable puts in import args.

use core::fmt;

/// A read-only buffer pointer in an import's args (C: `const T*`).
///
/// Same layout as the C pointer, so it can be a field of an
/// [`crate::ImportArgs`] struct. It has no safe constructor: values only
/// come from the executable. No length travels with the pointer (the args
/// describe it in their own fields, e.g. `size` and `offset`), so turning it
/// into a slice is the one `unsafe` step an import author takes, vouching
/// for the executable's calling contract.
#[repr(transparent)]
pub struct Buffer<T> {
    ptr: *const T,
}

/// A writable buffer pointer in an import's args (C: `T*`).
///
/// See [`Buffer`]; [`BufferMut::as_mut_slice`] needs `&mut self`, so one
/// args struct never hands out two live mutable views of the same field.
#[repr(transparent)]
pub struct BufferMut<T> {
    ptr: *mut T,
}

impl<T> Buffer<T> {
    /// A buffer pointing at `slice`'s first element, for **host tests**
    /// that build an import's args struct over their own data and call
    /// the import the way an executable would (with the `std` feature, on
    /// by default; a `.sos` build has no use for it).
    ///
    /// Safe: it only records the address. The import's [`Buffer::as_slice`]
    /// is still the `unsafe` step, and the test keeps its promise by
    /// keeping `slice` alive and unmodified, and passing its length (or
    /// less) in the args, until the call returns.
    ///
    /// ```
    /// use xplug_sdk::{Buffer, BufferMut};
    ///
    /// let input = [1.0_f32, -2.0, 3.0];
    /// let mut output = [0.0_f32; 3];
    /// let (x, mut y) = (Buffer::from_slice(&input), BufferMut::from_mut_slice(&mut output));
    /// // What an import does with them (valid: both arrays outlive the views).
    /// let (x, y) = unsafe { (x.as_slice(3), y.as_mut_slice(3)) };
    /// y.copy_from_slice(x);
    /// assert_eq!(output, input);
    /// ```
    #[cfg(feature = "std")]
    #[must_use]
    pub const fn from_slice(slice: &[T]) -> Self {
        Self { ptr: slice.as_ptr() }
    }

    /// True when the executable passed NULL.
    #[must_use]
    pub fn is_null(&self) -> bool {
        self.ptr.is_null()
    }

    /// True when the pointer is aligned for `T` (NULL is aligned). An
    /// executable following IREE's dispatch ABI always passes aligned
    /// bindings; a kernel that checks this refuses damaged args with an
    /// error code where making a slice of them would be undefined (and
    /// aborts a debug build).
    #[must_use]
    pub fn is_aligned(&self) -> bool {
        self.ptr.is_aligned()
    }

    /// The first `len` elements.
    ///
    /// # Safety
    /// The executable's contract must guarantee that the pointer is valid
    /// for reading `len` initialised elements that nobody writes while the
    /// slice lives (IREE dispatch ABI: a binding covers `offset + size`
    /// elements and input bindings are read-only). `len == 0` is always
    /// fine, even for NULL.
    #[must_use]
    pub unsafe fn as_slice(&self, len: usize) -> &[T] {
        if len == 0 || self.ptr.is_null() {
            return &[];
        }
        // SAFETY: the caller guarantees `len` valid, unaliased-for-writes
        // elements; NULL and empty are handled above.
        unsafe { core::slice::from_raw_parts(self.ptr, len) }
    }
}

impl<T> BufferMut<T> {
    /// A writable buffer pointing at `slice`'s first element, for host
    /// tests; see [`Buffer::from_slice`]. The test must not touch `slice`
    /// until the import it passes the args to has returned.
    #[cfg(feature = "std")]
    #[must_use]
    pub fn from_mut_slice(slice: &mut [T]) -> Self {
        Self { ptr: slice.as_mut_ptr() }
    }

    /// True when the executable passed NULL.
    #[must_use]
    pub fn is_null(&self) -> bool {
        self.ptr.is_null()
    }

    /// True when the pointer is aligned for `T` (NULL is aligned). An
    /// executable following IREE's dispatch ABI always passes aligned
    /// bindings; a kernel that checks this refuses damaged args with an
    /// error code where making a slice of them would be undefined (and
    /// aborts a debug build).
    #[must_use]
    pub fn is_aligned(&self) -> bool {
        self.ptr.is_aligned()
    }

    /// The first `len` elements, writable.
    ///
    /// # Safety
    /// The executable's contract must guarantee that the pointer is valid
    /// for reading and writing `len` initialised elements that nothing else
    /// accesses while the slice lives (in IREE, each workgroup writes a
    /// disjoint part of an output binding: restrict the slice to it).
    #[must_use]
    pub unsafe fn as_mut_slice(&mut self, len: usize) -> &mut [T] {
        if len == 0 || self.ptr.is_null() {
            return &mut [];
        }
        // SAFETY: the caller guarantees `len` valid elements accessed only
        // through this slice; NULL and empty are handled above.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, len) }
    }
}

impl<T> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer({:p})", self.ptr)
    }
}

impl<T> fmt::Debug for BufferMut<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BufferMut({:p})", self.ptr)
    }
}
