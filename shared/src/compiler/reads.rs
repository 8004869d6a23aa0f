//! What a guard reads, for the compiler's checks against the schemas: context keys,
//! fields of the routed event's payload, counted events, and whether it reads
//! `branches` (reference `model/guards.Guard`'s `context_keys`, `payload_fields`,
//! `events`, `branches`).
//!
//! It scans the tokens of a guard that has already parsed, so it needs only the
//! accessors' shapes: `ctx['key']`, `payload.field`, `count('event')` and
//! `branches.all(...)`/`branches.any(...)`, inside which `payload.field` is a
//! child's payload and not the routed event's.

use std::collections::BTreeSet;

use crate::guards::Guard;

/// What one guard reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reads {
    /// The context keys of `ctx['key']`.
    pub(crate) ctx: BTreeSet<String>,
    /// The fields of `payload.field` outside `branches`.
    pub(crate) payload: BTreeSet<String>,
    /// The events of `count('event')`.
    pub(crate) counts: BTreeSet<String>,
    /// Whether it reads `branches.all(...)` or `branches.any(...)`.
    pub(crate) branches: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Text(String),
    Punct(char),
}

/// What `guard` reads.
pub(crate) fn reads(guard: &Guard) -> Reads {
    reads_text(&guard.text)
}

fn reads_text(text: &str) -> Reads {
    let tokens = tokens(text);
    let mut found = Reads::default();
    // The parenthesis depths at which a `branches.X(` call opened.
    let mut in_branches: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let word = |i: usize| match tokens.get(i) {
        Some(Token::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let punct = |i: usize, c: char| tokens.get(i) == Some(&Token::Punct(c));
    let text_at = |i: usize| match tokens.get(i) {
        Some(Token::Text(t)) => Some(t.clone()),
        _ => None,
    };
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Punct('(') => depth += 1,
            Token::Punct(')') => {
                depth = depth.saturating_sub(1);
                if in_branches.last() == Some(&depth) {
                    in_branches.pop();
                }
            }
            Token::Word(w) if punct(i.wrapping_sub(1), '.') => {
                let _ = w; // an attribute, read with its owner below
            }
            Token::Word(w) => match w.as_str() {
                "ctx" if punct(i + 1, '[') && punct(i + 3, ']') => {
                    found.ctx.extend(text_at(i + 2));
                }
                "count" if punct(i + 1, '(') && punct(i + 3, ')') => {
                    found.counts.extend(text_at(i + 2));
                }
                "payload" if punct(i + 1, '.') && in_branches.is_empty() => {
                    found.payload.extend(word(i + 2).map(str::to_owned));
                }
                "branches" if punct(i + 1, '.') => {
                    found.branches = true;
                    if punct(i + 3, '(') {
                        in_branches.push(depth);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    found
}

/// The guard's tokens: words, string literals (their value), and single punctuation.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            let mut value = String::new();
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                value.push(chars[i]);
                i += 1;
            }
            out.push(Token::Text(value));
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else {
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn accessors_are_found() {
        let found = reads_text(
            "ctx['repo'] == 'x' and payload.passed > 2 or count(\"failed\") < 3 and ctx[\"a b\"] in [1]",
        );
        assert_eq!(found.ctx, set(&["repo", "a b"]));
        assert_eq!(found.payload, set(&["passed"]));
        assert_eq!(found.counts, set(&["failed"]));
        assert!(!found.branches);
    }

    #[test]
    fn a_childs_payload_is_not_the_events() {
        let found = reads_text(
            "branches.all(payload.ok == true and status == 'completed') and payload.n > 1",
        );
        assert!(found.branches);
        assert_eq!(found.payload, set(&["n"]));
    }

    #[test]
    fn string_literals_are_not_read() {
        let found = reads_text("ctx['note'] == 'payload.x count(\\'y\\')'");
        assert_eq!(found.ctx, set(&["note"]));
        assert!(found.payload.is_empty() && found.counts.is_empty());
    }
}
