//! Tidy is a test: every Rust file opens with a `//!` line; code outside tests has
//! no `unwrap()`, `dbg!`, `todo!` or `unimplemented!`; no test is ignored; the file
//! and test names that ARCHITECTURE.md gives exist; every `docs/` page that is
//! named exists; nothing cites a document a reader of the repository cannot
//! open, nor an issue of the tracker; and the front doors and the files stay short
//! enough to read.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file of the project, less build output.
fn rust_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root().to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder)
            .expect("a readable folder")
            .flatten()
        {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(name == "target" || name.starts_with('.')) {
                    folders.push(path);
                }
            } else if name.ends_with(".rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Whether the whole file is test code: under a `tests` folder, or a test module
/// of its own (`tests.rs`, `*_tests.rs`), or a test double.
fn is_test_file(path: &Path) -> bool {
    let text = relative(path);
    text.split('/').any(|part| part == "tests")
        || text.ends_with("tests.rs")
        || text.ends_with("/fake.rs")
        || text.ends_with("/testserver.rs")
}

/// The code of a file that is not test code: the lines before its first
/// `#[cfg(test)]` (test modules sit at the end of a file by house habit).
fn code_outside_tests(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| !line.trim_start().starts_with("#[cfg(test)]"))
        .map(|(n, line)| (n + 1, line))
}

#[test]
fn every_rust_file_opens_with_a_module_comment() {
    let missing: Vec<String> = rust_files()
        .into_iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|path| relative(&path))
        .collect();
    assert!(missing.is_empty(), "files without a //! line: {missing:#?}");
}

#[test]
fn code_outside_tests_has_no_unwrap_dbg_or_placeholders() {
    let banned = [".unwrap()", "dbg!(", "todo!(", "unimplemented!("];
    let mut found = Vec::new();
    for path in rust_files().into_iter().filter(|p| !is_test_file(p)) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (number, line) in code_outside_tests(&text) {
            let code = line.split("//").next().unwrap_or_default();
            if banned.iter().any(|word| code.contains(word)) {
                found.push(format!("{}:{number}: {}", relative(&path), line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "outside tests: {found:#?}");
}

/// The most lines of code outside tests one file may hold: past it, a file holds
/// more than one thing and is split by what each part holds.
const MOST_LINES: usize = 700;

#[test]
fn no_file_outside_tests_is_longer_than_most_lines() {
    let mut found = Vec::new();
    for path in rust_files().into_iter().filter(|p| !is_test_file(p)) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines = code_outside_tests(&text).count();
        if lines > MOST_LINES {
            found.push(format!("{}: {lines} lines", relative(&path)));
        }
    }
    assert!(found.is_empty(), "over {MOST_LINES} lines: {found:#?}");
}

#[test]
fn the_front_doors_stay_short() {
    for (name, most) in [("README.md", 20_000), ("ARCHITECTURE.md", 30_000)] {
        let bytes = std::fs::metadata(root().join(name)).map_or(0, |m| m.len());
        assert!(bytes < most, "{name} is {bytes} bytes, over {most}");
    }
}

#[test]
fn no_test_is_ignored() {
    let found: Vec<String> = rust_files()
        .into_iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines()
                .any(|line| line.trim_start().starts_with("#[ignore"))
        })
        .map(|path| relative(&path))
        .collect();
    assert!(found.is_empty(), "ignored tests in: {found:#?}");
}

#[test]
fn the_names_in_architecture_md_exist() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let files: Vec<String> = rust_files().iter().map(|p| relative(p)).collect();
    let sources: String = rust_files()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    let mut missing = Vec::new();
    for (n, name) in map.split('`').enumerate() {
        // Odd pieces are the backticked names.
        if n % 2 == 0 || name.contains(' ') {
            continue;
        }
        let name = name.trim_end_matches("()");
        if name.ends_with(".rs") {
            // `store/writer.rs` or `demo.rs`: some file's path ends with it.
            if !files.iter().any(|f| f.ends_with(name)) {
                missing.push(name.to_string());
            }
        } else if is_long_snake_case(name) && !sources.contains(&format!("fn {name}")) {
            // A test or function name such as `acked_changes_survive_sigkill`.
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what does not exist: {missing:#?}"
    );
}

#[test]
fn every_file_of_a_test_binary_is_one_of_its_modules() {
    // A test binary gathers its former test files as modules: a file its `main.rs`
    // does not name would never be compiled, and its tests would silently not run.
    let mut missing = Vec::new();
    for main in rust_files()
        .into_iter()
        .filter(|p| p.ends_with("main.rs") && is_test_file(p))
    {
        let text = std::fs::read_to_string(&main).unwrap_or_default();
        let folder = main.parent().expect("a folder");
        for entry in std::fs::read_dir(folder)
            .expect("a readable folder")
            .flatten()
        {
            let path = entry.path();
            let name = match path.file_stem() {
                Some(stem) if path.extension().is_some_and(|e| e == "rs") => stem,
                _ if path.join("mod.rs").is_file() => path.file_name().unwrap_or_default(),
                _ => continue,
            };
            let name = name.to_string_lossy();
            if name != "main" && !text.lines().any(|l| l.trim() == format!("mod {name};")) {
                missing.push(relative(&path));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not a module of its test binary's main.rs: {missing:#?}"
    );
}

/// A name like `a_second_control_plane_does_not_start`: lower case with at least
/// three underscores, so that words like `task_claimed` (a ledger kind) pass.
fn is_long_snake_case(name: &str) -> bool {
    name.matches('_').count() >= 3
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// This file names the patterns it looks for, so it is never checked for them.
const THIS_FILE: &str = "tests/blackbox/tidy.rs";

/// The texts a reader of the repository reads: every `.rs` file, README.md,
/// ARCHITECTURE.md and the pages of `docs/`, by their paths from the root.
fn readable_texts() -> Vec<(String, String)> {
    let mut paths: Vec<PathBuf> = rust_files();
    paths.push(root().join("README.md"));
    paths.push(root().join("ARCHITECTURE.md"));
    let mut folders = vec![root().join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                paths.push(path);
            }
        }
    }
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            (relative(&path), text)
        })
        .collect()
}

