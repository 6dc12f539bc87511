//! Compile-time checks of the v0 layout.
//!
//! Every size, alignment and field offset below is what IREE's C header
//! produces on the same target. The 64-bit figures are the ones `docs/src/reference/abi.md#layout-summary`
//! lists;
//! the 32-bit ones follow from 4-byte pointers, with `u64` aligned as the
//! target's C ABI aligns it (4 on i386, 8 on 32-bit Arm).

use core::mem::{align_of, offset_of, size_of};

use crate::{
    Allocator, AllocatorAllocParams, AllocatorCommand, EnvironmentV0, Features, FieldLayout, Header,
    ImportLayout, ParamDecl, PluginV0, Resolution, ResolveParamsV0, Sanitizer, Status, StatusCode,
    StringPair, StringView, Version,
};

/// Size of a C pointer (and of `size_t`) on the target.
const P: usize = size_of::<*const u8>();
/// Alignment of `uint64_t` inside a C struct on the target.
const U64: usize = align_of::<u64>();

const fn round_up(value: usize, align: usize) -> usize {
    value.div_ceil(align) * align
}

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

// Value types: exactly the width of the C types they stand for.
const _: () = {
    assert!(size_of::<Status>() == P && align_of::<Status>() == P);
    assert!(size_of::<StatusCode>() == 4);
    assert!(size_of::<Version>() == 4 && align_of::<Version>() == 4);
    assert!(size_of::<Features>() == 4 && align_of::<Features>() == 4);
    assert!(size_of::<Sanitizer>() == 4 && align_of::<Sanitizer>() == 4);
    assert!(size_of::<Resolution>() == 4 && align_of::<Resolution>() == 4);
    assert!(size_of::<AllocatorCommand>() == 4 && align_of::<AllocatorCommand>() == 4);
    // Nullable function pointers are one pointer wide.
    assert!(size_of::<crate::AllocatorCtlFn>() == P);
    assert!(size_of::<crate::LoadFnV0>() == P);
    assert!(size_of::<Option<crate::ImportFn>>() == P);
};

// iree_hal_executable_plugin_header_t
const HEADER_RESERVED: usize = round_up(3 * P + 8, U64);
const _: () = {
    assert!(offset_of!(Header, version) == 0);
    assert!(offset_of!(Header, name) == P);
    assert!(offset_of!(Header, description) == 2 * P);
    assert!(offset_of!(Header, features) == 3 * P);
    assert!(offset_of!(Header, sanitizer) == 3 * P + 4);
    assert!(offset_of!(Header, reserved) == HEADER_RESERVED);
    assert!(align_of::<Header>() == max(P, U64));
    assert!(size_of::<Header>() == round_up(HEADER_RESERVED + 64, max(P, U64)));
};

// Every other struct is made of pointer-sized fields only.
const _: () = {
    assert!(size_of::<PluginV0>() == 4 * P && align_of::<PluginV0>() == P);
    assert!(offset_of!(PluginV0, header) == 0);
    assert!(offset_of!(PluginV0, load) == P);
    assert!(offset_of!(PluginV0, unload) == 2 * P);
    assert!(offset_of!(PluginV0, resolve) == 3 * P);

    assert!(size_of::<Allocator>() == 2 * P && align_of::<Allocator>() == P);
    assert!(offset_of!(Allocator, self_) == 0);
    assert!(offset_of!(Allocator, ctl) == P);

    assert!(size_of::<EnvironmentV0>() == 2 * P && align_of::<EnvironmentV0>() == P);
    assert!(offset_of!(EnvironmentV0, host_allocator) == 0);

    assert!(size_of::<AllocatorAllocParams>() == P && align_of::<AllocatorAllocParams>() == P);
    assert!(offset_of!(AllocatorAllocParams, byte_length) == 0);

    assert!(size_of::<StringView>() == 2 * P && align_of::<StringView>() == P);
    assert!(offset_of!(StringView, data) == 0);
    assert!(offset_of!(StringView, size) == P);

    assert!(size_of::<StringPair>() == 4 * P && align_of::<StringPair>() == P);
    assert!(offset_of!(StringPair, key) == 0);
    assert!(offset_of!(StringPair, value) == 2 * P);

    assert!(size_of::<ResolveParamsV0>() == 4 * P && align_of::<ResolveParamsV0>() == P);
    assert!(offset_of!(ResolveParamsV0, count) == 0);
    assert!(offset_of!(ResolveParamsV0, symbol_names) == P);
    assert!(offset_of!(ResolveParamsV0, out_fn_ptrs) == 2 * P);
    assert!(offset_of!(ResolveParamsV0, out_fn_contexts) == 3 * P);
};

