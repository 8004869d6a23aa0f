//! `serve --hooks FILE`: the hooks file read once at start, checked against the
//! graph, and its secrets taken from the environment (`docs/reference/files.md`,
//! "The hooks file"). Any problem stops `serve` with every problem listed.

use std::path::Path;

use stateous_shared::graph::Graph;

use crate::api::hooks::{insecure_names, Hooks};

/// The largest hooks file `serve` reads, in bytes.
const MAX_HOOKS_FILE: u64 = 1024 * 1024;

/// The hooks of `path` (none without it), for `graph`; `insecure` allows
/// `verify: none`. The error lists every problem, one a line.
pub fn read_hooks(path: Option<&Path>, graph: &Graph, insecure: bool) -> Result<Hooks, String> {
    let Some(path) = path else {
        return Ok(Hooks::default());
    };
    let shown = path.display().to_string();
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() || meta.len() > MAX_HOOKS_FILE => {
            return Err(format!(
                "{shown} is not a hooks file: it is not a regular file of at most 1 MiB"
            ));
        }
        _ => {}
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the hooks file {shown}: {e}"))?;
    let env = |name: &str| std::env::var(name).ok();
    match Hooks::load(&text, &shown, env, insecure, graph) {
        Ok(hooks) => {
            for name in insecure_names(&hooks) {
                tracing::warn!(
                    target: "stateous.hooks",
                    "hook {name} checks no signature (verify: none, --insecure)"
                );
            }
            Ok(hooks)
        }
        Err(problems) => Err(format!(
            "the hooks file {shown} is not valid:\n  {}",
            problems.join("\n  ")
        )),
    }
}
