//! The library half of `xplug-cli`: the human-output helpers ([`output`]:
//! tables, colours, terminal escaping, durations, progress, the `--json`
//! object) that the `xplug` binary (`src/main.rs`) reports with and that
//! `xtask` prints its tables and times with.
//!
//! It is also what lets the tests link the example static plugin into the
//! `xplug` they run: Cargo enables a feature for tests only through a
//! dev-dependency, and a package can be its own dev-dependency only when it
//! has a library. `xplug-cli`'s tests depend on `xplug-cli` with the
//! `sample-static` feature, so their `xplug` has `sample_static` linked in
//! while the shipped binary (built without dev-dependencies) has none.

pub mod output;
