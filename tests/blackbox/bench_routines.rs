//! Black-box: `stateous bench-routines` measures a supervisor with a routine that
//! runs this very build's `ctx`, whatever the binary is called and whatever the
//! PATH holds (its routine called `stateous` by name, so a copy under another name,
//! or a PATH without it, failed every routine).

use crate::harness;

use std::process::Command;

#[test]
fn bench_routines_runs_its_routines_with_its_own_binary_under_any_name() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("sto-under-another-name");
    std::fs::copy(harness::binary(), &copy).unwrap();
    // The copy was open for writing here, and a child another test forks in
    // that moment holds that handle until its exec: until then the copy is
    // busy (ETXTBSY), so its start is tried again.
    let run = || {
        Command::new(&copy)
            .args(["bench-routines", "--routines", "20", "--tasks", "4"])
            .env("PATH", "/usr/bin:/bin")
            .env("TMPDIR", dir.path())
            .output()
    };
    let mut output = run();
    for _ in 0..50 {
        match &output {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(100));
                output = run();
            }
            _ => break,
        }
    }
    let output = output.expect("the copy runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("20 program routines in "),
        "{stdout}{stderr}"
    );
    // The folder it made is gone once it succeeded.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("stateous-bench-routines-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
