//! Black-box tests of `stateous compile` and `stateous init workflow`: the real
//! binary in a temporary folder.

use std::path::Path;
use std::process::{Command, Output};

fn stateous(dir: &Path, args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_stateous"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run stateous");
    eprintln!(
        "stateous {args:?}: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

const BAD: &str = "workflow: shop\nstates:\n  a: {timeout: 90x}\n  b: {}\nevents: {go: {}}\n\
transitions:\n  - {from: START, to: a}\n  - {from: a, to: END, on: go}\n";

#[test]
fn an_invalid_workflow_lists_its_problems_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flow.yaml"), BAD).unwrap();
    let output = stateous(dir.path(), &["compile", "flow.yaml"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: workflow 'shop' is not valid:\n  - state 'a': '90x' is not a duration; \
         write e.g. '30s', '10m', '2h', '1d'\n  - state 'b' cannot be reached from START\n"
    );
    assert!(!dir.path().join("build").exists());
}

#[test]
fn a_yaml_mistake_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flow.yaml"), "workflow: shop\nstates: [\n").unwrap();
    let output = stateous(dir.path(), &["compile", "flow.yaml"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: flow.yaml, line "), "{stderr}");
}

#[test]
fn a_valid_workflow_is_written_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let good = BAD.replace("90x", "90s").replace("  b: {}\n", "");
    std::fs::write(dir.path().join("flow.yaml"), good).unwrap();
    let output = stateous(dir.path(), &["compile", "flow.yaml"]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "wrote build/shop.json\n"
    );
    let text = std::fs::read_to_string(dir.path().join("build/shop.json")).unwrap();
    assert!(text.starts_with("{\n  \"stateous\": 1,\n  \"workflow\": \"shop\",\n"));
    let output = stateous(dir.path(), &["compile", "flow.yaml", "--out", "x/y.json"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "wrote x/y.json\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("x/y.json")).unwrap(),
        text
    );
}

#[test]
fn a_missing_flow_is_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let output = stateous(dir.path(), &["compile", "nope.yaml"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: cannot read nope.yaml: No such file or directory\n"
    );
}

#[test]
fn init_workflow_writes_the_orders_starter_and_its_graph() {
    let dir = tempfile::tempdir().unwrap();
    let output = stateous(dir.path(), &["init", "workflow", "orders"]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "wrote    orders/flow.yaml\nwrote    orders/build/orders.json\n\nNext steps:\n  \
         stateous serve orders/build/orders.json\n  stateous init supervisor \
         orders/flow.yaml orders-supervisor\n"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/orders");
    for file in ["flow.yaml", "build/orders.json"] {
        assert_eq!(
            std::fs::read_to_string(dir.path().join("orders").join(file)).unwrap(),
            std::fs::read_to_string(root.join(file)).unwrap(),
            "{file}"
        );
    }
    let again = stateous(dir.path(), &["init", "workflow", "orders"]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        "error: orders already has flow.yaml: give another name, or edit that file\n"
    );
    let bad = stateous(dir.path(), &["init", "workflow", "Bad Name"]);
    assert_eq!(bad.status.code(), Some(1));
}
