//! The command line of `stateous serve`: its flags are the daemon's `ServeArgs`; this
//! starts the companion supervisor of `--supervise` and runs the daemon.

use stateous_daemon::serve::ServeArgs;

/// Run `stateous serve`; its exit code.
pub fn run(flags: ServeArgs) -> i32 {
    crate::logging::to_stderr(&flags.log_format);
    if flags.standby && flags.supervise.is_some() {
        return crate::cli_errors::failed(stateous_daemon::serve::STANDBY_NO_COMPANION);
    }
    // The supervisor reaches this server over its socket, known before it binds.
    let beside = match &flags.supervise {
        None => None,
        Some(folder) => {
            let socket = flags
                .socket
                .clone()
                .unwrap_or_else(stateous_shared::socket::default_socket);
            let url = format!("unix://{}", socket.display());
            match stateous_supervisor::companion::start(folder, url) {
                Ok((beside, hooks)) => Some((
                    beside,
                    stateous_daemon::serve::Companion {
                        on_signal: hooks.on_signal,
                        stop_now: hooks.stop_now,
                        done: hooks.done,
                    },
                )),
                Err(e) => return crate::cli_errors::failed(e),
            }
        }
    };
    let (beside, companion) = match beside {
        Some((beside, companion)) => (Some(beside), Some(companion)),
        None => (None, None),
    };
    // The error line comes before the companion's last lines, as the stop does.
    let code = crate::cli_errors::exit_code(stateous_daemon::serve::run_with(flags, companion));
    match beside {
        Some(beside) => beside.finish(code),
        None => code,
    }
}
