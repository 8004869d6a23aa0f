//! The folder of a supervisor's helper sockets (the `ctx` helper's, one per
//! routine): made private for each run, and the folders of supervisors that were
//! killed before they could remove theirs swept away.

use std::path::{Path, PathBuf};

/// The start of the name of each supervisor's folder of helper sockets; the
/// supervisor's pid follows, then a random part.
const CTX_DIR_PREFIX: &str = "stateous-ctx-";

/// A private folder for the helper's sockets, short enough for a socket path.
/// The folders that supervisors killed before they could remove theirs left
/// behind are removed first (`sweep_ctx_dirs`).
pub(crate) fn make_ctx_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    // A socket's path has at most about 100 bytes; a long TMPDIR would not fit.
    let mut base = std::env::temp_dir();
    if base.as_os_str().len() > 60 {
        base = PathBuf::from("/tmp");
    }
    sweep_ctx_dirs(&base);
    let dir = base.join(format!(
        "{CTX_DIR_PREFIX}{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// Remove from `base` the socket folders of supervisors that are gone: a
/// supervisor ended by SIGKILL cannot remove its own, and each run makes a new
/// one. Only folders of this user whose supervisor's pid names no process are
/// touched; anything unexpected is left as it is.
fn sweep_ctx_dirs(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(CTX_DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
            .filter(|pid| *pid > 0)
        else {
            continue;
        };
        let ours = std::fs::symlink_metadata(entry.path())
            .is_ok_and(|meta| meta.is_dir() && meta.uid() == me);
        if ours && process_is_gone(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether no process has this pid (kill with signal 0 answers ESRCH).
fn process_is_gone(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 sends nothing; kill only checks that the process exists.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}
