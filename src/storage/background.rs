//! Background storage threads run at a low CPU priority.
//!
//! The checkpoint thread and fjall's workers (memtable flushes, compaction) do
//! work no reply waits for. At the default priority the scheduler let one of
//! them keep a core for its whole time slice while the WAL or TX thread, woken
//! on that core, waited: on a 2-core machine every request in flight stalled
//! for 3-4 ms (`perf sched timehist`: WAL scheduling delays of 3.5 ms behind a
//! checkpoint). At nice 19 a woken request-path thread takes the core at once,
//! and the background work runs on the time the request path leaves idle.
//!
//! A thread cannot raise its priority again without privileges, so a thread
//! that must not fall behind is started at the default priority instead (see
//! the WAL's checkpoints).

use std::collections::HashSet;

use rustix::process::{setpriority_process, Pid};

/// The nice value of background threads (the lowest priority).
pub const BACKGROUND_NICE: i32 = 19;

/// Lowers the calling thread to [`BACKGROUND_NICE`].
pub fn lower_this_thread() {
    lower(rustix::thread::gettid());
}

/// The ids of this process's threads named `name`.
#[must_use]
pub fn threads_named(name: &str) -> HashSet<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return HashSet::new() };
    tasks
        .filter_map(|task| {
            let task = task.ok()?;
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            (comm.trim_end() == name).then(|| task.file_name().to_str()?.parse().ok()).flatten()
        })
        .collect()
}

/// Lowers every thread named `name` that is not in `before` (threads a library
/// started since `before` was taken) to [`BACKGROUND_NICE`].
pub fn lower_new_threads(name: &str, before: &HashSet<i32>) {
    for tid in threads_named(name).difference(before) {
        if let Some(pid) = Pid::from_raw(*tid) {
            lower(pid);
        }
    }
}

fn lower(tid: Pid) {
    // Only scheduling is affected if this fails.
    if let Err(e) = setpriority_process(Some(tid), BACKGROUND_NICE) {
        tracing::debug!(error = %e, "cannot lower a background thread's priority");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice_of(tid: i32) -> i32 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // Field 19 (nice), counted after the parenthesised command name.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn new_threads_of_a_name_are_lowered_and_others_kept() {
        let (ready, started) = std::sync::mpsc::channel::<i32>();
        let mut holds = Vec::new();
        let mut spawn = |name: &str| {
            let (hold, wait) = std::sync::mpsc::channel::<()>();
            holds.push(hold);
            let ready = ready.clone();
            let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
                ready.send(rustix::thread::gettid().as_raw_nonzero().get()).unwrap();
                // Runs until the test drops its sender.
                let _ = wait.recv();
            });
            (thread.unwrap(), started.recv().unwrap())
        };
        let (old, old_tid) = spawn("bg-test-worker");
        let before = threads_named("bg-test-worker");
        assert!(before.contains(&old_tid));
        let (new, new_tid) = spawn("bg-test-worker");
        let (other, other_tid) = spawn("bg-test-other");
        let base = nice_of(old_tid);
        lower_new_threads("bg-test-worker", &before);
        assert_eq!(nice_of(new_tid), BACKGROUND_NICE);
        assert_eq!((nice_of(old_tid), nice_of(other_tid)), (base, base));
        drop(holds);
        for t in [old, new, other] {
            t.join().unwrap();
        }
    }
}
