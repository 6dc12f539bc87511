//! Test providers with recognisable fake pointers, and the reference model of
//! `docs/src/reference/resolution.md#reference-model`, written independently of the
//! manager.
#![allow(dead_code, missing_docs, reason = "test helpers; each test binary uses a different subset")]

use std::ffi::{CString, c_void};
use std::sync::{Arc, Mutex};

use xplug_manager::providers::abi::{Resolution, StatusCode};
use xplug_manager::providers::{Error, ImportProvider, ResolveRequest};

/// Size of the symbol universe.
pub const SYMBOLS: usize = 12;

/// The bare name of symbol `id`. Distinct words so that suggestions are
/// meaningful, plus a near-twin pair (`sum_i32`/`sum_i64`).
pub fn symbol_name(id: usize) -> &'static str {
    [
        "add_f32",
        "sub_f32",
        "mul_f32",
        "div_f32",
        "sum_i32",
        "sum_i64",
        "conv2d",
        "matmul",
        "softmax",
        "relu",
        "gelu",
        "layernorm",
    ][id]
}

pub fn symbol_id(bare: &[u8]) -> Option<usize> {
    (0..SYMBOLS).find(|&id| symbol_name(id).as_bytes() == bare)
}

/// The non-null function pointer provider `provider` hands out for `symbol`
/// (never called).
pub fn fake_fn(provider: usize, symbol: usize) -> *mut c_void {
    (0x10_0000 + provider * 0x100 + symbol * 0x8) as *mut c_void
}

/// The context provider `provider` hands out for `symbol`.
pub fn fake_context(provider: usize, symbol: usize) -> *mut c_void {
    (0x900_0000 + provider * 0x100 + symbol * 0x8) as *mut c_void
}

/// The pointer used for slots that are filled before the request is made.
pub const PREFILLED_FN: *mut c_void = 0xdead_0000 as *mut c_void;
pub const PREFILLED_CONTEXT: *mut c_void = 0xbeef_0000 as *mut c_void;

/// How a fake provider answers after filling what it exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// OK / NOT_FOUND / MISSING_OPTIONAL judged from the slots.
    Honest,
    /// Fills, then fails with this code (NOT_FOUND included, via the
    /// generic failure variant).
    Fails(StatusCode),
    /// Fills, then always says OK with no missing optional.
    LiarOk,
    /// Fills, then always says NOT_FOUND.
    LiarNotFound,
}

#[derive(Clone, Debug)]
pub struct ProviderSpec {
    pub exports: [bool; SYMBOLS],
    pub behaviour: Behaviour,
    /// Whether `exported_names` lists the exports.
    pub lists_exports: bool,
}

/// A provider following a [`ProviderSpec`], logging its calls.
pub struct FakeProvider {
    pub id: usize,
    pub name: String,
    pub spec: ProviderSpec,
    pub calls: Arc<Mutex<Vec<usize>>>,
}

impl FakeProvider {
    pub fn new(id: usize, spec: ProviderSpec, calls: Arc<Mutex<Vec<usize>>>) -> Self {
        Self { id, name: format!("fake{id}"), spec, calls }
    }
}

impl ImportProvider for FakeProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn resolve(&self, request: &mut ResolveRequest<'_>) -> Result<Resolution, Error> {
        self.calls.lock().unwrap().push(self.id);
        for index in 0..request.len() {
            if let Some(symbol) = symbol_id(request.names()[index].bare())
                && self.spec.exports[symbol]
            {
                request.fill_untyped(index, fake_fn(self.id, symbol), fake_context(self.id, symbol));
            }
        }
        match self.spec.behaviour {
            Behaviour::Honest => request.outcome("fake"),
            Behaviour::Fails(code) => Err(Error::ResolveFailed {
                provider: self.name.clone(),
                code,
                message: "injected failure".into(),
            }),
            Behaviour::LiarOk => Ok(Resolution::NONE),
            Behaviour::LiarNotFound => Err(Error::NotFound { provider: "liar".into(), missing: 0 }),
        }
    }

    fn exported_names(&self) -> Option<Vec<String>> {
        self.spec.lists_exports.then(|| {
            (0..SYMBOLS).filter(|&s| self.spec.exports[s]).map(|s| symbol_name(s).to_owned()).collect()
        })
    }
}

