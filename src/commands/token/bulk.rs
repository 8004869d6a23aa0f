//! A steering command over every token a filter matches: `stateous token cancel --where
//! EXPR --reason TEXT` and its siblings `pause`, `resume`, `fire`, `retry` and
//! `prune`.
//!
//! It previews first (`POST /tokens/bulk` with `dry_run`: the count and a sample,
//! with what the action does to each), then asks the operator to type the count.
//! `--yes` skips the question; without a terminal and without `--yes` it refuses
//! in one sentence and changes nothing. The run walks the matches a page at a time
//! (the answer's `next`), telling its progress on the console, then prints a
//! summary and the tokens that were refused. The ended tokens that the preview
//! left out (`left_out`) are left out of the run too, and both say how many.

use std::io::{BufRead, IsTerminal, Write};

use crate::commands::{json_object, line, pretty, CommandError};
use stateous_client::{Client, ClientError, TransportError};
use stateous_shared::bulk::{
    left_out_words, operator_name, outcome_line, would_line, BulkAction, BulkAnswer, BulkRequest,
    Outcome, TokenOutcome,
};

/// The options of a bulk action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkOptions {
    /// What to do.
    pub action: BulkAction,
    /// `--where`: which tokens.
    pub filter: String,
    /// `fire`: the event.
    pub event: Option<String>,
    /// `fire`: the payload, as JSON text.
    pub payload: Option<String>,
    /// `fire`: `--key`, the key each token's key is derived from.
    pub key: Option<String>,
    /// `retry`: `--state`.
    pub state: Option<String>,
    /// `priority`: the priority N.
    pub priority: Option<i64>,
    /// `migrate`: `--map OLD=NEW`, each state a token in OLD takes.
    pub map: std::collections::BTreeMap<String, String>,
    /// `migrate`: `--undo`, back to the graph of each token's last migration.
    pub undo: bool,
    /// `--reason`: written into each token's history; needed unless `--dry-run`.
    pub reason: Option<String>,
    /// `--yes`: no question.
    pub yes: bool,
    /// `--dry-run`: the preview only.
    pub dry_run: bool,
    /// `--jsonl`: each token's outcome as a line of JSON, as it comes.
    pub jsonl: bool,
    /// `prune --archive`: the absolute path of the folder the histories go to.
    pub archive: Option<String>,
    /// `--include-ended`: take in the ended tokens the filter matches, which
    /// `pause`, `resume`, `cancel`, `fire` and `migrate` leave out by default.
    pub include_ended: bool,
}

impl BulkOptions {
    /// `action` over the tokens `filter` matches, every other option unset.
    pub fn new(action: BulkAction, filter: String) -> BulkOptions {
        BulkOptions {
            action,
            filter,
            event: None,
            payload: None,
            key: None,
            state: None,
            priority: None,
            map: Default::default(),
            undo: false,
            reason: None,
            yes: false,
            dry_run: false,
            jsonl: false,
            archive: None,
            include_ended: false,
        }
    }
}

/// Where a command asks its question and tells its progress: the terminal, or a
/// script in tests.
pub trait Console {
    /// Whether a person can answer a question (standard input is a terminal).
    fn can_ask(&self) -> bool;
    /// Ask `question` and read one line of answer.
    fn ask(&mut self, question: &str) -> std::io::Result<String>;
    /// Tell one line that is not data (stderr).
    fn note(&mut self, text: &str);
}

/// The process's terminal: questions and notes on stderr, answers from stdin.
pub struct Terminal;

impl Console for Terminal {
    fn can_ask(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    fn ask(&mut self, question: &str) -> std::io::Result<String> {
        eprint!("{question}");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        // Ctrl-D (end of input) leaves the cursor after the question: end its
        // line, so that what comes next starts a line of its own.
        if !answer.ends_with('\n') {
            eprintln!();
        }
        Ok(answer)
    }

    fn note(&mut self, text: &str) {
        eprintln!("{text}");
    }
}

/// The most refused tokens a summary lists one by one.
const MOST_REFUSED_SHOWN: usize = 50;

fn plural(count: i64) -> &'static str {
    if count == 1 {
        "token"
    } else {
        "tokens"
    }
}