// The figures `docs/src/reference/abi.md#layout-summary` gives for 64-bit targets, spelled out.
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<Header>() == 96 && align_of::<Header>() == 8);
    assert!(offset_of!(Header, name) == 8);
    assert!(offset_of!(Header, description) == 16);
    assert!(offset_of!(Header, features) == 24);
    assert!(offset_of!(Header, sanitizer) == 28);
    assert!(offset_of!(Header, reserved) == 32);
    assert!(size_of::<PluginV0>() == 32);
    assert!(size_of::<EnvironmentV0>() == 16);
    assert!(size_of::<Allocator>() == 16);
    assert!(size_of::<AllocatorAllocParams>() == 8);
    assert!(size_of::<StringView>() == 16);
    assert!(size_of::<StringPair>() == 32);
    assert!(size_of::<ResolveParamsV0>() == 32);
};

// 32-bit targets: 4-byte pointers; the header's `reserved` array follows the
// target's `uint64_t` alignment.
#[cfg(target_pointer_width = "32")]
const _: () = {
    assert!(offset_of!(Header, name) == 4);
    assert!(offset_of!(Header, description) == 8);
    assert!(offset_of!(Header, features) == 12);
    assert!(offset_of!(Header, sanitizer) == 16);
    assert!(offset_of!(Header, reserved) == if U64 == 8 { 24 } else { 20 });
    assert!(size_of::<Header>() == if U64 == 8 { 88 } else { 84 });
    assert!(size_of::<PluginV0>() == 16);
    assert!(size_of::<EnvironmentV0>() == 8);
    assert!(size_of::<Allocator>() == 8);
    assert!(size_of::<AllocatorAllocParams>() == 4);
    assert!(size_of::<StringView>() == 8);
    assert!(size_of::<StringPair>() == 16);
    assert!(size_of::<ResolveParamsV0>() == 16);
};

// xplug_param_decl_t: four string pointers.
const _: () = {
    assert!(size_of::<ParamDecl>() == 4 * P && align_of::<ParamDecl>() == P);
    assert!(offset_of!(ParamDecl, name) == 0);
    assert!(offset_of!(ParamDecl, kind) == P);
    assert!(offset_of!(ParamDecl, default_value) == 2 * P);
    assert!(offset_of!(ParamDecl, description) == 3 * P);
    assert!(size_of::<crate::ParamDeclsFn>() == P);
};

// xplug_field_layout_t and xplug_import_layout_t: pointers and sizes.
const _: () = {
    assert!(size_of::<FieldLayout>() == 4 * P && align_of::<FieldLayout>() == P);
    assert!(offset_of!(FieldLayout, name) == 0);
    assert!(offset_of!(FieldLayout, type_name) == P);
    assert!(offset_of!(FieldLayout, offset) == 2 * P);
    assert!(offset_of!(FieldLayout, size) == 3 * P);
    assert!(size_of::<ImportLayout>() == 6 * P && align_of::<ImportLayout>() == P);
    assert!(offset_of!(ImportLayout, symbol) == 0);
    assert!(offset_of!(ImportLayout, type_name) == P);
    assert!(offset_of!(ImportLayout, size) == 2 * P);
    assert!(offset_of!(ImportLayout, align) == 3 * P);
    assert!(offset_of!(ImportLayout, field_count) == 4 * P);
    assert!(offset_of!(ImportLayout, fields) == 5 * P);
    assert!(size_of::<crate::ImportLayoutsFn>() == P);
};
