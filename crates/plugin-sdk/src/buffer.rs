//! Typed views of the buffer pointers an executable puts in import params.

use core::fmt;

/// A read-only buffer pointer in an import's params (C: `const T*`).
///
/// Same layout as the C pointer, so it can be a field of an
/// [`crate::ImportParams`] struct. It has no safe constructor: values only
/// come from the executable. No length travels with the pointer (the params
/// describe it in their own fields, e.g. `size` and `offset`), so turning it
/// into a slice is the one `unsafe` step an import author takes, vouching
/// for the executable's calling contract.
#[repr(transparent)]
pub struct Buffer<T> {
    ptr: *const T,
}

/// A writable buffer pointer in an import's params (C: `T*`).
///
/// See [`Buffer`]; [`BufferMut::as_mut_slice`] needs `&mut self`, so one
/// params struct never hands out two live mutable views of the same field.
#[repr(transparent)]
pub struct BufferMut<T> {
    ptr: *mut T,
}

impl<T> Buffer<T> {
    /// True when the executable passed NULL.
    #[must_use]
    pub fn is_null(&self) -> bool {
        self.ptr.is_null()
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
    /// True when the executable passed NULL.
    #[must_use]
    pub fn is_null(&self) -> bool {
        self.ptr.is_null()
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
