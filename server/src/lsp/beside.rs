//! One thread that runs work beside an edit: what a keystroke can start before its reparse is
//! done, on the other core.
//!
//! The lints' thread pool is not used for this: it may be busy linting other buffers, and an
//! edit, which holds the session, must not wait for it. A thread started for each keystroke
//! costs more than the work it would take off the reparse's path.

use std::sync::LazyLock;
use std::sync::mpsc::{Sender, channel};

type Job = Box<dyn FnOnce() + Send>;

/// Where jobs go: the thread is started on first use and runs for the rest of the process.
static JOBS: LazyLock<Sender<Job>> = LazyLock::new(|| {
    let (jobs, queue) = channel::<Job>();
    std::thread::Builder::new()
        .name("culint-beside".to_owned())
        .spawn(move || queue.into_iter().for_each(|job| job()))
        .expect("a thread for work beside edits");
    jobs
});

/// Run `beside` on the other thread while `here` runs on this one; returns when both are done.
/// A panic in `beside` is raised here, after `here` is done.
pub fn alongside<T>(beside: impl FnOnce() + Send + 'static, here: impl FnOnce() -> T) -> T {
    let (done, finished) = channel::<std::thread::Result<()>>();
    let job: Job = Box::new(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(beside));
        // The caller may be gone (it panicked itself): then there is no one to tell.
        let _ = done.send(outcome);
    });
    let sent = JOBS.send(job);
    let value = here();
    if let Err(unsent) = sent {
        // The thread is gone (it cannot be, short of a bug): the work is done here instead.
        (unsent.0)();
    }
    if let Ok(Err(panic)) = finished.recv() {
        std::panic::resume_unwind(panic);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn both_sides_run_and_the_work_beside_is_done_on_return() {
        let count = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            let beside = Arc::clone(&count);
            let here = alongside(move || _ = beside.fetch_add(1, Ordering::SeqCst), || 7);
            assert_eq!(here, 7);
        }
        assert_eq!(count.load(Ordering::SeqCst), 100);
    }

    #[test]
    fn a_panic_beside_reaches_the_caller_and_the_thread_goes_on() {
        let caught = std::panic::catch_unwind(|| alongside(|| panic!("beside"), || ()));
        assert!(caught.is_err());
        assert_eq!(alongside(|| (), || 1), 1);
    }
}
