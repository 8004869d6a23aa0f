//! Finding a folder's routines (`docs/reference/files.md`, "A supervisor's folder").
//!
//! The routine of state `S` is the executable file whose name, less its
//! extension, is `S`; a child workflow's state `W/S` uses `W.S`. `routines:` in
//! `stateous.yaml` may give a command line instead. Two routines for one state
//! refuse the start; so does a folder with no routine at all. A folder may serve
//! only some of the states: another supervisor can serve the rest.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::config::CONFIG_FILE;
use crate::contract::{Contract, CONTRACT_FILE};

/// How a routine is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// An executable file of the folder.
    File(PathBuf),
    /// A command line from `routines:`, run by `/bin/sh -c`.
    Command(String),
}

impl Program {
    /// The routine as log lines show it: the file name or the command line.
    pub fn describe(&self) -> String {
        match self {
            Program::File(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Program::Command(line) => format!("`{line}`"),
        }
    }
}

/// The routines found, by state (as a claim names it), and the warnings found on
/// the way (a file named after a state that cannot run).
#[derive(Debug, Clone, Default)]
pub struct Routines {
    /// The program of each served state.
    pub by_state: BTreeMap<String, Program>,
    /// One sentence per file that looks like a routine but is not one.
    pub warnings: Vec<String>,
}

/// Why the routines of a folder cannot be used; one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RoutineError(pub String);

/// The file name of the routine of `state`, less its extension: `W.S` for `W/S`.
pub fn file_stem_of(state: &str) -> String {
    state.replace('/', ".")
}

/// Find the routines of `folder` for the states of `contract`, plus the command
/// lines of `configured` (`routines:` of `stateous.yaml`).
pub fn discover(
    folder: &Path,
    contract: &Contract,
    configured: &BTreeMap<String, String>,
) -> Result<Routines, RoutineError> {
    let by_stem: BTreeMap<String, &String> = contract
        .states
        .keys()
        .map(|state| (file_stem_of(state), state))
        .collect();
    let mut found: BTreeMap<String, Vec<Program>> = BTreeMap::new();
    let mut routines = Routines::default();
    let entries = std::fs::read_dir(folder)
        .map_err(|e| RoutineError(format!("cannot read {}: {e}", folder.display())))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        if name.starts_with('.') || name == CONTRACT_FILE || name == CONFIG_FILE {
            continue;
        }
        let Some(state) = state_of_file(&name, &by_stem) else {
            continue;
        };
        let path = folder.join(&name);
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        if meta.permissions().mode() & 0o111 == 0 {
            // A state whose routine is a `routines:` command line may run this file
            // through an interpreter (`python3 b.py`): no warning then.
            if configured.contains_key(state.as_str()) {
                continue;
            }
            routines.warnings.push(format!(
                "{name} is named after '{state}' but cannot run: `chmod +x {}`",
                path.display()
            ));
            continue;
        }
        found
            .entry(state.clone())
            .or_default()
            .push(Program::File(path));
    }
    for (state, line) in configured {
        if !contract.states.contains_key(state) {
            return Err(RoutineError(format!(
                "routines: '{state}' in {CONFIG_FILE} is not a state with a routine in \
                 {CONTRACT_FILE}"
            )));
        }
        found
            .entry(state.clone())
            .or_default()
            .push(Program::Command(line.clone()));
    }
    for (state, mut programs) in found {
        if programs.len() > 1 {
            let listed: Vec<String> = programs.iter().map(Program::describe).collect();
            return Err(RoutineError(format!(
                "{} has two routines for '{state}': {}; keep one",
                folder.display(),
                listed.join(" and ")
            )));
        }
        if let Some(program) = programs.pop() {
            routines.by_state.insert(state, program);
        }
    }
    if routines.by_state.is_empty() {
        return Err(RoutineError(format!(
            "{} has no routine: name an executable file after a state (e.g. {}.sh), \
             or map a state to a command line under `routines:` in {CONFIG_FILE}",
            folder.display(),
            contract
                .states
                .keys()
                .next()
                .map(|s| file_stem_of(s))
                .unwrap_or_else(|| "STATE".into())
        )));
    }
    Ok(routines)
}

/// The state a file stands for: its whole name, or its name less the last
/// extension, when that names a state. The whole name wins, so `sec.triage` is
/// the child state `sec/triage`, not the state `sec` with the extension `triage`.
fn state_of_file(name: &str, by_stem: &BTreeMap<String, &String>) -> Option<String> {
    if let Some(state) = by_stem.get(name) {
        return Some((*state).clone());
    }
    let (stem, extension) = name.rsplit_once('.')?;
    if extension.is_empty() {
        return None;
    }
    by_stem.get(stem).map(|state| (*state).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn contract() -> Contract {
        let doc = json!({"workflow": "w",
            "states": {"coding": {"emits": []}, "testing": {"emits": []}},
            "events": {},
            "workflows": {"sec": {"states": {"triage": {"emits": []}}, "events": {}}}});
        Contract::from_graph(&doc, "sha256:0").unwrap()
    }

    fn write(dir: &Path, name: &str, mode: u32) {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn routines_are_found_by_file_name() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "coding.sh", 0o755);
        write(dir.path(), "sec.triage", 0o755);
        write(dir.path(), "testing.md", 0o644);
        write(dir.path(), "notes.sh", 0o755);
        let found = discover(dir.path(), &contract(), &BTreeMap::new()).unwrap();
        let states: Vec<&str> = found.by_state.keys().map(String::as_str).collect();
        assert_eq!(states, ["coding", "sec/triage"]);
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert!(found.warnings[0].contains("testing.md"));
    }

    #[test]
    fn two_routines_for_one_state_refuse_the_start() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "coding.sh", 0o755);
        write(dir.path(), "coding.py", 0o755);
        let err = discover(dir.path(), &contract(), &BTreeMap::new()).unwrap_err();
        assert!(
            err.0
                .contains("two routines for 'coding': coding.py and coding.sh"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "testing", 0o755);
        let configured = BTreeMap::from([("testing".to_string(), "make test".to_string())]);
        let err = discover(dir.path(), &contract(), &configured).unwrap_err();
        assert!(err.0.contains("testing and `make test`"), "{err}");
    }

    #[test]
    fn command_lines_count_and_no_routine_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let err = discover(dir.path(), &contract(), &BTreeMap::new()).unwrap_err();
        assert!(err.0.contains("has no routine"), "{err}");
        let configured = BTreeMap::from([("testing".to_string(), "make test".to_string())]);
        let found = discover(dir.path(), &contract(), &configured).unwrap();
        assert_eq!(
            found.by_state["testing"],
            Program::Command("make test".into())
        );
        let wrong = BTreeMap::from([("deploy".to_string(), "x".to_string())]);
        assert!(discover(dir.path(), &contract(), &wrong).is_err());
    }
}
