//! Background storage threads run at a low CPU priority.
//!
//! The checkpoint thread and fjall's workers (memtable flushes, compaction) do
//! work no reply waits for. At the default priority the scheduler let one of
//! them keep a core for its whole time slice while the WAL or TX thread, woken
//! on that core, waited: on a 2-core machine every request in flight stalled
//! for 3-4 ms (`perf sched timehist`: WAL scheduling delays of 3.5 ms behind a
//! checkpoint, about 6 a second). A checkpoint runs under `SCHED_IDLE`, which
//! any woken thread preempts at once; fjall's workers, started by fjall where
//! oncebox cannot set a policy, at nice 19. Background work runs on the time
//! the request path leaves idle.
//!
//! A thread cannot raise its priority again without privileges, so a thread
//! that must not fall behind is started at the default priority instead (see
//! the WAL's checkpoints).

use std::collections::HashMap;

use rustix::process::{setpriority_process, Pid};

/// The nice value of background threads (the lowest priority).
pub const BACKGROUND_NICE: i32 = 19;

/// Lowers the calling thread to [`BACKGROUND_NICE`].
fn lower_this_thread() {
    lower(rustix::thread::gettid());
}

/// Puts the calling thread under `SCHED_IDLE`: any other thread that wakes takes
/// its core at once (at nice 19 it still kept it for the rest of its time slice);
/// if the policy cannot be set, lowers it to [`BACKGROUND_NICE`] instead.
pub fn idle_this_thread() {
    use thread_priority::{NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
    let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
    if let Err(e) =
        thread_priority::set_thread_priority_and_policy(thread_priority::thread_native_id(), ThreadPriority::Min, idle)
    {
        tracing::debug!(error = ?e, "cannot put a background thread under SCHED_IDLE");
        lower_this_thread();
    }
}

/// The ids and names of this process's threads.
#[must_use]
pub fn threads() -> HashMap<i32, String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return HashMap::new() };
    tasks
        .filter_map(|task| {
            let task = task.ok()?;
            let tid = task.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            Some((tid, comm.trim_end().to_string()))
        })
        .collect()
}

/// Lowers to [`BACKGROUND_NICE`] every thread named `name` that is not in
/// `before`: the threads a library started, on the calling thread, since
/// `before` was taken. A thread names itself once it runs, so one still under
/// the calling thread's name is lowered too.
pub fn lower_new_threads(name: &str, before: &HashMap<i32, String>) {
    let caller = std::fs::read_to_string("/proc/thread-self/comm").unwrap_or_default();
    let caller = caller.trim_end();
    let own = rustix::thread::gettid().as_raw_nonzero().get();
    for (tid, comm) in threads() {
        if tid == own || before.contains_key(&tid) || (comm != name && comm != caller) {
            continue;
        }
        if let Some(pid) = Pid::from_raw(tid) {
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
    fn an_idle_thread_is_under_sched_idle() {
        let policy = std::thread::spawn(|| {
            idle_this_thread();
            let tid = rustix::thread::gettid().as_raw_nonzero().get();
            let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
            // Field 41 (policy), counted after the parenthesised command name.
            stat[stat.rfind(')').unwrap() + 2..].split(' ').nth(38).unwrap().parse::<i32>().unwrap()
        });
        const SCHED_IDLE: i32 = 5;
        assert_eq!(policy.join().unwrap(), SCHED_IDLE);
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
        let before = threads();
        assert_eq!(before.get(&old_tid).map(String::as_str), Some("bg-test-worker"));
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
