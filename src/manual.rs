//! `stateous completions SHELL` and `stateous man`: the shell completions and the
//! man pages, made from the command line's own clap definition, so that they never
//! fall behind it (clap_complete, clap_mangen).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap_complete::Shell;

/// Print the completion script for `shell` on stdout: a dynamic one, which asks
/// `stateous` itself at each TAB (`STATEOUS_COMPLETE=SHELL stateous -- WORDS`), so that it
/// completes token ids and state names from the daemon (`completing.rs`) as well
/// as the commands and flags.
pub fn completions(shell: Shell) -> Result<()> {
    let name = shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let Some(completer) = shells.completer(&name) else {
        anyhow::bail!("no dynamic completion for {name}");
    };
    let mut out = Vec::new();
    completer.write_registration(COMPLETE_VAR, "stateous", "stateous", "stateous", &mut out)?;
    write_out(&out)
}

/// The variable that asks `stateous` for completions instead of running.
pub const COMPLETE_VAR: &str = "STATEOUS_COMPLETE";

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
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}
