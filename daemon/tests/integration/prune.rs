//! Pruning ended tokens through the control plane's handle, on both backends, with
//! a clock moved by hand: a retention pass deletes every row of a token that ended
//! long enough ago (its children's too) and nothing of the others; its id starts
//! again as a new token whose old keys are gone; ids are never handed out twice; a
//! bulk prune refuses live tokens and archives what it deletes.

use crate::common;

use std::io::Read;
use std::time::Duration;

use common::{Backend, Db};
use serde_json::{json, Value};
use stateous_daemon::control::bulk::BulkInput;
use stateous_daemon::control::prune::RetainPass;
use stateous_daemon::control::Control;
use stateous_daemon::engine::bulk::BulkStep;
use stateous_daemon::engine::select::Selection;
use stateous_daemon::validated::{FireInput, StartInput};
use stateous_shared::bulk::{BulkAction, Outcome};
use stateous_shared::guards::filter::parse_filter;
use stateous_shared::refusal::Code;

use crate::operate::{clock, open};

const DAY: Duration = Duration::from_secs(86_400);

async fn start(control: &Control, id: &str) {
    let context = json!({"customer": "ACME", "score": 5});
    let context = context.as_object().unwrap().clone();
    control
        .start(StartInput::new(id.into(), context).unwrap())
        .await
        .unwrap();
}

async fn fire(control: &Control, id: &str, event: &str, key: Option<&str>) -> bool {
    let input = FireInput::new(id.into(), event.into(), None, key.map(str::to_string)).unwrap();
    control.fire(input).await.unwrap().duplicate
}

/// How many rows of each table name `token`: tokens, ledger, tasks, timers, memory.
fn rows_of(db: &Db, token: &str) -> Vec<i64> {
    ["tokens", "ledger", "tasks", "timers", "memory"]
        .iter()
        .map(|table| {
            let sql = format!("SELECT count(*) FROM {table} WHERE token = '{token}'");
            db.rows(&sql)[0][0].as_deref().unwrap().parse().unwrap()
        })
        .collect()
}

fn max_id(db: &Db, table: &str) -> i64 {
    let sql = format!("SELECT coalesce(max(id), 0) FROM {table}");
    db.rows(&sql)[0][0].as_deref().unwrap().parse().unwrap()
}

fn pass(after: Duration) -> RetainPass {
    RetainPass {
        after,
        archive: None,
        batch: 2,
        pause: Duration::from_millis(1),
    }
}

/// OLD (with its two children, from `sign`) is cancelled, then 20 days later NEW
/// is; LIVE stays in `review`. 11 more days on, a pass keeping 30 days prunes OLD
/// and its children only.
async fn a_retention_pass_prunes_what_ended_long_enough_ago_with_every_row(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    start(&control, "OLD").await;
    assert!(!fire(&control, "OLD", "submitted", Some("k-1")).await);
    fire(&control, "OLD", "approve", None).await;
    assert_eq!(control.token("OLD".into()).await.unwrap().state, "sign");
    let children: Vec<String> = db
        .rows("SELECT token FROM tokens WHERE parent = 'OLD'")
        .into_iter()
        .map(|row| row[0].clone().unwrap())
        .collect();
    assert_eq!(children.len(), 2);
    control.cancel("OLD".into()).await.unwrap();
    clock.advance(20 * DAY);
    start(&control, "NEW").await;
    control.cancel("NEW".into()).await.unwrap();
    start(&control, "LIVE").await;
    // LIVE's timeout in `review` is the newest timer: OLD's is not (on SQLite a
    // token holding the newest row of a table waits for a newer one).
    fire(&control, "LIVE", "submitted", None).await;
    clock.advance(11 * DAY);

    let pruned = control.retain(&pass(30 * DAY)).await.unwrap().pruned;
    assert_eq!(pruned, 1, "OLD only; its children go with it");
    for token in std::iter::once("OLD").chain(children.iter().map(String::as_str)) {
        assert_eq!(rows_of(&db, token), vec![0; 5], "{token} has no row left");
    }
    assert_ne!(rows_of(&db, "NEW")[1], 0, "NEW ended 11 days ago: kept");
    assert_ne!(rows_of(&db, "LIVE")[0], 0);
    assert_eq!(
        control.token("OLD".into()).await.unwrap_err().code,
        Code::TokenNotFound
    );
    // The id starts again as a new token, and its old key is gone with it.
    let fresh = control.history("Z".into()).await.unwrap_err().code;
    assert_eq!(fresh, Code::TokenNotFound);
    start(&control, "Z").await;
    let fresh = control.history("Z".into()).await.unwrap().len();
    start(&control, "OLD").await;
    let history = control.history("OLD".into()).await.unwrap();
    assert_eq!(history.len(), fresh, "a new token's history, as Z's");
    assert_eq!(history[0].seq, 1);
    assert!(
        !fire(&control, "OLD", "submitted", Some("k-1")).await,
        "the old key was pruned: it applies again"
    );
    assert_eq!(control.token("OLD".into()).await.unwrap().state, "review");
}

