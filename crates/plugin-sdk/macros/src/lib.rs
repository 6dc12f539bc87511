//! Procedural macros behind `xplug-sdk`: `#[plugin]` and
//! `#[derive(ImportParams)]`. Use them through `xplug_sdk`; the generated
//! code refers to `::xplug_sdk` paths.

use std::ffi::CString;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DeriveInput, FnArg, Item, ItemFn, ItemMod, LitCStr, LitStr, Pat, ReturnType, Type,
};

/// Turns an inline module into an IREE executable plugin (ABI v0).
///
/// See the `xplug-sdk` crate documentation for the arguments and the shape
/// of `#[import]` functions.
#[proc_macro_attribute]
pub fn plugin(args: TokenStream, item: TokenStream) -> TokenStream {
    let module = syn::parse_macro_input!(item as ItemMod);
    let mut config = PluginArgs::default();
    let parser = syn::meta::parser(|meta| config.parse(meta));
    syn::parse_macro_input!(args with parser);
    match expand_plugin(config, module) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// Implements `xplug_sdk::ImportParams` for a `#[repr(C)]` struct.
///
/// Refuses a struct without `#[repr(C)]` (its layout would not match the C
/// struct the executable passes), generic structs, enums and unions.
#[proc_macro_derive(ImportParams)]
pub fn derive_import_params(item: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(item as DeriveInput);
    match expand_import_params(&input) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

fn expand_import_params(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if !matches!(input.data, Data::Struct(_)) {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "`ImportParams` can only be derived for a struct; declare `{name}` as a `#[repr(C)] struct` matching the C params struct"
            ),
        ));
    }
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            format!("`{name}` must not be generic to be an import's params type; use concrete field types"),
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
    Ok(quote! {
        // SAFETY: `#[repr(C)]` was checked by the derive; the author vouches
        // that the fields match the executable's C struct.
        unsafe impl ::xplug_sdk::ImportParams for #name {}
    })
}

fn has_repr_c(attrs: &[Attribute]) -> syn::Result<bool> {
    let mut found = false;
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") {
                found = true;
            } else if meta.input.peek(syn::token::Paren) {
                // `align(N)` / `packed(N)`: skip the argument.
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
            Ok(())
        })?;
    }
    Ok(found)
}

#[derive(Default)]
struct PluginArgs {
    name: Option<LitStr>,
    description: Option<LitStr>,
    standalone: bool,
    state: Option<Type>,
    sanitizer: Option<(i32, Span)>,
}

