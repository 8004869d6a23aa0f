//! `stateous init supervisor SOURCE FOLDER` (`docs/reference/cli.md`): write
//! `contract.json` each time, a stub routine for each state without one, and
//! `stateous.yaml` only when missing. One line per file (`wrote`, `kept`,
//! `skipped`), then the next step.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use stateous_client::{Call, Client, TlsOptions, DEFAULT_URL};

use crate::config::{Config, CONFIG_FILE, DEFAULT_TASKS};
use crate::contract::{Contract, CONTRACT_FILE};
use crate::routines::{self, file_stem_of};

/// The workflow a SOURCE names: the URL for `stateous.yaml` and the contract.
/// An `https://` control plane is trusted as `tls` says (`--cacert`, ...).
pub async fn contract_of(source: &str, tls: &TlsOptions) -> Result<(String, Contract), String> {
    if ["http://", "https://", "unix://"]
        .iter()
        .any(|scheme| source.starts_with(scheme))
    {
        let contract = fetch(source, tls)
            .await
            .map_err(|e| format!("cannot fetch the workflow from {source}: {e}"))?;
        return Ok((source.trim_end_matches('/').to_string(), contract));
    }
    let path = Path::new(source);
    if !path.exists() {
        return Err(format!(
            "{source} does not exist: give a control plane's URL (http://, https:// or unix://), \
             a graph file or a flow.yaml"
        ));
    }
    let is = |ext: &str| path.extension().is_some_and(|e| e == ext);
    let document = if path.is_file() && (is("yaml") || is("yml")) {
        // A flow.yaml is compiled in memory; no graph file is written.
        stateous_shared::compiler::compile_file(path)
            .map_err(|e| format!("cannot use {source}: {e}"))?
            .document
    } else if path.is_file() && is("json") {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {source}: {e}"))?;
        // The checks `serve` makes on a graph file.
        stateous_shared::graph::Graph::load(&text)
            .map_err(|e| format!("cannot use {source}: {e}"))?
            .document
    } else {
        return Err(format!(
            "{source} is not a graph file (.json) or a flow.yaml"
        ));
    };
    let checksum = stateous_shared::graph::checksum(&document);
    let contract = Contract::from_graph(&document, &checksum)
        .map_err(|e| format!("cannot use {source}: {e}"))?;
    Ok((DEFAULT_URL.to_string(), contract))
}

async fn fetch(url: &str, tls: &TlsOptions) -> Result<Contract, String> {
    // One address or several (a control plane and its standbys): the first that
    // serves answers.
    let client =
        Client::with_tls(url, Duration::from_secs(30), false, tls).map_err(|e| e.to_string())?;
    let get = |call: Call| {
        let client = client.clone();
        async move {
            let path = &call.path;
            let answer = client
                .attempt(&call)
                .await
                .result
                .map_err(|e| e.to_string())?;
            if answer.status != 200 {
                return Err(format!("GET {path} answered {}", answer.status));
            }
            serde_json::from_slice::<Value>(&answer.body)
                .map_err(|_| format!("the answer of GET {path} is not JSON"))
        }
    };
    let document = get(Call::workflow()).await?;
    let health = get(Call::health()).await?;
    let checksum = health["checksum"]
        .as_str()
        .ok_or("GET /health has no checksum")?;
    Contract::from_graph(&document, checksum).map_err(|e| e.0)
}

/// Write the folder; returns the lines to print, one per file.
pub fn write_folder(folder: &Path, url: &str, contract: &Contract) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(folder)?;
    let mut lines = Vec::new();
    let target = folder.join(CONTRACT_FILE);
    std::fs::write(&target, contract.to_text())?;
    lines.push(format!("wrote    {}", target.display()));
    let config_path = folder.join(CONFIG_FILE);
    let configured = Config::load(&config_path)
        .map(|c| c.routines)
        .unwrap_or_default();
    let found = routines::discover(folder, contract, &configured)
        .map(|r| r.by_state)
        .unwrap_or_default();
    for state in contract.states.keys() {
        let stub = folder.join(format!("{}.sh", file_stem_of(state)));
        if found.contains_key(state) {
            lines.push(format!("kept     the routine of '{state}'"));
        } else if stub.exists() {
            lines.push(format!(
                "skipped  {}: the file exists and has no routine for '{state}'",
                stub.display()
            ));
        } else {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o755)
                .open(&stub)?;
            file.write_all(stub_text(contract, state).as_bytes())?;
            lines.push(format!("wrote    {}", stub.display()));
        }
    }
    if config_path.exists() {
        lines.push(format!("kept     {}", config_path.display()));
    } else {
        std::fs::write(&config_path, config_text(url))?;
        lines.push(format!("wrote    {}", config_path.display()));
    }
    Ok(lines)
}

