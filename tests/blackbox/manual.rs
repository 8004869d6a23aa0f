//! Black-box: the shell completions and the man pages come from the command
//! line's definition, `--version` names the commit the binary was built from, and
//! a command line that cannot be parsed is refused as every other mistake is.

use crate::harness;

use std::path::Path;
use std::process::Command;

use harness::run;

/// What `stateous` completes for the words `line` (the fish form of the dynamic
/// completion the scripts ask for), with the control plane at `url`.
fn completed(dir: &Path, url: &str, line: &[&str]) -> Vec<String> {
    let mut args = vec!["--", "stateous"];
    args.extend_from_slice(line);
    let output = Command::new(harness::binary())
        .args(&args)
        .current_dir(dir)
        .env("STATEOUS_COMPLETE", "fish")
        .env("STATEOUS_URL", url)
        .output()
        .expect("the stateous binary runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| line.split('\t').next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn completions_for_bash_zsh_and_fish_complete_commands_token_ids_and_states() {
    let dir = tempfile::tempdir().expect("a temp folder");
    for (shell, opening) in [
        ("bash", "_clap_complete_stateous()"),
        ("zsh", "#compdef stateous"),
        (
            "fish",
            "complete --keep-order --exclusive --command stateous",
        ),
    ] {
        let finished = run(dir.path(), &["completions", shell]);
        assert_eq!(finished.code(), 0, "{finished}");
        let script = &finished.stdout;
        assert!(script.contains(opening), "{shell}: {finished}");
        assert!(
            script.contains("COMPLETE="),
            "{shell} asks stateous: {finished}"
        );
    }
    let daemon = harness::Setup::new(harness::test_graph("desk/build/desk")).start();
    for id in ["T-1", "T-2"] {
        daemon
            .post(
                "/tokens",
                &serde_json::json!({"token": id, "context": {"customer": "A"}}),
            )
            .expect(201);
    }
    let commands = completed(dir.path(), &daemon.url, &["tok"]);
    assert_eq!(commands, ["token"]);
    let mut ids = completed(dir.path(), &daemon.url, &["token", "why", "T"]);
    ids.sort();
    assert_eq!(ids, ["T-1", "T-2"]);
    let states = completed(dir.path(), &daemon.url, &["token", "list", "--state", "re"]);
    assert_eq!(states, ["review"]);
    // No daemon: nothing to offer, and no wait beyond a second.
    let started = std::time::Instant::now();
    let none = completed(dir.path(), "http://127.0.0.1:9", &["token", "why", "T"]);
    assert!(none.is_empty(), "{none:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    let finished = run(dir.path(), &["completions", "tcsh"]);
    assert_eq!(finished.code(), 1, "{finished}");
    assert!(
        finished.stderr.contains("possible values: bash"),
        "{finished}"
    );
}

#[test]
fn a_command_line_that_cannot_be_parsed_is_refused_in_one_line_with_exit_1() {
    let dir = tempfile::tempdir().expect("a temp folder");
    for (args, expected) in [
        (
            &["bench", "--tokens", "abc"][..],
            "error: invalid value 'abc' for '--tokens <TOKENS>': invalid digit found in \
             string (see 'stateous bench --help')",
        ),
        (
            &["token", "fire"],
            "error: the following required arguments were not provided: <ID> (see \
             'stateous token fire --help')",
        ),
        (
            &["serve", "g.json", "--bogus"],
            "error: unexpected argument '--bogus' found; to pass '--bogus' as a value, use \
             '-- --bogus' (see 'stateous serve --help')",
        ),
        (
            &["ctx", "emit"],
            "error: the following required arguments were not provided: <EVENT> (see \
             'stateous ctx emit --help')",
        ),
    ] {
        let finished = run(dir.path(), args);
        assert_eq!(finished.code(), 1, "{finished}");
        assert_eq!(finished.stderr, format!("{expected}\n"), "{finished}");
        assert!(finished.stdout.is_empty(), "{finished}");
    }
    // Help and the version are asked for: stdout, exit code 0.
    for args in [&["--help"][..], &["serve", "--help"], &["--version"]] {
        let finished = run(dir.path(), args);
        assert_eq!(finished.code(), 0, "{finished}");
        assert!(finished.stdout.contains("stateous"), "{finished}");
    }
    // `tui --where` that is not a filter: refused before the screen is taken.
    let finished = run(dir.path(), &["tui", "--where", "state =="]);
    assert_eq!(finished.code(), 1, "{finished}");
    assert!(
        finished.stderr.starts_with("error: --where: "),
        "{finished}"
    );
    assert_eq!(finished.stderr.lines().count(), 1, "{finished}");
    // A missing command: the help, on stderr, and exit code 1 (nothing ran).
    let finished = run(dir.path(), &["token"]);
    assert_eq!(finished.code(), 1, "{finished}");
    assert!(
        finished.stderr.contains("Usage: stateous token"),
        "{finished}"
    );
}

#[test]
fn the_man_page_is_roff_and_lists_the_commands() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let finished = run(dir.path(), &["man"]);
    assert_eq!(finished.code(), 0, "{finished}");
    let page = &finished.stdout;
    assert!(page.contains(".TH stateous 1"), "{finished}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "no {section}: {finished}");
    }
    assert!(page.contains("stateous\\-serve(1)"), "{finished}");
    // `man` reads it without a complaint, where man is installed.
    let rendered = Command::new("man")
        .arg("-l")
        .arg("-")
        .env("MANWIDTH", "80")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take()?.write_all(page.as_bytes()).ok()?;
            child.wait_with_output().ok()
        });
    if let Some(output) = rendered.filter(|o| o.status.success()) {
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("SUBCOMMANDS"), "{text}");
    }
}

