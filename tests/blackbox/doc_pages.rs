//! The commands of README.md and of the tutorial (`docs/tutorial/`) run as written,
//! in order, in a fresh folder, so that the pages cannot drift from the binary.
//!
//! The convention the pages follow is written for doc writers in `docs/README.md`
//! ("Pages whose commands are run"): a ```` ```bash ```` block runs in one shell
//! session, in order, and every command in it must succeed; ```` ```bash background
//! ready=WORD ```` starts a long-running block (a daemon, a supervisor) as if in a
//! terminal of its own and waits until its output holds WORD; ```` ```bash
//! eventually ```` runs again until it succeeds (a check of what the system does in
//! its own time); any other info string (`console`, `text`, `yaml`, `sh`) is not
//! run. Blocks inside an HTML comment run too, unseen by readers: the waits and the
//! Ctrl-C (`doc_ctrl_c N`) that a person does without typing a command.
//!
//! The other pages' commands are not run, but every `stateous` command they give
//! must be one the binary has, and every `--flag` one its `--help` lists.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::binary;

/// How long one page's whole run may take before it is stopped and fails.
const RUN_WITHIN: Duration = Duration::from_secs(180);

/// One fenced block of a page.
struct Block {
    /// Where it starts, `PAGE:LINE`, for messages.
    place: String,
    /// The words of its info string: `bash`, `background`, `ready=serving`, ...
    info: Vec<String>,
    /// Its lines.
    text: String,
}

impl Block {
    fn has(&self, word: &str) -> bool {
        self.info.iter().any(|w| w == word)
    }

    /// The `ready=WORD` of a background block.
    fn ready(&self) -> Option<&str> {
        self.info.iter().find_map(|w| w.strip_prefix("ready="))
    }
}

/// How many backticks open `trimmed` as a fence (three or more, and an info string
/// without a backtick, as CommonMark has it), if they do.
fn fence(trimmed: &str) -> Option<(usize, &str)> {
    let ticks = trimmed.len() - trimmed.trim_start_matches('`').len();
    let rest = &trimmed[ticks..];
    (ticks >= 3 && !rest.contains('`')).then_some((ticks, rest))
}

/// A fenced block being read: where it started, its fence, and its lines so far.
struct Open<'a> {
    start: usize,
    ticks: usize,
    indent: usize,
    info: Vec<String>,
    lines: Vec<&'a str>,
}

/// The fenced blocks of `text` (the page `name`), in order.
fn blocks(name: &str, text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Open> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.as_mut() {
            None => {
                if let Some((ticks, rest)) = fence(trimmed) {
                    open = Some(Open {
                        start: number + 1,
                        ticks,
                        indent: line.len() - trimmed.len(),
                        info: rest.split_whitespace().map(str::to_string).collect(),
                        lines: Vec::new(),
                    });
                }
            }
            Some(block) => {
                let closing = trimmed.trim_end();
                if closing.len() >= block.ticks && closing.chars().all(|c| c == '`') {
                    found.push(Block {
                        place: format!("{name}:{}", block.start),
                        info: std::mem::take(&mut block.info),
                        text: block.lines.join("\n"),
                    });
                    open = None;
                } else {
                    // A block inside a list item is indented as its fence is.
                    let cut = line.len() - line.trim_start().len();
                    block.lines.push(&line[cut.min(block.indent)..]);
                }
            }
        }
    }
    assert!(open.is_none(), "{name}: a fenced block is not closed");
    found
}

/// The shell functions every run starts with: the marks, the waits, the Ctrl-C of a
/// background block, and the cleanup that stops what is still running at the end.
const PRELUDE: &str = r#"set -e
set -m
declare -a __doc_bg
__doc_mark() { printf '\n=== %s\n' "$1" >&2; }
__doc_cleanup() {
    local pids
    pids=$(jobs -p)
    for pid in $pids; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do
        local alive=0
        for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    for pid in $pids; do kill -KILL -- "-$pid" 2>/dev/null || true; done
}
trap __doc_cleanup EXIT
__doc_ready() {
    local log=$1 word=$2
    for _ in $(seq 300); do
        grep -q -- "$word" "$log" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "not ready within 30 s: no '$word' in $log" >&2
    cat "$log" >&2
    return 1
}
__doc_eventually() {
    local block=$1 status
    for _ in $(seq 150); do
        set +e
        ( set -e; eval "$block" ) >/dev/null 2>&1
        status=$?
        set -e
        [ "$status" = 0 ] && return 0
        sleep 0.2
    done
    echo "still failing after 30 s:" >&2
    ( eval "$block" ) >&2 || return 1
}
# Ctrl-C in the terminal of background block N: SIGINT to its process group, then
# wait for it to end.
doc_ctrl_c() {
    kill -INT -- "-${__doc_bg[$1]}" 2>/dev/null || true
    wait "${__doc_bg[$1]}" || true
}
"#;

