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
use stateous_client::{Backoff, Client, Followed, Follower};
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
    let backoff = Backoff::new(BACKOFF.iter().copied().map(Duration::from_secs).collect());
    let mut follower = Follower::new(client.clone(), Some(id), backoff);
    if let Followed::Unopened(error) = follower.next().await {
        return Err(error.into());
    }
    let token = client.token(id).await?;
    let children = client.tokens(&children_of(id)).await?;
    let history = client.history(id).await?;
    print_show(&token, &serde_json::Value::Null, &children, &history, out)?;
    out.flush()?;
    if FINAL_STATUSES.contains(&token.status.as_str()) {
        return Ok(());
    }
    let printed = history.last().map_or(0, |entry| entry.seq);
    Printer {
        client,
        id,
        printed,
    }
    .run(follower, out)
    .await
}

/// Where following stands: the last `seq` printed.
struct Printer<'a> {
    client: &'a Client,
    id: &'a str,
    printed: i64,
}

impl Printer<'_> {
    async fn run(
        mut self,
        mut follower: Follower,
        out: &mut dyn Write,
    ) -> Result<(), CommandError> {
        loop {
            match follower.next().await {
                Followed::Event(event) => {
                    let Some(entry) = event.entry() else { continue };
                    if entry.token == self.id && self.print(&entry.entry, out)? {
                        return Ok(());
                    }
                }
                // A new stream after a break (the daemon stopped or restarted):
                // print what the history has that was missed.
                Followed::Opened => match self.catch_up(out).await {
                    Ok(true) => return Ok(()),
                    Ok(false) => {}
                    Err(CommandError::Client(error)) if error.is_retryable() => {
                        follower.drop_stream();
                    }
                    Err(error) => return Err(error),
                },
                Followed::Unopened(error) if !error.is_retryable() => return Err(error.into()),
                Followed::Broke | Followed::Unopened(_) => {}
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

    /// Print what the history has that was not printed; true when it shows the
    /// token ended.
    async fn catch_up(&mut self, out: &mut dyn Write) -> Result<bool, CommandError> {
        for entry in self.client.history(self.id).await? {
            if self.print(&entry, out)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
