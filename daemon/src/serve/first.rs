//! What `stateous serve` opens first, before the database, so that a wrong graph
//! file or a port in use is said in one sentence before anything is written: the
//! graph file, read and checked, and the TCP listener, bound.

use std::net::{SocketAddr, TcpListener as StdTcpListener, ToSocketAddrs};
use std::path::Path;

use stateous_shared::compiler;
use stateous_shared::graph::Graph;

use super::options::Listen;

/// The largest graph file `serve` reads, in bytes.
const MAX_GRAPH_FILE: u64 = 64 * 1024 * 1024;

/// The graph file at `path`, loaded and checked.
pub(super) fn read_graph(path: &Path) -> Result<Graph, String> {
    // A device or a pipe given by mistake would be read for ever; a graph file is
    // a regular file of reasonable size.
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err(format!(
                "{} is not a graph file: it is not a regular file",
                path.display()
            ));
        }
        if meta.len() > MAX_GRAPH_FILE {
            return Err(format!(
                "{} is not a graph file: it is larger than {} MiB",
                path.display(),
                MAX_GRAPH_FILE / (1024 * 1024)
            ));
        }
    }
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => {
            format!(
                "{} is not a graph file: it is not UTF-8 text",
                path.display()
            )
        }
        _ => format!(
            "cannot read the graph file {}: {}",
            path.display(),
            os_reason(&e)
        ),
    })?;
    Graph::load(&text).map_err(|e| {
        // A workflow's flow.yaml is the likeliest wrong file: say how to get its graph.
        if let Some(workflow) = compiler::flow_workflow(&text) {
            return format!(
                "{} is a workflow to compile, not a graph file: run `stateous compile {}`, \
                 then serve {}",
                path.display(),
                path.display(),
                compiler::default_target(path, &workflow).display()
            );
        }
        let reason = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        format!("{} is not a graph file: {reason}", path.display())
    })
}

/// An I/O error's reason without Rust's "(os error N)" tail.
fn os_reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// A listener on the address of `--listen`, bound now, before the database opens.
pub(super) fn bind_tcp(listen: &Listen) -> Result<StdTcpListener, String> {
    let Listen { host, port } = listen;
    let cannot = |reason: String| format!("cannot listen on {host}:{port}: {reason}");
    let addresses: Vec<SocketAddr> = (host.as_str(), *port)
        .to_socket_addrs()
        .map_err(|e| cannot(os_reason(&e)))?
        .collect();
    // A name binds its first IPv4 address, as the reference binds names.
    let address = addresses
        .iter()
        .find(|a| a.is_ipv4())
        .or(addresses.first())
        .ok_or_else(|| cannot("the name has no address".into()))?;
    let listener = StdTcpListener::bind(address).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            cannot(
                "another program already uses that port; stop it, or choose another port with --listen"
                    .into(),
            )
        } else {
            cannot(os_reason(&e))
        }
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| cannot(os_reason(&e)))?;
    Ok(listener)
}