/// A shell word holding `text` as it is.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The script that runs `pages`' blocks in order; background logs go to `logs`.
fn script(pages: &[(String, String)], logs: &Path) -> String {
    let mut out = String::from(PRELUDE);
    let mut background = 0;
    for (name, text) in pages {
        for block in blocks(name, text) {
            if block.info.first().map(String::as_str) != Some("bash") {
                continue;
            }
            out.push_str(&format!("__doc_mark {}\n", quoted(&block.place)));
            if block.has("background") {
                background += 1;
                let log = logs.join(format!("background-{background}.log"));
                let log = quoted(&log.display().to_string());
                out.push_str(&format!("(\n{}\n) > {log} 2>&1 &\n", block.text));
                out.push_str(&format!("__doc_bg[{background}]=$!\n"));
                let ready = block.ready().unwrap_or_else(|| {
                    panic!("{}: a background block needs ready=WORD", block.place)
                });
                out.push_str(&format!("__doc_ready {log} {}\n", quoted(ready)));
            } else if block.has("eventually") {
                out.push_str(&format!("__doc_eventually {}\n", quoted(&block.text)));
            } else {
                out.push_str(&block.text);
                out.push('\n');
            }
        }
    }
    out
}

/// Run the `bash` blocks of `pages` (paths from the repository's root) as one
/// session in a fresh home folder; panic with the output and the background logs
/// if a command fails.
fn run_pages(pages: &[PathBuf]) -> Duration {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let texts: Vec<(String, String)> = pages
        .iter()
        .map(|page| {
            let text = std::fs::read_to_string(root.join(page)).expect("the page");
            (page.display().to_string(), text)
        })
        .collect();
    let dir = tempfile::tempdir().expect("a temp folder");
    let home = dir.path().join("home");
    let runtime = dir.path().join("run");
    let logs = dir.path().join("logs");
    for folder in [&home, &runtime, &logs] {
        std::fs::create_dir(folder).expect("a folder");
    }
    let script_path = dir.path().join("pages.sh");
    std::fs::write(&script_path, script(&texts, &logs)).expect("the script");
    let bin = Path::new(binary()).parent().expect("the binary's folder");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command
        .arg(&script_path)
        .current_dir(&home)
        .env("HOME", &home)
        .env("PATH", path)
        // The default socket lands in this run's own folder, never a user's.
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars() {
        if name.starts_with("STATEOUS_") {
            command.env_remove(name);
        }
    }
    // A `python3` that is a pyenv shim finds its versions under the real home
    // folder, which the run replaces.
    if let (Err(_), Some(real_home)) = (std::env::var("PYENV_ROOT"), std::env::var_os("HOME")) {
        let pyenv = Path::new(&real_home).join(".pyenv");
        if pyenv.is_dir() {
            command.env("PYENV_ROOT", pyenv);
        }
    }
    let began = Instant::now();
    let mut child = command.spawn().expect("bash runs");
    while child.try_wait().expect("its status").is_none() && began.elapsed() < RUN_WITHIN {
        std::thread::sleep(Duration::from_millis(50));
    }
    let timed_out = child.try_wait().expect("its status").is_none();
    if timed_out {
        // SIGTERM first: the script's trap stops what its blocks left running.
        // SAFETY: kill(2) on the pid of a child this test spawned.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        std::thread::sleep(Duration::from_secs(6));
        let _ = child.kill();
    }
    let output = child.wait_with_output().expect("bash ends");
    let took = began.elapsed();
    if timed_out || !output.status.success() {
        let mut report = format!(
            "the commands of {pages:?} failed ({}; {took:?}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
            if timed_out {
                format!("not done within {RUN_WITHIN:?}")
            } else {
                output.status.to_string()
            },
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&logs)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for log in entries {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            report.push_str(&format!("\n--- {} ---\n{text}", log.display()));
        }
        panic!("{report}");
    }
    // Shown with `--nocapture`: what the commands printed, to compare with the pages.
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    took
}

#[test]
fn the_readme_commands_run_as_written() {
    let took = run_pages(&[PathBuf::from("README.md")]);
    eprintln!("README.md ran in {took:?}");
}

#[test]
fn the_tutorial_commands_run_as_written() {
    // The tutorial's index first, then its chapters in the order of their names.
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tutorial");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("docs/tutorial")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && !p.ends_with("README.md"))
        .map(|p| Path::new("docs/tutorial").join(p.file_name().expect("a name")))
        .collect();
    chapters.sort();
    let mut pages = vec![PathBuf::from("docs/tutorial/README.md")];
    pages.extend(chapters);
    let took = run_pages(&pages);
    eprintln!("the tutorial ran in {took:?}");
}

