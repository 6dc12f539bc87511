//! The C declaration `#[derive(ImportArgs)]` emits for an args struct:
//! code that appends `typedef struct Name { ... } Name;` (after the
//! declarations of the args structs it nests) and the layout facts C can
//! assert, computed by the compiler (`size_of`, `offset_of!`) so they are
//! the Rust layout's own.

use proc_macro2::TokenStream as TokenStream2;
use quote::{ToTokens, quote};
use syn::{Fields, GenericArgument, PathArguments, Type};

/// How one field type is spelled in C.
enum CType {
    /// A scalar or pointer: the C type text (`"uint32_t"`, `"const float*"`).
    Plain(String),
    /// An array of `element` with `len` elements (a Rust expression).
    Array { element: Box<CType>, len: TokenStream2 },
    /// A nested args struct: declared first, then named.
    Nested(Box<Type>, String),
    /// Zero-sized (`()`, `PhantomData`): no C field.
    Nothing,
    /// No C spelling known: the field becomes bytes of the same size.
    Opaque,
}

/// The C name of a primitive, `core::ffi` or `c_void` type named `ident`.
fn scalar(ident: &str) -> Option<&'static str> {
    Some(match ident {
        "u8" => "uint8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i8" => "int8_t",
        "i16" => "int16_t",
        "i32" => "int32_t",
        "i64" => "int64_t",
        "usize" => "size_t",
        "isize" => "ptrdiff_t",
        "f32" => "float",
        "f64" => "double",
        "c_char" => "char",
        "c_schar" => "signed char",
        "c_uchar" => "unsigned char",
        "c_short" => "short",
        "c_ushort" => "unsigned short",
        "c_int" => "int",
        "c_uint" => "unsigned int",
        "c_long" => "long",
        "c_ulong" => "unsigned long",
        "c_longlong" => "long long",
        "c_ulonglong" => "unsigned long long",
        "c_float" => "float",
        "c_double" => "double",
        "c_void" => "void",
        _ => return None,
    })
}

