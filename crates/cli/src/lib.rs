//! The library target of `xplug-cli`: empty on purpose.
//!
//! The `xplug` command is the binary (`src/main.rs`). This target exists
//! because Cargo enables a feature for tests only through a dev-dependency,
//! and a package can be its own dev-dependency only when it has a library:
//! `xplug-cli`'s tests depend on `xplug-cli` with the `sample-static`
//! feature, so the `xplug` they run has the example static plugin linked in
//! while the shipped binary (built without dev-dependencies) has none.
