//! `stateous completions SHELL` and `stateous man`: the shell completions and the
//! man pages, made from the command line's own clap definition, so that they never
//! fall behind it (clap_complete, clap_mangen).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap_complete::Shell;

/// Print the completion script for `shell` on stdout.
pub fn completions(mut command: clap::Command, shell: Shell) -> Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "stateous", &mut out);
    write_out(&out)
}

/// Without `dir`: print the page `stateous(1)` on stdout. With it: write
/// `stateous.1` and a page per command (`stateous-serve.1`, `stateous-token-start.1`,
/// ...) into `dir`, made if missing, and print each path.
pub fn man(command: clap::Command, dir: Option<&Path>) -> Result<()> {
    let Some(dir) = dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(command).render(&mut out)?;
        return write_out(&out);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    clap_mangen::generate_to(command, dir)
        .with_context(|| format!("cannot write the pages into {}", dir.display()))?;
    let mut pages: Vec<_> = std::fs::read_dir(dir)?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "1")
                && path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("stateous"))
        })
        .collect();
    pages.sort();
    let listed: String = pages
        .iter()
        .map(|page| format!("wrote {}\n", page.display()))
        .collect();
    write_out(listed.as_bytes())
}

/// Write to stdout; a reader that stops early (`stateous man | head`) is not an
/// error.
fn write_out(bytes: &[u8]) -> Result<()> {
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
