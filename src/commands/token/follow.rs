//! `stateous token show ID --follow`: the history, then each new entry of the token as
//! it commits, until the token ends (`GET /watch`, `docs/reference/http.md`).
//!
//! The stream is opened before the history is read, so no entry falls between
//! the two; entries are printed once each, in `seq` order. When the stream breaks
//! (a daemon restart), the command reconnects with `Last-Event-ID` and reads the
//! history again, printing only what it has not printed.

use std::io::Write;
use std::time::Duration;

use super::{children_of, print_show};
use crate::commands::{line, CommandError};
use stateous_client::{Client, Watch};
use stateous_shared::history::entry_line;
use stateous_shared::wire::HistoryEntry;

/// The entry kinds after which a token never moves again.
const FINAL_KINDS: [&str; 3] = ["completed", "failed", "cancelled"];

/// The statuses of a token that ended.
const FINAL_STATUSES: [&str; 3] = ["completed", "failed", "cancelled"];

/// How long to wait before each new try to reach the daemon, in seconds; the
/// last value repeats (the reference's supervisor backoff, capped low since a
/// person is watching).
const BACKOFF: [u64; 4] = [1, 2, 4, 5];

/// Print the token as `show` does, then follow it.
pub(super) async fn show_and_follow(
    client: &Client,
    id: &str,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let watch = client.watch(Some(id), None).await?;
    let token = client.token(id).await?;
    let children = client.tokens(&children_of(id)).await?;
    let history = client.history(id).await?;
    print_show(&token, None, &children, &history, out)?;
    out.flush()?;
    if FINAL_STATUSES.contains(&token.status.as_str()) {
        return Ok(());
    }
    let printed = history.last().map_or(0, |entry| entry.seq);
    Follower {
        client,
        id,
        printed,
        last_event: None,
    }
    .run(watch, out)
    .await
}

/// Where following stands: the last `seq` printed and the last event id seen.
struct Follower<'a> {
    client: &'a Client,
    id: &'a str,
    printed: i64,
    last_event: Option<String>,
}

impl Follower<'_> {
    async fn run(mut self, mut watch: Watch, out: &mut dyn Write) -> Result<(), CommandError> {
        loop {
            match watch.next().await {
                Ok(Some(event)) => {
                    if event.id.is_some() {
                        self.last_event = event.id.clone();
                    }
                    let Some(entry) = event.entry() else { continue };
                    if entry.token == self.id && self.print(&entry.entry, out)? {
                        return Ok(());
                    }
                }
                Err(error) if !error.is_retryable() => return Err(error.into()),
                // The stream ended or broke: the daemon stopped or restarted.
                Ok(None) | Err(_) => match self.reconnect(out).await? {
                    Some(again) => watch = again,
                    None => return Ok(()),
                },
            }
        }
    }

    /// Print `entry` if it is new; true when it ends the token.
    fn print(&mut self, entry: &HistoryEntry, out: &mut dyn Write) -> Result<bool, CommandError> {
        if entry.seq <= self.printed {
            return Ok(false);
        }
        self.printed = entry.seq;
        line(out, &entry_line(entry))?;
        out.flush()?;
        Ok(FINAL_KINDS.contains(&entry.kind.as_str()))
    }

    /// Open the stream again, then print what the history has that was missed;
    /// `None` when that history shows the token ended.
    async fn reconnect(&mut self, out: &mut dyn Write) -> Result<Option<Watch>, CommandError> {
        let mut tries = 0;
        loop {
            let wait = BACKOFF[tries.min(BACKOFF.len() - 1)];
            tokio::time::sleep(Duration::from_secs(wait)).await;
            tries += 1;
            match self.catch_up(out).await {
                Err(CommandError::Client(error)) if error.is_retryable() => continue,
                done => return done,
            }
        }
    }

    async fn catch_up(&mut self, out: &mut dyn Write) -> Result<Option<Watch>, CommandError> {
        let watch = self
            .client
            .watch(Some(self.id), self.last_event.as_deref())
            .await?;
        for entry in self.client.history(self.id).await? {
            if self.print(&entry, out)? {
                return Ok(None);
            }
        }
        Ok(Some(watch))
    }
}
