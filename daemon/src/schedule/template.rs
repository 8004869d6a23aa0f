//! The templates of a schedule (`docs/schedules.md`, "Templates"): the token id and
//! the strings of the context, with fields of the occurrence written `{date}`,
//! `{time}`, ... and `{{`, `}}` for a brace. A template is read once, at add time,
//! where a field that does not exist is refused; each occurrence then writes it.

use chrono_tz::Tz;
use serde_json::Value;
use stateous_shared::wire::Object;

use super::calendar::utc;

/// Every field, with what it writes, for the sentences that list them.
pub const FIELDS: [(&str, &str); 10] = [
    ("schedule", "the schedule's name"),
    ("date", "the local date, 2027-03-28"),
    ("time", "the local hour and minute, 0930"),
    ("second", "the local second, 05"),
    ("utc_date", "the date in UTC"),
    ("utc_time", "the hour and minute in UTC"),
    ("occurrence", "the moment in UTC, 20270328T073000Z"),
    ("unix", "the moment in seconds since 1970"),
    ("at", "the moment in ISO 8601, UTC, 2027-03-28T07:30:00Z"),
    ("local", "the moment in ISO 8601 with the zone's offset"),
];

/// One occurrence, as the templates see it.
#[derive(Debug, Clone)]
pub struct Occurrence<'a> {
    /// The schedule's name.
    pub schedule: &'a str,
    /// The instant, in microseconds since 1970 (a whole second).
    pub at: i64,
    /// The schedule's zone.
    pub zone: Tz,
}

impl Occurrence<'_> {
    /// What `field` writes (a field [`Template::parse`] accepted).
    fn field(&self, field: &str) -> String {
        let at = utc(self.at);
        let local = at.with_timezone(&self.zone);
        match field {
            "schedule" => self.schedule.to_string(),
            "date" => local.format("%Y-%m-%d").to_string(),
            "time" => local.format("%H%M").to_string(),
            "second" => local.format("%S").to_string(),
            "utc_date" => at.format("%Y-%m-%d").to_string(),
            "utc_time" => at.format("%H%M").to_string(),
            "occurrence" => at.format("%Y%m%dT%H%M%SZ").to_string(),
            "unix" => at.timestamp().to_string(),
            "at" => at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "local" => local.format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
            _ => String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Field(&'static str),
}

/// A template read once: text and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Read `text`; a field that does not exist, or a brace left open, is one
    /// sentence (`what` names the template, e.g. "the token template").
    pub fn parse(text: &str, what: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(i) = rest.find(['{', '}']) {
            literal.push_str(&rest[..i]);
            let tail = &rest[i..];
            if tail.starts_with("{{") || tail.starts_with("}}") {
                literal.push_str(&tail[..1]);
                rest = &tail[2..];
                continue;
            }
            if tail.starts_with('}') {
                return Err(format!(
                    "{what} {text:?} has a '}}' that closes nothing; write '}}}}' for a brace"
                ));
            }
            let Some(end) = tail.find('}') else {
                return Err(format!(
                    "{what} {text:?} opens a field with '{{' and never closes it; write \
                     '{{{{' for a brace"
                ));
            };
            let name = &tail[1..end];
            let Some((field, _)) = FIELDS.iter().find(|(field, _)| *field == name) else {
                return Err(format!(
                    "{what} {text:?} names the field {{{name}}}, which does not exist; the \
                     fields are {}",
                    field_list()
                ));
            };
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            parts.push(Part::Field(field));
            rest = &tail[end + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template { parts })
    }

    /// The text for `occurrence`.
    pub fn write(&self, occurrence: &Occurrence) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Field(field) => out.push_str(&occurrence.field(field)),
            }
        }
        out
    }

    /// Whether the text names a field at all.
    pub fn has_fields(&self) -> bool {
        self.parts.iter().any(|part| matches!(part, Part::Field(_)))
    }

    /// Whether the text names one of `fields`.
    pub fn names_any(&self, fields: &[&str]) -> bool {
        self.parts
            .iter()
            .any(|part| matches!(part, Part::Field(field) if fields.contains(field)))
    }
}

