//! How Python's `repr()` writes a value, for messages that must read exactly as the
//! reference's: compile problems quote guards, names and example values with it
//! (`'reviewed' from 'review': the guards "ctx['a'] > 1" and ...`).

use serde_json::Value;

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

/// A JSON value as Python's `repr()` writes the value `json.loads` makes of it:
/// `None`, `True`, `3`, `2.5`, `'text'`, `['a', 1]`, `{'key': None}`.
pub fn repr_json(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(int), _, _) => int.to_string(),
            (None, Some(int), _) => int.to_string(),
            (None, None, Some(float)) => repr_float(float),
            (None, None, None) => number.to_string(),
        },
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
}
