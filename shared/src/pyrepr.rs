//! How Python writes a value, in the one place that knows it: `repr()` and `str()`
//! for messages that must read exactly as the reference implementation's (compile
//! problems quote guards, names and example values with it: `'reviewed' from
//! 'review': the guards "ctx['a'] > 1" and ...`; history lines), and `json.dumps`
//! in each layout Stateous needs: the checksum's canonical text, a graph file's
//! indented text, and history lines' default separators
//! (`docs/compatibility.md`, `docs/reference/files.md`).
//!
//! Limit: serde_json reads an integer beyond the range of `i64`/`u64` as a float, so
//! such an integer is written as a float where Python would keep it whole; and it
//! reads the integer `-0` as the float `-0.0`. Compiled graph files hold neither.

use serde_json::{Number, Value};

/// A string as Python's `repr()` writes it: in single quotes, or in double quotes
/// when it holds a single quote and no double quote, with backslash escapes for the
/// quote, the backslash and characters that do not print.
pub fn repr_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c == ' ' || (c.is_ascii() && !c.is_ascii_control()) => out.push(c),
            c if printable(c) => out.push(c),
            c => {
                let code = u32::from(c);
                let escaped = if code <= 0xff {
                    format!("\\x{code:02x}")
                } else if code <= 0xffff {
                    format!("\\u{code:04x}")
                } else {
                    format!("\\U{code:08x}")
                };
                out.push_str(&escaped);
            }
        }
    }
    out.push(quote);
    out
}

/// Whether Python counts a non-ASCII character as printable. Python leaves out the
/// categories "Other" and "Separator" (but the space); without Unicode tables this
/// knows controls, separators, the common format characters and private use.
fn printable(c: char) -> bool {
    let code = u32::from(c);
    let format_or_private = matches!(code,
        0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e | 0x200b..=0x200f
        | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff | 0xfff9..=0xfffb
        | 0xe000..=0xf8ff | 0xe0001 | 0xe0020..=0xe007f | 0xf0000..=0x10ffff);
    !(c.is_control() || c.is_whitespace() || format_or_private)
}

