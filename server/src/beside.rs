//! One thread, always there, that runs work beside the thread a keystroke's work is on: while
//! the edit is reparsed, it judges which rules could fire on the new text; while the lint builds
//! the model, it finds the rules' candidates.
//!
//! The lints' thread pool is not used for this. A keystroke comes after the cores were idle, and
//! then a job that rayon offers for stealing is taken up by the pool's other thread late or not
//! at all: at the lint's first fork, in 56% of 1,000 keystrokes the half offered ran only after
//! the other half, on the same thread, and where it was stolen, it started 0.75 ms late at the
//! median. A thread that waits on a channel starts a job 0.08 ms after it is sent
//! (BENCHMARKS.md). The pool may also be busy linting other buffers, and an edit, which holds the
//! session, must not wait for it. A thread started for each keystroke costs more than the work it
//! would take off the path.

use std::cell::Cell;
use std::cmp::Reverse;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

type Job = Box<dyn FnOnce() + Send>;

/// Where jobs go: the thread is started on first use and runs for the rest of the process. It
/// has registered itself (see [`apart`]) before the first job is handed to it: otherwise the
/// first joins, which may find it not yet registered, would leave it free to run on the CPU of
/// the thread handing work over.
static JOBS: LazyLock<Sender<Job>> = LazyLock::new(|| {
    let (jobs, queue) = channel::<Job>();
    let (registered, registration) = channel::<()>();
    std::thread::Builder::new()
        .name("culint-beside".to_owned())
        .spawn(move || {
            ON_THE_THREAD.set(true);
            apart::register_the_thread_beside();
            drop(registered);
            queue.into_iter().for_each(|job| job());
        })
        .expect("a thread for work beside edits");
    // Ends when the thread drops its sender: once it has registered, or as it unwinds.
    let _ = registration.recv();
    jobs
});

thread_local! {
    /// Set on the thread itself: a job there that asks for work beside it runs it in place,
    /// rather than waiting on itself.
    static ON_THE_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Where the thread beside may run. Woken by a busy thread, it is often put on that thread's CPU
/// even with another CPU idle (on the 2-core benchmark VM, in one keystroke of eight), and there
/// it waits for the thread that woke it: the two halves of the work run one after the other, and
/// such a keystroke takes a millisecond longer (BENCHMARKS.md). So, before work is handed over,
/// the thread beside is let run on any CPU it could run on when it started, except the CPU of the
/// thread handing the work over. The kernel is told only when that CPU changes: most keystrokes
/// cost one `sched_getcpu`.
#[cfg(target_os = "linux")]
mod apart {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The thread beside's id, and the CPUs it was allowed when it started.
    static THE_THREAD_BESIDE: OnceLock<(libc::pid_t, libc::cpu_set_t)> = OnceLock::new();
    /// The CPU the thread beside is kept off now (`usize::MAX`: none yet).
    static KEPT_OFF: AtomicUsize = AtomicUsize::new(usize::MAX);

    /// Called on the thread beside when it starts.
    pub fn register_the_thread_beside() {
        // SAFETY: an all-zero `cpu_set_t` is an empty set, `sched_getaffinity` writes at most the
        // size it is given into it, and `gettid` has no preconditions.
        unsafe {
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut allowed) == 0 {
                let _ = THE_THREAD_BESIDE.set((libc::gettid(), allowed));
            }
        }
    }

    /// Called by a thread about to hand work to the thread beside.
    pub fn keep_beside_off_this_cpu() {
        let Some((thread, allowed)) = THE_THREAD_BESIDE.get() else {
            return;
        };
        // SAFETY: `sched_getcpu` has no preconditions; it returns -1 where it is not supported.
        let Ok(cpu) = usize::try_from(unsafe { libc::sched_getcpu() }) else {
            return;
        };
        if KEPT_OFF.swap(cpu, Ordering::Relaxed) == cpu {
            return;
        }
        // From a CPU the thread beside may not run on anyway, it may run on all of its own again.
        let elsewhere = all_but(allowed, cpu).unwrap_or(*allowed);
        // SAFETY: `elsewhere` is a valid set of the size given. A failure (a sandbox that forbids
        // the call) leaves the thread where it may run now, which is only slower.
        unsafe { libc::sched_setaffinity(*thread, size_of::<libc::cpu_set_t>(), &elsewhere) };
    }

    /// The CPUs of `allowed` but `cpu`; `None` when `cpu` is not among them or is the only one.
    pub(super) fn all_but(allowed: &libc::cpu_set_t, cpu: usize) -> Option<libc::cpu_set_t> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return None;
        }
        let mut others = *allowed;
        // SAFETY: `cpu` is below `CPU_SETSIZE`, so the set macros stay inside the set.
        unsafe {
            if !libc::CPU_ISSET(cpu, &others) || libc::CPU_COUNT(&others) < 2 {
                return None;
            }
            libc::CPU_CLR(cpu, &mut others);
        }
        Some(others)
    }
}

