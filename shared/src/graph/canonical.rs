//! JSON text exactly as Python's `json.dumps` writes it, so that checksums and graph
//! files match the reference byte for byte (`docs/reference/files.md`).
//!
//! Two layouts: the canonical one (`sort_keys=True, separators=(",", ":")`) that the
//! checksum hashes, and the graph file's own (`indent=2`, keys in document order).
//! Both are written by `crate::pyrepr::dumps`, the one writer of Python's JSON.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::pyrepr::{dumps, Layout};

/// `sha256:` + the hex SHA-256 of the canonical JSON of `value`.
pub(crate) fn hash(value: &Value) -> String {
    let digest = Sha256::digest(canonical(value).as_bytes());
    format!("sha256:{}", hex::encode(digest))
}

/// The canonical JSON text: keys sorted by code point, no spaces.
pub fn canonical(value: &Value) -> String {
    dumps(value, Layout::Canonical)
}

/// The text of a graph file: `json.dumps(document, indent=2)` and a newline, keys in
/// the order the document holds them.
pub fn pretty(value: &Value) -> String {
    let mut out = dumps(value, Layout::Indented);
    out.push('\n');
    out
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
            assert_eq!(crate::pyrepr::repr_float(float), text, "{float:e}");
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
