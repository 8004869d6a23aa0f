//! A one-line text field: the filter, a payload's JSON, an idempotency key, a
//! token id. Pure: it changes only on the keys it is given.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The text of a field and where the cursor stands in it, in characters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineEdit {
    text: String,
    /// The cursor's position: a character index from 0 to the text's length.
    cursor: usize,
    /// The text is a suggestion (`{}`): the first character typed replaces it,
    /// and Backspace or Delete clears it, as in a form that selects its default.
    suggested: bool,
}

impl LineEdit {
    /// A field holding `text`, the cursor at its end.
    pub fn new(text: &str) -> LineEdit {
        LineEdit {
            text: text.to_string(),
            cursor: text.chars().count(),
            suggested: false,
        }
    }

    /// A field holding a suggestion that typing replaces (see [`LineEdit::key`]).
    pub fn suggested(text: &str) -> LineEdit {
        LineEdit {
            suggested: true,
            ..LineEdit::new(text)
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor's character index.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Apply an editing key; false when the key is not one a field takes (Enter,
    /// Esc, Tab, arrows up and down), so the caller handles it.
    pub fn key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if std::mem::take(&mut self.suggested) {
            let replaces = matches!(key.code, KeyCode::Char(_) if !ctrl)
                || matches!(key.code, KeyCode::Backspace | KeyCode::Delete);
            if replaces {
                self.text.clear();
                self.cursor = 0;
                if !matches!(key.code, KeyCode::Char(_)) {
                    return true;
                }
            }
        }
        match key.code {
            KeyCode::Char('u') if ctrl => {
                self.text = self.text.chars().skip(self.cursor).collect();
                self.cursor = 0;
            }
            KeyCode::Char('a') if ctrl => self.cursor = 0,
            KeyCode::Char('e') if ctrl => self.cursor = self.len(),
            KeyCode::Char(_) if ctrl => return false,
            KeyCode::Char(c) => {
                let at = self.byte(self.cursor);
                self.text.insert(at, c);
                self.cursor += 1;
            }
            KeyCode::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                let at = self.byte(self.cursor);
                self.text.remove(at);
            }
            KeyCode::Delete if self.cursor < self.len() => {
                let at = self.byte(self.cursor);
                self.text.remove(at);
            }
            KeyCode::Backspace | KeyCode::Delete => {}
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(self.len()),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.len(),
            _ => return false,
        }
        true
    }

    fn len(&self) -> usize {
        self.text.chars().count()
    }

    /// The byte offset of character index `at`.
    fn byte(&self, at: usize) -> usize {
        self.text
            .char_indices()
            .nth(at)
            .map_or(self.text.len(), |(byte, _)| byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(edit: &mut LineEdit, code: KeyCode) -> bool {
        edit.key(KeyEvent::from(code))
    }

    #[test]
    fn typing_replaces_a_suggestion_and_moving_keeps_it() {
        let mut edit = LineEdit::suggested("{}");
        assert!(press(&mut edit, KeyCode::Char('[')));
        assert_eq!(edit.text(), "[");
        let mut edit = LineEdit::suggested("{}");
        assert!(press(&mut edit, KeyCode::Backspace));
        assert_eq!(edit.text(), "");
        let mut edit = LineEdit::suggested("{}");
        assert!(press(&mut edit, KeyCode::Left));
        assert!(press(&mut edit, KeyCode::Char('"')));
        assert_eq!(edit.text(), "{\"}");
    }

    #[test]
    fn a_field_inserts_deletes_and_moves_by_characters() {
        let mut edit = LineEdit::new("hé");
        assert!(press(&mut edit, KeyCode::Char('!')));
        press(&mut edit, KeyCode::Left);
        press(&mut edit, KeyCode::Left);
        press(&mut edit, KeyCode::Backspace);
        assert_eq!(edit.text(), "é!");
        press(&mut edit, KeyCode::Delete);
        assert_eq!(edit.text(), "!");
        press(&mut edit, KeyCode::End);
        press(&mut edit, KeyCode::Char('x'));
        assert_eq!((edit.text(), edit.cursor()), ("!x", 2));
        assert!(!press(&mut edit, KeyCode::Enter));
        assert!(!press(&mut edit, KeyCode::Esc));
    }
}