#[cfg(not(target_os = "linux"))]
mod apart {
    pub fn register_the_thread_beside() {}
    pub fn keep_beside_off_this_cpu() {}
}

/// Run `here` on this thread and `beside` on the other one; returns both results once both are
/// done. A panic on either side is raised here, once both are done. `beside` may borrow from the
/// caller: this does not return or unwind before it has run.
///
/// `beside` is offered, not given: when `here` is done and the thread beside has not yet taken
/// it up, this thread takes it back and runs it itself. The thread beside wakes 0.08 ms after a
/// job is sent at the median, but on a busy host its wake-up may wait for milliseconds, and the
/// caller would wait with it; taken back, the work costs at most what it costs on one thread.
pub fn join<A, B>(here: impl FnOnce() -> A, beside: impl FnOnce() -> B + Send) -> (A, B)
where
    B: Send,
{
    if ON_THE_THREAD.get() {
        let here = here();
        return (here, beside());
    }
    let offered = Arc::new(Offer::of(beside));
    let (done, finished) = channel::<std::thread::Result<B>>();
    let on_the_thread = Arc::clone(&offered);
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        if let Some(beside) = on_the_thread.take() {
            // The caller found nothing to take back, so it waits for this message.
            let _ = done.send(catch_unwind(AssertUnwindSafe(beside)));
        }
    });
    // SAFETY: the job borrows only what the caller lends for this call, through `beside`. The
    // lifetime is erased so that the thread can hold the job, and `beside` runs, or is dropped,
    // before this function returns or unwinds: either this thread takes it back below and runs it,
    // or the thread beside took it first and this thread waits for its message. A job that the
    // thread beside takes up after that finds the offer empty and touches nothing borrowed; the
    // offer itself lives in the `Arc`, not on this stack. A panic in `here` is caught first, so it
    // cannot skip either.
    let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
    // The thread beside is started, and registered, before it is kept off this CPU.
    let jobs = &*JOBS;
    apart::keep_beside_off_this_cpu();
    // Should the thread be gone (it cannot be, short of a bug), the job is dropped unrun and the
    // offer is taken back below.
    let _ = jobs.send(job);
    let here = catch_unwind(AssertUnwindSafe(here));
    let beside = match offered.take() {
        Some(beside) => catch_unwind(AssertUnwindSafe(beside)),
        None => finished.recv().expect("the thread beside sends the result of the work it took"),
    };
    let here = here.unwrap_or_else(|panic| resume_unwind(panic));
    (here, beside.unwrap_or_else(|panic| resume_unwind(panic)))
}

/// Work offered to two threads, which whichever comes first takes: the work beside in [`join`],
/// the job after in [`join_then`].
struct Offer<F> {
    work: Mutex<Option<F>>,
}

impl<F> Offer<F> {
    fn of(work: F) -> Self {
        Self { work: Mutex::new(Some(work)) }
    }

