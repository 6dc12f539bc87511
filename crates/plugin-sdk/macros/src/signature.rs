//! The shape of an `#[import]` function: what the generated entry point
//! needs to know, and a precise error for anything it cannot call.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, Pat, ReturnType, Type};

/// One `#[import]` function, analysed.
pub(crate) struct ImportFnInfo {
    /// The exported symbol.
    pub(crate) symbol: String,
    /// Where the symbol was written (for duplicate errors).
    pub(crate) symbol_span: Span,
    /// The Rust function.
    pub(crate) fn_ident: syn::Ident,
    /// `P` in `args: &mut P`.
    pub(crate) args_ty: Type,
    /// Whether the function takes `state: &State`.
    pub(crate) takes_state: bool,
    /// Where the return type is written (for `ImportReturn` errors).
    pub(crate) return_span: Span,
}

/// The accepted shapes, appended to every signature error.
const SHAPE: &str = "an import is `fn(args: &mut Args) -> R` or `fn(args: &mut Args, state: &State) -> R` \
     with `R` one of `Result<(), xplug_sdk::ImportError>`, `i32`, `()`";

/// Checks the signature of `function`, exported as `symbol`; `has_state`
/// says whether the plugin declares a state type.
pub(crate) fn analyse_import(
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
            format!("the import takes no args. {SHAPE}"),
        ));
    };
    let args_ty = match first {
        FnArg::Typed(arg) => match &*arg.ty {
            Type::Reference(reference) if reference.mutability.is_some() => (*reference.elem).clone(),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    format!(
                        "the first parameter must borrow the args struct mutably: `args: &mut Args`. {SHAPE}"
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
    if let Some(FnArg::Typed(arg)) = sig.inputs.first()
        && !matches!(&*arg.pat, Pat::Ident(_) | Pat::Wild(_))
    {
        return Err(syn::Error::new(arg.pat.span(), "bind the args to a plain name, e.g. `args`"));
    }
    let return_span = match &sig.output {
        ReturnType::Default => sig.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    };
    Ok(ImportFnInfo { symbol, symbol_span, fn_ident: sig.ident.clone(), args_ty, takes_state, return_span })
}
