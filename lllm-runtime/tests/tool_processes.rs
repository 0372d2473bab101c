//! `kill_tool_processes` in a host program that adopts orphans (`contain_tool_processes`): a
//! descendant left behind is killed on the way out, also when no tool program or server ever ran
//! (the sweep then looks at this process's own children instead of every process of the machine).
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn an_adopted_orphan_is_killed_when_no_tool_ever_ran() {
    lllm_runtime::tools::contain_tool_processes().expect("this process adopts orphans");
    // `sh` exits at once, so its background `sleep` is orphaned and adopted by this process.
    let out = Command::new("sh")
        .args(["-c", "sleep 300 >/dev/null 2>&1 & echo $!"])
        .output()
        .expect("sh runs");
    let orphan: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("the orphan's pid");
    assert!(alive(orphan), "the orphan runs before the sweep");
    assert!(lllm_runtime::tools::kill_tool_processes() >= 1);
    assert!(!alive(orphan), "the orphan was killed and reaped");
}