/// `url` as YAML: a string, or a list of strings for several addresses.
fn yaml_url(url: &str) -> String {
    if !url.contains(',') {
        return serde_json::to_string(url).unwrap_or_default();
    }
    let list: Vec<&str> = url.split(',').map(str::trim).collect();
    serde_json::to_string(&list).unwrap_or_default()
}

fn config_text(url: &str) -> String {
    format!(
        "# A Stateous supervisor. Run it with: stateous supervise <this folder>\n\
         url: {}    # the control plane\n\
         tasks: {DEFAULT_TASKS}    # how many routines run at once\n\
         # name: build-box-1    # optional; default: the host name\n\
         # routines:    # optional: a state's routine as a command line\n\
         #   testing: python3 run_tests.py\n",
        yaml_url(url)
    )
}

/// The stub of `state`: a shell script that fails, and shows the protocol.
pub fn stub_text(contract: &Contract, state: &str) -> String {
    let emits = contract
        .states
        .get(state)
        .map(|s| s.emits.clone())
        .unwrap_or_default();
    let mut events = String::new();
    for event in &emits {
        match contract.payload_schema(state, event) {
            Some(schema) => events.push_str(&format!(
                "#   stateous ctx emit {event} 'PAYLOAD'    # PAYLOAD: {}\n",
                serde_json::to_string(schema).unwrap_or_default()
            )),
            None => events.push_str(&format!("#   stateous ctx emit {event}\n")),
        }
    }
    if events.is_empty() {
        events.push_str(&format!("#   ('{state}' emits no event)\n"));
    }
    format!(
        "#!/bin/sh\n\
         # The routine of '{state}' in the '{workflow}' workflow.\n\
         #\n\
         # The supervisor runs it in its folder, with the grant as one JSON object on\n\
         # stdin (task, token, state, visit, attempt, context, memory, entered_by) and\n\
         # STATEOUS_TOKEN, STATEOUS_TASK, STATEOUS_STATE, STATEOUS_VISIT and\n\
         # STATEOUS_ATTEMPT in its environment. It speaks to its supervisor with:\n\
         #   stateous ctx get [KEY]                 the token's context, or one key\n\
         #   stateous ctx set KEY JSON              a context change, sent with the outcome\n\
         #   stateous ctx note TEXT                 a line in the token's history\n\
         #   stateous ctx memory get|set|del KEY [JSON]   memory kept across attempts\n\
         #   stateous ctx schedule EVENT [PAYLOAD] --after 10m\n\
         #   stateous ctx outcome-schema            the outcomes below, as JSON Schema\n\
         # It gives one outcome, then exits 0:\n\
         {events}\
         #   stateous ctx wait                      someone outside reports it later\n\
         # A non-zero exit, or no outcome, fails the attempt.\n\
         \n\
         echo \"the routine of '{state}' is not implemented\" >&2\n\
         exit 1\n",
        workflow = contract.workflow,
    )
}

/// The body of `stateous init supervisor SOURCE FOLDER`: prints the lines.
/// `tls` trusts an `https://` SOURCE. Errors: one sentence, which the binary
/// prints after `error: ` (exit code 1).
pub fn init_command(source: &str, folder: &Path, tls: &TlsOptions) -> Result<(), String> {
    let runtime = stateous_client::runtime::runtime(stateous_client::runtime::Threads::One)
        .map_err(|e| e.to_string())?;
    let (url, contract) = runtime.block_on(contract_of(source, tls))?;
    let lines = write_folder(folder, &url, &contract)
        .map_err(|e| format!("cannot write {}: {e}", folder.display()))?;
    for line in lines {
        println!("{line}");
    }
    println!(
        "\nWrite the routines, then run: stateous supervise {}",
        folder.display()
    );
    Ok(())
}
