//! The items `#[plugin]` adds to the module: one marker type per import, the
//! header and v0 table, the sorted export table and its hash index, the
//! `PLUGIN` descriptor, and either the C exports (by default) or a static
//! registration (the plugin crate's `static` feature, or a test build).

use std::ffi::CString;

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Item, ItemMod, LitCStr, LitStr};
use xplug_abi::{Features, Sanitizer};

use crate::parse::{ParamArg, PluginArgs, item_attrs, take_import_attr};
use crate::signature::{ImportFnInfo, analyse_import};

/// Expands `#[plugin(config)] mod module { ... }`.
pub(crate) fn expand_plugin(config: PluginArgs, mut module: ItemMod) -> syn::Result<TokenStream2> {
    let Some(name) = config.name else {
        return Err(syn::Error::new(
            Span::call_site(),
            "the plugin needs a name: `#[xplug_sdk::plugin(name = \"my_plugin\")]`",
        ));
    };
    let name_value = name.value();
    if name_value.is_empty() || name_value.contains('\0') {
        return Err(syn::Error::new(
            name.span(),
            "the plugin name must be non-empty and contain no NUL byte",
        ));
    }
    let description_value = config.description.as_ref().map(LitStr::value).unwrap_or_default();
    if description_value.contains('\0') {
        return Err(syn::Error::new(
            config.description.as_ref().map_or(Span::call_site(), LitStr::span),
            "the description must not contain a NUL byte",
        ));
    }
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new(
            module.ident.span(),
            "`#[plugin]` needs the module's items inline: `mod plugin { ... }`",
        ));
    };

    let has_state = config.state.is_some();
    let state_ty: syn::Type = config.state.clone().unwrap_or_else(|| syn::parse_quote!(()));
    let mut imports = Vec::new();
    for item in items.iter_mut() {
        match item {
            Item::Fn(function) => {
                if let Some((symbol, span)) = take_import_attr(function)? {
                    imports.push(analyse_import(function, symbol, span, has_state)?);
                }
            }
            other => {
                let misplaced = item_attrs(other)
                    .and_then(|attrs| attrs.iter().find(|attr| attr.path().is_ident("import")));
                if let Some(attr) = misplaced {
                    return Err(syn::Error::new(attr.span(), "`#[import]` goes on a function"));
                }
            }
        }
    }
    if imports.is_empty() {
        return Err(syn::Error::new(
            module.ident.span(),
            "the plugin exports nothing; mark functions with `#[import(\"symbol\")]`",
        ));
    }
    sort_and_check_unique(&mut imports)?;

    let mut generated: Vec<TokenStream2> =
        imports.iter().map(|import| import_marker(import, &state_ty)).collect();
    // One C entry per import, named after its function (`xplug_import_<fn>`), so
    // gdb, perf and crash reports name the import rather than the SDK's
    // shared generic entry; the generic entry is inlined into it.
    generated.extend(imports.iter().map(|import| {
        let marker = marker_ident(import);
        let entry = entry_ident(import);
        quote! {
            #[doc(hidden)]
            #[inline(never)]
            unsafe extern "C" fn #entry(
                args: *mut ::core::ffi::c_void,
                context: *mut ::core::ffi::c_void,
                reserved: *mut ::core::ffi::c_void,
            ) -> ::core::ffi::c_int {
                // SAFETY: forwarded: the caller is the executable, calling
                // the function `resolve` gave it with that contract.
                unsafe { ::xplug_sdk::__private::import_entry::<#marker>(args, context, reserved) }
            }
        }
    }));
    let export_entries = imports.iter().map(|import| {
        let marker = marker_ident(import);
        let entry = entry_ident(import);
        let symbol = LitStr::new(&import.symbol, import.symbol_span);
        quote! { ::xplug_sdk::__private::Export::new::<#marker>(#symbol, #entry) }
    });
    let export_names = imports.iter().map(|import| {
        let c_name = c_str(&import.symbol, import.symbol_span);
        quote! { ::xplug_sdk::__private::CName::new(#c_name) }
    });
    let import_layouts = imports.iter().map(|import| {
        let marker = marker_ident(import);
        let c_name = c_str(&import.symbol, import.symbol_span);
        quote! { ::xplug_sdk::__private::CImportLayout::of::<#marker>(#c_name) }
    });
    let symbols = imports.iter().map(|import| LitStr::new(&import.symbol, import.symbol_span));
    // Through the marker's `Args`, so an args type without the derive is
    // reported once (at the marker's impl), not again here.
    let c_imports = imports.iter().map(|import| {
        let marker = marker_ident(import);
        quote! { <#marker as ::xplug_sdk::__private::Import>::declare_c(out); }
    });

    let count = imports.len();
    let (index_static, index_value) = hash_index(&imports)?;
    let features = features_expr(config.features);
    let sanitizer = sanitizer_expr(config.sanitizer.unwrap_or(Sanitizer::NONE));
    let c_plugin_name = c_str(&name_value, name.span());
    let c_description = c_str(&description_value, Span::call_site());
    let description_lit = LitStr::new(&description_value, Span::call_site());
    let (param_decl_statics, param_decls_value, param_decls_export) =
        param_decl_items(config.params.as_deref());
    let plugin_doc = format!("The `{name_value}` plugin: its name, import symbols and v0 query function.");

    generated.push(quote! {
        #[doc(hidden)]
        pub struct __XplugPlugin;

        static __XPLUG_HEADER: ::xplug_sdk::abi::Header =
            ::xplug_sdk::__private::header(#c_plugin_name, #c_description, #features, #sanitizer);
        static __XPLUG_V0: ::xplug_sdk::abi::PluginV0 =
            ::xplug_sdk::__private::v0_table::<__XplugPlugin>(&__XPLUG_HEADER);
        static __XPLUG_EXPORTS: [::xplug_sdk::__private::Export; #count] = [#(#export_entries),*];
        static __XPLUG_EXPORT_NAMES: [::xplug_sdk::__private::CName; #count] = [#(#export_names),*];
        static __XPLUG_IMPORT_LAYOUTS: [::xplug_sdk::__private::CImportLayout; #count] = [#(#import_layouts),*];
        #index_static
        #param_decl_statics

        // SAFETY: generated by `#[xplug_sdk::plugin]`: the table comes from
        // `v0_table::<Self>`, the exports are sorted without duplicates and
        // share `State`, the names list matches them, and the hash index was
        // built over them with `xplug_abi::hash_index_insert` / `name_hash`.
        unsafe impl ::xplug_sdk::__private::PluginDef for __XplugPlugin {
            type State = #state_ty;
            const NAME: &'static str = #name;
            fn v0() -> &'static ::xplug_sdk::abi::PluginV0 {
                &__XPLUG_V0
            }
            fn exports() -> &'static [::xplug_sdk::__private::Export] {
                &__XPLUG_EXPORTS
            }
            fn export_names() -> &'static [::xplug_sdk::__private::CName] {
                &__XPLUG_EXPORT_NAMES
            }
            fn hash_index() -> ::xplug_sdk::__private::HashIndex<'static> {
                #index_value
            }
            const PARAM_DECLS: ::core::option::Option<&'static [::xplug_sdk::TypedParamDecl]> = #param_decls_value;
            fn param_decls() -> &'static [::xplug_sdk::__private::CParamDecl] {
                &__XPLUG_PARAM_DECLS
            }
            fn import_layouts() -> &'static [::xplug_sdk::__private::CImportLayout] {
                &__XPLUG_IMPORT_LAYOUTS
            }
        }

        fn __xplug_c_declarations(out: &mut ::xplug_sdk::__private::CDeclarations) {
            #(#c_imports)*
        }

        #[doc = #plugin_doc]
        pub const PLUGIN: ::xplug_sdk::PluginDescriptor = ::xplug_sdk::__private::descriptor::<__XplugPlugin>(
            #description_lit,
            &[#(#symbols),*],
            __xplug_c_declarations,
        );

        // The C entry points, unless the plugin crate is linked into a
        // binary: its `static` feature (which the crate need not declare,
        // hence the `unexpected_cfgs` allowance) or a test build.
        #[allow(unexpected_cfgs)]
        const _: () = {
        #[cfg(not(any(test, feature = "static", xplug_linked)))]
        const _: () = {
            /// Present in every plugin that exports the C entry points: when
            /// two such plugins are linked into one binary, the linker's
            /// "duplicate symbol" error names this symbol, which says the fix.
            #[unsafe(no_mangle)]
            #[allow(non_upper_case_globals)]
            pub static xplug_two_plugins_export_c_entry_points__enable_the_static_feature_of_plugins_linked_into_a_binary: u8 = 0;

            /// The v0 query function IREE's runtime looks up.
            #[unsafe(no_mangle)]
            pub extern "C" fn iree_hal_executable_plugin_query(
                max_version: ::xplug_sdk::abi::Version,
                reserved: *mut ::core::ffi::c_void,
            ) -> *mut *const ::xplug_sdk::abi::Header {
                // Keeps the marker in any link that keeps this function.
                ::core::hint::black_box(
                    &xplug_two_plugins_export_c_entry_points__enable_the_static_feature_of_plugins_linked_into_a_binary,
                );
                ::xplug_sdk::__private::query::<__XplugPlugin>(max_version, reserved)
            }

            /// The plugin's sorted import names, for tools.
            #[unsafe(no_mangle)]
            pub extern "C" fn xplug_plugin_exports(
                out_count: ::core::option::Option<&mut usize>,
            ) -> *const *const ::core::ffi::c_char {
                ::xplug_sdk::__private::export_list::<__XplugPlugin>(out_count)
            }

            /// The args layout of each import, for tools.
            #[unsafe(no_mangle)]
            pub extern "C" fn xplug_import_layouts(
                out_count: ::core::option::Option<&mut usize>,
            ) -> *const ::xplug_sdk::abi::ImportLayout {
                ::xplug_sdk::__private::import_layouts::<__XplugPlugin>(out_count)
            }

            /// Why the last `load` on this thread failed, for tools.
            #[unsafe(no_mangle)]
            pub extern "C" fn xplug_plugin_load_error() -> *const ::core::ffi::c_char {
                ::xplug_sdk::__private::last_load_error()
            }

            #param_decls_export
        };

        #[cfg(any(test, feature = "static"))]
        ::xplug_sdk::__register_static!(__XplugPlugin);
        };
    });

    generated.push(linked_items(&imports));

    for tokens in generated {
        items.extend(syn::parse2::<syn::File>(tokens)?.items);
    }
    Ok(quote! { #module })
}

/// The items of the declared load parameters: the two static arrays (Rust
/// and C views), the `PluginDef::PARAM_DECLS` value, and the
/// `xplug_plugin_params` export (only for a plugin that declares them).
fn param_decl_items(params: Option<&[ParamArg]>) -> (TokenStream2, TokenStream2, TokenStream2) {
    let list = params.unwrap_or_default();
    let count = list.len();
    let rust = list.iter().map(|param| {
        let name = LitStr::new(&param.name.unraw().to_string(), param.name.span());
        let kind = format_ident!("{}", variant_name(&param.kind.to_string()));
        let default = match &param.default {
            Some((text, span)) => {
                let text = LitStr::new(text, *span);
                quote! { ::core::option::Option::Some(#text) }
            }
            None => quote! { ::core::option::Option::None },
        };
        let description = &param.description;
        quote! { ::xplug_sdk::TypedParamDecl::new(#name, ::xplug_sdk::ParamKind::#kind, #default, #description) }
    });
    let c = list.iter().map(|param| {
        let name = c_str(&param.name.unraw().to_string(), param.name.span());
        let kind = c_str(&param.kind.to_string(), param.kind.span());
        let default = match &param.default {
            Some((text, span)) => {
                let text = c_str(text, *span);
                quote! { ::core::option::Option::Some(#text) }
            }
            None => quote! { ::core::option::Option::None },
        };
        let description = c_str(&param.description.value(), param.description.span());
        quote! { ::xplug_sdk::__private::CParamDecl::new(#name, #kind, #default, #description) }
    });
    let statics = quote! {
        const __XPLUG_TYPED_PARAM_DECLS: [::xplug_sdk::TypedParamDecl; #count] = [#(#rust),*];
        static __XPLUG_PARAM_DECLS: [::xplug_sdk::__private::CParamDecl; #count] = [#(#c),*];
    };
    if params.is_none() {
        return (statics, quote! { ::core::option::Option::None }, TokenStream2::new());
    }
    let export = quote! {
        /// The plugin's declared load parameters, for tools.
        #[unsafe(no_mangle)]
        pub extern "C" fn xplug_plugin_params(
            out_count: ::core::option::Option<&mut usize>,
        ) -> *const ::xplug_sdk::abi::ParamDecl {
            ::xplug_sdk::__private::param_decls_list::<__XplugPlugin>(out_count)
        }
    };
    (statics, quote! { ::core::option::Option::Some(&__XPLUG_TYPED_PARAM_DECLS) }, export)
}

/// The `xplug_sdk::ParamKind` variant for a parameter type name.
fn variant_name(kind: &str) -> String {
    let mut chars = kind.chars();
    chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// Sorts `imports` by the bytes the resolver compares and refuses a symbol
/// exported twice, pointing at both.
fn sort_and_check_unique(imports: &mut [ImportFnInfo]) -> syn::Result<()> {
    imports.sort_by(|a, b| a.symbol.as_bytes().cmp(b.symbol.as_bytes()));
    for pair in imports.windows(2) {
        if pair[0].symbol == pair[1].symbol {
            let mut error = syn::Error::new(
                pair[1].symbol_span,
                format!(
                    "duplicate import symbol `{}`: each symbol is exported once; rename one of them \
                     (`{}` and `{}` both claim it)",
                    pair[1].symbol, pair[0].fn_ident, pair[1].fn_ident
                ),
            );
            error.combine(syn::Error::new(pair[0].symbol_span, "first exported here"));
            return Err(error);
        }
    }
    Ok(())
}

/// The marker type standing for one import.
fn marker_ident(import: &ImportFnInfo) -> syn::Ident {
    format_ident!("__XplugImport_{}", import.fn_ident)
}

/// The name of `import`'s C entry: `xplug_import_` and the author's
/// function name (a Rust identifier, unlike some symbols).
fn entry_ident(import: &ImportFnInfo) -> syn::Ident {
    format_ident!("xplug_import_{}", import.fn_ident)
}

/// The marker type of `import` and its `Import` implementation, which calls
/// the author's function.
fn import_marker(import: &ImportFnInfo, state_ty: &syn::Type) -> TokenStream2 {
    let marker = marker_ident(import);
    let fn_ident = &import.fn_ident;
    let args_ty = &import.args_ty;
    let uses_state = import.takes_state;
    let call = if import.takes_state {
        quote_spanned! {import.return_span=>
            let ::core::option::Option::Some(state) = state else {
                return ::xplug_sdk::ImportError::INVALID_ARGUMENT.code();
            };
            ::xplug_sdk::ImportReturn::into_code(#fn_ident(args, state))
        }
    } else {
        quote_spanned! {import.return_span=>
            let _ = state;
            ::xplug_sdk::ImportReturn::into_code(#fn_ident(args))
        }
    };
    let args_assoc = quote_spanned! {args_ty.span()=> type Args = #args_ty; };
    let symbol = LitStr::new(&import.symbol, import.symbol_span);
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub struct #marker;
        impl ::xplug_sdk::__private::Import for #marker {
            const PLUGIN: &'static str = <__XplugPlugin as ::xplug_sdk::__private::PluginDef>::NAME;
            const SYMBOL: &'static str = #symbol;
            #args_assoc
            type State = #state_ty;
            const USES_STATE: bool = #uses_state;
            fn call(
                args: &mut <Self as ::xplug_sdk::__private::Import>::Args,
                state: ::core::option::Option<&<Self as ::xplug_sdk::__private::Import>::State>,
            ) -> ::core::ffi::c_int {
                #call
            }
        }
    }
}

/// The linked deployment of every import (`xplug_sdk`'s `linked` module),
/// compiled only with `--cfg xplug_linked` (`xplug build --object` and
/// `--bitcode`): the import's symbol made an alias of the args type's
/// generic linked entry for its marker, and the record `xplug build` reads
/// to print the MLIR declaration. An import that takes the plugin state,
/// or whose symbol is not a C identifier, is refused in that build only.
fn linked_items(imports: &[ImportFnInfo]) -> TokenStream2 {
    let items = imports.iter().map(|import| {
        let symbol = &import.symbol;
        let fn_ident = &import.fn_ident;
        if import.takes_state {
            let message = format!(
                "import `{symbol}` (fn `{fn_ident}`) takes the plugin state, which a kernel linked into the \
                 executable does not have (there is no `load`): keep it an import, or make it stateless"
            );
            return quote_spanned! {import.symbol_span=> #[cfg(xplug_linked)] ::core::compile_error!(#message); };
        }
        let identifier = symbol.chars().next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
            && symbol.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
        if !identifier {
            let message = format!(
                "import symbol `{symbol}` (fn `{fn_ident}`) is not a C identifier, so it cannot name a function \
                 linked into the executable: rename it (letters, digits and `_`)"
            );
            return quote_spanned! {import.symbol_span=> #[cfg(xplug_linked)] ::core::compile_error!(#message); };
        }
        let marker = marker_ident(import);
        let args_ty = &import.args_ty;
        let record = format_ident!("__XPLUG_LINKED_{}", fn_ident);
        let section = LitStr::new(xplug_abi::LINKED_SECTION, Span::call_site());
        let symbol_lit = LitStr::new(symbol, import.symbol_span);
        let length = symbol.len() + 2;
        let globl = format!(".globl {symbol}");
        let hidden = format!(".hidden {symbol}");
        let kind = format!(".type {symbol}, @function");
        let alias = format!(".set {symbol}, {{entry}}");
        quote! {
            #[cfg(xplug_linked)]
            ::core::arch::global_asm!(
                #globl, #hidden, #kind, #alias,
                entry = sym <#args_ty>::__xplug_linked_entry::<super::#marker>,
            );
            #[cfg(xplug_linked)]
            #[used]
            #[unsafe(link_section = #section)]
            #[allow(non_upper_case_globals)]
            static #record: [u8; #length + <#args_ty>::__XPLUG_LINKED_PARAMS.len()] =
                ::xplug_sdk::__private::linked_record(#symbol_lit, <#args_ty>::__XPLUG_LINKED_PARAMS);
        }
    });
    quote! {
        /// The linked deployment (`--cfg xplug_linked`), which the crate
        /// need not declare, hence the `unexpected_cfgs` allowance.
        #[doc(hidden)]
        #[allow(unexpected_cfgs)]
        mod __xplug_linked {
            #[allow(unused_imports)]
            use super::*;
            #(#items)*
        }
    }
}

/// A C string literal; the callers checked that `value` has no NUL.
fn c_str(value: &str, span: Span) -> LitCStr {
    LitCStr::new(&CString::new(value).expect("checked: no NUL"), span)
}

/// The header's feature bits, spelled with `xplug_abi`'s constants (each
/// named bit's constant is its lower-case name in capitals).
fn features_expr(features: Features) -> TokenStream2 {
    let bits: Vec<TokenStream2> = features
        .names()
        .map(|name| {
            let name = format_ident!("{}", name.to_uppercase());
            quote! { ::xplug_sdk::abi::Features::#name.0 }
        })
        .collect();
    if bits.is_empty() {
        quote! { ::xplug_sdk::abi::Features::NONE }
    } else {
        quote! { ::xplug_sdk::abi::Features(#(#bits)|*) }
    }
}

/// The header's sanitizer, spelled with `xplug_abi`'s constant of that name.
fn sanitizer_expr(sanitizer: Sanitizer) -> TokenStream2 {
    let name = sanitizer.name().expect("parsed from a known name").to_uppercase();
    let name = format_ident!("{name}");
    quote! { ::xplug_sdk::abi::Sanitizer::#name }
}

/// The hash index of the sorted `imports` (see `xplug_abi::name_hash`): the
/// `static` holding its slots and the `HashIndex` expression naming it.
/// Slots are 16-bit when every value (table index + 1) fits, else 32-bit.
fn hash_index(imports: &[ImportFnInfo]) -> syn::Result<(TokenStream2, TokenStream2)> {
    let too_many = || {
        syn::Error::new(
            Span::call_site(),
            format!("a plugin exports at most {} imports; split this one", u32::MAX - 1),
        )
    };
    let mut slots = vec![0u32; xplug_abi::hash_index_capacity(imports.len())];
    for (index, import) in imports.iter().enumerate() {
        let value = u32::try_from(index + 1).map_err(|_| too_many())?;
        if !xplug_abi::hash_index_insert(&mut slots, xplug_abi::name_hash(import.symbol.as_bytes()), value) {
            return Err(too_many());
        }
    }
    let capacity = slots.len();
    Ok(if imports.len() <= usize::from(u16::MAX) {
        let values = slots.iter().map(|&value| {
            proc_macro2::Literal::u16_unsuffixed(u16::try_from(value).expect("checked: at most u16::MAX"))
        });
        (
            quote! { static __XPLUG_HASH_INDEX: [u16; #capacity] = [#(#values),*]; },
            quote! { ::xplug_sdk::__private::HashIndex::Narrow(&__XPLUG_HASH_INDEX) },
        )
    } else {
        let values = slots.iter().map(|&value| proc_macro2::Literal::u32_unsuffixed(value));
        (
            quote! { static __XPLUG_HASH_INDEX: [u32; #capacity] = [#(#values),*]; },
            quote! { ::xplug_sdk::__private::HashIndex::Wide(&__XPLUG_HASH_INDEX) },
        )
    })
}
