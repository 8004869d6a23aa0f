//! The guard language's tokens. A guard is written in Python's expression syntax
//! (the reference parses it with Python's own parser), so this follows Python's
//! rules for names, numbers, strings, comments and line breaks, far enough to
//! accept every guard Python accepts and to name what a refused one holds.

/// One token of a guard.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    /// A name or a keyword, e.g. `ctx`, `and`.
    Name(String),
    /// An integer; one beyond 128 bits is kept as a float.
    Int(i128),
    /// A float literal, e.g. `2.5`, `1e3`.
    Float(f64),
    /// A string literal (prefix `r` or `u` allowed), escapes resolved.
    Str(String),
    /// A literal of another Python kind: bytes, an f-string, a complex number.
    Other(&'static str),
    /// An operator or a bracket.
    Op(&'static str),
}

/// Python's operators, longest first so that `<=` wins over `<`.
const OPERATORS: &[&str] = &[
    "**=", "//=", ">>=", "<<=", "...", "!=", "==", "<=", ">=", "<>", "->", ":=", "**", "//", "<<",
    ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "(", ")", "[", "]", "{", "}", ",",
    ":", ".", ";", "@", "=", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">", "!",
];

/// The prefixes a Python string may carry, in lower case.
const STRING_PREFIXES: [&str; 8] = ["r", "u", "b", "f", "br", "rb", "fr", "rf"];

/// The words after which a number may follow without a space, as Python allows
/// (`1if x else 2`); any other letter right after a number is an error.
const AFTER_NUMBER: [&str; 8] = ["and", "else", "for", "if", "in", "is", "not", "or"];

/// Split a guard into tokens, or say in one sentence why it is not an expression.
pub(super) fn tokens(source: &str) -> Result<Vec<Tok>, String> {
    if source.contains('\0') {
        return Err("it holds a null character".to_owned());
    }
    let mut lexer = Lexer {
        chars: source.chars().collect(),
        at: 0,
        depth: 0,
        out: Vec::new(),
    };
    lexer.run()?;
    Ok(lexer.out)
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    /// Open brackets: inside them a line break is plain space, as in Python.
    depth: usize,
    out: Vec<Tok>,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\x0c' => self.at += 1,
                '#' => self.skip_comment(),
                '\\' => self.continuation()?,
                '\n' | '\r' if self.depth > 0 => self.at += 1,
                '\n' | '\r' if self.out.is_empty() => self.leading_line()?,
                '\n' | '\r' => self.line_break()?,
                c if c.is_ascii_digit() => self.number()?,
                '.' if self.peek(1).is_some_and(|d| d.is_ascii_digit()) => self.number()?,
                '\'' | '"' => self.string(String::new())?,
                c if c == '_' || c.is_alphabetic() => self.word()?,
                _ => self.operator(c)?,
            }
        }
        Ok(())
    }

    fn skip_comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n' && c != '\r') {
            self.at += 1;
        }
    }

    /// A backslash at the end of a line joins the next line to it.
    fn continuation(&mut self) -> Result<(), String> {
        match (self.peek(1), self.peek(2)) {
            (Some('\n'), _) => self.at += 2,
            (Some('\r'), Some('\n')) => self.at += 3,
            (Some('\r'), _) => self.at += 2,
            _ => return Err("a backslash outside a string may only end a line".to_owned()),
        }
        Ok(())
    }

    /// Before the first token, blank and comment lines are skipped; the line that
    /// holds the expression may not be indented, as in Python.
    fn leading_line(&mut self) -> Result<(), String> {
        self.at += 1;
        let start = self.at;
        while matches!(self.peek(0), Some(' ' | '\t' | '\x0c')) {
            self.at += 1;
        }
        let indented = self.at > start;
        match self.peek(0) {
            Some('\n' | '\r' | '#') | None => Ok(()),
            Some(_) if indented => Err("its first line is indented".to_owned()),
            Some(_) => Ok(()),
        }
    }

    /// Outside brackets a guard is one line: after a line break only blank lines
    /// and comments may follow.
    fn line_break(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\x0c' | '\n' | '\r' => self.at += 1,
                '#' => self.skip_comment(),
                _ => return Err("a guard is one expression on one line".to_owned()),
            }
        }
        Ok(())
    }

    fn operator(&mut self, c: char) -> Result<(), String> {
        let found = OPERATORS.iter().find(|op| {
            op.chars()
                .enumerate()
                .all(|(i, want)| self.peek(i) == Some(want))
        });
        let Some(op) = found else {
            return Err(format!(
                "the character {c:?} is not part of the guard language"
            ));
        };
        match *op {
            "(" | "[" | "{" => self.depth += 1,
            ")" | "]" | "}" => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        self.at += op.chars().count();
        self.out.push(Tok::Op(op));
        Ok(())
    }

    /// A name, a keyword, or the prefix of a string such as `r'...'`.
    fn word(&mut self) -> Result<(), String> {
        let start = self.at;
        while self
            .peek(0)
            .is_some_and(|c| c == '_' || c.is_alphanumeric())
        {
            self.at += 1;
        }
        let word: String = self.chars[start..self.at].iter().collect();
        let is_prefix = STRING_PREFIXES.contains(&word.to_ascii_lowercase().as_str());
        if is_prefix && matches!(self.peek(0), Some('\'' | '"')) {
            return self.string(word.to_ascii_lowercase());
        }
        self.out.push(Tok::Name(word));
        Ok(())
    }

    fn number(&mut self) -> Result<(), String> {
        let start = self.at;
        while self
            .peek(0)
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            || (matches!(self.peek(0), Some('+' | '-'))
                && matches!(self.chars.get(self.at.wrapping_sub(1)), Some('e' | 'E'))
                && !self.chars[start..self.at]
                    .iter()
                    .any(|c| matches!(c, 'x' | 'X')))
        {
            self.at += 1;
        }
        let mut text: String = self.chars[start..self.at].iter().collect();
        // Python lets a keyword follow a number without a space: `1if`, `1or`.
        if let Some(cut) = keyword_tail(&text) {
            self.at -= text.len() - cut;
            text.truncate(cut);
        }
        let token = number_token(&text)
            .ok_or_else(|| format!("{text:?} is not a number of the guard language"))?;
        self.out.push(token);
        Ok(())
    }

    /// A string literal starting at the quote, after `prefix` (lower case).
    fn string(&mut self, prefix: String) -> Result<(), String> {
        let quote = self.peek(0).expect("called at a quote");
        let triple = self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        self.at += if triple { 3 } else { 1 };
        let raw = prefix.contains('r');
        let mut text = String::new();
        loop {
            let Some(c) = self.peek(0) else {
                return Err("a string is not closed".to_owned());
            };
            if c == quote
                && (!triple || (self.peek(1) == Some(quote) && self.peek(2) == Some(quote)))
            {
                self.at += if triple { 3 } else { 1 };
                break;
            }
            if (c == '\n' || c == '\r') && !triple {
                return Err("a string is not closed on its line".to_owned());
            }
            self.at += 1;
            if c != '\\' {
                text.push(c);
            } else if raw {
                // A raw string keeps the backslash, yet a quote after it does not close.
                text.push('\\');
                if let Some(next) = self.peek(0) {
                    text.push(next);
                    self.at += 1;
                }
            } else {
                self.escape(&mut text)?;
            }
        }
        let token = if prefix.contains('b') {
            Tok::Other("a bytes literal")
        } else if prefix.contains('f') {
            Tok::Other("an f-string")
        } else {
            Tok::Str(text)
        };
        self.out.push(token);
        Ok(())
    }

    /// The escape after a backslash in a string, as Python reads it.
    fn escape(&mut self, text: &mut String) -> Result<(), String> {
        let Some(c) = self.peek(0) else {
            return Err("a string is not closed".to_owned());
        };
        self.at += 1;
        let simple = match c {
            '\n' => Some(None),
            '\r' => {
                if self.peek(0) == Some('\n') {
                    self.at += 1;
                }
                Some(None)
            }
            '\\' | '\'' | '"' => Some(Some(c)),
            'a' => Some(Some('\x07')),
            'b' => Some(Some('\x08')),
            'f' => Some(Some('\x0c')),
            'n' => Some(Some('\n')),
            'r' => Some(Some('\r')),
            't' => Some(Some('\t')),
            'v' => Some(Some('\x0b')),
            _ => None,
        };
        if let Some(pushed) = simple {
            text.extend(pushed);
            return Ok(());
        }
        match c {
            '0'..='7' => {
                let mut code = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek(0).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            code = code * 8 + d;
                            self.at += 1;
                        }
                        None => break,
                    }
                }
                text.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            'x' | 'u' | 'U' => {
                let width = match c {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let digits: String = (0..width).filter_map(|i| self.peek(i)).collect();
                let code = (digits.len() == width && digits.chars().all(|d| d.is_ascii_hexdigit()))
                    .then(|| u32::from_str_radix(&digits, 16).ok())
                    .flatten()
                    .ok_or_else(|| {
                        format!("the escape \\{c} in a string needs {width} hex digits")
                    })?;
                let ch = char::from_u32(code)
                    .ok_or_else(|| format!("the escape \\{c}{digits} is not a character"))?;
                self.at += width;
                text.push(ch);
            }
            'N' => return Err("named escapes (\\N{...}) are not supported in guards".to_owned()),
            other => {
                // Python keeps an unknown escape as written.
                text.push('\\');
                text.push(other);
            }
        }
        Ok(())
    }
}