#[test]
fn the_block_reader_knows_each_form() {
    let page = "text\n```bash\nstateous demo\n```\n\n  ```` ```sh ```` is inline\n- item\n  ```bash background ready=serving\n  stateous serve g.json\n  ```\n<!--\n```bash eventually\nstateous token list\n```\n-->\n```console\ncargo test\n```\n";
    let found = blocks("P.md", page);
    let infos: Vec<String> = found.iter().map(|b| b.info.join(" ")).collect();
    assert_eq!(
        infos,
        [
            "bash",
            "bash background ready=serving",
            "bash eventually",
            "console"
        ]
    );
    assert_eq!(found[1].text, "stateous serve g.json");
    assert_eq!(found[1].ready(), Some("serving"));
    assert_eq!(found[1].place, "P.md:8");
    let run = script(&[("P.md".into(), page.into())], Path::new("/logs"));
    assert!(run.contains("stateous demo\n"), "{run}");
    assert!(!run.contains("cargo test"), "{run}");
}

/// The words of one shell command line, quotes taken off, up to the first `|`,
/// `&`, `;`, `<`, `>` or comment outside quotes.
fn command_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None if "|&;<>".contains(c) || (c == '#' && !in_word) => break,
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The subcommands that `help` (a `--help` text) lists under `Commands:`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn every_command_and_flag_the_pages_give_exists() {
    // Every page's commands, run or not: `stateous COMMAND ... --flag` in a fenced
    // block names only commands that `stateous --help` lists and flags that
    // `stateous COMMAND --help` lists, so a renamed or removed one cannot stay in
    // the documentation.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut folders = vec![root.join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    let mut helps: std::collections::HashMap<Vec<String>, String> = Default::default();
    let mut help_of = |path: &[String]| -> String {
        helps
            .entry(path.to_vec())
            .or_insert_with(|| {
                let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
                args.push("--help");
                let finished = crate::harness::run(root, &args);
                finished.stdout
            })
            .clone()
    };
    let mut unknown = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let name = page
            .strip_prefix(root)
            .unwrap_or(page)
            .display()
            .to_string();
        let text = std::fs::read_to_string(page).expect("the page");
        for block in blocks(&name, &text) {
            let kind = block.info.first().map(String::as_str).unwrap_or_default();
            if !["bash", "console", "sh"].contains(&kind) {
                continue;
            }
            let joined = block.text.replace("\\\n", " ");
            for line in joined.lines() {
                let words = command_words(line.trim_start().trim_start_matches("$ "));
                // The binary's name, not a user's (`sudo -u stateous stateous init ...`):
                // the `stateous` that a command or a flag follows, or the first word.
                let top = subcommands(&help_of(&[]));
                let at = words.iter().enumerate().position(|(n, w)| {
                    w == "stateous"
                        && words
                            .get(n + 1)
                            .is_some_and(|next| top.contains(next) || next.starts_with('-'))
                });
                let Some(at) =
                    at.or((words.first().map(String::as_str) == Some("stateous")).then_some(0))
                else {
                    continue;
                };
                let mut path: Vec<String> = Vec::new();
                for word in &words[at + 1..] {
                    let known = subcommands(&help_of(&path));
                    if known.contains(word) && word != "help" {
                        path.push(word.clone());
                    } else {
                        if !known.is_empty() && !word.starts_with('-') {
                            unknown.push(format!(
                                "{}: stateous {} {word}",
                                block.place,
                                path.join(" ")
                            ));
                        }
                        break;
                    }
                }
                if path.is_empty() {
                    continue;
                }
                let help = help_of(&path);
                for word in &words[at + 1..] {
                    let Some(flag) = word.strip_prefix("--") else {
                        continue;
                    };
                    let flag = flag.split('=').next().unwrap_or_default();
                    checked += 1;
                    if !help.contains(&format!("--{flag}")) {
                        unknown.push(format!(
                            "{}: stateous {} --{flag}",
                            block.place,
                            path.join(" ")
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} flags found in the pages");
    assert!(
        unknown.is_empty(),
        "flags the commands do not have: {unknown:#?}"
    );
}

#[test]
fn the_command_reader_stops_where_the_shell_would() {
    assert_eq!(
        command_words(r#"stateous token list --where "moved > 600" --limit 5 | head # x"#),
        [
            "stateous",
            "token",
            "list",
            "--where",
            "moved > 600",
            "--limit",
            "5"
        ]
    );
    assert_eq!(
        command_words("stateous serve g.json > d.log 2>&1 &"),
        ["stateous", "serve", "g.json"]
    );
}
