//! `serve --limits FILE`: the limits file read once at start and checked against
//! the graph before anything is bound (`docs/limits.md`, "The limits file"); what it
//! names is set as the control plane takes the database (`engine/limits_file.rs`).
//! Any problem stops `serve` with every problem listed, nothing served or changed.

use std::path::Path;

use stateous_shared::claim_limits::parse_limits_file_partly;
use stateous_shared::graph::Graph;

use crate::control::Control;
use crate::engine::limits_file::{check, FileSettings};

/// The largest limits file `serve` reads, in bytes.
const MAX_LIMITS_FILE: u64 = 1024 * 1024;

/// A checked limits file and the path it was read from, as the journal names it.
#[derive(Debug, Clone)]
pub struct LimitsFile {
    /// The path as given.
    pub shown: String,
    /// Its settings.
    pub settings: FileSettings,
}

/// The limits file at `path` (none without it), checked against `graph`. The
/// error lists every problem, one a line.
pub fn read_limits(path: Option<&Path>, graph: &Graph) -> Result<Option<LimitsFile>, String> {
    let Some(path) = path else {
        return Ok(None);
    };
    let shown = path.display().to_string();
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() || meta.len() > MAX_LIMITS_FILE => {
            return Err(format!(
                "{shown} is not a limits file: it is not a regular file of at most 1 MiB"
            ));
        }
        _ => {}
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the limits file {shown}: {e}"))?;
    let invalid = |problems: Vec<String>| {
        format!(
            "the limits file {shown} is not valid:\n  {}",
            problems.join("\n  ")
        )
    };
    let (file, mut problems) = parse_limits_file_partly(&text, &shown);
    match check(graph, &file, &shown) {
        Ok(settings) if problems.is_empty() => Ok(Some(LimitsFile { shown, settings })),
        Ok(_) => Err(invalid(problems)),
        Err(more) => {
            problems.extend(more);
            Err(invalid(problems))
        }
    }
}

/// Set what the file names on `control`'s database, before the API serves; one
/// line on stderr says what changed.
pub async fn apply(control: &Control, file: &LimitsFile) -> Result<(), String> {
    let changed = control
        .apply_limits_file(&file.shown, file.settings.clone())
        .await
        .map_err(|refused| {
            format!(
                "cannot apply the limits file {}: {}",
                file.shown, refused.error
            )
        })?;
    let named = file.settings.limits.len() + file.settings.policies.len();
    let said = if named == 0 {
        format!(
            "limits file {}: it names no limit and no retry policy",
            file.shown
        )
    } else if changed.is_empty() {
        format!("limits file {}: the database holds it already", file.shown)
    } else {
        format!("limits file {}: set {}", file.shown, changed.join(", "))
    };
    super::say(&said);
    Ok(())
}