/// Where a keyword starts at the end of a number's text (`1or` -> 1), if one does.
fn keyword_tail(text: &str) -> Option<usize> {
    AFTER_NUMBER
        .iter()
        .filter_map(|word| text.strip_suffix(word).map(str::len))
        .filter(|cut| *cut > 0 && number_token(&text[..*cut]).is_some())
        .max()
}

/// The token of a number's text, by Python's rules; None when it is not a number.
fn number_token(text: &str) -> Option<Tok> {
    let lower = text.to_ascii_lowercase();
    if let Some(digits) = lower.strip_suffix('j') {
        let valid = float_text(digits).is_some() || decimal_digits(digits).is_some();
        return valid.then_some(Tok::Other("a complex number"));
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = lower.strip_prefix(prefix) {
            let digits = digits.strip_prefix('_').unwrap_or(digits);
            return grouped(digits, |c| c.is_digit(radix)).map(|clean| integer(&clean, radix));
        }
    }
    if let Some(clean) = decimal_digits(&lower) {
        let leading_zero = clean.len() > 1 && clean.starts_with('0');
        if leading_zero && clean.chars().any(|c| c != '0') {
            return None; // `012` is refused by Python, which asks for `0o12`.
        }
        return Some(integer(&clean, 10));
    }
    float_text(&lower).map(Tok::Float)
}

