//! Reading the macros' inputs: `#[plugin(...)]` arguments, `#[import]`
//! markers and `#[repr]` attributes.

use proc_macro2::{Group, Span, TokenStream as TokenStream2, TokenTree};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Ident, Item, ItemFn, Lit, LitStr, Token, Type};
use xplug_abi::{Features, ParamKind, Sanitizer};

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
    /// `params(...)`: the declared load parameters; `None` when the
    /// plugin does not declare them.
    pub(crate) params: Option<Vec<ParamArg>>,
}

/// One `name: kind [= default] "description"` in `params(...)`.
pub(crate) struct ParamArg {
    /// The key.
    pub(crate) name: Ident,
    /// The type name (the name of a [`ParamKind`]).
    pub(crate) kind: Ident,
    /// The default as text, with the span of the literal.
    pub(crate) default: Option<(String, Span)>,
    /// What the parameter does.
    pub(crate) description: LitStr,
}

impl Parse for ParamArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>().map_err(|error| {
            syn::Error::new(error.span(), "write a parameter as `name: type [= default] \"description\"`")
        })?;
        let kind: Ident = input.parse()?;
        if ParamKind::from_name(&kind.to_string()).is_none() {
            return Err(syn::Error::new(
                kind.span(),
                format!(
                    "unknown parameter type `{kind}`; use one of {}",
                    ParamKind::ALL.map(ParamKind::name).join(", ")
                ),
            ));
        }
        let default = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            let negative = input.peek(Token![-]);
            if negative {
                input.parse::<Token![-]>()?;
            }
            let literal: Lit = input.parse()?;
            let text = match &literal {
                Lit::Str(value) if !negative => value.value(),
                Lit::Int(value) => value.base10_digits().to_owned(),
                Lit::Float(value) => value.base10_digits().to_owned(),
                Lit::Bool(value) if !negative => value.value.to_string(),
                _ => {
                    return Err(syn::Error::new(
                        literal.span(),
                        "a default is a number, `true`/`false`, or a string literal",
                    ));
                }
            };
            let text = if negative { format!("-{text}") } else { text };
            if !default_fits(&kind.to_string(), &text) {
                return Err(syn::Error::new(
                    literal.span(),
                    format!("the default `{text}` is not a valid `{kind}`"),
                ));
            }
            Some((text, literal.span()))
        } else {
            None
        };
        let description: LitStr = input.parse().map_err(|error| {
            syn::Error::new(
                error.span(),
                "each parameter needs a description string: `name: type \"what it does\"`",
            )
        })?;
        Ok(Self { name, kind, default, description })
    }
}

/// Whether `text` is a valid value of parameter type `kind`: the parser
/// hosts and plugins apply at load time, [`xplug_abi::ParamKind::parse`].
fn default_fits(kind: &str, text: &str) -> bool {
    ParamKind::from_name(kind).is_some_and(|kind| kind.accepts(text.as_bytes()))
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
        } else if meta.path.is_ident("params") {
            let content;
            syn::parenthesized!(content in meta.input);
            let list = Punctuated::<ParamArg, Token![,]>::parse_terminated(&content)?;
            let mut params: Vec<ParamArg> = Vec::new();
            for param in list {
                if params.iter().any(|seen| seen.name == param.name) {
                    return Err(syn::Error::new(
                        param.name.span(),
                        format!("parameter `{}` is declared twice", param.name),
                    ));
                }
                if param.description.value().contains('\0') {
                    return Err(syn::Error::new(
                        param.description.span(),
                        "a description must not contain NUL",
                    ));
                }
                if param.default.as_ref().is_some_and(|(text, _)| text.contains('\0')) {
                    return Err(syn::Error::new(param.name.span(), "a default must not contain NUL"));
                }
                params.push(param);
            }
            self.params = Some(params);
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
                "unknown `plugin` argument; expected `name`, `description`, `features(...)`, `state`, `sanitizer` or `params(...)`",
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

/// `tokens` with `Self` replaced by `name`, so a field type such as
/// `*const Self` can be named outside the struct.
pub(crate) fn replace_self(tokens: TokenStream2, name: &syn::Ident) -> TokenStream2 {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Ident(ident) if ident == "Self" => {
                let mut renamed = name.clone();
                renamed.set_span(ident.span());
                TokenTree::Ident(renamed)
            }
            TokenTree::Group(group) => {
                let mut replaced = Group::new(group.delimiter(), replace_self(group.stream(), name));
                replaced.set_span(group.span());
                TokenTree::Group(replaced)
            }
            other => other,
        })
        .collect()
}
