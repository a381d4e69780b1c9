//! The last line of defence: cudarc panics when a library or symbol cannot be loaded. Every call
//! into CUDA goes through [`guarded`], which turns a panic into an error message, and keeps the
//! default panic hook from printing it while the probe handles it.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Mutex, Once};

thread_local! {
    static GUARDED: Cell<bool> = const { Cell::new(false) };
}

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);
static INSTALL_HOOK: Once = Once::new();

/// Run `f`, turning a panic inside it into `Err` with the panic message. `what` names the call
/// for the message ("cuInit").
pub fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    INSTALL_HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) {
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
            } else {
                previous(info);
            }
        }));
    });
    let was_guarded = GUARDED.with(|g| g.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was_guarded));
    result.map_err(|_| {
        let message = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
        format!("{what} failed inside the CUDA bindings: {}", message.unwrap_or_else(|| "unknown panic".to_owned()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_errors_and_values_pass_through() {
        assert_eq!(guarded("add", || 1 + 1), Ok(2));
        let error = guarded("cuInit", || -> u32 { panic!("Missing symbol cuInit") }).unwrap_err();
        assert_eq!(error, "cuInit failed inside the CUDA bindings: Missing symbol cuInit");
        let formatted = guarded("x", || -> u32 { panic!("code {}", 7) }).unwrap_err();
        assert!(formatted.ends_with("code 7"));
    }
}
