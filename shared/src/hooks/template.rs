//! The templates of a hook (`docs/reference/files.md`, "The hooks file"): text with
//! placeholders `{body.a.b.0}` (a path into the JSON body; a number indexes a
//! list), `{header.Name}` (any case), `{query.name}`, and `{body}` for the whole
//! body. `{{` and `}}` are a brace. A template that is one placeholder alone keeps
//! the JSON value it finds; in longer text each value is written as text (a string
//! as it is, anything else as JSON).

use serde_json::Value;

/// One placeholder: where it reads, and how it was written (for the 422 sentence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// Where it reads.
    pub source: Source,
    /// As written, with its braces: `{body.pull_request.number}`.
    pub written: String,
}

/// What a placeholder reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A path into the body; empty for the whole body.
    Body(Vec<String>),
    /// A header, by its lower-case name.
    Header(String),
    /// A query parameter.
    Query(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Place(Placeholder),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// What a delivery offers its templates: the JSON body, the headers (lower-case
/// names) and the query's pairs.
pub struct Delivery<'a> {
    /// The body.
    pub body: &'a Value,
    /// `(lower-case name, value)`; a header whose value is not text is left out.
    pub headers: &'a [(String, String)],
    /// The query's `(name, value)` pairs, decoded.
    pub query: &'a [(String, String)],
}

/// Why a template gave no value: the placeholder, as written, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The placeholder as written.
    pub placeholder: String,
    /// `finds nothing`, or `is null, not text`.
    pub why: &'static str,
}

impl Missing {
    /// The sentence of the 422 answer, for the template of `field`.
    pub fn sentence(&self, field: &str) -> String {
        format!(
            "the hook's {field} template: {} {}",
            self.placeholder, self.why
        )
    }
}

impl Template {
    /// Parse `text`; the error is a sentence naming the mistake.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|(_, n)| *n) == Some('{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().map(|(_, n)| *n) == Some('}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => return Err(format!("{text:?}: a lone '}}' (write '}}}}' for a brace)")),
                '{' => {
                    let rest = &text[at + 1..];
                    let Some(end) = rest.find('}') else {
                        return Err(format!("{text:?}: a '{{' that is never closed"));
                    };
                    let inner = &rest[..end];
                    for _ in 0..inner.chars().count() + 1 {
                        chars.next();
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Place(placeholder(inner)?));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() || parts.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template { parts })
    }

    /// The placeholders, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = &Placeholder> {
        self.parts.iter().filter_map(|part| match part {
            Part::Place(place) => Some(place),
            Part::Text(_) => None,
        })
    }

    /// The text when the template has no placeholder.
    pub fn literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Text(text)] => Some(text),
            _ => None,
        }
    }

    /// The value for `delivery`: a lone placeholder's JSON value, or text.
    pub fn render(&self, delivery: &Delivery) -> Result<Value, Missing> {
        if let [Part::Place(place)] = self.parts.as_slice() {
            return find(place, delivery);
        }
        let mut text = String::new();
        for part in &self.parts {
            match part {
                Part::Text(literal) => text.push_str(literal),
                Part::Place(place) => match find(place, delivery)? {
                    Value::String(found) => text.push_str(&found),
                    found => text.push_str(&found.to_string()),
                },
            }
        }
        Ok(Value::String(text))
    }

    /// The text for `delivery`: a string as it is, a number or a boolean as JSON;
    /// null, a list or an object is refused.
    pub fn render_text(&self, delivery: &Delivery) -> Result<String, Missing> {
        match self.render(delivery)? {
            Value::String(text) => Ok(text),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => {
                let placeholder = self.placeholders().next().map(|p| p.written.clone());
                Err(Missing {
                    placeholder: placeholder.unwrap_or_default(),
                    why: if other.is_null() {
                        "is null, not text"
                    } else {
                        "is a list or an object, not text"
                    },
                })
            }
        }
    }
}

