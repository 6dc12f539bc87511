//! What a probe leaves behind (nothing) and what it calls success (only a
//! child that marked that it finished). The children are shell scripts
//! speaking the stage-file protocol by hand.
#![cfg(target_os = "linux")]

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use xplug_fixtures::process::{dies, is_dead, kill_survivors};
use xplug_probe::{Probe, ProbeFailure, ProbeOutput, ProbeStatus, Stage};

/// An upper bound on a probe that should return at once: reaching it
/// means the probe hung (not a performance threshold).
const HANG: Duration = Duration::from_secs(60);

/// Runs `sh -c script` under a probe with `timeout`, failing the test if
/// the probe itself does not return.
fn probe(script: &str, timeout: Duration) -> ProbeOutput {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(Probe::new(command).timeout(timeout).run());
    });
    receiver.recv_timeout(HANG).expect("the probe returns").expect("the child starts")
}

/// The process ids the script printed, one per line.
fn pids(output: &ProbeOutput) -> Vec<u32> {
    String::from_utf8_lossy(&output.stdout).lines().filter_map(|line| line.trim().parse().ok()).collect()
}

const FINISH: &str = "echo finished >> \"$XPLUG_PROBE_STAGE_FILE\"";

#[test]
fn a_child_that_exits_without_finishing_is_a_failure_with_its_stage() {
    for code in [0, 7] {
        let output =
            probe(&format!("echo load >> \"$XPLUG_PROBE_STAGE_FILE\"; echo partial; exit {code}"), HANG);
        assert_eq!(output.failure(), Some(&ProbeFailure::Exited { code, stage: Some(Stage::Load) }));
        assert_eq!(output.exit_code(), None);
        assert_eq!(output.stdout, b"partial\n", "what it wrote is kept");
        assert_eq!(
            output.failure().unwrap().to_string(),
            format!("ended the process with status {code} during load")
        );
    }
    let early = probe("exit 0", HANG);
    assert_eq!(early.failure().unwrap().to_string(), "ended the process with status 0 during startup");
    // With the mark, the same exit is the child's own.
    let finished = probe(&format!("echo load >> \"$XPLUG_PROBE_STAGE_FILE\"; {FINISH}; exit 0"), HANG);
    assert_eq!(finished.status, ProbeStatus::Exited(0));
    assert_eq!(finished.last_stage, Some(Stage::Load), "the mark is not a stage");
}

#[test]
fn the_stage_file_has_no_name_on_disk() {
    let output = probe(&format!("readlink \"$XPLUG_PROBE_STAGE_FILE\"; {FINISH}"), HANG);
    assert_eq!(output.status, ProbeStatus::Exited(0), "{output:?}");
    let target = String::from_utf8_lossy(&output.stdout);
    assert!(target.trim_end().ends_with("(deleted)"), "the stage file is unlinked: {target}");
}

#[test]
fn what_the_child_left_in_its_group_is_killed_when_it_ends() {
    // The background `sleep` keeps stdout open: without the group kill
    // the probe would read until it ends.
    let output = probe(&format!("sleep 1000 & echo $!; {FINISH}"), HANG);
    assert_eq!(output.status, ProbeStatus::Exited(0), "{output:?}");
    let [grandchild] = pids(&output)[..] else { panic!("one pid: {output:?}") };
    let died = dies(grandchild);
    kill_survivors(&[grandchild]);
    assert!(died, "process {grandchild} of the child's group survived it");
}

#[test]
fn a_timeout_kills_the_group_even_when_a_grandchild_holds_the_pipes() {
    let output = probe(
        "echo resolve >> \"$XPLUG_PROBE_STAGE_FILE\"; sleep 1000 & echo $!; echo $$; exec sleep 1000",
        Duration::from_millis(300),
    );
    assert_eq!(
        output.failure(),
        Some(&ProbeFailure::TimedOut { stage: Some(Stage::Resolve), limit: Duration::from_millis(300) })
    );
    let found = pids(&output);
    let survivors: Vec<u32> = found.iter().copied().filter(|&pid| !dies(pid)).collect();
    kill_survivors(&survivors);
    assert_eq!(found.len(), 2, "{output:?}");
    assert!(survivors.is_empty(), "processes {survivors:?} survived the timeout");
}

#[test]
fn a_daemon_holding_the_pipes_does_not_hold_the_probe() {
    // `setsid` puts the sleep in a session (and group) of its own: the
    // probe cannot kill it, and stops reading its pipes after the grace
    // period instead of waiting for it. The script waits until the daemon
    // has left its group (it writes its pid from the new session).
    let script = "f=$(mktemp); setsid sh -c 'echo $$ > \"$1\"; exec sleep 1000' sh \"$f\" & \
                  until [ -s \"$f\" ]; do sleep 0.01; done; cat \"$f\"; rm -f \"$f\"; echo done";
    let output = probe(&format!("{script}; {FINISH}"), HANG);
    let found = pids(&output);
    let [daemon] = found[..] else { panic!("one pid: {output:?}") };
    // Out of reach, as documented: still running (the test ends it).
    let alive = !is_dead(daemon);
    kill_survivors(&[daemon]);
    assert!(alive, "the daemon left the group and lives on");
    assert_eq!(output.status, ProbeStatus::Exited(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).ends_with("done\n"), "{output:?}");
}

#[test]
fn a_long_stage_file_is_read_from_its_end() {
    // 2.5 MB of heartbeat marks, then the last stage: the parent reads the
    // end (bounded) and still finds it.
    let output = probe(
        &format!(
            "yes load | head -n 500000 >> \"$XPLUG_PROBE_STAGE_FILE\"; echo unload >> \"$XPLUG_PROBE_STAGE_FILE\"; {FINISH}"
        ),
        HANG,
    );
    assert_eq!(output.status, ProbeStatus::Exited(0), "{output:?}");
    assert_eq!(output.last_stage, Some(Stage::Unload));
}