/// Preview, confirm, run, summarize.
pub(super) async fn run(
    client: &Client,
    options: &BulkOptions,
    json: bool,
    out: &mut dyn Write,
    console: &mut dyn Console,
) -> Result<(), CommandError> {
    let verb = options.action.as_str();
    if json && options.jsonl {
        return Err(CommandError::Usage(
            "give --json or --jsonl, not both".into(),
        ));
    }
    let payload = options
        .payload
        .as_deref()
        .map(|text| json_object(text, "PAYLOAD_JSON"))
        .transpose()?;
    let mut request = BulkRequest {
        action: Some(options.action),
        filter: Some(options.filter.clone()),
        event: options.event.clone(),
        payload,
        key: options.key.clone(),
        state: options.state.clone(),
        priority: options.priority,
        map: (!options.map.is_empty()).then(|| options.map.clone()),
        undo: options.undo,
        reason: options.reason.clone(),
        by: Some(operator_name()),
        dry_run: true,
        archive: options.archive.clone(),
        include_ended: options.include_ended,
        // A dry run shows what would happen to each token, not only the first 20.
        every: options.dry_run,
        ..BulkRequest::default()
    };
    // The preview first: a filter, a priority or an event the control plane
    // refuses is said before a missing reason.
    let preview = client.bulk(&request).await?;
    // A pruned token keeps no history to write a reason into.
    if options.reason.is_none() && !options.dry_run && options.action != BulkAction::Prune {
        return Err(CommandError::Usage(format!(
            "a {verb} with --where needs --reason: it is written into each token's history"
        )));
    }
    if options.dry_run {
        if json {
            return line(out, &pretty(&preview)?);
        }
        if options.jsonl {
            for outcome in &preview.outcomes {
                line(out, &serde_json::to_string(outcome).unwrap_or_default())?;
            }
            return Ok(());
        }
        let every = BulkAnswer {
            sample: preview.outcomes.clone(),
            ..preview.clone()
        };
        return print_preview(&every, &options.filter, out);
    }
    request.every = false;
    if preview.count == 0 {
        // Stdout keeps to the format asked for (with --json, the answer); the
        // note goes to stderr, as the listing's "no token matches" does.
        if json {
            line(out, &pretty(&preview)?)?;
        }
        let left_out = none_left_out(preview.left_out);
        console.note(&format!(
            "no token matches the filter; nothing to do{left_out}"
        ));
        return Ok(());
    }
    if !options.yes {
        if !console.can_ask() {
            return Err(CommandError::Usage(format!(
                "{verb} would act on {} {}: confirm at a terminal, or add --yes",
                preview.count,
                plural(preview.count)
            )));
        }
        print_preview(&preview, &options.filter, out)?;
        out.flush()?;
        let question = format!(
            "Type {} to {verb} them, anything else to stop: ",
            preview.count
        );
        let answer = console.ask(&question)?;
        if answer.trim() != preview.count.to_string() {
            return Err(CommandError::Usage(format!(
                "nothing was changed: the answer was not {}",
                preview.count
            )));
        }
    } else if !json && !options.jsonl {
        print_preview(&preview, &options.filter, out)?;
    }
    request.dry_run = false;
    let mut total = walk(client, &mut request, preview.count, options, out, console).await?;
    // The walk met only what the preview counted: the ended tokens it left out
    // are left out of the run too, and its summary says so.
    total.left_out = preview.left_out;
    if json {
        return line(out, &pretty(&total)?);
    }
    if !options.jsonl {
        summarize(&total, out)?;
    }
    Ok(())
}

/// Run the walk to its end; every answer merged into one.
async fn walk(
    client: &Client,
    request: &mut BulkRequest,
    expected: i64,
    options: &BulkOptions,
    out: &mut dyn Write,
    console: &mut dyn Console,
) -> Result<BulkAnswer, CommandError> {
    let verb = options.action.as_str();
    let mut total = BulkAnswer::new(options.action, false);
    loop {
        let answer = match client.bulk(request).await {
            Ok(answer) => answer,
            Err(error) => return Err(cut(verb, &total, expected, error)),
        };
        if options.jsonl {
            for outcome in &answer.outcomes {
                line(out, &serde_json::to_string(outcome).unwrap_or_default())?;
            }
            out.flush()?;
        }
        let (count, next) = (answer.count, answer.next.clone());
        stateous_client::add_bulk_page(&mut total, answer);
        if count == 0 {
            // The page before ended at its limit on the last match.
            return Ok(total);
        }
        console.note(&format!("{verb}: {}", so_far(&total, expected)));
        match next {
            Some(next) => request.after = Some(next),
            None => return Ok(total),
        }
    }
}

