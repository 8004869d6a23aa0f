//! The daemon's Unix socket (`docs/reference/http.md`): mode 0600, a stale file from a
//! daemon that died is replaced, a live daemon on the path is never displaced, and the
//! file is removed when the daemon stops.

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// A bound socket file; dropping it removes the file, if it is still this one.
pub struct SocketFile {
    path: PathBuf,
    /// The file's device and inode when bound: a file at the same path made later
    /// by another daemon is not removed.
    identity: (u64, u64),
}

impl SocketFile {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if (meta.dev(), meta.ino()) == self.identity {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// The longest path a Unix socket can have on Linux (`sun_path` less its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where the socket's folder comes from: the default path's folder (the user's
/// runtime folder, which may not exist yet) is ours to make; a folder the user
/// named with `--socket` must exist, so that a typo is not silently made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folder {
    /// Make the folder, private to this user, when it is missing.
    Make,
    /// Refuse a missing folder.
    MustExist,
}

/// Listen on the Unix socket at `path`, readable and writable by this user only.
///
/// Errors (one sentence each): another program listens there; the path is a file
/// that is not a socket; the folder is missing (with [`Folder::MustExist`]) or
/// cannot be made; the bind fails.
pub fn bind(path: &Path, folder: Folder) -> Result<(UnixListener, SocketFile), String> {
    // The socket is bound under a name beside it, then renamed into place; a
    // client connects by the path. Both must fit in `sockaddr_un` (108 bytes with
    // its NUL), or clients could not reach it.
    let longest = path.as_os_str().len().max(
        path.with_file_name(format!(".{}.tmp", std::process::id()))
            .as_os_str()
            .len(),
    );
    if longest > MAX_SOCKET_PATH {
        return Err(format!(
            "the socket path {} is too long: a Unix socket's path has at most {MAX_SOCKET_PATH} \
             bytes; give a shorter --socket",
            path.display()
        ));
    }
    clear_stale(path)?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    match (parent, folder) {
        (None, _) => {}
        (Some(parent), Folder::MustExist) if parent.is_dir() => {}
        (Some(parent), Folder::MustExist) => {
            return Err(format!(
                "the folder {} for the socket {} does not exist; make it first, or give \
                 another --socket",
                parent.display(),
                path.display()
            ));
        }
        (Some(parent), Folder::Make) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| {
                format!(
                    "cannot make the folder {} for the socket: {e}",
                    parent.display()
                )
            })?,
    }
    // The socket is bound under a passing name, made private, then renamed into
    // place, so that no client ever connects to it before it is private.
    let passing = path.with_file_name(format!(".{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&passing);
    let listener = UnixListener::bind(&passing)
        .map_err(|e| format!("cannot listen on the socket {}: {e}", path.display()))?;
    let placed = std::fs::set_permissions(&passing, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::rename(&passing, path));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&passing);
        return Err(format!(
            "cannot make the socket {} private: {e}",
            path.display()
        ));
    }
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot read the socket {}: {e}", path.display()))?;
    let file = SocketFile {
        path: path.to_path_buf(),
        identity: (meta.dev(), meta.ino()),
    };
    Ok((listener, file))
}

/// Remove a socket file that no one listens on; refuse a live one or a file that
/// is not a socket.
fn clear_stale(path: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if !meta.file_type().is_socket() {
        return Err(format!(
            "{} exists and is not a socket; remove it, or choose another path with --socket",
            path.display()
        ));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(format!(
            "another control plane listens on the socket {}; stop it, or choose another path with --socket",
            path.display()
        )),
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => std::fs::remove_file(path)
            .map_err(|e| format!("cannot remove the stale socket {}: {e}", path.display())),
        Err(e) => Err(format!("cannot check the socket {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_is_private_replaces_a_stale_one_and_refuses_a_live_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("s.sock");
        let (listener, file) = bind(&path, Folder::Make).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let live = bind(&path, Folder::MustExist).err().unwrap();
        assert!(live.contains("another control plane listens"), "{live}");
        drop(listener);
        std::mem::forget(file); // leave the file behind, as a killed daemon does
        let (_again, file) = bind(&path, Folder::MustExist).unwrap();
        drop(file);
        assert!(!path.exists(), "a stopped daemon removes its socket");
    }

    #[test]
    fn a_file_that_is_not_a_socket_is_never_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "keep me").unwrap();
        assert!(bind(&path, Folder::MustExist)
            .err()
            .unwrap()
            .contains("is not a socket"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
    }

    #[test]
    fn a_missing_folder_is_made_only_for_the_default_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("s.sock");
        let refused = bind(&path, Folder::MustExist).err().unwrap();
        assert!(refused.contains("missing") && refused.contains("does not exist"));
        assert!(!path.parent().unwrap().exists(), "nothing was made");
        let (_listener, _file) = bind(&path, Folder::Make).unwrap();
        let mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