/// SQLite gives a new row the id after the newest: a token holding the newest
/// rows is kept until newer ones exist, so that no id is handed out twice. On
/// Postgres (sequences) it goes at once.
async fn no_id_is_handed_out_twice_after_a_prune(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    start(&control, "A").await;
    control.cancel("A".into()).await.unwrap();
    clock.advance(2 * DAY);
    let (ledger, tasks) = (max_id(&db, "ledger"), max_id(&db, "tasks"));
    let first = control.retain(&pass(DAY)).await.unwrap();
    match db.backend {
        Backend::Sqlite => {
            assert_eq!(first.pruned, 0, "A holds the newest rows: kept for now");
            assert_eq!(first.left.len(), 1, "{first:?}");
            assert_eq!(first.left[0].1, ["A"], "{first:?}");
            start(&control, "B").await;
            assert_eq!(control.retain(&pass(DAY)).await.unwrap().pruned, 1);
        }
        Backend::Postgres => {
            assert_eq!(first.pruned, 1);
            assert!(first.left.is_empty(), "{first:?}");
            start(&control, "B").await;
        }
    }
    assert_eq!(rows_of(&db, "A"), vec![0; 5]);
    start(&control, "C").await;
    let sql = "SELECT min(id) FROM ledger WHERE token = 'C'";
    let c_first: i64 = db.rows(sql)[0][0].as_deref().unwrap().parse().unwrap();
    assert!(c_first > ledger, "C's entries come after every id A had");
    assert!(tasks == 0 || max_id(&db, "tasks") > tasks);
}

fn prune_input(filter: &str, dry_run: bool, archive: Option<std::path::PathBuf>) -> BulkInput {
    BulkInput {
        step: BulkStep {
            action: BulkAction::Prune,
            selection: Selection {
                filter: Some(parse_filter(filter).unwrap()),
                ..Selection::default()
            },
            event: String::new(),
            payload: None,
            key: None,
            state: None,
            priority: 0,
            migrate: Default::default(),
            reason: None,
            by: "ann".into(),
        },
        tokens: None,
        dry_run,
        every: false,
        after: None,
        limit: 500,
        archive,
    }
}

/// A bulk prune previews what it would do and refuse, refuses live tokens, and
/// writes the histories of what it deletes into the archive first.
async fn a_bulk_prune_refuses_live_tokens_and_archives_what_it_deletes(db: Db) {
    let clock = clock();
    let control = open(&db, &clock).await;
    for id in ["P-1", "P-2", "P-3"] {
        start(&control, id).await;
        clock.advance(Duration::from_secs(1));
    }
    control.cancel("P-1".into()).await.unwrap();
    control.cancel("P-2".into()).await.unwrap();
    start(&control, "Z").await;
    let filter = "token != 'Z'";
    let preview = control.bulk(prune_input(filter, true, None)).await.unwrap();
    assert_eq!(preview.count, 3);
    let refused: Vec<&str> = preview
        .sample
        .iter()
        .filter(|o| o.outcome == Outcome::Refused)
        .map(|o| o.token.as_str())
        .collect();
    assert_eq!(refused, ["P-3"]);
    assert_eq!(rows_of(&db, "P-1")[0], 1, "a preview deletes nothing");

    let dir = tempfile::tempdir().unwrap();
    let run = control
        .bulk(prune_input(filter, false, Some(dir.path().to_path_buf())))
        .await
        .unwrap();
    assert_eq!((run.applied, run.refused), (2, 1));
    assert_eq!(
        run.outcomes
            .iter()
            .find(|o| o.token == "P-3")
            .unwrap()
            .code
            .as_deref(),
        Some("token_not_active")
    );
    assert_eq!(rows_of(&db, "P-1"), vec![0; 5]);
    assert_eq!(rows_of(&db, "P-3")[0], 1);

    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&files[0]).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let tokens: Vec<&str> = lines.iter().map(|l| l["token"].as_str().unwrap()).collect();
    assert_eq!(tokens, ["P-1", "P-2"]);
    let kinds: Vec<&str> = lines[0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.last(), Some(&"cancelled"));
    assert_eq!(lines[0]["status"], "cancelled");

    let missing = prune_input(filter, false, Some(dir.path().join("nope")));
    let refusal = control.bulk(missing).await.unwrap_err();
    assert_eq!(refusal.code, Code::InvalidArgument);
    assert!(
        refusal.error.contains("does not exist"),
        "{}",
        refusal.error
    );
}

both!(
    a_retention_pass_prunes_what_ended_long_enough_ago_with_every_row,
    no_id_is_handed_out_twice_after_a_prune,
    a_bulk_prune_refuses_live_tokens_and_archives_what_it_deletes,
);