fn placeholder(inner: &str) -> Result<Placeholder, String> {
    let written = format!("{{{inner}}}");
    let (source, rest) = match inner.split_once('.') {
        Some((source, rest)) => (source, Some(rest)),
        None => (inner, None),
    };
    let source = match (source, rest) {
        ("body", None) => Source::Body(Vec::new()),
        ("body", Some(path)) if path.split('.').all(|s| !s.is_empty()) => {
            Source::Body(path.split('.').map(str::to_string).collect())
        }
        ("header", Some(name)) if is_token(name) => Source::Header(name.to_ascii_lowercase()),
        ("query", Some(name)) if !name.is_empty() => Source::Query(name.to_string()),
        ("body" | "header" | "query", _) => {
            return Err(format!("{written}: a path or name is missing or empty"))
        }
        _ => {
            return Err(format!(
                "{written}: a placeholder reads body, body.PATH, header.NAME or query.NAME"
            ))
        }
    };
    Ok(Placeholder { source, written })
}

/// Whether `name` can be a header's name (RFC 9110 token characters).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn find(place: &Placeholder, delivery: &Delivery) -> Result<Value, Missing> {
    let found = match &place.source {
        Source::Body(path) => {
            let mut at = delivery.body;
            let mut ok = true;
            for step in path {
                let next = match at {
                    Value::Object(map) => map.get(step),
                    Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get(i)),
                    _ => None,
                };
                match next {
                    Some(next) => at = next,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            ok.then(|| at.clone())
        }
        Source::Header(name) => delivery
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| Value::String(v.clone())),
        Source::Query(name) => delivery
            .query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| Value::String(v.clone())),
    };
    found.ok_or_else(|| Missing {
        placeholder: place.written.clone(),
        why: "finds nothing",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(template: &str, body: &Value) -> Result<Value, Missing> {
        let headers = vec![("x-github-delivery".to_string(), "d-1".to_string())];
        let query = vec![("team".to_string(), "core".to_string())];
        let delivery = Delivery {
            body,
            headers: &headers,
            query: &query,
        };
        Template::parse(template).unwrap().render(&delivery)
    }

    #[test]
    fn a_lone_placeholder_keeps_its_json_value_and_text_joins_as_text() {
        let body = json!({"pull_request": {"number": 42, "labels": ["a", "b"]}, "review": {"state": "ok"}});
        assert_eq!(render("{body.pull_request.number}", &body), Ok(json!(42)));
        assert_eq!(
            render("PR-{body.pull_request.number}", &body),
            Ok(json!("PR-42"))
        );
        assert_eq!(
            render("{body.pull_request.labels.1}", &body),
            Ok(json!("b"))
        );
        assert_eq!(render("{body.review}", &body), Ok(json!({"state": "ok"})));
        assert_eq!(render("{body}", &body), Ok(body.clone()));
        assert_eq!(
            render("{header.X-GitHub-Delivery}", &body),
            Ok(json!("d-1"))
        );
        assert_eq!(render("{query.team}/{{x}}", &body), Ok(json!("core/{x}")));
        assert_eq!(render("plain", &body), Ok(json!("plain")));
    }

    #[test]
    fn a_placeholder_that_finds_nothing_is_named() {
        let body = json!({"a": [1]});
        for (template, placeholder) in [
            ("T-{body.b}", "{body.b}"),
            ("{body.a.1}", "{body.a.1}"),
            ("{body.a.x}", "{body.a.x}"),
            ("{header.X-Other}", "{header.X-Other}"),
            ("{query.nope}", "{query.nope}"),
        ] {
            let missing = render(template, &body).unwrap_err();
            assert_eq!(missing.placeholder, placeholder);
        }
    }

    #[test]
    fn templates_that_cannot_be_read_are_refused_with_a_sentence() {
        for bad in [
            "{body.}",
            "{cookie.x}",
            "{header.}",
            "T-{body.a",
            "a}b",
            "{header.a b}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
    }
}
