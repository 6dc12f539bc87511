//! `#[derive(ImportArgs)]`: a `#[repr(C)]` struct whose every field is
//! valid for any bit pattern the executable may write.
//!
//! Two layers of checking:
//!
//! 1. a syntactic pass over each field type refuses the usual mistakes
//!    (`bool`, `char`, references, `String`, `Vec`, `Box`, `NonNull<T>`,
//!    tuples, slices, ...) with an error at the field that names it and says
//!    what to declare instead;
//! 2. for every field the expansion asserts `FieldType: AnyBitPattern` in a
//!    constant, so a type the syntactic pass cannot judge (a user enum, a
//!    struct without the derive, a type alias) still fails to compile unless
//!    it implements the `unsafe` marker trait.

use proc_macro2::TokenStream as TokenStream2;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, GenericArgument, PathArguments, Type};

use crate::parse::{has_repr_c, replace_self};

/// Expands `#[derive(ImportArgs)]` on `input`.
pub(crate) fn expand_import_args(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "`ImportArgs` can only be derived for a struct; declare `{name}` as a `#[repr(C)] struct` matching the C args struct"
            ),
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            format!("`{name}` must not be generic to be an import's args type; use concrete field types"),
        ));
    }
    if !has_repr_c(&input.attrs)? {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "`{name}` is read from a C struct the executable passes, so its layout must be C's: \
                 add `#[repr(C)]` to `{name}`"
            ),
        ));
    }

    let mut errors: Option<syn::Error> = None;
    for (index, field) in data.fields.iter().enumerate() {
        let field_name = field.ident.as_ref().map_or_else(|| index.to_string(), ToString::to_string);
        if let Some(refusal) = refuse(&field.ty) {
            let error = syn::Error::new_spanned(
                refusal.ty,
                format!(
                    "field `{field_name}` of `{name}` cannot be {what}: the executable may write any bytes \
                     there, and {why}; {instead}",
                    what = refusal.what,
                    why = refusal.why,
                    instead = refusal.instead,
                ),
            );
            match &mut errors {
                Some(errors) => errors.combine(error),
                None => errors = Some(error),
            }
        }
    }
    if let Some(errors) = errors {
        return Err(errors);
    }

    let assertions = data.fields.iter().map(|field| {
        let ty = replace_self(field.ty.to_token_stream(), name);
        quote_spanned! {field.ty.span()=>
            ::xplug_sdk::__private::assert_any_bit_pattern::<#ty>();
        }
    });
    let c_declarations = crate::cdecl::declarations(name, &data.fields);
    let layout = layout_const(name, &data.fields);
    let linked = linked_items(name, &data.fields)?;
    Ok(quote! {
        // Every field type must be valid for any bit pattern (checked by the
        // compiler here, with the error at the field).
        const _: () = {
            #(#assertions)*
        };
        // SAFETY: `#[repr(C)]` and a non-generic struct were checked by the
        // derive, and the constant above only compiles when every field is
        // `AnyBitPattern`; a `#[repr(C)]` struct of such fields is valid for
        // any bytes in its fields (its padding is never read as a value).
        unsafe impl ::xplug_sdk::AnyBitPattern for #name {}
        // SAFETY: as above; the author vouches that the fields match the
        // executable's C struct.
        unsafe impl ::xplug_sdk::ImportArgs for #name {
            #c_declarations
            #layout
        }
        #linked
    })
}

/// True when `field` carries `#[import_field]`: IREE appends it for
/// `hal.import.fields`, so a linked call does not pass it.
fn is_import_field(field: &syn::Field) -> syn::Result<bool> {
    let mut found = false;
    for attr in &field.attrs {
        if attr.path().is_ident("import_field") {
            attr.meta.require_path_only()?;
            found = true;
        }
    }
    Ok(found)
}

