//! The thread beside runs on another CPU than the thread that hands it work (`culint::beside`).
//! Its own test binary: the tests of the library share the thread beside from many threads at
//! once, each moving it off its own CPU.

#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_os = "linux")]
#[test]
fn work_handed_beside_runs_on_another_cpu() {
    // SAFETY: an all-zero `cpu_set_t` is an empty set; the calls write at most the size given.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut allowed) }, 0);
    let cpus: Vec<usize> =
        (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &allowed) }).collect();
    if cpus.len() < 2 {
        eprintln!("skipped: this process may run on one CPU only");
        return;
    }
    let here = || unsafe { libc::sched_getcpu() };
    // The thread beside starts with the first work handed to it, and may run on every CPU this
    // one may now. It registers before it is handed work, so this first join moves it off this
    // CPU too: had it registered later, the first joins below could find it free to run on every
    // CPU (on a loaded machine, in three runs of five).
    culint::beside::join(|| (), || ());
    // The caller moves to the other CPU at every join, where the thread beside ran last: left to
    // the scheduler, that is where it would wake.
    for cpu in cpus[..2].iter().copied().cycle().take(2000) {
        // SAFETY: as above; `cpu` is one this process may run on.
        let mut only: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut only) };
        assert_eq!(unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &only) }, 0);
        // This side keeps its CPU busy, as a lint's half does, until the thread beside has taken
        // its work up, which would otherwise be taken back and run here (see
        // `culint::beside::join`).
        let started = AtomicBool::new(false);
        let this_side = || {
            while !started.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            here()
        };
        let (this, beside) = culint::beside::join(this_side, || {
            started.store(true, Ordering::Release);
            here()
        });
        assert_eq!(this, cpu as i32);
        assert_ne!(beside, this, "the work beside ran on the CPU of the thread that handed it over");
    }
}