/// The error of a walk that a failed request stopped: what the pages before it
/// did, and whether the page it sent may have been applied in part (no answer came:
/// each token of a page is its own write). A first page refused outright is the
/// refusal alone: nothing was done.
fn cut(verb: &str, total: &BulkAnswer, expected: i64, error: ClientError) -> CommandError {
    let unanswered = match &error {
        ClientError::Unreachable { source, .. } => !matches!(source, TransportError::Connect(_)),
        ClientError::BadAnswer { .. } => true,
        ClientError::Refused { .. }
        | ClientError::BadUrl(_)
        | ClientError::BadTls(_)
        | ClientError::BadCall(_) => false,
    };
    let error = CommandError::from(error).with_code();
    if total.count == 0 && !unanswered {
        return error;
    }
    let in_flight = if unanswered {
        "; the page it was sending got no answer and may have been applied in part"
    } else {
        ""
    };
    CommandError::Usage(format!(
        "{error}; {verb} stopped after {}{in_flight}; run it again to finish: what it \
         already did is then counted refused, duplicate or skipped, never done twice",
        so_far(total, expected)
    ))
}

/// `N of M tokens (A applied, R refused, D duplicate, S skipped)`: how far a walk
/// that expects `expected` tokens got.
fn so_far(total: &BulkAnswer, expected: i64) -> String {
    format!(
        "{} of {} {} ({} applied, {} refused, {} duplicate, {} skipped)",
        total.count,
        expected.max(total.count),
        plural(expected),
        total.applied,
        total.refused,
        total.duplicate,
        total.skipped
    )
}

fn print_preview(
    preview: &BulkAnswer,
    filter: &str,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let count = preview.count;
    if count == 0 {
        let action = preview.action.as_str();
        let left_out = none_left_out(preview.left_out);
        return line(
            out,
            &format!("no token matches {filter}; {action} would do nothing{left_out}"),
        );
    }
    line(
        out,
        &format!(
            "{count} {} {} {filter}; {} would do:",
            plural(count),
            if count == 1 { "matches" } else { "match" },
            preview.action.as_str()
        ),
    )?;
    for outcome in &preview.sample {
        line(out, &format!("  {}", outcome_line(outcome)))?;
    }
    let more = count - preview.sample.len() as i64;
    if more > 0 {
        line(out, &format!("  ... and {more} more"))?;
    }
    line(out, &would_line(preview, INCLUDE))
}

/// How to take in the ended tokens a bulk action left out.
const INCLUDE: &str = "include them with --include-ended";

/// ` (15 ended tokens left out; include them with --include-ended)`, the end of a
/// line that says no token matched; empty when none was left out.
fn none_left_out(left_out: i64) -> String {
    match left_out {
        ..=0 => String::new(),
        1 => " (1 ended token left out; include it with --include-ended)".to_string(),
        n => format!(" ({n} ended tokens left out; {INCLUDE})"),
    }
}

fn summarize(total: &BulkAnswer, out: &mut dyn Write) -> Result<(), CommandError> {
    line(
        out,
        &format!(
            "{} {} {}; {} refused, {} duplicate, {} skipped{}",
            total.action.done(),
            total.applied,
            plural(total.applied),
            total.refused,
            total.duplicate,
            total.skipped,
            left_out_words(total.left_out, INCLUDE)
        ),
    )?;
    for line_text in skipped_lines(&total.outcomes) {
        line(out, &line_text)?;
    }
    // The refused tokens need a look; duplicates are counted, skipped ones by reason.
    let refused: Vec<&TokenOutcome> = total
        .outcomes
        .iter()
        .filter(|o| o.outcome == Outcome::Refused)
        .collect();
    for outcome in refused.iter().take(MOST_REFUSED_SHOWN) {
        line(out, &format!("  {}", outcome_line(outcome)))?;
    }
    if refused.len() > MOST_REFUSED_SHOWN {
        let more = refused.len() - MOST_REFUSED_SHOWN;
        line(
            out,
            &format!("  ... and {more} more refused (--jsonl prints every outcome)"),
        )?;
    }
    Ok(())
}

/// The most ids of skipped tokens a summary names for one reason.
const MOST_SKIPPED_NAMED: usize = 5;

/// A line per reason tokens were skipped, in the order first met: `N skipped
/// (ID, ...): REASON`; every id is in `--jsonl` and `--json`.
pub(super) fn skipped_lines(outcomes: &[TokenOutcome]) -> Vec<String> {
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for outcome in outcomes.iter().filter(|o| o.outcome == Outcome::Skipped) {
        match reasons
            .iter_mut()
            .find(|(detail, _)| *detail == outcome.detail)
        {
            Some((_, ids)) => ids.push(&outcome.token),
            None => reasons.push((&outcome.detail, vec![&outcome.token])),
        }
    }
    reasons
        .into_iter()
        .map(|(detail, ids)| {
            let mut named = ids[..ids.len().min(MOST_SKIPPED_NAMED)].join(", ");
            if ids.len() > MOST_SKIPPED_NAMED {
                named.push_str(&format!(" and {} more", ids.len() - MOST_SKIPPED_NAMED));
            }
            format!("  {} skipped ({named}): {detail}", ids.len())
        })
        .collect()
}
