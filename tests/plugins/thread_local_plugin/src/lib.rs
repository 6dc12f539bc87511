//! `thread_local_plugin`: a Rust plugin whose import leaves a thread-local
//! with a destructor on the calling thread.
//!
//! The destructor runs when that thread ends, which may be long after the
//! host unloaded the plugin: the host must keep the library's code mapped
//! (its unload policy for Rust libraries), or the ending thread jumps into
//! unmapped memory.
//!
//! Import `tls_touch` (args: [`TouchArgs`]): adds `value` to this
//! thread's counter and writes the counter to `total`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use xplug_sdk::{ImportArgs, ImportError};

/// Args of `tls_touch`.
#[derive(Debug, Default, ImportArgs)]
#[repr(C)]
pub struct TouchArgs {
    /// Added to the calling thread's counter.
    pub value: u64,
    /// Output: the thread's counter after the addition.
    pub total: u64,
}

/// How many thread-local counters were destroyed (threads that called
/// `tls_touch` and ended), readable through `tls_destroyed`.
static DESTROYED: AtomicU64 = AtomicU64::new(0);

/// A per-thread counter whose destructor does work in the plugin's code.
struct Counter(Cell<u64>);

impl Drop for Counter {
    fn drop(&mut self) {
        DESTROYED.fetch_add(1, Ordering::SeqCst);
    }
}

thread_local! {
    static COUNTER: Counter = const { Counter(Cell::new(0)) };
}

/// Args of `tls_destroyed`.
#[derive(Debug, Default, ImportArgs)]
#[repr(C)]
pub struct DestroyedArgs {
    /// Output: thread-local counters destroyed so far.
    pub count: u64,
}

#[xplug_sdk::plugin(
    name = "thread_local_plugin",
    description = "leaves a thread-local with a destructor on calling threads (xplug test)"
)]
mod plugin {
    use super::*;

    #[import("tls_touch")]
    fn touch(args: &mut TouchArgs) -> Result<(), ImportError> {
        args.total = COUNTER.with(|counter| {
            counter.0.set(counter.0.get().wrapping_add(args.value));
            counter.0.get()
        });
        Ok(())
    }

    #[import("tls_destroyed")]
    fn destroyed(args: &mut DestroyedArgs) -> Result<(), ImportError> {
        args.count = DESTROYED.load(Ordering::SeqCst);
        Ok(())
    }
}

pub use plugin::PLUGIN;
