//! The one way the store takes a mutex: a panic while another thread held it
//! poisons it, and what it holds may then be half changed; each caller says how to
//! put that right (forget it, or nothing, when what it holds stays usable).

use std::sync::{Mutex, MutexGuard};

/// The guard of `mutex`; when a panic poisoned it, `reset` runs on what it holds
/// first.
pub fn locked<T>(mutex: &Mutex<T>, reset: impl FnOnce(&mut T)) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => {
            let mut guard = poisoned.into_inner();
            reset(&mut guard);
            guard
        }
    }
}

/// What [`locked`] runs when what the mutex holds stays usable after a panic.
pub fn as_it_is<T>(_: &mut T) {}