/// `{schedule}, {date}, ...`: the fields, for sentences.
pub fn field_list() -> String {
    FIELDS
        .iter()
        .map(|(field, _)| format!("{{{field}}}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Check every string in a context template (values, at any depth; keys are
/// kept as written).
pub fn check_context(context: &Object) -> Result<(), String> {
    fn walk(value: &Value) -> Result<(), String> {
        match value {
            Value::String(text) => Template::parse(text, "the context's string").map(|_| ()),
            Value::Array(items) => items.iter().try_for_each(walk),
            Value::Object(map) => map.values().try_for_each(walk),
            _ => Ok(()),
        }
    }
    context.values().try_for_each(walk)
}

/// The context for `occurrence`: every string written as a template (checked
/// before by [`check_context`]; a string that is not a template stays as it is).
pub fn write_context(context: &Object, occurrence: &Occurrence) -> Object {
    fn walk(value: &Value, occurrence: &Occurrence) -> Value {
        match value {
            Value::String(text) => match Template::parse(text, "") {
                Ok(template) => Value::String(template.write(occurrence)),
                Err(_) => value.clone(),
            },
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| walk(v, occurrence)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), walk(v, occurrence)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    context
        .iter()
        .map(|(key, value)| (key.clone(), walk(value, occurrence)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::calendar::Calendar;

    fn occurrence(at: &str) -> Occurrence<'static> {
        let calendar = Calendar::parse("every 1m", "Europe/Berlin").unwrap();
        let at = stateous_shared::time::parse_iso(at)
            .unwrap()
            .timestamp_micros();
        Occurrence {
            schedule: "triage",
            at,
            zone: calendar.zone(),
        }
    }

    #[test]
    fn fields_write_the_occurrence_in_the_zone_and_in_utc() {
        let summer = occurrence("2027-03-28T07:30:05Z");
        let all = FIELDS
            .iter()
            .map(|(field, _)| format!("{{{field}}}"))
            .collect::<Vec<_>>()
            .join(" ");
        let written = Template::parse(&all, "t").unwrap().write(&summer);
        assert_eq!(
            written,
            "triage 2027-03-28 0930 05 2027-03-28 0730 20270328T073005Z 1806219005 \
             2027-03-28T07:30:05Z 2027-03-28T09:30:05+02:00"
        );
        let braces = Template::parse("{{x}}-{date}", "t").unwrap();
        assert_eq!(braces.write(&summer), "{x}-2027-03-28");
    }

    #[test]
    fn an_unknown_field_or_an_open_brace_is_refused_naming_it() {
        let refused = Template::parse("triage-{dat}", "the token template").unwrap_err();
        assert!(
            refused.contains("names the field {dat}, which does not exist"),
            "{refused}"
        );
        assert!(refused.contains("{schedule}, {date}"), "{refused}");
        assert!(Template::parse("a-{date", "t")
            .unwrap_err()
            .contains("never closes"));
        assert!(Template::parse("a}", "t")
            .unwrap_err()
            .contains("closes nothing"));
    }

    #[test]
    fn a_context_template_writes_strings_at_every_depth() {
        let context: Object = serde_json::from_value(serde_json::json!({
            "day": "{date}", "n": 3, "tags": ["{schedule}", {"at": "{at}"}]
        }))
        .unwrap();
        check_context(&context).unwrap();
        let written = write_context(&context, &occurrence("2027-01-02T03:04:00Z"));
        assert_eq!(
            serde_json::Value::Object(written),
            serde_json::json!({"day": "2027-01-02", "n": 3,
                               "tags": ["triage", {"at": "2027-01-02T03:04:00Z"}]})
        );
        let bad: Object = serde_json::from_value(serde_json::json!({"x": ["{nope}"]})).unwrap();
        assert!(check_context(&bad).unwrap_err().contains("{nope}"));
    }
}
