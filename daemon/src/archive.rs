//! The archive of pruned tokens (`serve --retain-ended ... --archive DIR`, `stateous
//! token prune --archive DIR`; `docs/reference/cli.md`, "token prune"): before a
//! prune deletes anything, each token's row and whole history go into one gzipped
//! file of JSON lines, one line per token, in DIR.
//!
//! The file is written under a temporary name, synced, renamed to its own name
//! (`pruned-MICROS.jsonl.gz`, never over another file) and the folder synced, all
//! before the rows are deleted: a crash at any point loses no history that was
//! asked to be kept, and leaves at worst a `.tmp` file or a token archived twice.
//! The file holds only the tokens that are pruned: a token the prune skips is
//! left out before the file is written when it can be told then, and a token
//! that changes between the file and its prune is taken out of the file after
//! ([`replace`]); only a crash between the two leaves it in, to be archived again
//! by a later run (its later line then holds its whole history).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::{json, Value};
use stateous_shared::time::{from_micros, iso};

use crate::store::{LedgerRow, TokenRow};

/// One token as the archive keeps it: its row and every ledger entry, in seq order.
pub type Kept = (TokenRow, Vec<LedgerRow>);

/// The line of one token: `token`, `parent`, `workflow`, `graph` (the checksum of
/// the graph it ran on, or null), `state`, `status`, `visit`, `context`,
/// `entered_at` (ISO, UTC) and `history` (each entry's `id`, `seq`, `at`, `kind`,
/// `key`, `data` and `by`: the access key whose request wrote it, or null).
pub fn line(row: &TokenRow, entries: &[LedgerRow]) -> Value {
    let history: Vec<Value> = entries
        .iter()
        .map(|entry| {
            json!({
                "id": entry.id,
                "seq": entry.seq,
                "at": iso(from_micros(entry.at)),
                "kind": entry.kind,
                "key": entry.key,
                "data": entry.data,
                "by": entry.by,
            })
        })
        .collect();
    json!({
        "token": row.token,
        "parent": row.parent,
        "workflow": row.workflow,
        "graph": row.graph.as_deref(),
        "state": row.state,
        "status": row.status.as_str(),
        "visit": row.visit,
        "context": *row.context,
        "entered_at": iso(from_micros(row.entered_at)),
        "history": history,
    })
}

/// Check that `dir` is a folder this process can write into: the sentence of a
/// start or a prune that names a wrong one.
pub fn check_folder(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err(format!(
            "the archive folder {} does not exist or is not a folder",
            dir.display()
        ));
    }
    let probe = dir.join(".stateous-archive-probe");
    match File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!(
            "the archive folder {} cannot be written: {e}",
            dir.display()
        )),
    }
}

/// Write `tokens` into a new file of `dir`, named after `at` (microseconds), and
/// sync the file and the folder; the file's path. Blocking.
pub fn write(dir: &Path, at: i64, tokens: &[&Kept]) -> io::Result<PathBuf> {
    let temporary = dir.join(format!(".pruned-{at}.jsonl.gz.tmp"));
    write_synced(&temporary, tokens)?;
    let path = free_name(dir, at);
    // `hard_link` fails when the name is taken, so another file is never replaced.
    std::fs::hard_link(&temporary, &path)?;
    std::fs::remove_file(&temporary)?;
    File::open(dir)?.sync_all()?;
    Ok(path)
}

/// Write the archive at `path` again with `tokens` only (the ones a prune did
/// delete, after some were kept), or remove it when there are none; the folder
/// synced. The new file replaces the old one at once (a rename), so a crash leaves
/// one or the other: at worst the old one, which also holds tokens that were kept
/// and that a later run archives again. Blocking.
pub fn replace(path: &Path, tokens: &[&Kept]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if tokens.is_empty() {
        std::fs::remove_file(path)?;
    } else {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let temporary = dir.join(format!(".{name}.tmp"));
        write_synced(&temporary, tokens)?;
        std::fs::rename(&temporary, path)?;
    }
    File::open(dir)?.sync_all()
}

/// Write `tokens` into the file at `path` (made anew) and sync it.
fn write_synced(path: &Path, tokens: &[&Kept]) -> io::Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    let mut gz = GzEncoder::new(io::BufWriter::new(file), Compression::default());
    for (row, entries) in tokens.iter().copied() {
        serde_json::to_writer(&mut gz, &line(row, entries))?;
        gz.write_all(b"\n")?;
    }
    let file = gz.finish()?.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// `pruned-AT.jsonl.gz`, or `pruned-AT-N.jsonl.gz` when that is taken.
fn free_name(dir: &Path, at: i64) -> PathBuf {
    let first = dir.join(format!("pruned-{at}.jsonl.gz"));
    if !first.exists() {
        return first;
    }
    (1..)
        .map(|n| dir.join(format!("pruned-{at}-{n}.jsonl.gz")))
        .find(|path| !path.exists())
        .unwrap_or(first)
}

/// A token as an archive keeps it, with one ledger entry: for tests.
#[cfg(test)]
pub(crate) fn example(id: &str) -> Kept {
    let row = TokenRow {
        token: id.to_string(),
        state: "done".into(),
        status: crate::store::TokenStatus::Completed,
        visit: 1,
        context: std::sync::Arc::new(serde_json::from_str(r#"{"n": 1}"#).unwrap()),
        entered_at: 1_000_000,
        parent: None,
        workflow: None,
        graph: None,
        trace: None,
    };
    let entry = LedgerRow {
        id: 7,
        token: id.to_string(),
        seq: 1,
        at: 2_000_000,
        kind: "completed".into(),
        key: Some("k".into()),
        data: serde_json::Map::new(),
        by: None,
    };
    (row, vec![entry])
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use flate2::read::GzDecoder;

    use super::*;

    #[test]
    fn an_archive_is_one_gzipped_json_line_per_token_and_never_replaces_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let first = write(dir.path(), 5, &[&example("A-1"), &example("A-2")]).unwrap();
        let second = write(dir.path(), 5, &[&example("A-3")]).unwrap();
        assert_ne!(first, second);
        let mut text = String::new();
        GzDecoder::new(File::open(&first).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["token"], "A-1");
        assert_eq!(lines[0]["history"][0]["key"], "k");
        assert_eq!(lines[0]["history"][0]["at"], "1970-01-01T00:00:02Z");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary file is left");
    }

    #[test]
    fn an_archive_written_again_holds_only_what_was_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), 5, &[&example("A-1"), &example("A-2")]).unwrap();
        replace(&path, &[&example("A-2")]).unwrap();
        let mut text = String::new();
        GzDecoder::new(File::open(&path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        let tokens: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["token"].clone())
            .collect();
        assert_eq!(tokens, ["A-2"]);
        replace(&path, &[]).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_folder_that_is_missing_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let sentence = check_folder(&missing).unwrap_err();
        assert!(sentence.contains("does not exist"), "{sentence}");
        assert!(check_folder(dir.path()).is_ok());
    }
}
