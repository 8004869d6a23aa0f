//! The reference implementation (Python package `stateous` 0.2.2), installed once per
//! target folder in a virtualenv, for the interop tests.
//!
//! The first test that needs it makes `target/reference-venv` with `python3 -m venv`
//! and installs the package from the Python package index; later tests reuse it.
//! Within one test binary the tests take turns; two binaries racing to make it each
//! build in a folder of their own and rename it into place, so neither sees a
//! half-made virtualenv.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The version of the reference whose behaviour this project keeps.
pub const REFERENCE_VERSION: &str = "0.2.2";

/// The reference's `stateous` command, installing it first when needed.
pub fn reference_stateous() -> PathBuf {
    // The tests of one binary share a process id, so they share the building
    // folder below: one at a time builds, the others then find it made.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let venv = venv_folder();
    let command = venv.join("bin").join("stateous");
    if command.is_file() {
        return command;
    }
    let building = venv.with_extension(format!("building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    run(Command::new("python3").args(["-m", "venv"]).arg(&building));
    run(Command::new(building.join("bin").join("pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--ignore-requires-python",
        &format!("stateous=={REFERENCE_VERSION}"),
    ]));
    // A virtualenv's scripts name its folder in their first line, so the built one
    // is fixed up to its final path before the rename makes it visible.
    fix_shebangs(&building.join("bin"), &building, &venv);
    if std::fs::rename(&building, &venv).is_err() {
        // Another test won the race; its virtualenv is complete.
        let _ = std::fs::remove_dir_all(&building);
    }
    assert!(
        command.is_file(),
        "the reference was not installed at {}",
        command.display()
    );
    command
}

fn venv_folder() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    std::fs::create_dir_all(&target).expect("the target folder can be made");
    target.join("reference-venv")
}

fn run(command: &mut Command) {
    let output = command.output().expect("python3 runs");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn fix_shebangs(bin: &Path, from: &Path, to: &Path) {
    let (from, to) = (from.display().to_string(), to.display().to_string());
    for entry in std::fs::read_dir(bin).expect("the venv has bin/").flatten() {
        let path = entry.path();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue; // a binary, such as the python link
        };
        if text.contains(&from) {
            std::fs::write(&path, text.replace(&from, &to)).expect("a venv script is writable");
        }
    }
}