/// Every `docs/....md` path that `text` names: `docs/` then lower-case letters,
/// digits, `_`, `-`, `.` and `/`, ending in `.md`.
fn docs_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("docs/") {
        let rest = &text[start..];
        let end = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || "_-./".contains(c)))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches('.');
        if path.ends_with(".md") {
            found.push(path.to_string());
        }
    }
    found
}

#[test]
fn every_docs_page_that_the_code_and_the_guides_name_exists() {
    let mut missing = Vec::new();
    for (path, text) in readable_texts() {
        if path == THIS_FILE {
            continue;
        }
        for named in docs_paths(&text) {
            if !root().join(&named).is_file() {
                missing.push(format!("{path}: {named}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs pages named but not in the repository: {missing:#?}"
    );
}

/// Whether `line` holds `word` in capitals as a word of its own.
fn has_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        let apart = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        apart(before) && apart(after)
    })
}

/// Why `line` cites what a reader of the repository cannot follow, if it does: a
/// product document outside the repository, its sections or points, an issue of the
/// tracker, or a page of the reference implementation's own documentation.
fn outside_citation(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    if has_word(line, "SPEC") {
        return Some("a section of the product specification");
    }
    if has_word(line, "STYLE") {
        return Some("a point of the house style");
    }
    if lower.contains("../shared") || lower.contains("/work/shared") {
        return Some("a folder outside the repository");
    }
    let seed = ["seed/", "the seed", "seed sentence", "(seed:", "(seed,"];
    if seed.iter().any(|form| lower.contains(form)) {
        return Some("the founding text, which is not in the repository");
    }
    let cites_issue = lower.match_indices("issue").any(|(at, _)| {
        let rest = lower[at + "issue".len()..].trim_start_matches('s');
        let rest = rest.trim_start();
        rest.starts_with(|c: char| c.is_ascii_digit() || c == '#' || c == '"')
    });
    if cites_issue {
        return Some("an issue of the tracker");
    }
    for lead in ["reference `", "reference's `"] {
        for (at, _) in lower.match_indices(lead) {
            let named = lower[at + lead.len()..]
                .split('`')
                .next()
                .unwrap_or_default();
            if named.ends_with(".md") {
                return Some("a page of the reference implementation's documentation");
            }
        }
    }
    None
}

/// Why `line` and the `next` one cite together what neither cites alone, if they
/// do: a comment wrapped inside a citation, as in `(issue` then `//! 14)`.
fn split_citation(line: &str, next: &str) -> Option<&'static str> {
    if outside_citation(next).is_some() {
        return None;
    }
    let next = next
        .trim_start()
        .trim_start_matches('/')
        .trim_start_matches('!');
    outside_citation(&format!("{} {}", line.trim_end(), next.trim_start()))
}

#[test]
fn nothing_cites_a_document_outside_the_repository_or_an_issue() {
    let mut found = Vec::new();
    for (path, text) in readable_texts() {
        if path == THIS_FILE {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        for (number, line) in lines.iter().enumerate() {
            let next = lines.get(number + 1).copied().unwrap_or_default();
            if let Some(why) = outside_citation(line).or_else(|| split_citation(line, next)) {
                found.push(format!("{path}:{}: {why}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cite docs/, README.md or ARCHITECTURE.md instead, or say the reason in full: {found:#?}"
    );
}

#[test]
fn the_citation_check_knows_each_form() {
    let cited = [
        "//! The compiler (SPEC section 3.1).",
        "//! as model, update and view (STYLE point 10).",
        "//! Operating many tokens (issue 11): marks.",
        "/// The dev clock (issue 12, item 2).",
        "// (issue \"Speed\": a sixth of the time).",
        "//! One address or several (issues 14 and 15).",
        "//! The limits (reference `docs/reference/bounds.md`).",
        "/// The longest note (reference `limits.md`).",
        "see ../shared/seed/reliability.txt",
        "/// How long a connection may take (seed, \"Time limits on Postgres\").",
        "/// before any row changes (seed: \"Each change locks the token\").",
    ];
    for line in cited {
        assert!(outside_citation(line).is_some(), "{line}");
    }
    let fine = [
        "//! The limits (`docs/reference/bounds.md`).",
        "// as the reference's supervisor does",
        "let spec = rules.state(row, state)?;",
        "/// Each issue of the feed is read once.",
        "/// Styles of the table (`Style::default()`).",
    ];
    for line in fine {
        assert_eq!(outside_citation(line), None, "{line}");
    }
    let split = [
        (
            "//! several addresses of the control plane (issue",
            "//! 14). The token",
        ),
        (
            "//! Each internal workflow (reference",
            "//! `docs/inside/workflows.md`) is",
        ),
        ("/// a lease ends (SPEC", "/// section 2)."),
    ];
    for (line, next) in split {
        assert!(split_citation(line, next).is_some(), "{line} / {next}");
    }
    let apart = [
        ("/// Each issue", "/// of the feed is read once."),
        (
            "//! The workflow (`docs/inside/workflows.md`)",
            "//! is one file here.",
        ),
    ];
    for (line, next) in apart {
        assert_eq!(split_citation(line, next), None, "{line} / {next}");
    }
    assert_eq!(
        docs_paths("see `docs/reference/http.md`, and docs/design.md."),
        ["docs/reference/http.md", "docs/design.md"]
    );
}
