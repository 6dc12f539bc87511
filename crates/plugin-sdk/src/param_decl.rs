//! The declaration of one load parameter (`#[plugin(params(...))]`), apart
//! from the parsing of values in `params.rs`, so that errors can name the
//! declared parameters without depending on the parser.

use xplug_abi::ParamKind;

/// One load parameter a plugin declares in `#[plugin(params(...))]`:
/// name, type, optional default, description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypedParamDecl {
    name: &'static str,
    kind: ParamKind,
    default: Option<&'static str>,
    description: &'static str,
}

impl TypedParamDecl {
    /// A declaration (the macro checks that `default` is of `kind`).
    #[must_use]
    pub const fn new(
        name: &'static str,
        kind: ParamKind,
        default: Option<&'static str>,
        description: &'static str,
    ) -> Self {
        Self { name, kind, default, description }
    }

    /// The key.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The value's type.
    #[must_use]
    pub const fn kind(&self) -> ParamKind {
        self.kind
    }

    /// The value used when the key is absent.
    #[must_use]
    pub const fn default(&self) -> Option<&'static str> {
        self.default
    }

    /// What the parameter does.
    #[must_use]
    pub const fn description(&self) -> &'static str {
        self.description
    }
}
