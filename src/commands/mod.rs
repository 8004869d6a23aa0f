//! Commands of the `stateous` binary that only speak to a control plane over HTTP
//! (`stateous token ...`, `stateous bench`), written as library functions:
//! `src/main.rs` parses the command line and calls them.
//!
//! A command writes its data to the `out` it is given and fails with a
//! [`CommandError`], whose text the binary prints as `error: <sentence>` on stderr with
//! exit code 1 (`docs/reference/cli.md`, "How they behave alike").

pub mod access;
pub mod bench;
pub mod bench_hooks;
pub mod bench_notify;
// Usage and budgets (`docs/concepts/budgets.md`).
pub mod budget;
// Limits on claims (`docs/limits.md`).
pub mod clock;
pub mod limit;
pub mod notify;
pub mod schedule;
pub mod token;

use std::io::Write;
use std::process::ExitCode;

use stateous_client::ClientError;
use stateous_shared::refusal::Code;
use stateous_shared::wire::Object;

/// Why a command stopped. The text is one sentence, without the `error: ` prefix.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The command line asks for something that cannot be done.
    #[error("{0}")]
    Usage(String),
    /// The control plane refused, did not answer, or the URL is wrong.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The control plane refused a command the reference does not have (`token retry`,
    /// `why`, `list`, a bulk `--where`, `clock`, `bench`): the line names the refusal's
    /// code beside its status, as the TUI does. The reference's token commands keep its
    /// line, which names the status alone.
    #[error("the control plane at {url} refused ({status} {code}): {sentence}")]
    Refused {
        /// The URL of the address that refused.
        url: String,
        /// The HTTP status, e.g. 409.
        status: u16,
        /// The refusal's code, e.g. `token_not_active`.
        code: Code,
        /// The refusal's sentence.
        sentence: String,
    },
    /// A change got no answer (a timeout, a broken connection): the client's
    /// sentence, then what the change may have done and whether sending it again
    /// is safe.
    #[error("{sentence}, {then}")]
    Unanswered {
        /// The client's sentence, e.g. `cannot reach the control plane at URL: no
        /// answer in 30s`.
        sentence: String,
        /// What may have happened and what to do, e.g. `so the token may have been
        /// started; the same command again is safe (an id starts one token)`.
        then: String,
    },
    /// Writing the output failed; a closed pipe (`| head -1`) ends the command
    /// quietly with exit code 1.
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

impl CommandError {
    /// This error, a refusal's code named in its line when the control plane
    /// refused (see [`CommandError::Refused`]). A code guessed from the status,
    /// for an answer that was not the API's, is not named.
    pub fn with_code(self) -> CommandError {
        match self {
            CommandError::Client(ClientError::Refused {
                url,
                status,
                refusal,
                synthetic: false,
            }) => CommandError::Refused {
                url,
                status,
                code: refusal.code,
                sentence: refusal.error,
            },
            other => other,
        }
    }
}

/// Run `command` to completion on a runtime of its own, print a failure as
/// `error: <sentence>` on stderr, and give the exit code: 0, or 1 on any failure.
/// For a binary whose `main` is not async.
pub fn execute<F>(command: F) -> ExitCode
where
    F: std::future::Future<Output = Result<(), CommandError>>,
{
    let runtime = match stateous_client::runtime::runtime(stateous_client::runtime::Threads::One) {
        Ok(runtime) => runtime,
        Err(error) => return report(CommandError::Output(error)),
    };
    match runtime.block_on(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => report(error),
    }
}

/// Print `error` on stderr (not for a closed stdout pipe) and give exit code 1.
pub fn report(error: CommandError) -> ExitCode {
    let closed_pipe = matches!(&error, CommandError::Output(io)
        if io.kind() == std::io::ErrorKind::BrokenPipe);
    if !closed_pipe {
        crate::cli_errors::failed(error);
    }
    ExitCode::from(1)
}

/// Write `line` and a newline to `out`.
pub(crate) fn line(out: &mut dyn Write, line: &str) -> Result<(), CommandError> {
    writeln!(out, "{line}")?;
    Ok(())
}

/// A list's lines on `out`, each item's `lines` in turn; for an empty list, the
/// sentence `none` on standard error instead (not data: standard output stays
/// empty, as for a list of nothing).
pub(crate) fn print_list<T, L: IntoIterator<Item = String>>(
    out: &mut dyn Write,
    items: &[T],
    none: &str,
    lines: impl Fn(&T) -> L,
) -> Result<(), CommandError> {
    if items.is_empty() {
        eprintln!("{none}");
    }
    for item in items {
        for text in lines(item) {
            line(out, &text)?;
        }
    }
    Ok(())
}

/// An answer as indented JSON, what `--json` prints; a value serde_json cannot
/// write is a usage error.
pub(crate) fn pretty(value: &impl serde::Serialize) -> Result<String, CommandError> {
    serde_json::to_string_pretty(value).map_err(|error| CommandError::Usage(error.to_string()))
}

/// A command-line argument named `name` (`CONTEXT_JSON`) read as a JSON object:
/// written inline, `@FILE` or `-` for standard input
/// (`stateous_shared::json_arg`); else one sentence that names the argument.
pub fn json_object(text: &str, name: &str) -> Result<Object, CommandError> {
    let (text, name) =
        stateous_shared::json_arg::json_text(text, name).map_err(CommandError::Usage)?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| CommandError::Usage(format!("{name} is not valid JSON: {error}")))?;
    match value {
        serde_json::Value::Object(object) => Ok(object),
        _ => Err(CommandError::Usage(format!(
            "{name} must be a JSON object, such as '{{\"repo\": \"acme/api\"}}'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_object_argument_is_read_or_refused_in_one_sentence() {
        let read = json_object(r#"{"repo": "acme/api"}"#, "CONTEXT_JSON").unwrap();
        assert_eq!(read["repo"], "acme/api");
        for (text, message) in [
            ("{bad", "CONTEXT_JSON is not valid JSON"),
            ("", "CONTEXT_JSON is not valid JSON"),
            (r#"{"n": NaN}"#, "CONTEXT_JSON is not valid JSON"),
            ("[1]", "CONTEXT_JSON must be a JSON object"),
        ] {
            let error = json_object(text, "CONTEXT_JSON").unwrap_err().to_string();
            assert!(error.starts_with(message), "{text}: {error}");
            assert!(!error.contains('\n'));
        }
    }
}
