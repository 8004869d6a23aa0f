//! Black-box: `stateous demo` without a terminal runs its daemon, supervisor and
//! tokens to their ends, prints their histories, cleans up, and exits 0.

mod harness;

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