    fn take(&self) -> Option<F> {
        self.work.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// [`join`], with a third job, `after`, run by whichever side finishes its own first: three jobs
/// on two threads, the third where there is room. Which side is the longer differs from one
/// keystroke to the next.
pub fn join_then<A, B, C>(
    here: impl FnOnce() -> A,
    beside: impl FnOnce() -> B + Send,
    after: impl FnOnce() -> C + Send,
) -> (A, B, C)
where
    B: Send,
    C: Send,
{
    let after = Offer::of(after);
    let made = Mutex::new(None);
    let take_up = || {
        if let Some(job) = after.take() {
            let result = job();
            *made.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        }
    };
    let (here, beside) = join(
        || {
            let here = here();
            take_up();
            here
        },
        || {
            let beside = beside();
            take_up();
            beside
        },
    );
    let after = made.into_inner().unwrap_or_else(PoisonError::into_inner).expect("the side that took the job ran it");
    (here, beside, after)
}

/// `f` of every item, on this thread and the one beside: each takes the next item as it finishes
/// one, the costliest first by `cost`, so that the two finish close together. The results are in
/// the items' order. When the thread beside is busy with other work, this thread does every item
/// and takes its offer back ([`join`]) rather than wait for it.
pub fn map<T, R>(items: &[T], cost: impl Fn(&T) -> usize, f: impl Fn(&T) -> R + Sync) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_cached_key(|i| Reverse(cost(&items[*i])));
    let next = AtomicUsize::new(0);
    let take = || {
        let mut done = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            done.push((i, f(&items[i])));
        }
        done
    };
    let (here, beside) = join(take, take);
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    for (i, result) in here.into_iter().chain(beside) {
        results[i] = Some(result);
    }
    results.into_iter().map(|result| result.expect("every item is taken once")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn both_sides_run_and_the_work_beside_is_done_on_return() {
        let count = AtomicUsize::new(0);
        for i in 0..100 {
            let (here, beside) = join(|| i * 2, || count.fetch_add(1, Ordering::SeqCst));
            assert_eq!((here, beside), (i * 2, i));
        }
        assert_eq!(count.load(Ordering::SeqCst), 100);
    }

    #[test]
    fn the_work_beside_runs_on_the_other_thread_and_may_borrow() {
        let lent = String::from("lent");
        let (started, taken_up) = channel();
        // `here` lasts until the thread beside has taken its work up, so none is taken back.
        let here = || {
            taken_up.recv().expect("the work beside starts");
            std::thread::current().id()
        };
        let (here, beside) = join(here, || {
            started.send(()).expect("`here` waits for this");
            (std::thread::current().id(), lent.len())
        });
        assert_ne!(here, beside.0);
        assert_eq!(beside.1, 4);
    }

    #[test]
    fn work_the_thread_beside_has_not_taken_up_is_taken_back() {
        // Hold the thread beside with work of another caller, until this one's join is over.
        let (started, taken_up) = channel();
        let (holding, held_now) = channel();
        let (release, held) = channel::<()>();
        let other_caller = std::thread::spawn(move || {
            let here = || taken_up.recv().expect("the holding work starts");
            join(here, move || {
                started.send(()).expect("`here` waits for this");
                holding.send(()).expect("the test waits for this");
                // Bounded, so that a join that waits for the thread beside fails this test
                // rather than hanging it.
                let _ = held.recv_timeout(std::time::Duration::from_secs(5));
            })
        });
        held_now.recv().expect("the thread beside is held");
        let lent = String::from("lent");
        let (here, beside) = join(|| std::thread::current().id(), || (std::thread::current().id(), lent.len()));
        assert_eq!(here, beside.0, "run here, not left waiting for the thread beside");
        assert_eq!(beside.1, 4);
        release.send(()).expect("the holding work waits for this");
        other_caller.join().expect("the other caller's join ends");
        // The thread beside goes on: the job it finds taken back does nothing.
        let (started, taken_up) = channel();
        let here = || taken_up.recv().expect("the work beside starts");
        let ((), on) = join(here, || {
            started.send(()).expect("`here` waits for this");
            std::thread::current().id()
        });
        assert_ne!(on, std::thread::current().id());
    }

    #[test]
    fn a_panic_on_either_side_reaches_the_caller_once_both_are_done_and_the_thread_goes_on() {
        let finished = AtomicUsize::new(0);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            join(|| (), || panic!("beside"));
        }));
        assert!(caught.is_err());
        let caught = catch_unwind(AssertUnwindSafe(|| {
            join(
                || panic!("here"),
                || {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    finished.fetch_add(1, Ordering::SeqCst);
                },
            );
        }));
        assert!(caught.is_err());
        // The work beside had finished before the panic here was raised.
        assert_eq!(finished.load(Ordering::SeqCst), 1);
        assert_eq!(join(|| 1, || 2), (1, 2));
    }

    #[test]
    fn map_does_every_item_once_on_both_threads_and_keeps_their_order() {
        let items: Vec<usize> = (0..64).collect();
        let threads = std::sync::Mutex::new(std::collections::HashSet::new());
        // Only bounds a failing run, which would otherwise hold every item.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let doubled = map(
            &items,
            |item| *item,
            |item| {
                threads.lock().unwrap().insert(std::thread::current().id());
                // Hold each item until the thread beside has taken one too: on a loaded machine it
                // may start late, and a fixed pause let this thread take every item first.
                while threads.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                item * 2
            },
        );
        assert_eq!(doubled, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(threads.lock().unwrap().len(), 2);
        assert!(map(&[] as &[usize], |_| 0, |item| *item).is_empty());
    }

    #[test]
    fn the_job_after_runs_once_on_the_side_that_finished_first() {
        // Each time one side waits for the job after to have run, so the other side must run it.
        let ran = std::sync::atomic::AtomicBool::new(false);
        let wait_for_it = || {
            while !ran.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        };
        let after = || {
            ran.store(true, Ordering::SeqCst);
            std::thread::current().id()
        };
        let (here, (), after_on) = join_then(|| std::thread::current().id(), wait_for_it, after);
        assert_eq!(after_on, here, "this thread finished first");
        ran.store(false, Ordering::SeqCst);
        let ((), beside, after_on) = join_then(wait_for_it, || std::thread::current().id(), after);
        assert_eq!(after_on, beside, "the thread beside finished first");
        assert_ne!(after_on, std::thread::current().id());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_thread_beside_may_run_on_every_allowed_cpu_but_the_one_handing_work_over() {
        let set = |cpus: &[usize]| {
            // SAFETY: an all-zero `cpu_set_t` is an empty set; the CPUs are below `CPU_SETSIZE`.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            cpus.iter().for_each(|&cpu| unsafe { libc::CPU_SET(cpu, &mut set) });
            set
        };
        // SAFETY: the CPUs asked about are below `CPU_SETSIZE`.
        let cpus =
            |set: libc::cpu_set_t| (0..64).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect::<Vec<_>>();
        assert_eq!(apart::all_but(&set(&[0, 1]), 0).map(cpus), Some(vec![1]));
        assert_eq!(apart::all_but(&set(&[0, 2, 5]), 2).map(cpus), Some(vec![0, 5]));
        // A CPU it may not run on anyway, or the only one it may: it keeps all of them.
        assert!(apart::all_but(&set(&[0, 1]), 3).is_none());
        assert!(apart::all_but(&set(&[4]), 4).is_none());
        assert!(apart::all_but(&set(&[0, 1]), libc::CPU_SETSIZE as usize).is_none());
    }

    #[test]
    fn work_beside_asked_for_on_the_thread_itself_runs_there() {
        let (_, nested) = join(|| (), || join(|| 1, || 2));
        assert_eq!(nested, (1, 2));
    }
}
