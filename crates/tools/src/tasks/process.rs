//! Signalling a task's whole process group: SIGTERM, a grace period, then SIGKILL.

use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

fn pid(raw: u32) -> Option<Pid> {
    i32::try_from(raw).ok().and_then(Pid::from_raw)
}

/// Whether any process of the group led by `pgid` still exists.
pub fn group_alive(pgid: u32) -> bool {
    pid(pgid).is_some_and(|p| test_kill_process_group(p).is_ok())
}

/// Stop every process in the group: SIGTERM, then SIGKILL for whatever is left after `grace`.
/// Returns once the group is gone (or SIGKILL was sent).
pub async fn kill_tree(pgid: u32, grace: Duration) {
    let Some(group) = pid(pgid) else {
        return;
    };
    if kill_process_group(group, Signal::TERM).is_err() {
        return;
    }
    let deadline = tokio::time::Instant::now() + grace;
    // Poll the group's existence: there is no event for "the last member of a group exited".
    while tokio::time::Instant::now() < deadline {
        if test_kill_process_group(group).is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = kill_process_group(group, Signal::KILL);
}
