//! The limits that a routine's helper (`stateous ctx`) and the control plane both
//! check, with their sentences, defined once: a routine is refused at once what
//! the control plane would refuse later, when the routine could no longer be told
//! (`docs/reference/bounds.md`).

/// The most characters in a token id; a child's id is its parent's id and more.
pub const MAX_TOKEN_ID: usize = 128;

/// The rule for a token id, as every refusal of one says it.
pub const TOKEN_ID_RULE: &str = "a token id is an ASCII letter or digit, then up to 127 \
     ASCII letters, digits, '.', '_' or '-'";

/// Whether `id` is a token id: `[A-Za-z0-9][A-Za-z0-9._-]{0,127}` ([`TOKEN_ID_RULE`]).
pub fn is_token_id(id: &str) -> bool {
    is_word(id, MAX_TOKEN_ID)
}

/// Whether `text` is an ASCII letter or digit, then ASCII letters, digits, `.`,
/// `_` or `-`, at most `most` in all: the shape of token ids and of names.
fn is_word(text: &str, most: usize) -> bool {
    let bytes = text.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.len() <= most
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The most characters in the name of a limit, a schedule or a subscription.
pub const MAX_NAME: usize = 64;

/// The rule of the names of limits, schedules and subscriptions, as their
/// refusals end.
pub const NAME_RULE: &str = "a letter or digit, then up to 63 letters, digits, '.', '_' or '-'";

/// Whether `name` can name a limit, a schedule or a subscription:
/// `[A-Za-z0-9][A-Za-z0-9._-]{0,63}` ([`NAME_RULE`]).
pub fn is_name(name: &str) -> bool {
    is_word(name, MAX_NAME)
}

/// The refusal of a name that no `what` (`schedule`, `limit`, `subscription`)
/// can have, one outside [`NAME_RULE`]: `stateous schedule show a/b` says it
/// before it sends a request (the control plane decodes a path before it matches
/// it, so a `/` in a name would reach no route), and the control plane says it
/// of such a name that reaches it in one segment (`/schedules/a%20b`).
pub fn no_such_name(what: &str, name: &str) -> String {
    format!("no {what} is named {name}: a {what}'s name is {NAME_RULE}")
}

/// The longest note, in characters, after the white space at its two ends is
/// removed.
pub const MAX_NOTE: usize = 500;

/// The longest key of a routine's memory, in characters.
pub const MAX_MEMORY_KEY: usize = 128;

/// Why `key` cannot be a key of a routine's memory: it must have 1 to
/// [`MAX_MEMORY_KEY`] characters and no NUL (which Postgres cannot keep in text).
pub fn memory_key_problem(key: &str) -> Option<String> {
    if !(1..=MAX_MEMORY_KEY).contains(&key.chars().count()) {
        return Some(memory_key_length());
    }
    key.contains('\0')
        .then(|| "a memory key has no NUL character (\\u0000)".to_string())
}

/// The sentence for a memory key that is not 1 to [`MAX_MEMORY_KEY`] characters
/// (or not text at all).
pub fn memory_key_length() -> String {
    format!("a memory key is 1 to {MAX_MEMORY_KEY} characters")
}

/// Why `text`, trimmed, cannot be a note: 1 to [`MAX_NOTE`] characters.
pub fn note_problem(text: &str) -> Option<String> {
    (!(1..=MAX_NOTE).contains(&text.trim().chars().count()))
        .then(|| format!("a note needs a 'text' of 1 to {MAX_NOTE} characters"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_keys_and_notes_have_one_rule() {
        assert_eq!(memory_key_problem("session"), None);
        assert_eq!(memory_key_problem(&"k".repeat(128)), None);
        assert!(memory_key_problem("").is_some());
        assert!(memory_key_problem(&"k".repeat(129)).is_some());
        assert_eq!(
            memory_key_problem("a\0b").as_deref(),
            Some("a memory key has no NUL character (\\u0000)")
        );
        assert_eq!(note_problem(" done "), None);
        assert!(note_problem("  ").is_some());
        assert!(note_problem(&"n".repeat(501)).is_some());
    }
}
