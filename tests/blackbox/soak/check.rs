//! The soak's checker: after the faults stop and the tokens had time to end, it
//! reads the ledger, the routines' grants, the outboxes, the logs and the clients'
//! record, and lists every broken guarantee with its evidence.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::harness::Daemon;
use crate::supervising::outbox;

use super::workload::Record;

/// One ledger row.
struct Entry {
    seq: i64,
    kind: String,
    key: Option<String>,
    data: Value,
}

/// Every token's ledger, by token, in order.
fn ledgers(daemon: &Daemon) -> BTreeMap<String, Vec<Entry>> {
    let mut by_token: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    let rows = daemon.rows("SELECT token, seq, kind, key, data FROM ledger ORDER BY token, seq");
    for row in rows {
        let text = |i: usize| row[i].clone().unwrap_or_default();
        by_token.entry(text(0)).or_default().push(Entry {
            seq: text(1).parse().unwrap_or(-1),
            kind: text(2),
            key: row[3].clone(),
            data: serde_json::from_str(&text(4)).unwrap_or(Value::Null),
        });
    }
    by_token
}

/// The grants the routines logged, each `{"token", "attempt", "memory", ...}`.
pub fn grants(folders: &[PathBuf]) -> Vec<Value> {
    let mut grants = Vec::new();
    for folder in folders {
        let Ok(files) = std::fs::read_dir(folder.join("grants")) else {
            continue;
        };
        for file in files.flatten() {
            let text = std::fs::read_to_string(file.path()).unwrap_or_default();
            if let Ok(grant) = serde_json::from_str(&text) {
                grants.push(grant);
            }
        }
    }
    grants
}

/// The broken guarantees, each a sentence with its evidence; none when all hold.
pub fn violations(
    daemon: &Daemon,
    record: &Record,
    folders: &[PathBuf],
    logs: &[String],
) -> Vec<String> {
    let ledgers = ledgers(daemon);
    let mut found = Vec::new();
    for token in record.tokens.iter().filter(|t| t.acked) {
        let Some(ledger) = ledgers.get(&token.id) else {
            found.push(format!(
                "{}: its start was acknowledged; it is not there",
                token.id
            ));
            continue;
        };
        if ledger.last().map(|e| e.kind.as_str()) != Some("completed") {
            let last: Vec<&str> = ledger
                .iter()
                .rev()
                .take(5)
                .map(|e| e.kind.as_str())
                .collect();
            found.push(format!(
                "{}: did not complete; its last entries (newest first): {last:?}",
                token.id
            ));
        }
        let key = token.key();
        let applied = ledger
            .iter()
            .filter(|e| e.kind == "event_accepted" && e.key.as_deref() == Some(key.as_str()))
            .count();
        if applied != 1 {
            found.push(format!(
                "{}: key {key} applied {applied} times (sent {} times, answers {:?})",
                token.id, token.sends, token.answers
            ));
        }
    }
    for (token, ledger) in &ledgers {
        found.extend(numbering(token, ledger));
        found.extend(one_report_per_attempt(token, ledger));
    }
    found.extend(memory_seen(&ledgers, &grants(folders)));
    for folder in folders {
        let left = outbox(folder);
        if !left.is_empty() {
            found.push(format!("{}: the outbox holds {left:?}", folder.display()));
        }
    }
    for error in &record.errors {
        found.push(format!("a client got 500: {error}"));
    }
    for log in logs {
        if let Some(line) = log.lines().find(|l| l.contains("panicked")) {
            found.push(format!("a log says: {line}"));
        }
    }
    found
}

/// A token's ledger is numbered 1..n without gaps.
fn numbering(token: &str, ledger: &[Entry]) -> Option<String> {
    let seqs: Vec<i64> = ledger.iter().map(|e| e.seq).collect();
    let expected: Vec<i64> = (1..=ledger.len() as i64).collect();
    (seqs != expected).then(|| format!("{token}: the ledger is numbered {seqs:?}"))
}

/// At most one outcome (done, failed, waiting, cancelled) per claimed attempt.
fn one_report_per_attempt(token: &str, ledger: &[Entry]) -> Vec<String> {
    let mut attempt_of: BTreeMap<i64, i64> = BTreeMap::new();
    let mut outcomes: BTreeMap<(i64, i64), Vec<i64>> = BTreeMap::new();
    for entry in ledger {
        let task = entry.data["task"].as_i64().unwrap_or(-1);
        match entry.kind.as_str() {
            "task_claimed" => {
                attempt_of.insert(task, entry.data["attempt"].as_i64().unwrap_or(-1));
            }
            "task_done" | "task_failed" | "task_waiting" | "task_cancelled" => {
                if let Some(attempt) = attempt_of.get(&task) {
                    outcomes
                        .entry((task, *attempt))
                        .or_default()
                        .push(entry.seq);
                }
            }
            _ => {}
        }
    }
    outcomes
        .into_iter()
        .filter(|(_, seqs)| seqs.len() > 1)
        .map(|((task, attempt), seqs)| {
            format!("{token}: task {task} attempt {attempt} has outcomes at seqs {seqs:?}")
        })
        .collect()
}

/// Memory an attempt wrote (`aN` from attempt N) is in every later attempt's grant.
fn memory_seen(ledgers: &BTreeMap<String, Vec<Entry>>, grants: &[Value]) -> Vec<String> {
    let mut found = Vec::new();
    for grant in grants {
        let token = grant["token"].as_str().unwrap_or_default();
        let attempt = grant["attempt"].as_i64().unwrap_or(0);
        let Some(ledger) = ledgers.get(token) else {
            continue;
        };
        for entry in ledger.iter().filter(|e| e.kind == "memory_set") {
            let key = entry.data["memory_key"].as_str().unwrap_or_default();
            let wrote: i64 = key.trim_start_matches('a').parse().unwrap_or(i64::MAX);
            if wrote < attempt && grant["memory"].get(key).is_none() {
                found.push(format!(
                    "{token}: attempt {attempt} did not see memory {key} (ledger seq {}); \
                     its grant: {grant}",
                    entry.seq
                ));
            }
        }
    }
    found
}