/// The single type argument of the last path segment (`Buffer<T>` → `T`).
fn type_argument(segment: &syn::PathSegment) -> Option<&Type> {
    let PathArguments::AngleBracketed(arguments) = &segment.arguments else { return None };
    arguments.args.iter().find_map(|argument| match argument {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// The C type a pointer to `pointee` points at (a struct not declared here
/// is an incomplete `struct Name`, which C allows behind a pointer).
fn pointee(pointee: &Type) -> String {
    match c_type(pointee) {
        CType::Plain(text) => text,
        CType::Nested(_, name) => format!("struct {name}"),
        _ => "void".to_owned(),
    }
}

/// The C spelling of a field type.
fn c_type(ty: &Type) -> CType {
    match ty {
        Type::Group(group) => c_type(&group.elem),
        Type::Paren(paren) => c_type(&paren.elem),
        Type::Tuple(tuple) if tuple.elems.is_empty() => CType::Nothing,
        Type::Array(array) => {
            let len = &array.len;
            CType::Array { element: Box::new(c_type(&array.elem)), len: quote! { #len } }
        }
        Type::Ptr(pointer) => {
            let target = self::pointee(&pointer.elem);
            if pointer.const_token.is_some() {
                CType::Plain(format!("const {target}*"))
            } else {
                CType::Plain(format!("{target}*"))
            }
        }
        Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else { return CType::Opaque };
            let ident = last.ident.to_string();
            if let Some(name) = scalar(&ident) {
                return CType::Plain(name.to_owned());
            }
            match (ident.as_str(), type_argument(last)) {
                ("Buffer", Some(element)) => CType::Plain(format!("const {}*", pointee(element))),
                ("BufferMut", Some(element)) => CType::Plain(format!("{}*", pointee(element))),
                ("PhantomData", _) => CType::Nothing,
                ("Option", Some(Type::Path(inner))) => {
                    match inner.path.segments.last().map(|s| (s.ident.to_string(), type_argument(s))) {
                        Some((name, Some(element))) if name == "NonNull" => {
                            CType::Plain(format!("{}*", pointee(element)))
                        }
                        _ => CType::Opaque,
                    }
                }
                // A function pointer: C's `void*` has its size and alignment
                // on every target xplug supports; the comment says what it is.
                ("Option", Some(Type::BareFn(_))) => CType::Plain("void* /* function pointer */".to_owned()),
                (_, None) if path.path.segments.len() == 1 || !ident.starts_with(char::is_lowercase) => {
                    CType::Nested(Box::new(ty.clone()), ident)
                }
                _ => CType::Opaque,
            }
        }
        _ => CType::Opaque,
    }
}

/// Statements appending the C text of one field to `text` (a `String`), and
/// the declarations it needs to `out` first.
fn field_code(c: &CType, field: &str, ty: &Type) -> TokenStream2 {
    match c {
        CType::Nothing => quote! {},
        CType::Plain(name) => {
            let line = format!("  {name} {field};\n");
            quote! { text.push_str(#line); }
        }
        CType::Nested(nested, name) => {
            let line = format!("  struct {name} {field};\n");
            let fallback = opaque(field, ty);
            quote! {
                if declare_nested!(#nested) {
                    text.push_str(#line);
                } else {
                    #fallback
                }
            }
        }
        CType::Array { element, len } => {
            // The element's own text, then `[N]` (nested arrays: `[N][M]`).
            let mut lens = vec![len.clone()];
            let mut element = element.as_ref();
            while let CType::Array { element: inner, len } = element {
                lens.push(len.clone());
                element = inner.as_ref();
            }
            let dims = quote! { #( { let n: usize = #lens; text.push_str(&::xplug_sdk::__private::format!("[{n}]")); } )* };
            match element {
                CType::Plain(name) => {
                    let head = format!("  {name} {field}");
                    quote! { text.push_str(#head); #dims text.push_str(";\n"); }
                }
                CType::Nested(nested, name) => {
                    let head = format!("  struct {name} {field}");
                    let fallback = opaque(field, ty);
                    quote! {
                        if declare_nested!(#nested) {
                            text.push_str(#head); #dims text.push_str(";\n");
                        } else {
                            #fallback
                        }
                    }
                }
                _ => opaque(field, ty),
            }
        }
        CType::Opaque => opaque(field, ty),
    }
}

/// A field with no C spelling: bytes of its size (alignment may then differ,
/// which the layout assertions catch).
fn opaque(field: &str, ty: &Type) -> TokenStream2 {
    quote! {
        text.push_str(&::xplug_sdk::__private::format!(
            "  uint8_t {}[{}]; /* no C spelling for `{}` */\n",
            #field,
            ::core::mem::size_of::<#ty>(),
            ::core::stringify!(#ty),
        ));
    }
}

/// The body of `ImportArgs::__c_declarations` for struct `name`: declare
/// the nested structs, then this one; and the layout lines C asserts.
pub(crate) fn declarations(name: &syn::Ident, fields: &Fields) -> TokenStream2 {
    let c_name = name.to_string();
    let mut field_lines = Vec::new();
    let mut layout_lines = Vec::new();
    for (index, field) in fields.iter().enumerate() {
        let field_name = field.ident.as_ref().map_or_else(|| format!("_{index}"), ToString::to_string);
        // `Self` in a field type is the struct itself.
        let ty: Type = syn::parse2(crate::parse::replace_self(field.ty.to_token_stream(), name))
            .unwrap_or_else(|_| field.ty.clone());
        let c = c_type(&ty);
        field_lines.push(field_code(&c, &field_name, &ty));
        if !matches!(c, CType::Nothing) {
            let member = field.ident.as_ref().map_or_else(
                || {
                    let index = syn::Index::from(index);
                    quote! { #index }
                },
                |ident| quote! { #ident },
            );
            layout_lines.push(quote! {
                layout.push((#field_name, ::core::mem::offset_of!(#name, #member)));
            });
        }
    }
    let open = format!("typedef struct {c_name} {{\n");
    let close = format!("}} {c_name};\n");
    quote! {
        fn __c_declarations(out: &mut ::xplug_sdk::__private::CDeclarations) {
            if !out.begin(#c_name) {
                return;
            }
            // A nested args struct is declared first when it is one
            // (`ImportArgs`); any other type is written as bytes.
            #[allow(unused_macros)]
            macro_rules! declare_nested {
                ($ty:ty) => {{
                    #[allow(unused_imports)]
                    use ::xplug_sdk::__private::{DeclareNothing as _, DeclareArgs as _};
                    (&&::xplug_sdk::__private::CDeclDispatch::<$ty>::new()).declare(out)
                }};
            }
            let mut text = ::xplug_sdk::__private::String::from(#open);
            #(#field_lines)*
            text.push_str(#close);
            let mut layout = ::xplug_sdk::__private::Vec::new();
            #(#layout_lines)*
            out.finish(#c_name, text, ::core::mem::size_of::<#name>(), layout);
        }
    }
}