/// The items behind the linked deployment (`xplug_sdk`'s `linked` module):
/// the MLIR parameter list of a linked call and the generic C entry that
/// takes the fields as separate arguments (leaving out the
/// `#[import_field]` ones, which it zeroes) and calls the import marker
/// `M`. A struct with an array field has no entry: C passes no arrays by
/// value.
fn linked_items(name: &syn::Ident, fields: &syn::Fields) -> syn::Result<TokenStream2> {
    let mut params = Vec::new();
    let mut mlir = Vec::new();
    let mut inits = Vec::new();
    let mut by_value = true;
    for (index, field) in fields.iter().enumerate() {
        let binding = format_ident!("__xplug_field_{index}");
        let member = field.ident.as_ref().map_or_else(
            || {
                let index = syn::Index::from(index);
                quote! { #index }
            },
            |ident| quote! { #ident },
        );
        if is_import_field(field)? {
            inits.push(quote! { #member: ::xplug_sdk::__private::zeroed() });
            continue;
        }
        by_value &= !matches!(field.ty, Type::Array(_));
        let ty = replace_self(field.ty.to_token_stream(), name);
        params.push(quote! { #binding: #ty });
        inits.push(quote! { #member: #binding });
        let field_name = field.ident.as_ref().map_or_else(|| format!("_{index}"), ToString::to_string);
        mlir.push(format!("%{field_name}: {}", mlir_type(&field.ty)));
    }
    let mlir = mlir.join(", ");
    let entry = by_value.then(|| {
        quote! {
            /// The linked deployment's C entry for import `M`: the fields
            /// as separate arguments (`xplug_sdk`'s `linked` module).
            #[doc(hidden)]
            #[allow(clippy::too_many_arguments, improper_ctypes_definitions)]
            pub extern "C" fn __xplug_linked_entry<M: ::xplug_sdk::__private::Import<Args = Self>>(#(#params),*) {
                let mut args = Self { #(#inits),* };
                // A linked call has no status to return (IREE's static
                // functions return nothing); the kernel's error code is
                // dropped, as `docs/src/plugins/dispatch.md#linked-kernels` says.
                let _ = <M as ::xplug_sdk::__private::Import>::call(&mut args, ::core::option::Option::None);
            }
        }
    });
    Ok(quote! {
        impl #name {
            /// The MLIR parameters of a linked call taking this struct's
            /// fields (`%name: type, ...`; `?` where a type has none).
            #[doc(hidden)]
            pub const __XPLUG_LINKED_PARAMS: &'static str = #mlir;
            #entry
        }
    })
}

/// The MLIR type IREE's compiler lowers to the C type of a field declared
/// as `ty`, with `llvm.bareptr` (a memref is one pointer): `index` for
/// `usize`/`isize`, the integer or float of the same width, `memref<T>`
/// for a buffer of `T`; `?` followed by the type for anything else.
fn mlir_type(ty: &Type) -> String {
    let scalar = |ident: &str| -> Option<&'static str> {
        Some(match ident {
            "usize" | "isize" => "index",
            "u8" | "i8" => "i8",
            "u16" | "i16" => "i16",
            "u32" | "i32" => "i32",
            "u64" | "i64" => "i64",
            "f32" => "f32",
            "f64" => "f64",
            _ => return None,
        })
    };
    if let Type::Path(path) = ty
        && let Some(last) = path.path.segments.last()
    {
        let ident = last.ident.to_string();
        if let Some(scalar) = scalar(&ident) {
            return scalar.to_owned();
        }
        if (ident == "Buffer" || ident == "BufferMut")
            && let PathArguments::AngleBracketed(arguments) = &last.arguments
            && let Some(GenericArgument::Type(Type::Path(element))) = arguments.args.first()
            && let Some(element) = element.path.segments.last()
            && let Some(element) = scalar(&element.ident.to_string())
            && element != "index"
        {
            return format!("memref<{element}>");
        }
    }
    format!("?{}", show(ty))
}

/// The `ImportArgs::__LAYOUT` constant of struct `name`: its name and,
/// per field, the name, the type as written, the offset and the size, the
/// last two computed by the compiler (`offset_of!`, `size_of`).
fn layout_const(name: &syn::Ident, fields: &syn::Fields) -> TokenStream2 {
    let entries = fields.iter().enumerate().map(|(index, field)| {
        let field_name = field.ident.as_ref().map_or_else(|| format!("_{index}"), ToString::to_string);
        let member = field.ident.as_ref().map_or_else(
            || {
                let index = syn::Index::from(index);
                quote! { #index }
            },
            |ident| quote! { #ident },
        );
        let ty = replace_self(field.ty.to_token_stream(), name);
        let field_c = c_lit(&field_name);
        let type_c = c_lit(&show(&field.ty));
        quote! {
            ::xplug_sdk::__private::CFieldLayout::new(
                #field_c,
                #type_c,
                ::core::mem::offset_of!(#name, #member),
                ::core::mem::size_of::<#ty>(),
            )
        }
    });
    let name_c = c_lit(&name.to_string());
    quote! {
        const __LAYOUT: ::core::option::Option<::xplug_sdk::__private::ArgsLayout> = {
            const FIELDS: &[::xplug_sdk::__private::CFieldLayout] = &[#(#entries),*];
            ::core::option::Option::Some(::xplug_sdk::__private::ArgsLayout { type_name: #name_c, fields: FIELDS })
        };
    }
}

/// A C string literal of `text` (identifiers and type text: no NUL).
fn c_lit(text: &str) -> syn::LitCStr {
    let text = std::ffi::CString::new(text.replace('\0', "")).unwrap_or_default();
    syn::LitCStr::new(&text, proc_macro2::Span::call_site())
}

/// Why a field type is refused, and what to write instead.
struct Refusal<'a> {
    ty: &'a Type,
    what: String,
    why: &'static str,
    instead: &'static str,
}

/// The refusal of a field of type `ty`, or `None` when the syntactic pass
/// has nothing against it (the `AnyBitPattern` assertion still applies).
fn refuse(ty: &Type) -> Option<Refusal<'_>> {
    let refusal =
        |what: String, why: &'static str, instead: &'static str| Some(Refusal { ty, what, why, instead });
    let shown = || show(ty);
    match ty {
        Type::Array(array) => refuse(&array.elem),
        Type::Group(group) => refuse(&group.elem),
        Type::Paren(paren) => refuse(&paren.elem),
        Type::Reference(_) => refusal(
            "a reference".to_owned(),
            "a reference must point at a valid value (never NULL, never dangling)",
            "use a raw pointer (`*const T` / `*mut T`), or `xplug_sdk::Buffer<T>` / `BufferMut<T>` for an array",
        ),
        Type::Tuple(tuple) if !tuple.elems.is_empty() => refusal(
            format!("a tuple (`{}`)", shown()),
            "a tuple has no C layout",
            "declare a `#[repr(C)]` struct with `#[derive(ImportArgs)]` for it",
        ),
        Type::Slice(_) | Type::TraitObject(_) | Type::ImplTrait(_) => refusal(
            format!("`{}`", shown()),
            "an args struct holds only fixed-size C values",
            "use `xplug_sdk::Buffer<T>` / `BufferMut<T>` plus a length field",
        ),
        Type::BareFn(function) => refusal(
            format!("a function pointer (`{}`)", shown()),
            if function.unsafety.is_none() {
                "a function pointer must not be NULL, and calling one the executable passed cannot be safe"
            } else {
                "a function pointer must not be NULL"
            },
            "use `Option<unsafe extern \"C\" fn(...) -> R>` (NULL is `None`)",
        ),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            let ident = last.ident.to_string();
            match ident.as_str() {
                "bool" => refusal(
                    "a `bool`".to_owned(),
                    "a `bool` may only hold 0 or 1",
                    "use `u8` for a C `bool` (or `u32`/`i32` for an `int` flag) and test it with `!= 0`",
                ),
                "char" => refusal(
                    "a `char`".to_owned(),
                    "a `char` may only hold a Unicode scalar value",
                    "use `u32` for a C `char32_t`, or `u8` / `core::ffi::c_char` for a C `char`",
                ),
                "String" | "str" | "CString" | "CStr" | "OsString" | "OsStr" | "PathBuf" | "Path" => refusal(
                    format!("a Rust string (`{}`)", shown()),
                    "a Rust string owns or borrows memory the executable knows nothing of",
                    "use `xplug_sdk::Buffer<u8>` plus a length field (or `*const core::ffi::c_char` for a NUL-terminated C string)",
                ),
                "Vec" | "VecDeque" => refusal(
                    format!("a `{ident}`"),
                    "a Rust collection owns memory the executable knows nothing of",
                    "use `xplug_sdk::Buffer<T>` (or `BufferMut<T>` to write) plus a length field",
                ),
                "Box" | "Rc" | "Arc" | "Cow" => refusal(
                    format!("a `{ident}`"),
                    "a smart pointer owns memory, while the executable's args only borrow it",
                    "use a raw pointer (`*const T` / `*mut T`) or `xplug_sdk::Buffer<T>` / `BufferMut<T>`",
                ),
                "NonNull" => refusal(
                    "a `NonNull`".to_owned(),
                    "a `NonNull` must not be NULL",
                    "use `Option<core::ptr::NonNull<T>>` (NULL is `None`) or a raw pointer",
                ),
                "Option" => refuse_option(ty, last),
                _ if ident.starts_with("NonZero") => {
                    refusal(format!("a `{ident}`"), "it must not be zero", "use the plain integer type")
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// An `Option<T>` field is valid for any bit pattern only around a
/// non-NULL pointer type: `Option<NonNull<T>>` or
/// `Option<unsafe extern "C" fn(...)>`.
fn refuse_option<'a>(ty: &'a Type, segment: &syn::PathSegment) -> Option<Refusal<'a>> {
    let inner = match &segment.arguments {
        PathArguments::AngleBracketed(arguments) => {
            arguments.args.iter().find_map(|argument| match argument {
                GenericArgument::Type(inner) => Some(inner),
                _ => None,
            })
        }
        _ => None,
    };
    let accepted = match inner {
        Some(Type::Path(path)) => path.path.segments.last().is_some_and(|last| last.ident == "NonNull"),
        Some(Type::BareFn(function)) => {
            function.unsafety.is_some()
                && function
                    .abi
                    .as_ref()
                    .and_then(|abi| abi.name.as_ref())
                    .is_some_and(|name| name.value() == "C")
        }
        _ => false,
    };
    if accepted {
        return None;
    }
    Some(Refusal {
        ty,
        what: format!("an `{}`", show(ty)),
        why: "an `Option` is valid for any bit pattern only around a non-NULL pointer",
        instead: "use `Option<core::ptr::NonNull<T>>`, `Option<unsafe extern \"C\" fn(...) -> R>`, a raw pointer, \
                  or the plain value with a separate flag field",
    })
}

/// `ty` as written, without the spaces token printing puts around `<`,
/// `>`, `::` and after `&`.
fn show(ty: &Type) -> String {
    ty.to_token_stream()
        .to_string()
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ::", "::")
        .replace(":: ", "::")
        .replace("& ", "&")
        .replace(" ,", ",")
}
