//! Lines cut to a pane's width at word boundaries, so that a pane knows how many
//! rows its text takes: the history scrolls by rows, and a pane whose text does
//! not fit says how much is left out instead of dropping it silently.

use unicode_width::UnicodeWidthChar;

/// `text` as rows of at most `width` columns. Rows after the first start with
/// `indent` spaces (so a wrapped entry stays under its own text, not under the
/// time or the label); a word longer than a row is cut where the row ends.
pub fn wrap(text: &str, width: usize, indent: usize) -> Vec<String> {
    let width = width.max(1);
    let indent = if indent * 2 > width { 0 } else { indent };
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut used = 0;
    for word in words(text) {
        let size = columns(word);
        let blank = word.trim().is_empty();
        if used + size > width && used > indent_of(&rows, indent) {
            rows.push(std::mem::take(&mut row).trim_end().to_string());
            row = " ".repeat(indent);
            used = indent;
            if blank {
                continue;
            }
        }
        if used + size <= width {
            row.push_str(word);
            used += size;
            continue;
        }
        // A word wider than a whole row: cut it, character by character.
        for c in word.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                rows.push(std::mem::take(&mut row));
                row = " ".repeat(indent);
                used = indent;
            }
            row.push(c);
            used += w;
        }
    }
    rows.push(row.trim_end().to_string());
    rows
}

/// Where the text of the current row starts: 0 on the first row, else `indent`.
fn indent_of(rows: &[String], indent: usize) -> usize {
    if rows.is_empty() {
        0
    } else {
        indent
    }
}

/// The text cut into words and the runs of spaces between them, in order.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let space = first == ' ';
        let end = rest
            .char_indices()
            .find(|(_, c)| (*c == ' ') != space)
            .map_or(rest.len(), |(at, _)| at);
        let (word, after) = rest.split_at(end);
        rest = after;
        Some(word)
    })
}

/// The columns `text` takes on a terminal.
pub fn columns(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_break_between_words_and_keep_their_indent() {
        assert_eq!(wrap("short", 20, 4), vec!["short"]);
        assert_eq!(
            wrap("12:00:00  #9  box-1 took task 4 (attempt 2)", 24, 10),
            vec![
                "12:00:00  #9  box-1 took",
                "          task 4",
                "          (attempt 2)"
            ]
        );
        assert_eq!(wrap("abcdefghij", 4, 0), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 10, 2), vec![""]);
        // Wide characters take two columns.
        assert_eq!(wrap("日本語の本", 4, 0), vec!["日本", "語の", "本"]);
    }
}
