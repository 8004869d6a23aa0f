//! The workflow compiler (`docs/reference/files.md`): `flow.yaml` in, the graph file out.
//!
//! Reading (`flow`) checks the YAML's shape and names the line of a mistake.
//! Declaring (`declare`) and validating (`validate`, `python`, the overlap check)
//! collect every problem, so that one run lists them all under
//! `workflow 'NAME' is not valid:`. A valid workflow becomes the graph document
//! (`codegen`), written as the reference writes graph files.

mod codegen;
mod declare;
pub(crate) mod flow;
mod loose;
mod mermaid;
pub mod overlap;
mod python;
mod starter;
mod validate;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use flow::{keys_once, twice_words};
pub use mermaid::{mermaid, state_id};
pub use starter::starter_flow;
pub use validate::MAX_TOKEN_ID;

/// Why a workflow did not compile, or its graph file was not written. The `Display`
/// text is what `stateous compile` prints after `error: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The file cannot be read, or its YAML is wrong (the sentence names the line).
    #[error("{0}")]
    Read(String),
    /// The workflow has problems, one sentence each.
    #[error("workflow '{workflow}' is not valid:\n{}", listed(problems))]
    Invalid {
        /// The workflow's name as the file gives it.
        workflow: String,
        /// Every problem found.
        problems: Vec<String>,
    },
    /// A file or folder cannot be written.
    #[error("{0}")]
    Write(String),
}

fn listed(problems: &[String]) -> String {
    problems
        .iter()
        .map(|p| format!("  - {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A compiled workflow: its name and its graph document.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    /// The main workflow's name.
    pub workflow: String,
    /// The graph document, its keys in the reference's order.
    pub document: Value,
}

/// Compile the text of a `flow.yaml`. `source` names the file in YAML errors.
pub fn compile_text(text: &str, source: &str) -> Result<Compiled, CompileError> {
    let raw = flow::parse(text, source).map_err(CompileError::Read)?;
    let workflow = raw.workflow.clone();
    let (declared, mut problems) = declare::declare(raw);
    // A mistake in one state's settings (a bad duration, a wrong name) leaves the
    // graph whole, so the graph's own mistakes are listed with it in one run.
    if declared.complete {
        problems.extend(validate::validate(&declared));
        if validate::nests(&declared) {
            let children = validate::nested(&declared);
            problems.extend(python::problems(&declared, &children));
        }
    }
    if !problems.is_empty() {
        return Err(CompileError::Invalid { workflow, problems });
    }
    let children = validate::nested(&declared);
    Ok(Compiled {
        workflow,
        document: codegen::document(&declared, &children),
    })
}

/// Compile the `flow.yaml` at `path`.
pub fn compile_file(path: &Path) -> Result<Compiled, CompileError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        CompileError::Read(format!("cannot read {}: {}", path.display(), plain(&error)))
    })?;
    compile_text(&text, &path.display().to_string())
}

/// Write a graph file as the reference does: `json.dumps(indent=2)` and a newline,
/// creating its folder.
pub fn write_graph(target: &Path, document: &Value) -> Result<(), CompileError> {
    let written = target
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(target, crate::graph::pretty(document)));
    written.map_err(|error| {
        CompileError::Write(format!(
            "cannot write {}: {}",
            target.display(),
            plain(&error)
        ))
    })
}

/// The graph file's default place: `build/<workflow>.json` beside the flow.
pub fn default_target(flow: &Path, workflow: &str) -> PathBuf {
    flow.parent()
        .unwrap_or(Path::new(""))
        .join("build")
        .join(format!("{workflow}.json"))
}

/// The workflow's name when `text` reads as a workflow's source (a `flow.yaml`)
/// rather than a graph file: a YAML mapping that names a `workflow` and has no
/// `stateous` format key, which every graph file has and no flow.yaml may. `serve`
/// asks it once a file fails to load as a graph, to say what to do instead.
pub fn flow_workflow(text: &str) -> Option<String> {
    let Ok(Value::Object(top)) = serde_norway::from_str::<Value>(text) else {
        return None;
    };
    if top.contains_key("stateous") {
        return None;
    }
    top.get("workflow")?.as_str().map(str::to_string)
}

/// `stateous compile FLOW [--out FILE]`: compile, write the graph file, and print
/// `wrote PATH` on stdout.
pub fn compile_command(flow: &Path, out: Option<&Path>) -> Result<(), CompileError> {
    let compiled = compile_file(flow)?;
    let target = out.map_or_else(
        || default_target(flow, &compiled.workflow),
        Path::to_path_buf,
    );
    write_graph(&target, &compiled.document)?;
    println!("wrote {}", target.display());
    Ok(())
}

/// `stateous init workflow NAME`: write `NAME/flow.yaml` (the `orders` starter, named
/// NAME) and compile it to `NAME/build/NAME.json`, printing a line per file and the
/// next steps. A folder that has a `flow.yaml` is refused.
pub fn init_workflow(name: &str) -> Result<(), CompileError> {
    if let Some(problem) = declare::name_problem("workflow", name) {
        return Err(CompileError::Write(problem));
    }
    let folder = Path::new(name);
    let flow = folder.join("flow.yaml");
    if flow.exists() {
        return Err(CompileError::Write(format!(
            "{} already has flow.yaml: give another name, or edit that file",
            folder.display()
        )));
    }
    std::fs::create_dir_all(folder)
        .and_then(|()| std::fs::write(&flow, starter_flow(name)))
        .map_err(|error| {
            CompileError::Write(format!(
                "cannot write {}: {}",
                folder.display(),
                plain(&error)
            ))
        })?;
    println!("wrote    {}", flow.display());
    let compiled = compile_file(&flow)?;
    let graph = default_target(&flow, name);
    write_graph(&graph, &compiled.document)?;
    println!("wrote    {}", graph.display());
    println!("\nNext steps:");
    println!("  stateous serve {}", graph.display());
    println!(
        "  stateous init supervisor {} {name}-supervisor",
        flow.display()
    );
    Ok(())
}

/// An I/O error as a short phrase, without Rust's `(os error N)`.
fn plain(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// The overlap check of one workflow: guards on one state and event that can both
/// be true, with an example (the `overlap` module). The groups come in the order of
/// their first transition, as the reference lists them.
fn overlap_check(declared: &declare::Declared, flow: &declare::Flow) -> Vec<String> {
    let mut groups: Vec<(&str, &str, Vec<&crate::guards::Guard>)> = Vec::new();
    for edge in &flow.transitions {
        let Some(guard) = &edge.when else { continue };
        match groups
            .iter_mut()
            .find(|(source, event, _)| *source == edge.source && *event == edge.event)
        {
            Some((_, _, guards)) => guards.push(guard),
            None => groups.push((&edge.source, &edge.event, vec![guard])),
        }
    }
    let context = flow
        .context
        .as_deref()
        .and_then(|n| declared.schemas.get(n));
    groups
        .into_iter()
        .flat_map(|(source, event, guards)| {
            let payload = flow.payload(event).and_then(|n| declared.schemas.get(n));
            let place = overlap::Where {
                event,
                context,
                payload,
                schemas: Some(&declared.schemas),
            };
            overlap::check_group(source, &guards, &place)
        })
        .collect()
}