/// A float as Python's `repr()` writes it: the shortest digits that read back to
/// the same number, in positional notation from 1e-4 up to 1e16 (always with a
/// `.0` or a fraction), else in exponent notation such as `1e+16` or `2.5e-05`.
pub fn repr_float(number: f64) -> String {
    if number.is_nan() {
        return "nan".to_owned();
    }
    if number.is_infinite() {
        return if number > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `{:e}` gives the same shortest digits as Python; only the layout differs.
    let scientific = format!("{:e}", number.abs());
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` of a finite float always has an exponent");
    let exponent: i32 = exponent
        .parse()
        .expect("`{:e}` writes the exponent as an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let point = exponent + 1; // the value is 0.DIGITS times ten to the power `point`
    let sign = if number.is_sign_negative() { "-" } else { "" };
    let body = if (-3..=16).contains(&point) {
        positional(&digits, point)
    } else {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{first}{fraction}e{exp_sign}{:02}", exponent.abs())
    };
    format!("{sign}{body}")
}

/// `0.DIGITS * 10^point` written without an exponent, as Python does.
fn positional(digits: &str, point: i32) -> String {
    let count = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if point <= 0 {
        let zeros = "0".repeat(usize::try_from(-point).unwrap_or(0));
        format!("0.{zeros}{digits}")
    } else if point >= count {
        let zeros = "0".repeat(usize::try_from(point - count).unwrap_or(0));
        format!("{digits}{zeros}.0")
    } else {
        let split = usize::try_from(point).unwrap_or(0);
        format!("{}.{}", &digits[..split], &digits[split..])
    }
}

/// A number as Python writes it: whole numbers as digits; floats by `repr`, the
/// shortest text that reads back the same, with `.0` on whole values and an
/// exponent (`1e+16`, `1.5e-07`) outside 1e-4 to 1e16.
pub fn repr_number(number: &Number) -> String {
    if number.is_i64() || number.is_u64() {
        return number.to_string();
    }
    match number.as_f64() {
        Some(float) => repr_float(float),
        None => number.to_string(),
    }
}

/// Python's `str()` of a JSON value: a string as it is, anything else as `repr()`
/// ([`repr_json`]).
pub fn str_json(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => repr_json(other),
    }
}

/// A JSON value as Python's `repr()` writes the value `json.loads` makes of it:
/// `None`, `True`, `3`, `2.5`, `'text'`, `['a', 1]`, `{'key': None}`.
pub fn repr_json(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(number) => repr_number(number),
        Value::String(text) => repr_str(text),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(repr_json).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(key, value)| format!("{}: {}", repr_str(key), repr_json(value)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// How `json.dumps` lays a value out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `sort_keys=True, separators=(",", ":")`: the text a checksum hashes.
    Canonical,
    /// `indent=2`, keys in the value's order: a graph file.
    Indented,
    /// The defaults (`, ` and `: `), keys in the value's order: history lines.
    Spaced,
}

/// `json.dumps(value, ensure_ascii=True)` in `layout`: every character outside
/// printable ASCII as `\u` and four hex digits (a surrogate pair above U+FFFF),
/// floats as Python's `repr` writes them (`1.0`, `1e-05`, `1e+16`).
pub fn dumps(value: &Value, layout: Layout) -> String {
    let mut out = String::new();
    write_json(&mut out, value, layout, 0);
    out
}

fn write_json(out: &mut String, value: &Value, layout: Layout, depth: usize) {
    // What comes before each item: a separator after the first, then, when
    // indented, a new line at the item's depth.
    let before = |out: &mut String, index: usize, depth: usize| {
        if index > 0 {
            out.push_str(if layout == Layout::Spaced { ", " } else { "," });
        }
        if layout == Layout::Indented {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', depth * 2));
        }
    };
    let key_separator = if layout == Layout::Canonical {
        ":"
    } else {
        ": "
    };
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            if layout == Layout::Canonical {
                // Byte order of UTF-8 is code point order, which is Python's order.
                keys.sort();
            }
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                before(out, index, depth + 1);
                write_json_string(out, key);
                out.push_str(key_separator);
                write_json(out, &map[key], layout, depth + 1);
            }
            before(out, 0, depth);
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                before(out, index, depth + 1);
                write_json(out, item, layout, depth + 1);
            }
            before(out, 0, depth);
            out.push(']');
        }
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&repr_number(number)),
        Value::String(text) => write_json_string(out, text),
    }
}

/// A JSON string as `json.dumps` writes it with `ensure_ascii=True`.
fn write_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_pick_their_quotes_as_python_does() {
        assert_eq!(repr_str("ctx['a'] > 1"), "\"ctx['a'] > 1\"");
        assert_eq!(repr_str("payload.x == 1"), "'payload.x == 1'");
        assert_eq!(repr_str("it's \"x\""), "'it\\'s \"x\"'");
        assert_eq!(repr_str("\0"), "'\\x00'");
        assert_eq!(repr_str("a\\b\n\t"), "'a\\\\b\\n\\t'");
        assert_eq!(repr_str("größe"), "'größe'");
        assert_eq!(repr_str("\u{a0}\u{2028}"), "'\\xa0\\u2028'");
    }

    #[test]
    fn floats_read_as_python_writes_them() {
        let cases = [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (123456.789, "123456.789"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "inf"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (number, text) in cases {
            assert_eq!(repr_float(number), text, "{number}");
        }
    }

    #[test]
    fn json_values_read_as_python_objects() {
        let value = json!([null, true, false, 3, 2.5, "x", {"k": [1]}]);
        assert_eq!(
            repr_json(&value),
            "[None, True, False, 3, 2.5, 'x', {'k': [1]}]"
        );
    }

    #[test]
    fn json_reads_as_pythons_json_dumps() {
        let value = json!({"passed": 3, "note": "é ok", "list": [true, null, 1.5], "e": "😀"});
        assert_eq!(
            dumps(&value, Layout::Spaced),
            r#"{"passed": 3, "note": "\u00e9 ok", "list": [true, null, 1.5], "e": "\ud83d\ude00"}"#
        );
        assert_eq!(dumps(&json!("a\"b\\\n"), Layout::Spaced), r#""a\"b\\\n""#);
    }

    #[test]
    fn str_reads_as_pythons_str() {
        assert_eq!(str_json(&json!("text")), "text");
        assert_eq!(str_json(&json!(null)), "None");
        assert_eq!(str_json(&json!(true)), "True");
        assert_eq!(str_json(&json!(4)), "4");
        assert_eq!(str_json(&json!(["a", 1])), "['a', 1]");
        assert_eq!(str_json(&json!({"k": "it's"})), r#"{'k': "it's"}"#);
    }

    #[test]
    fn numbers_read_as_pythons_repr() {
        let cases = [
            (1.0, "1.0"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e20, "1.2345e+20"),
            (0.1, "0.1"),
        ];
        for (float, text) in cases {
            let number = Number::from_f64(float).unwrap();
            assert_eq!(repr_number(&number), text, "{float}");
        }
    }
}