impl PluginArgs {
    fn parse(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        if meta.path.is_ident("name") {
            self.name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("description") {
            self.description = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("state") {
            self.state = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("sanitizer") {
            let value: LitStr = meta.value()?.parse()?;
            let kind = match value.value().as_str() {
                "none" => 0,
                "address" => 1,
                "memory" => 2,
                "thread" => 3,
                "undefined" => 4,
                other => {
                    return Err(syn::Error::new(
                        value.span(),
                        format!(
                            "unknown sanitizer `{other}`; use one of none, address, memory, thread, undefined"
                        ),
                    ));
                }
            };
            self.sanitizer = Some((kind, value.span()));
        } else if meta.path.is_ident("features") {
            meta.parse_nested_meta(|feature| {
                if feature.path.is_ident("standalone") {
                    self.standalone = true;
                    Ok(())
                } else if feature.path.is_ident("full_status") {
                    Err(feature.error(
                        "xplug-sdk plugins return plain status codes, not IREE status objects; remove `full_status`",
                    ))
                } else {
                    Err(feature.error("unknown plugin feature; the only one is `standalone`"))
                }
            })?;
        } else {
            return Err(meta.error(
                "unknown `plugin` argument; expected `name`, `description`, `features(...)`, `state` or `sanitizer`",
            ));
        }
        Ok(())
    }
}

struct ImportFnInfo {
    symbol: String,
    symbol_span: Span,
    fn_ident: syn::Ident,
    params_ty: Type,
    takes_state: bool,
    return_span: Span,
}

const SHAPE: &str = "an import is `fn(params: &mut Params) -> R` or `fn(params: &mut Params, state: &State) -> R` \
     with `R` one of `Result<(), xplug_sdk::ImportError>`, `i32`, `()`";

fn take_import_attr(function: &mut ItemFn) -> syn::Result<Option<(String, Span)>> {
    let Some(position) = function.attrs.iter().position(|attr| attr.path().is_ident("import")) else {
        return Ok(None);
    };
    let attr = function.attrs.remove(position);
    if let Some(extra) = function.attrs.iter().find(|attr| attr.path().is_ident("import")) {
        return Err(syn::Error::new(
            extra.span(),
            "a function has one `#[import]`; write a second function to export another symbol",
        ));
    }
    let (symbol, span) = match &attr.meta {
        syn::Meta::Path(_) => (function.sig.ident.to_string(), function.sig.ident.span()),
        syn::Meta::List(_) => {
            let literal: LitStr = attr.parse_args().map_err(|error| {
                syn::Error::new(error.span(), "write the symbol as a string: `#[import(\"symbol_name\")]`")
            })?;
            (literal.value(), literal.span())
        }
        syn::Meta::NameValue(_) => {
            return Err(syn::Error::new(attr.span(), "write the symbol as `#[import(\"symbol_name\")]`"));
        }
    };
    if symbol.is_empty() || symbol.starts_with('?') || symbol.contains('\0') {
        return Err(syn::Error::new(
            span,
            "an import symbol is a non-empty name without NUL bytes and without the `?` optional marker \
             (optionality is decided by the executable)",
        ));
    }
    Ok(Some((symbol, span)))
}

fn analyse_import(
    function: &ItemFn,
    symbol: String,
    symbol_span: Span,
    has_state: bool,
) -> syn::Result<ImportFnInfo> {
    let sig = &function.sig;
    if let Some(token) = &sig.asyncness {
        return Err(syn::Error::new(
            token.span,
            format!("imports run synchronously; remove `async`. {SHAPE}"),
        ));
    }
    if let Some(token) = &sig.unsafety {
        return Err(syn::Error::new(
            token.span,
            format!("imports are safe functions; remove `unsafe`. {SHAPE}"),
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new(
            abi.span(),
            format!("the SDK generates the C entry point; remove the ABI. {SHAPE}"),
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(sig.generics.span(), format!("imports cannot be generic. {SHAPE}")));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(variadic.span(), format!("imports are not variadic. {SHAPE}")));
    }
    let mut inputs = sig.inputs.iter();
    let Some(first) = inputs.next() else {
        return Err(syn::Error::new(
            sig.paren_token.span.join(),
            format!("the import takes no params. {SHAPE}"),
        ));
    };
    let params_ty = match first {
        FnArg::Typed(arg) => match &*arg.ty {
            Type::Reference(reference) if reference.mutability.is_some() => (*reference.elem).clone(),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    format!(
                        "the first parameter must borrow the params struct mutably: `params: &mut Params`. {SHAPE}"
                    ),
                ));
            }
        },
        FnArg::Receiver(receiver) => {
            return Err(syn::Error::new(
                receiver.span(),
                format!("imports are free functions, not methods. {SHAPE}"),
            ));
        }
    };
    let takes_state = match inputs.next() {
        None => false,
        Some(FnArg::Typed(arg)) => {
            if !matches!(&*arg.ty, Type::Reference(reference) if reference.mutability.is_none()) {
                return Err(syn::Error::new(
                    arg.ty.span(),
                    format!(
                        "the second parameter must borrow the plugin state immutably: `state: &State`. {SHAPE}"
                    ),
                ));
            }
            if !has_state {
                return Err(syn::Error::new(
                    arg.span(),
                    "this plugin declares no state; add `state = YourState` to `#[plugin(...)]` \
                     or remove the second parameter",
                ));
            }
            true
        }
        Some(other) => return Err(syn::Error::new(other.span(), SHAPE)),
    };
    if let Some(extra) = inputs.next() {
        return Err(syn::Error::new(extra.span(), format!("too many parameters. {SHAPE}")));
    }
    if let Some(FnArg::Typed(arg)) = sig.inputs.first() {
        if !matches!(&*arg.pat, Pat::Ident(_) | Pat::Wild(_)) {
            return Err(syn::Error::new(arg.pat.span(), "bind the params to a plain name, e.g. `params`"));
        }
    }
    let return_span = match &sig.output {
        ReturnType::Default => sig.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    };
    Ok(ImportFnInfo { symbol, symbol_span, fn_ident: sig.ident.clone(), params_ty, takes_state, return_span })
}

fn expand_plugin(config: PluginArgs, mut module: ItemMod) -> syn::Result<TokenStream2> {
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
    let state_ty: Type = config.state.clone().unwrap_or_else(|| syn::parse_quote!(()));
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

    // Sort by the bytes the resolver compares and reject duplicates.
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

    let mut generated = Vec::new();
    let mut export_entries = Vec::new();
    let mut export_names = Vec::new();
    let mut symbols = Vec::new();
    for import in &imports {
        let marker = format_ident!("__XplugImport_{}", import.fn_ident);
        let fn_ident = &import.fn_ident;
        let params_ty = &import.params_ty;
        let uses_state = import.takes_state;
        let call = if import.takes_state {
            quote_spanned! {import.return_span=>
                let ::core::option::Option::Some(state) = state else {
                    return ::xplug_sdk::ImportError::INVALID_ARGUMENT.code();
                };
                ::xplug_sdk::ImportReturn::into_code(#fn_ident(params, state))
            }
        } else {
            quote_spanned! {import.return_span=>
                let _ = state;
                ::xplug_sdk::ImportReturn::into_code(#fn_ident(params))
            }
        };
        let params_assoc = quote_spanned! {params_ty.span()=> type Params = #params_ty; };
        generated.push(quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            pub struct #marker;
            impl ::xplug_sdk::__private::Import for #marker {
                #params_assoc
                type State = #state_ty;
                const USES_STATE: bool = #uses_state;
                fn call(
                    params: &mut <Self as ::xplug_sdk::__private::Import>::Params,
                    state: ::core::option::Option<&<Self as ::xplug_sdk::__private::Import>::State>,
                ) -> ::core::ffi::c_int {
                    #call
                }
            }
        });
        let c_name =
            LitCStr::new(&CString::new(import.symbol.clone()).expect("checked: no NUL"), import.symbol_span);
        let symbol = LitStr::new(&import.symbol, import.symbol_span);
        export_entries.push(quote! { ::xplug_sdk::__private::Export::new::<#marker>(#symbol) });
        export_names.push(quote! { ::xplug_sdk::__private::CName::new(#c_name) });
        symbols.push(symbol);
    }

    let count = imports.len();
    let (index_static, index_value) = hash_index(&imports)?;
    let features: u32 = u32::from(config.standalone);
    let sanitizer = config.sanitizer.map_or(0, |(kind, _)| kind);
    let c_plugin_name =
        LitCStr::new(&CString::new(name_value.clone()).expect("checked: no NUL"), name.span());
    let c_description =
        LitCStr::new(&CString::new(description_value.clone()).expect("checked: no NUL"), Span::call_site());
    let description_lit = LitStr::new(&description_value, Span::call_site());
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
        #index_static

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
        }

        #[doc = #plugin_doc]
        pub const PLUGIN: ::xplug_sdk::PluginInfo =
            ::xplug_sdk::__private::info::<__XplugPlugin>(#description_lit, &[#(#symbols),*]);

        #[cfg(feature = "export")]
        const _: () = {
            /// The v0 query function IREE's runtime looks up.
            #[unsafe(no_mangle)]
            pub extern "C" fn iree_hal_executable_plugin_query(
                max_version: ::xplug_sdk::abi::Version,
                reserved: *mut ::core::ffi::c_void,
            ) -> *mut *const ::xplug_sdk::abi::Header {
                ::xplug_sdk::__private::query::<__XplugPlugin>(max_version, reserved)
            }

            /// The plugin's sorted import names, for tools.
            #[unsafe(no_mangle)]
            pub extern "C" fn xplug_plugin_exports(
                out_count: ::core::option::Option<&mut usize>,
            ) -> *const *const ::core::ffi::c_char {
                ::xplug_sdk::__private::export_list::<__XplugPlugin>(out_count)
            }
        };

        #[cfg(not(feature = "export"))]
        ::xplug_sdk::__register_static!(__XplugPlugin);
    });

    for tokens in generated {
        items.extend(syn::parse2::<syn::File>(tokens)?.items);
    }
    Ok(quote! { #module })
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

fn item_attrs(item: &Item) -> Option<&[Attribute]> {
    Some(match item {
        Item::Const(item) => &item.attrs,
        Item::Static(item) => &item.attrs,
        Item::Struct(item) => &item.attrs,
        Item::Enum(item) => &item.attrs,
        Item::Impl(item) => &item.attrs,
        Item::Mod(item) => &item.attrs,
        Item::Type(item) => &item.attrs,
        Item::Use(item) => &item.attrs,
        Item::Trait(item) => &item.attrs,
        _ => return None,
    })
}
