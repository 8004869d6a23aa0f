//! Tidy is a test (STYLE point 13): every Rust file opens with a `//!` line; code
//! outside tests has no `unwrap()`, `dbg!`, `todo!` or `unimplemented!`; no test
//! is ignored; and the file and test names that ARCHITECTURE.md gives exist.

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
