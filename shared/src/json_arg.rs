//! Where a JSON argument of the command line comes from (`docs/reference/cli.md`,
//! "How they behave alike"): written inline, `@FILE` for the text of a file, or `-`
//! for standard input, so that a large context or payload need not fit in the
//! system's argument limit. Neither `@...` nor a lone `-` is JSON, so the forms
//! cannot be mistaken for each other.

use std::io::Read;

/// The text of the argument `given`, and how a sentence names it: `NAME` inline,
/// `NAME from FILE`, `NAME from standard input`. One sentence when a file or
/// standard input cannot be read.
pub fn json_text(given: &str, name: &str) -> Result<(String, String), String> {
    json_text_from(given, name, &mut std::io::stdin().lock())
}

/// [`json_text`], with standard input being `stdin`.
pub fn json_text_from(
    given: &str,
    name: &str,
    stdin: &mut dyn Read,
) -> Result<(String, String), String> {
    if given == "-" {
        let mut text = String::new();
        stdin
            .read_to_string(&mut text)
            .map_err(|e| format!("{name}: standard input cannot be read: {e}"))?;
        return Ok((text, format!("{name} from standard input")));
    }
    if let Some(path) = given.strip_prefix('@') {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{name}: the file {path} cannot be read: {e}"))?;
        return Ok((text, format!("{name} from {path}")));
    }
    Ok((given.to_string(), name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_is_read_inline_from_a_file_or_from_standard_input() {
        let none: &mut dyn Read = &mut std::io::empty();
        assert_eq!(
            json_text_from("{\"a\": 1}", "CONTEXT_JSON", none).unwrap(),
            ("{\"a\": 1}".to_string(), "CONTEXT_JSON".to_string())
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctx.json");
        std::fs::write(&path, "{\"b\": 2}").unwrap();
        let (text, label) =
            json_text_from(&format!("@{}", path.display()), "CONTEXT_JSON", none).unwrap();
        assert_eq!(text, "{\"b\": 2}");
        assert_eq!(label, format!("CONTEXT_JSON from {}", path.display()));
        let mut input = "{\"c\": 3}".as_bytes();
        assert_eq!(
            json_text_from("-", "PAYLOAD_JSON", &mut input).unwrap(),
            (
                "{\"c\": 3}".to_string(),
                "PAYLOAD_JSON from standard input".to_string()
            )
        );
        let missing = json_text_from("@/nonexistent/x.json", "PAYLOAD_JSON", none).unwrap_err();
        assert!(
            missing.starts_with("PAYLOAD_JSON: the file /nonexistent/x.json cannot be read: "),
            "{missing}"
        );
    }
}