/// One import of a request.
#[derive(Clone, Copy, Debug)]
pub struct Import {
    pub symbol: usize,
    pub optional: bool,
    pub prefilled: bool,
}

impl Import {
    pub fn declared(&self) -> String {
        format!("{}{}", if self.optional { "?" } else { "" }, symbol_name(self.symbol))
    }
}

/// What the reference model says a resolve produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok(Resolution),
    /// The provider at this registration index failed with this code.
    Failed {
        index: usize,
        code: StatusCode,
    },
    /// These request indices are required and empty.
    Missing(Vec<usize>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelResult {
    pub fns: Vec<*mut c_void>,
    pub contexts: Vec<*mut c_void>,
    pub outcome: Outcome,
    /// Registration indices of the providers called, in order.
    pub calls: Vec<usize>,
}

/// The reference model of `docs/src/reference/resolution.md#reference-model` over
/// `providers` (registration order, provider `i` having id `ids[i]`).
pub fn model(providers: &[(usize, &ProviderSpec)], request: &[Import]) -> ModelResult {
    let mut fns: Vec<*mut c_void> =
        request.iter().map(|i| if i.prefilled { PREFILLED_FN } else { std::ptr::null_mut() }).collect();
    let mut contexts: Vec<*mut c_void> =
        request.iter().map(|i| if i.prefilled { PREFILLED_CONTEXT } else { std::ptr::null_mut() }).collect();
    let mut calls = Vec::new();
    if request.is_empty() {
        return ModelResult { fns, contexts, outcome: Outcome::Ok(Resolution::NONE), calls };
    }
    for index in (0..providers.len()).rev() {
        if fns.iter().all(|f| !f.is_null()) {
            break;
        }
        let (id, spec) = providers[index];
        calls.push(index);
        for (slot, import) in request.iter().enumerate() {
            if fns[slot].is_null() && spec.exports[import.symbol] {
                fns[slot] = fake_fn(id, import.symbol);
                contexts[slot] = fake_context(id, import.symbol);
            }
        }
        if let Behaviour::Fails(code) = spec.behaviour
            && code != StatusCode::NOT_FOUND
            && code != StatusCode::OK
        {
            return ModelResult { fns, contexts, outcome: Outcome::Failed { index, code }, calls };
        }
    }
    let missing: Vec<usize> =
        (0..request.len()).filter(|&i| fns[i].is_null() && !request[i].optional).collect();
    let outcome = if !missing.is_empty() {
        Outcome::Missing(missing)
    } else if (0..request.len()).any(|i| fns[i].is_null()) {
        Outcome::Ok(Resolution::MISSING_OPTIONAL)
    } else {
        Outcome::Ok(Resolution::NONE)
    };
    ModelResult { fns, contexts, outcome, calls }
}

/// Owned C strings and slot arrays for a request.
pub struct RequestBuffers {
    pub names: Vec<CString>,
    pub fns: Vec<*mut c_void>,
    pub contexts: Vec<*mut c_void>,
}

impl RequestBuffers {
    pub fn new(request: &[Import]) -> Self {
        Self {
            names: request.iter().map(|i| CString::new(i.declared()).unwrap()).collect(),
            fns: request
                .iter()
                .map(|i| if i.prefilled { PREFILLED_FN } else { std::ptr::null_mut() })
                .collect(),
            contexts: request
                .iter()
                .map(|i| if i.prefilled { PREFILLED_CONTEXT } else { std::ptr::null_mut() })
                .collect(),
        }
    }
}

/// Converts a manager result into the model's terms.
pub fn outcome_of(result: &Result<Resolution, xplug_manager::Error>) -> Outcome {
    match result {
        Ok(resolution) => Outcome::Ok(*resolution),
        Err(xplug_manager::Error::ProviderFailed { index, source, .. }) => {
            Outcome::Failed { index: *index, code: source.code() }
        }
        Err(error @ xplug_manager::Error::MissingImports { .. }) => {
            assert_eq!(error.code(), StatusCode::NOT_FOUND);
            Outcome::Missing(error.missing_imports().iter().map(|m| m.index).collect())
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}

/// A tiny deterministic generator (xorshift64*), for tests that need
/// randomness outside proptest.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}
