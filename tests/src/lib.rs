//! Cross-crate integration tests for xplug (see `tests/`). The plugins the
//! tests load are built by `xplug-fixtures`; the args the tests call the
//! example kernels with are `iree_sample_args`' (its `host` feature).
