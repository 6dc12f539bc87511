//! The resolve span and its events carry the provider count, the name count
//! and the outcome.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use xplug_manager::Manager;
use xplug_manager::providers::abi::StatusCode;

/// A `MakeWriter` collecting everything into a shared buffer.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

fn captured(run: impl FnOnce()) -> String {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(capture.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, run);
    String::from_utf8(capture.0.lock().unwrap().clone()).unwrap()
}

#[test]
fn resolve_is_traced_with_counts_and_outcome() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut exports = [false; SYMBOLS];
    exports[0] = true;
    let honest = ProviderSpec { exports, behaviour: Behaviour::Honest, lists_exports: true };
    let failing =
        ProviderSpec { exports, behaviour: Behaviour::Fails(StatusCode::INTERNAL), lists_exports: true };
    let manager = Manager::new();

    let log = captured(|| {
        manager.register_provider(Arc::new(FakeProvider::new(0, honest.clone(), calls.clone()))).unwrap();
        manager.register_provider(Arc::new(FakeProvider::new(1, honest, calls.clone()))).unwrap();
        manager.resolve_imports([symbol_name(0), "?relu", "?gelu"]).unwrap();
        manager.resolve_imports([symbol_name(1)]).unwrap_err();
    });
    assert!(log.contains("registered provider") && log.contains("provider=\"fake1\""), "{log}");
    assert!(log.contains("xplug_resolve{providers=2 names=3}"), "{log}");
    assert!(log.contains("resolved resolution=1"), "{log}");
    assert!(log.contains("xplug_resolve{providers=2 names=1}"), "{log}");
    assert!(log.contains("required imports missing missing=1"), "{log}");

    let log = captured(|| {
        manager.register_provider(Arc::new(FakeProvider::new(2, failing, calls.clone()))).unwrap();
        manager.resolve_imports([symbol_name(3)]).unwrap_err();
    });
    assert!(log.contains("provider failed provider=\"fake2\" code=INTERNAL"), "{log}");
}