#[test]
fn man_with_a_folder_writes_a_page_for_each_command() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let pages = dir.path().join("man1");
    let folder = pages.to_str().expect("a UTF-8 path");
    let finished = run(dir.path(), &["man", "--dir", folder]);
    assert_eq!(finished.code(), 0, "{finished}");
    for page in ["stateous.1", "stateous-serve.1", "stateous-token-start.1"] {
        assert!(pages.join(page).is_file(), "no {page}: {finished}");
        assert!(
            finished.stdout.contains(&format!("wrote {folder}/{page}")),
            "{finished}"
        );
    }
}

#[test]
fn version_names_the_commit_when_built_from_git() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success() && root.join(".git").exists())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    for args in [&["--version"][..], &["version"][..]] {
        let finished = run(dir.path(), args);
        assert_eq!(finished.code(), 0, "{finished}");
        let line = finished.stdout.trim();
        let plain = format!("stateous {}", env!("CARGO_PKG_VERSION"));
        match &head {
            Some(head) => {
                let commit = line
                    .strip_prefix(&format!("{plain} (commit "))
                    .and_then(|rest| rest.strip_suffix(')'))
                    .unwrap_or_else(|| panic!("no commit in {line:?}"));
                assert!(
                    commit.len() >= 7 && head.starts_with(commit),
                    "{line} vs {head}"
                );
            }
            // A build from a tarball has no commit to name.
            None => assert_eq!(line, plain),
        }
    }
}

#[test]
fn the_help_lists_each_command_in_one_short_line_and_its_own_help_has_the_details() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let top = run(dir.path(), &["--help"]);
    assert_eq!(top.code(), 0, "{top}");
    let long: Vec<&str> = top
        .stdout
        .lines()
        .filter(|line| line.chars().count() >= 80)
        .collect();
    assert!(long.is_empty(), "lines of 80 characters or more: {long:#?}");
    // The details moved to each command's own help; nothing was dropped.
    for (command, detail) in [
        ("supervise", "STATEOUS_SUPERVISOR_HEARTBEAT"),
        ("supervise", "the last 5 lines of stderr"),
        ("ctx", "STATEOUS_CTX"),
        ("clock", "`freeze` stops the clock"),
        ("serve", "Unix socket"),
        ("completions", "bash-completion"),
        ("bench-routines", "stateous ctx emit"),
    ] {
        assert!(!top.stdout.contains(detail), "{detail}: {top}");
        let own = run(dir.path(), &[command, "--help"]);
        assert!(own.stdout.contains(detail), "{command} --help: {own}");
    }
}

/// Output that cannot be written (a full disk, a closed pipe) is `error: ...` and
/// exit 1, never a panic.
#[test]
fn output_to_a_full_device_is_an_error_line_and_exit_1() {
    for args in [
        &["version"][..],
        &["--version"],
        &["--help"],
        &["token", "--help"],
        &["man"],
        &["completions", "bash"],
    ] {
        let full = std::fs::File::create("/dev/full").expect("/dev/full");
        let finished = Command::new(env!("CARGO_BIN_EXE_stateous"))
            .args(args)
            .stdout(full)
            .output()
            .expect("stateous runs");
        let stderr = String::from_utf8_lossy(&finished.stderr);
        assert_eq!(finished.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: cannot write to standard output"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
