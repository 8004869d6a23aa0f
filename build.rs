//! The build script of the `stateous` binary: it names the commit the binary was
//! built from, so that `stateous --version` says which code is running.
//!
//! It asks `git` when the source is a git checkout (a worktree too). A build from
//! a source tarball has no `.git` and no commit to name; a packager can give one
//! in `STATEOUS_BUILD_COMMIT`. Without either, the version is the package's alone.
//! The result is `STATEOUS_VERSION`, e.g. `0.1.0 (commit 93afa58c1d2e)`.
//!
//! It also has the linker compress a release binary's debug information (the
//! line tables a panic's backtrace reads), which halves the binary.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    // Named, so that a change elsewhere in the package does not run it again.
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=STATEOUS_BUILD_COMMIT");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let given = std::env::var("STATEOUS_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty());
    let commit = given.or_else(git_commit);
    let full = match commit {
        Some(commit) => format!("{version} (commit {})", commit.trim()),
        None => version,
    };
    println!("cargo:rustc-env=STATEOUS_VERSION={full}");
    compress_debug_sections();
}

/// A release build on Linux links with its debug sections compressed (zlib): the
/// standard library's backtrace, gdb and addr2line all read them. zstd would be
/// smaller, but the backtrace cannot read it. Debug and test builds are left as
/// they are: compressing would only slow their links.
fn compress_debug_sections() {
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if release && linux {
        println!("cargo:rustc-link-arg-bins=-Wl,--compress-debug-sections=zlib");
    }
}

/// The short id of `HEAD`, or `None` outside a git checkout or without `git`.
/// The build runs again when `HEAD` moves: the files git keeps it in are watched.
fn git_commit() -> Option<String> {
    // A tarball unpacked inside another repository (a packager's) is not that
    // repository's commit: only a checkout whose top is this folder counts.
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    if top.canonicalize().ok()? != here.canonicalize().ok()? {
        return None;
    }
    let git_dir = PathBuf::from(git(&["rev-parse", "--git-dir"])?);
    let common = PathBuf::from(git(&["rev-parse", "--git-common-dir"])?);
    let mut watched = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(common.join(branch));
    }
    // Cargo runs the script again on every build for a watched file that is
    // missing (a branch kept only in packed-refs), so only files that exist are.
    for file in watched.iter().filter(|f| f.is_file()) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    git(&["rev-parse", "--short=12", "HEAD"])
}

/// One line of `git ARGS`' output, run in the package's folder; `None` when git
/// is missing or says no.
fn git(args: &[&str]) -> Option<String> {
    let folder = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let output = Command::new("git")
        .args(args)
        .current_dir(folder)
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let line = text.trim();
    (output.status.success() && !line.is_empty()).then(|| line.to_owned())
}
