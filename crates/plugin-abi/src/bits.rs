//! [`AnyBitPattern`]: the types an import's args may contain, shared by
//! plugins (`xplug-sdk` re-exports it and derives it) and hosts (typed
//! import calls in `xplug-manager`).

use core::marker::PhantomData;
use core::ptr::NonNull;

/// A type for which any bytes are a valid value: what an executable may
/// write into the fields of an import's args.
///
/// The executable is compiled from another language and fills the args
/// struct with whatever bytes its C declaration allows. Rust assumes much
/// more of most types (a `bool` is 0 or 1, a `char` a Unicode scalar value,
/// an enum one of its discriminants, a reference or `NonNull` is never NULL,
/// a `String` owns a live allocation); reading such a field after the
/// executable wrote another value is undefined behaviour. The fields of an
/// import's args struct (`xplug_sdk::ImportArgs`) are therefore limited
/// to this trait, and a host calls an import with a typed args struct only
/// if it implements it (a plugin may write any bytes back). It is
/// implemented here for:
///
/// * the integer types (`u8` … `u128`, `i8` … `i128`, `usize`, `isize`) and
///   `f32`, `f64` (so also `core::ffi::c_int`, `c_char`, ...);
/// * raw pointers `*const T` and `*mut T` (for any `T`: the pointee is only
///   read through an `unsafe` call that vouches for it), and, in
///   `xplug-sdk`, its `Buffer<T>` / `BufferMut<T>` wrappers;
/// * `Option<NonNull<T>>` and `Option<unsafe extern "C" fn(...) -> R>` (up
///   to six arguments): NULL is `None`, anything else is `Some`;
/// * arrays `[T; N]` of such types, `()` and `PhantomData<T>`;
/// * every struct deriving `xplug_sdk::ImportArgs`.
///
/// `#[derive(ImportArgs)]` requires it of every field (with an error at
/// the field naming its type), so a field of any other type does not
/// compile. Padding between fields is allowed: it is never read as a value
/// (see `xplug_sdk`'s documentation, "Args").
///
/// ```compile_fail
/// fn params_field<T: xplug_abi::AnyBitPattern>() {}
/// // A `bool` is valid only as 0 or 1: use `u8` or `u32` and test `!= 0`.
/// params_field::<bool>();
/// ```
///
/// # Safety
/// Every sequence of initialised bytes of the type's size, with padding
/// bytes (if any) in any state, must be a valid value of the type, and the
/// type must be `Sized` with a layout fixed by its definition (primitive,
/// `#[repr(C)]` or `#[repr(transparent)]`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of an `ImportArgs` struct: not every bit pattern is a valid `{Self}`",
    label = "the executable may write any bytes here",
    note = "fields must be integers, floats, raw pointers, `Buffer<T>`/`BufferMut<T>`, `Option<NonNull<T>>`, \
            arrays of these, or structs deriving `ImportArgs`; for a C enum, use its integer type (e.g. `u32`) \
            and compare with constants"
)]
pub unsafe trait AnyBitPattern: Sized {}

macro_rules! any_bit_pattern {
    ($($ty:ty),* $(,)?) => {
        $(
            // SAFETY: a primitive number: every bit pattern of its size is a
            // value, and it has no padding.
            unsafe impl AnyBitPattern for $ty {}
        )*
    };
}

any_bit_pattern!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: a thin raw pointer (`T: Sized`) may hold any address, including
// NULL; validity is only required when it is dereferenced, which is unsafe.
unsafe impl<T> AnyBitPattern for *const T {}
// SAFETY: as for `*const T`.
unsafe impl<T> AnyBitPattern for *mut T {}
// SAFETY: `Option<NonNull<T>>` has the layout of `*mut T` with NULL as
// `None` (the null-pointer optimisation is guaranteed), so every address is
// a value; dereferencing is unsafe.
unsafe impl<T> AnyBitPattern for Option<NonNull<T>> {}
// SAFETY: an array has no padding between elements (its stride is the
// element size), so its bytes are its elements' bytes, each valid.
unsafe impl<T: AnyBitPattern, const N: usize> AnyBitPattern for [T; N] {}
// SAFETY: zero-sized: there are no bytes to be invalid.
unsafe impl AnyBitPattern for () {}
// SAFETY: zero-sized: there are no bytes to be invalid.
unsafe impl<T: ?Sized> AnyBitPattern for PhantomData<T> {}

macro_rules! any_bit_pattern_fn {
    ($(($($arg:ident),*)),* $(,)?) => {
        $(
            // SAFETY: `Option` of a function pointer has the layout of a
            // pointer with NULL as `None` (guaranteed), so every address is a
            // value; the pointer is `unsafe` to call, so a wrong address is
            // only reached through `unsafe` code that vouches for it.
            unsafe impl<R, $($arg),*> AnyBitPattern for Option<unsafe extern "C" fn($($arg),*) -> R> {}
        )*
    };
}

any_bit_pattern_fn!((), (A), (A, B), (A, B, C), (A, B, C, D), (A, B, C, D, E), (A, B, C, D, E, F));

/// Compiles only when `T: AnyBitPattern`; `#[derive(ImportArgs)]` calls it
/// once per field, at the field.
pub const fn assert_any_bit_pattern<T: AnyBitPattern>() {}

#[cfg(test)]
mod tests {
    use core::mem::{align_of, size_of};

    use super::*;

    #[test]
    fn nullable_pointers_have_the_layout_of_a_pointer() {
        type Callback = Option<unsafe extern "C" fn(*mut u8, usize) -> i32>;
        assert_eq!(size_of::<Option<NonNull<u64>>>(), size_of::<*mut u64>());
        assert_eq!(size_of::<Callback>(), size_of::<*mut u8>());
        assert_eq!(align_of::<Callback>(), align_of::<*mut u8>());
        // NULL reads back as `None`, any other address as `Some`.
        let null: Option<NonNull<u64>> = unsafe_from_usize(0);
        let some: Option<NonNull<u64>> = unsafe_from_usize(0x1000);
        assert!(null.is_none());
        assert_eq!(some.map(|pointer| pointer.as_ptr() as usize), Some(0x1000));
        let callback: Callback = unsafe_from_usize(0);
        assert!(callback.is_none());
    }

    /// Reinterprets an address as a pointer-sized `AnyBitPattern` value, as
    /// an executable writing an args field does.
    fn unsafe_from_usize<T: AnyBitPattern>(address: usize) -> T {
        assert_eq!(size_of::<T>(), size_of::<usize>());
        // SAFETY: `T` is `AnyBitPattern` and pointer-sized (checked), so any
        // initialised `usize` is a valid `T`.
        unsafe { core::mem::transmute_copy::<usize, T>(&address) }
    }
}
