//! No input makes the loaders panic: the flow.yaml compiler and the graph file
//! loader refuse bad text with a sentence. Inputs are arbitrary text and random
//! edits of the real example files, so most cases get deep into the checks.
//!
//! `PROPTEST_CASES=100000 cargo test -p stateous-shared --test fuzz_loaders --release`
//! runs a long campaign; the default is proptest's 256 cases per property.

use proptest::prelude::*;
use stateous_shared::compiler::compile_text;
use stateous_shared::graph::Graph;

const SDLC_FLOW: &str = include_str!("../../assets/sdlc/flow.yaml");
const ORDERS_FLOW: &str = include_str!("../../assets/orders/flow.yaml");
const SDLC_GRAPH: &str = include_str!("../../assets/sdlc/build/sdlc.json");

/// One edit of a text: delete, insert or replace a short run at a place.
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    Replace(usize, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    let piece = prop_oneof![
        "[ -~]{1,6}",
        Just(":".to_string()),
        Just("\n".to_string()),
        Just("- ".to_string()),
        Just("{".to_string()),
        Just("\"".to_string()),
        Just("when: \"count('x') <\"".to_string()),
        Just("__start__".to_string()),
        Just("-1".to_string()),
        Just("1e999".to_string()),
    ];
    prop_oneof![
        (any::<usize>(), 1usize..8).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), piece.clone()).prop_map(|(at, s)| Edit::Insert(at, s)),
        (any::<usize>(), piece).prop_map(|(at, s)| Edit::Replace(at, s)),
    ]
}

/// `text` with the edits applied; places are taken modulo the length and moved to
/// a character boundary.
fn apply(text: &str, edits: &[Edit]) -> String {
    let mut out = text.to_string();
    for edit in edits {
        let place = |at: usize, s: &String| {
            let mut at = if s.is_empty() { 0 } else { at % (s.len() + 1) };
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            at
        };
        match edit {
            Edit::Delete(at, n) => {
                let from = place(*at, &out);
                let mut to = (from + n).min(out.len());
                while !out.is_char_boundary(to) {
                    to -= 1;
                }
                out.replace_range(from..to, "");
            }
            Edit::Insert(at, piece) => {
                let at = place(*at, &out);
                out.insert_str(at, piece);
            }
            Edit::Replace(at, piece) => {
                let from = place(*at, &out);
                let mut to = (from + piece.len()).min(out.len());
                while !out.is_char_boundary(to) {
                    to -= 1;
                }
                out.replace_range(from..to, piece);
            }
        }
    }
    out
}

proptest! {
    #[test]
    fn compile_never_panics_on_any_text(text in "\\PC{0,200}") {
        let _ = compile_text(&text, "flow.yaml");
    }

    #[test]
    fn compile_never_panics_on_edited_examples(
        which in any::<bool>(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let base = if which { SDLC_FLOW } else { ORDERS_FLOW };
        let _ = compile_text(&apply(base, &edits), "flow.yaml");
    }

    #[test]
    fn graph_load_never_panics_on_edited_graph_files(
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let _ = Graph::load(&apply(SDLC_GRAPH, &edits));
    }
}

#[test]
fn the_unedited_examples_load() {
    assert!(compile_text(SDLC_FLOW, "flow.yaml").is_ok());
    assert!(compile_text(ORDERS_FLOW, "flow.yaml").is_ok());
    assert!(Graph::load(SDLC_GRAPH).is_ok());
}
