//! JSON values written the way the reference's history lines write them: Python's
//! `json.dumps` with its default separators (`, ` and `: `) and non-ASCII escaped,
//! and Python's `str()` of a value (`None`, `True`, `['a', 'b']`).
//!
//! History lines must read the same as the reference's (`docs/compatibility.md`), and those
//! come out of Python, so numbers and strings follow Python's spelling here.

use serde_json::{Number, Value};

/// `json.dumps(value, ensure_ascii=True)`: `{"a": 1, "b": [true, null]}`, keys in
/// their given order, every character above ASCII as `\u` and four hex digits (two for one outside
/// the Basic Multilingual Plane).
pub fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&python_number(number)),
        Value::String(text) => write_json_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (index, (key, item)) in fields.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_json_string(key, out);
                out.push_str(": ");
                write_json(item, out);
            }
            out.push('}');
        }
    }
}

fn write_json_string(text: &str, out: &mut String) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(ch),
            _ => {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Python's `str()` of a JSON value: a string as it is, `None`, `True`, `False`,
/// numbers as Python writes them, lists and objects as Python's `repr`.
pub fn python_str(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => python_repr(other),
    }
}

fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(flag) => if *flag { "True" } else { "False" }.to_string(),
        Value::Number(number) => python_number(number),
        Value::String(text) => crate::pyrepr::repr_str(text),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(key, item)| {
                    format!("{}: {}", crate::pyrepr::repr_str(key), python_repr(item))
                })
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

/// A number as Python writes it: whole numbers as digits; floats by `repr`, the
/// shortest text that reads back the same, with `.0` on whole values and an
/// exponent (`1e+16`, `1.5e-07`) outside 1e-4 to 1e16.
pub fn python_number(number: &Number) -> String {
    if number.is_i64() || number.is_u64() {
        return number.to_string();
    }
    match number.as_f64() {
        Some(float) => crate::pyrepr::repr_float(float),
        None => number.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_reads_as_pythons_json_dumps() {
        let value = json!({"passed": 3, "note": "é ok", "list": [true, null, 1.5], "e": "😀"});
        assert_eq!(
            python_json(&value),
            r#"{"passed": 3, "note": "\u00e9 ok", "list": [true, null, 1.5], "e": "\ud83d\ude00"}"#
        );
        assert_eq!(python_json(&json!("a\"b\\\n")), r#""a\"b\\\n""#);
    }

    #[test]
    fn str_reads_as_pythons_str() {
        assert_eq!(python_str(&json!("text")), "text");
        assert_eq!(python_str(&json!(null)), "None");
        assert_eq!(python_str(&json!(true)), "True");
        assert_eq!(python_str(&json!(4)), "4");
        assert_eq!(python_str(&json!(["a", 1])), "['a', 1]");
        assert_eq!(python_str(&json!({"k": "it's"})), r#"{'k': "it's"}"#);
    }

    #[test]
    fn floats_read_as_pythons_repr() {
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
            assert_eq!(python_number(&number), text, "{float}");
        }
    }
}
