//! A terminal for the TUI's black-box tests: a tmux server of the test's own, keys
//! in with `send-keys`, the screen out with `capture-pane`.

use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of this test's own (`-L`), killed when the test ends.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// A 100x30 session `t` running `command`; `name` makes the server's socket
    /// unique, with the process and the backend of the test (the two backends'
    /// runs of a test run at once in one process).
    pub fn start(name: &str, command: &str) -> Tmux {
        let tmux = Tmux {
            socket: format!(
                "stateous-tui-{name}-{:?}-{}",
                super::backend(),
                std::process::id()
            ),
        };
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "100",
            "-y",
            "30",
            command,
        ]);
        tmux
    }

    /// `tmux -L SOCKET ARGS`; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Type `keys` (tmux key names, e.g. `Enter`, or text).
    pub fn keys(&self, keys: &str) {
        self.run(&["send-keys", "-t", "t", keys]);
    }

    /// The screen now, as text.
    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-t", "t", "-p"])
    }

    /// The screen once `seen` says it is right; panics with the last screen after 10 s.
    pub fn wait_for(&self, what: &str, seen: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let screen = self.screen();
            if seen(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "{what} never showed:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// The table row of `token` on the screen, if it shows.
pub fn row<'a>(screen: &'a str, token: &str) -> Option<&'a str> {
    screen
        .lines()
        .find(|line| line.starts_with(&format!("│{token} ")))
}

/// Whether tmux is there; the tests say so on stderr when it is not.
pub fn have_tmux() -> bool {
    let found = Command::new("tmux").arg("-V").output().is_ok();
    if !found {
        eprintln!("tmux is not installed: this test needs it (apt-get install tmux)");
    }
    found
}
