//! What the shell's completion asks the daemon (`stateous completions SHELL`;
//! `docs/reference/cli.md`): token ids where a command takes one, state names
//! for `--state`, from the control plane `STATEOUS_URL` or the default socket
//! names. An unreachable daemon completes nothing, within a second.

use std::time::Duration;

use clap_complete::engine::CompletionCandidate;
use stateous_client::{resolve_url, Client, TokenQuery};

/// How long a completion waits for the daemon: a shell's TAB must not hang.
const WITHIN: Duration = Duration::from_secs(1);

/// Run `ask` on a client of the default control plane; nothing on any failure.
fn ask<F, Fut>(ask: F) -> Vec<CompletionCandidate>
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let Ok(url) = resolve_url(None) else {
        return Vec::new();
    };
    let Ok(client) = Client::with_timeout(&url, WITHIN) else {
        return Vec::new();
    };
    let Ok(runtime) = stateous_client::runtime::runtime(stateous_client::runtime::Threads::One)
    else {
        return Vec::new();
    };
    let names = runtime.block_on(async { tokio::time::timeout(WITHIN, ask(client)).await });
    names
        .unwrap_or_default()
        .into_iter()
        .map(CompletionCandidate::new)
        .collect()
}

/// The ids of the 1000 most recently moved tokens.
pub fn token_ids() -> Vec<CompletionCandidate> {
    ask(|client| async move {
        let query = TokenQuery {
            limit: Some(1000),
            ..TokenQuery::default()
        };
        client
            .tokens(&query)
            .await
            .map(|tokens| tokens.into_iter().map(|t| t.token).collect())
            .unwrap_or_default()
    })
}

/// The states of the served graph's main workflow.
pub fn state_names() -> Vec<CompletionCandidate> {
    ask(|client| async move {
        client
            .workflow()
            .await
            .ok()
            .and_then(|graph| graph.get("states").and_then(|s| s.as_object()).cloned())
            .map(|states| states.keys().cloned().collect())
            .unwrap_or_default()
    })
}