fn integer(digits: &str, radix: u32) -> Tok {
    match i128::from_str_radix(digits, radix) {
        Ok(value) => Tok::Int(value),
        // Python's integers have no bound; past 128 bits a float is close enough.
        Err(_) => Tok::Float(
            digits
                .chars()
                .filter_map(|c| c.to_digit(radix))
                .fold(0.0, |acc, d| acc * f64::from(radix) + f64::from(d)),
        ),
    }
}

fn decimal_digits(text: &str) -> Option<String> {
    grouped(text, |c| c.is_ascii_digit())
}

/// The digits of `text` without its underscores, if every character is a digit
/// and each underscore sits between two digits.
fn grouped(text: &str, digit: impl Fn(char) -> bool) -> Option<String> {
    if text.is_empty() || text.starts_with('_') || text.ends_with('_') || text.contains("__") {
        return None;
    }
    text.chars()
        .all(|c| c == '_' || digit(c))
        .then(|| text.replace('_', ""))
}

/// A float literal: `1.5`, `1.`, `.5`, `1e3`, `1.5e-3`, with optional underscores.
fn float_text(text: &str) -> Option<f64> {
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (text, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (mantissa, None),
    };
    if fraction.is_none() && exponent.is_none() {
        return None;
    }
    let whole = if whole.is_empty() {
        String::new()
    } else {
        decimal_digits(whole)?
    };
    let fraction = match fraction {
        Some(f) if !f.is_empty() => decimal_digits(f)?,
        _ => String::new(),
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let exponent = match exponent {
        Some(e) => {
            let (sign, digits) = match e.strip_prefix(['+', '-']) {
                Some(rest) => (&e[..1], rest),
                None => ("", e),
            };
            format!("e{sign}{}", decimal_digits(digits)?)
        }
        None => String::new(),
    };
    let whole = if whole.is_empty() { "0" } else { &whole };
    format!("{whole}.{fraction}0{exponent}").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(source: &str) -> Tok {
        let mut all = tokens(source).expect(source);
        assert_eq!(all.len(), 1, "{source}: {all:?}");
        all.remove(0)
    }

    #[test]
    fn numbers_follow_python() {
        assert_eq!(one("12"), Tok::Int(12));
        assert_eq!(one("1_000"), Tok::Int(1000));
        assert_eq!(one("0x1f"), Tok::Int(31));
        assert_eq!(one("0o17"), Tok::Int(15));
        assert_eq!(one("0b101"), Tok::Int(5));
        assert_eq!(one("000"), Tok::Int(0));
        assert_eq!(one("2.5"), Tok::Float(2.5));
        assert_eq!(one("1."), Tok::Float(1.0));
        assert_eq!(one(".5"), Tok::Float(0.5));
        assert_eq!(one("1e3"), Tok::Float(1000.0));
        assert_eq!(one("1.5E-3"), Tok::Float(0.0015));
        assert_eq!(one("1e999"), Tok::Float(f64::INFINITY));
        assert_eq!(one("1j"), Tok::Other("a complex number"));
        for bad in ["012", "1__0", "1_", "0x", "1e", "1abc", "1.2.3"] {
            assert!(tokens(bad).is_err(), "{bad}");
        }
        assert_eq!(
            tokens("1or 2").expect("valid"),
            vec![Tok::Int(1), Tok::Name("or".into()), Tok::Int(2)]
        );
    }

    #[test]
    fn strings_follow_python() {
        assert_eq!(one("'a'"), Tok::Str("a".into()));
        assert_eq!(one("\"it's\""), Tok::Str("it's".into()));
        assert_eq!(one(r"'\x41\u00e9\n\101\d'"), Tok::Str("Aé\nA\\d".into()));
        assert_eq!(one(r"r'\n'"), Tok::Str("\\n".into()));
        assert_eq!(one("'''a\nb'''"), Tok::Str("a\nb".into()));
        assert_eq!(one("u'x'"), Tok::Str("x".into()));
        assert_eq!(one("b'x'"), Tok::Other("a bytes literal"));
        assert_eq!(one("f'x'"), Tok::Other("an f-string"));
        for bad in ["'abc", "'a\nb'", r"'\x4'", r"'\N{DASH}'"] {
            assert!(tokens(bad).is_err(), "{bad}");
        }
        assert_eq!(tokens("rr'x'").expect("a name and a string").len(), 2);
    }

    #[test]
    fn lines_and_comments_follow_python() {
        assert!(tokens("1 == 1 # why").is_ok());
        assert!(tokens("1 ==\\\n 1").is_ok());
        assert!(tokens("(1 ==\n 1)").is_ok());
        assert!(tokens("1 ==\n 1").is_err());
        assert!(tokens("1 == 1\n\n# done\n").is_ok());
        assert!(tokens("a $ b").is_err());
        assert!(tokens("# why\n\n1 == 1").is_ok());
        assert!(tokens("# why\n  1 == 1").is_err());
    }
}
