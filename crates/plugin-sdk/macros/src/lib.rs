//! Procedural macros behind `xplug-sdk`: `#[plugin]` and
//! `#[derive(ImportArgs)]`. Use them through `xplug_sdk`; the generated
//! code refers to `::xplug_sdk` paths. A whole plugin, shown as text: a
//! doctest here would need `xplug-sdk`, which depends on this crate.
//! `xplug-sdk`'s front page has the same shape with a state and a
//! parameter, and runs it:
//!
//! ```text
//! use xplug_sdk::{ImportArgs, ImportError};
//!
//! #[derive(ImportArgs)]
//! #[repr(C)]
//! pub struct AddArgs { pub a: f32, pub b: f32, pub result: f32 }
//!
//! #[xplug_sdk::plugin(name = "adder", description = "adds two floats")]
//! mod plugin {
//!     use super::*;
//!
//!     #[import("add_f32")]
//!     fn add(args: &mut AddArgs) -> Result<(), ImportError> {
//!         args.result = args.a + args.b;
//!         Ok(())
//!     }
//! }
//! ```
//!
//! The work is split in three steps over five private modules:
//!
//! * parsing, `parse`: the attribute arguments and the `#[import]` markers,
//!   read into plain values (`PluginArgs`, symbol names), and the token
//!   helpers the other modules share;
//! * analysis, `signature`: what each `#[import]` function looks like
//!   (`ImportFnInfo`), refusing any shape the generated entry point cannot
//!   call;
//! * expansion: `expand` for `#[plugin]`, `args` for
//!   `#[derive(ImportArgs)]`, and `cdecl` for the C declaration `args`
//!   emits beside the Rust items.
//!
//! ABI values (feature bits, sanitizer kinds, the hash function of the
//! export index) come from `xplug-abi`, never retyped here.

use proc_macro::TokenStream;

mod args;
mod cdecl;
mod expand;
mod parse;
mod signature;

/// Turns an inline module into an IREE executable plugin (ABI v0).
///
/// See the `xplug-sdk` crate documentation for the arguments and the shape
/// of `#[import]` functions.
#[proc_macro_attribute]
pub fn plugin(args: TokenStream, item: TokenStream) -> TokenStream {
    let module = syn::parse_macro_input!(item as syn::ItemMod);
    let mut config = parse::PluginArgs::default();
    let parser = syn::meta::parser(|meta| config.parse(meta));
    syn::parse_macro_input!(args with parser);
    match expand::expand_plugin(config, module) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// Implements `xplug_sdk::ImportArgs` (and `xplug_sdk::AnyBitPattern`)
/// for a `#[repr(C)]` struct whose fields are valid for any bit pattern.
///
/// Refuses a struct without `#[repr(C)]` (its layout would not match the C
/// struct the executable passes), generic structs, enums and unions, and
/// fields such as `bool`, `char`, references, `String`, `Vec`, `Box` or
/// `NonNull<T>`, naming the field and what to use instead. Every field type
/// must also implement `xplug_sdk::AnyBitPattern`, which the compiler checks.
///
/// `#[import_field]` on a field marks one IREE appends for
/// `hal.import.fields` (`processor_id`, `processor_data`): a linked call
/// (`xplug build --object`) does not pass it and the kernel sees it zeroed.
#[proc_macro_derive(ImportArgs, attributes(import_field))]
pub fn derive_import_args(item: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(item as syn::DeriveInput);
    match args::expand_import_args(&input) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}
