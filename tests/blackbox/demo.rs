//! Black-box: `stateous demo` without a terminal runs its daemon, supervisor and
//! tokens to their ends, prints their histories (and that of the one token it
//! leaves paused), cleans up, and exits 0.

use crate::harness;

use harness::run;

#[test]
fn demo_without_a_terminal_prints_a_retry_a_timeout_and_a_loop_then_exits_0() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let finished = run(dir.path(), &["demo"]);
    assert_eq!(finished.code(), 0, "{finished}");
    let out = &finished.stdout;
    for line in [
        "DEMO-1: testing, completed",
        "DEMO-2: testing, completed",
        "task 2 is tried again (attempt 2)",
        "DEMO-3: testing, failed",
        "timer fired: timeout",
        "DEMO-4: testing (visit 2), completed",
        "entered coding (visit 2)",
    ] {
        assert!(out.contains(line), "no '{line}' in:\n{finished}");
    }
}

/// Once the others end, one token is still there to steer.
#[test]
fn demo_leaves_one_token_paused_for_the_tui_to_steer() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let finished = run(dir.path(), &["demo"]);
    assert_eq!(finished.code(), 0, "{finished}");
    let waiting = finished
        .stdout
        .split("\n\n")
        .find(|block| block.starts_with("DEMO-5: "))
        .unwrap_or_else(|| panic!("no DEMO-5 in:\n{finished}"));
    assert!(waiting.starts_with("DEMO-5: coding, paused"), "{waiting}");
    assert!(
        waiting.contains("  paused"),
        "its history says so: {waiting}"
    );
    assert!(!waiting.contains("resumed"), "{waiting}");
}
