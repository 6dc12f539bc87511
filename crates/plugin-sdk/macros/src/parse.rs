//! Reading the macros' inputs: `#[plugin(...)]` arguments, `#[import]`
//! markers and `#[repr]` attributes.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Item, ItemFn, LitStr, Type};
use xplug_abi::{Features, Sanitizer};

/// The arguments of `#[plugin(...)]`.
#[derive(Default)]
pub(crate) struct PluginArgs {
    /// `name = "..."` (required; checked by the expansion).
    pub(crate) name: Option<LitStr>,
    /// `description = "..."`.
    pub(crate) description: Option<LitStr>,
    /// The feature bits `features(...)` declares.
    pub(crate) features: Features,
    /// `state = Type`.
    pub(crate) state: Option<Type>,
    /// `sanitizer = "..."`, already mapped to its ABI value.
    pub(crate) sanitizer: Option<Sanitizer>,
}

impl PluginArgs {
    /// Parses one `key = value` / `key(...)` argument.
    pub(crate) fn parse(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        if meta.path.is_ident("name") {
            self.name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("description") {
            self.description = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("state") {
            self.state = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("sanitizer") {
            let value: LitStr = meta.value()?.parse()?;
            let Some(sanitizer) = Sanitizer::from_name(&value.value()) else {
                let known: Vec<&str> = Sanitizer::known().filter_map(Sanitizer::name).collect();
                return Err(syn::Error::new(
                    value.span(),
                    format!("unknown sanitizer `{}`; use one of {}", value.value(), known.join(", ")),
                ));
            };
            self.sanitizer = Some(sanitizer);
        } else if meta.path.is_ident("features") {
            meta.parse_nested_meta(|feature| {
                if feature.path.is_ident("standalone") {
                    self.features |= Features::STANDALONE;
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

/// Removes the `#[import]` / `#[import("symbol")]` attribute of `function`
/// and returns the symbol it names (the function's name by default) with
/// the span to report errors at; `None` when the function is not an import.
pub(crate) fn take_import_attr(function: &mut ItemFn) -> syn::Result<Option<(String, Span)>> {
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
    if symbol.is_empty() || xplug_abi::is_optional_bytes(symbol.as_bytes()) || symbol.contains('\0') {
        return Err(syn::Error::new(
            span,
            "an import symbol is a non-empty name without NUL bytes and without the `?` optional marker \
             (optionality is decided by the executable)",
        ));
    }
    Ok(Some((symbol, span)))
}

/// True when `attrs` include `#[repr(C)]` (possibly with other hints, as in
/// `#[repr(C, align(8))]`).
pub(crate) fn has_repr_c(attrs: &[Attribute]) -> syn::Result<bool> {
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

/// The attributes of the module items that can carry a misplaced
/// `#[import]`.
pub(crate) fn item_attrs(item: &Item) -> Option<&[Attribute]> {
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
