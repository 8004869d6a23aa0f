//! How every command of the binary fails: one line `error: ...` on stderr and
//! exit code 1, printed here and nowhere else ([`failed`]).
//!
//! A command line clap cannot parse is refused as every other mistake is (clap's
//! own is several lines and exit code 2). `--help` and `--version` still print to
//! stdout with exit code 0.

use std::fmt::Display;

use clap::error::ErrorKind;

/// Print `error: <error>` on stderr; the exit code of a failed command, 1.
pub fn failed(error: impl Display) -> i32 {
    if crate::logging::json() {
        tracing::error!(target: "stateous", "error: {error}");
    } else {
        eprintln!("error: {error}");
    }
    1
}

/// Print `error: <error>` on stderr and end the process with exit code 1.
pub fn exit_with(error: impl Display) -> ! {
    std::process::exit(failed(error))
}

/// The exit code of a command that returns one, or 1 after its error's line.
pub fn exit_code<E: Display>(result: Result<i32, E>) -> i32 {
    result.unwrap_or_else(failed)
}

/// The command line parsed as `P`, or the process ends: with the help or the
/// version and exit code 0 when they were asked for, with the help on stderr and
/// exit code 1 when a command is missing, else with one line `error: ...` and
/// exit code 1.
pub fn parse_or_exit<P: clap::Parser>() -> P {
    P::try_parse().unwrap_or_else(|error| {
        let args: Vec<String> = std::env::args_os()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        let command = command_path(&P::command(), args.iter().cloned());
        if let Some(sentence) = own_sentence(&error, &command, &args) {
            exit_with(format!("{sentence} (see '{command} --help')"))
        }
        exit(&error, &command)
    })
}

/// Our sentence for a mistake whose clap message would mislead: `token fire
/// --where EXPR` with no argument is missing its EVENT (with --where the first
/// argument is the event), not the `<ID>` that clap names. The command's help
/// stays as it is: without --where, the first argument is the token's id.
fn own_sentence(error: &clap::Error, command: &str, args: &[String]) -> Option<&'static str> {
    let bulk = args
        .iter()
        .any(|arg| arg == "--where" || arg.starts_with("--where="));
    (error.kind() == ErrorKind::MissingRequiredArgument && command == "stateous token fire" && bulk)
        .then_some("with --where, give the EVENT to fire on each token the filter matches")
}

fn exit(error: &clap::Error, command: &str) -> ! {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            use std::io::Write;
            // Printed here, not by `clap::Error::exit`, which drops a failed write
            // (a full disk, a closed pipe) and exits 0.
            let printed = error.print().and_then(|()| std::io::stdout().flush());
            std::process::exit(output_written(printed))
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // `stateous` or `stateous token` alone: the help is what the user
            // needs, but no command ran.
            let _ = error.print();
            std::process::exit(1)
        }
        _ => {
            eprintln!("{}", one_line(&error.render().to_string(), command));
            std::process::exit(1)
        }
    }
}

/// The exit code after writing to standard output: 0 when it was written, or when
/// its reader stopped reading (`stateous --help | head -3`); otherwise (a full
/// disk) `error: ...` and 1.
pub fn output_written(written: std::io::Result<()>) -> i32 {
    match written {
        Ok(()) => 0,
        Err(failed) if failed.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(error) => failed(format!("cannot write to standard output: {error}")),
    }
}

/// clap's several lines as one: its `error: ...` line, then its notes (a list of
/// missing arguments, the possible values, a tip) on the same line, then the
/// help of `command` to read. The usage and "For more information" lines go.
fn one_line(rendered: &str, command: &str) -> String {
    let mut lines = rendered.lines();
    let mut line = lines
        .next()
        .unwrap_or("error: the command line")
        .to_string();
    let notes: Vec<&str> = lines
        .map(str::trim)
        .take_while(|text| !text.starts_with("Usage:"))
        .filter(|text| !text.is_empty() && !text.starts_with("For more information"))
        .map(|text| text.trim_start_matches('[').trim_end_matches(']'))
        .map(|note| note.strip_prefix("tip: ").unwrap_or(note))
        .collect();
    if !notes.is_empty() {
        // "the following required arguments were not provided:" lists them.
        let (before, between) = if line.ends_with(':') {
            (" ", ", ")
        } else {
            ("; ", "; ")
        };
        line = format!("{line}{before}{}", notes.join(between));
    }
    format!("{line} (see '{command} --help')")
}

/// The command the arguments name, e.g. `stateous token show` for `stateous
/// token --url X show T-1`: each argument that names a subcommand of the
/// command so far goes down to it; the others (flags, values) are passed over.
fn command_path(root: &clap::Command, args: impl Iterator<Item = String>) -> String {
    let mut path = vec![root.get_name().to_string()];
    let mut command = root;
    for arg in args.skip(1) {
        if let Some(sub) = command.find_subcommand(&arg) {
            path.push(sub.get_name().to_string());
            command = sub;
        }
    }
    path.join(" ")
}

#[cfg(test)]
mod tests {
    use super::{command_path, one_line};
    use clap::CommandFactory;

    #[test]
    fn clap_errors_become_one_line_with_their_notes() {
        let missing = "error: the following required arguments were not provided:\n  <ID>\n  \
                       <EVENT>\n\nUsage: stateous token fire <ID> [EVENT]\n\nFor more \
                       information, try '--help'.\n";
        assert_eq!(
            one_line(missing, "stateous token fire"),
            "error: the following required arguments were not provided: <ID>, <EVENT> \
             (see 'stateous token fire --help')"
        );
        let invalid = "error: invalid value 'tcsh' for '<SHELL>'\n  [possible values: bash, \
                       zsh]\n\n  tip: a similar value exists: 'zsh'\n\nFor more information, \
                       try '--help'.\n";
        assert_eq!(
            one_line(invalid, "stateous completions"),
            "error: invalid value 'tcsh' for '<SHELL>'; possible values: bash, zsh; a similar \
             value exists: 'zsh' (see 'stateous completions --help')"
        );
    }

    #[test]
    fn the_command_is_found_past_flags_and_values() {
        let path = |args: &[&str]| {
            let args = args.iter().map(|arg| arg.to_string());
            command_path(&crate::Cli::command(), args)
        };
        assert_eq!(
            path(&["stateous", "token", "--url", "x", "show", "T-1"]),
            "stateous token show"
        );
        assert_eq!(path(&["stateous", "nosuch"]), "stateous");
        assert_eq!(
            path(&["stateous", "bench", "--clients", "x"]),
            "stateous bench"
        );
    }
}
