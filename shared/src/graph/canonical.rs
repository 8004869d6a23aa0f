//! JSON text exactly as Python's `json.dumps` writes it, so that checksums and graph
//! files match the reference byte for byte (`docs/reference/files.md`).
//!
//! Two layouts: the canonical one (`sort_keys=True, separators=(",", ":")`) that the
//! checksum hashes, and the graph file's own (`indent=2`, keys in document order).
//! Both escape every character outside printable ASCII as `\u` and four hex digits (surrogate pairs
//! above U+FFFF) and write floats as Python's `repr` does (`1.0`, `1e-05`, `1e+16`).
//!
//! Limit: serde_json reads an integer beyond the range of `i64`/`u64` as a float, so
//! such an integer is written as a float where Python would keep it whole; and it
//! reads the integer `-0` as the float `-0.0`. Compiled graph files hold neither.

use std::fmt::Write as _;

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

/// `sha256:` + the hex SHA-256 of the canonical JSON of `value`.
pub(crate) fn hash(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(&mut out, value);
    let digest = Sha256::digest(out.as_bytes());
    format!("sha256:{}", hex::encode(digest))
}

/// The canonical JSON text: keys sorted by code point, no spaces.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(&mut out, value);
    out
}

/// The text of a graph file: `json.dumps(document, indent=2)` and a newline, keys in
/// the order the document holds them (reference `model/graph_file.dump_graph`).
pub fn pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(&mut out, value, 0);
    out.push('\n');
    out
}

fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            // Byte order of UTF-8 is code point order, which is Python's order.
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_canonical(out, &map[key]);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        scalar => write_scalar(out, scalar),
    }
}

fn write_pretty(out: &mut String, value: &Value, depth: usize) {
    let indent = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', depth * 2));
    };
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, depth + 1);
                write_string(out, key);
                out.push_str(": ");
                write_pretty(out, item, depth + 1);
            }
            indent(out, depth);
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, depth + 1);
                write_pretty(out, item, depth + 1);
            }
            indent(out, depth);
            out.push(']');
        }
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        scalar => write_scalar(out, scalar),
    }
}

fn write_scalar(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Object(_) | Value::Array(_) => {
            unreachable!("containers are written by the callers")
        }
    }
}

/// A string as Python writes it with `ensure_ascii=True`.
fn write_string(out: &mut String, text: &str) {
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
                    // Writing to a String cannot fail.
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, number: &Number) {
    if let Some(whole) = number.as_i64() {
        let _ = write!(out, "{whole}");
    } else if let Some(whole) = number.as_u64() {
        let _ = write!(out, "{whole}");
    } else if let Some(float) = number.as_f64() {
        out.push_str(&python_float(float));
    }
}

/// A finite float as Python's `repr` writes it (`1e-05`, `1.0`, `1e+16`).
pub(crate) fn python_float(float: f64) -> String {
    crate::pyrepr::repr_float(float)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_read_as_python_writes_them() {
        let cases = [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123.456, "123.456"),
            (-2.5e-7, "-2.5e-07"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (0.1, "0.1"),
            (12345678.9, "12345678.9"),
            (1.5e100, "1.5e+100"),
        ];
        for (float, text) in cases {
            assert_eq!(python_float(float), text, "{float:e}");
        }
    }

    #[test]
    fn canonical_json_sorts_keys_and_escapes_as_python() {
        let value: Value = serde_json::from_str(
            r#"{"b": 1, "a": [true, null, 2.0, -3], "é": "ü😀\"\\\n\u0001\u007f~", "A": {}}"#,
        )
        .unwrap();
        assert_eq!(
            canonical(&value),
            r#"{"A":{},"a":[true,null,2.0,-3],"b":1,"\u00e9":"\u00fc\ud83d\ude00\"\\\n\u0001\u007f~"}"#
        );
    }

    #[test]
    fn numbers_keep_their_python_kind() {
        let value: Value = serde_json::from_str("[-0.0, 1E5, 12, -7, 2.50]").unwrap();
        assert_eq!(canonical(&value), "[-0.0,100000.0,12,-7,2.5]");
    }

    #[test]
    fn pretty_json_indents_as_python() {
        let value = json!({"x": [1, {"y": []}], "e": {}, "s": "ä"});
        assert_eq!(
            pretty(&value),
            "{\n  \"x\": [\n    1,\n    {\n      \"y\": []\n    }\n  ],\n  \"e\": {},\n  \"s\": \"\\u00e4\"\n}\n"
        );
    }
}
