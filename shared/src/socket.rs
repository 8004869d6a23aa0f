//! Where the daemon's Unix socket is when no one names it: the daemon listens
//! there and every client looks there, so both read it from here.

use std::path::PathBuf;

/// The default path of the daemon's Unix socket: `stateous.sock` in the user's
/// runtime folder (from the `directories` crate), or in the temp folder when the
/// platform has no runtime folder.
pub fn default_socket() -> PathBuf {
    directories::BaseDirs::new()
        .and_then(|dirs| dirs.runtime_dir().map(|dir| dir.to_path_buf()))
        .unwrap_or_else(std::env::temp_dir)
        .join("stateous.sock")
}
