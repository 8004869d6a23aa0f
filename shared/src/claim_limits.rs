//! Limits on claims (`docs/limits.md`): pools of slots that the control plane
//! keeps, one per limit, over the states it covers. The rules of a limit's name,
//! `max` and rate, their sentences, and the shapes of `PUT /limits/{name}` and of
//! its answers are defined here once: the command line checks what the control
//! plane would refuse, with the same words.

use serde::{Deserialize, Serialize};

/// The smallest and the largest `max` of a limit: slots at once in a pool (or in
/// each of its keys).
pub const MAX_SLOTS: std::ops::RangeInclusive<i64> = 1..=1_000_000;

/// The most states one limit covers.
pub const MOST_LIMIT_STATES: usize = 64;

/// The largest count of a rate (`N per second|minute|hour`).
pub const MAX_RATE: i64 = 1_000_000;

/// Why `name` cannot be a limit name, or `None`: the rule of every name that an
/// operator gives (`crate::limits::is_name`), as for schedules and subscriptions.
pub fn name_problem(name: &str) -> Option<String> {
    (!crate::limits::is_name(name)).then(|| {
        format!(
            "{} is not a limit's name: {}",
            crate::pyrepr::repr_str(name),
            crate::limits::NAME_RULE
        )
    })
}

/// Why `max` cannot be a limit's `max` ([`MAX_SLOTS`]), or `None`.
pub fn max_problem(max: i64) -> Option<String> {
    (!MAX_SLOTS.contains(&max))
        .then(|| format!("a limit's max is a whole number from 1 to 1000000, not {max}"))
}

/// A rate of claims: at most `count` per `period`, as a token bucket that holds
/// `count` claims and fills at `count` per `period` (`docs/limits.md`, "Rates").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Claims per period: 1 to [`MAX_RATE`].
    pub count: i64,
    /// The period in seconds: 1, 60 or 3600.
    pub period: i64,
}

impl Rate {
    /// `30 per minute`: the words it is written and shown with.
    pub fn words(&self) -> String {
        let unit = match self.period {
            1 => "second",
            60 => "minute",
            _ => "hour",
        };
        format!("{} per {unit}", self.count)
    }

    /// The period in microseconds.
    pub fn period_micros(&self) -> i64 {
        self.period.saturating_mul(1_000_000)
    }
}

/// The rule for a rate, as every refusal of one says it.
pub const RATE_RULE: &str = "a rate is 'N per second', 'N per minute' or 'N per hour' with \
     N a whole number from 1 to 1000000";

/// Read `N per second|minute|hour` ([`RATE_RULE`]); the error is one sentence.
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let fail = || format!("{RATE_RULE}, not {}", crate::pyrepr::repr_str(text));
    let words: Vec<&str> = text.split_whitespace().collect();
    let [count, "per", unit] = words.as_slice() else {
        return Err(fail());
    };
    let count: i64 = count.parse().map_err(|_| fail())?;
    if !(1..=MAX_RATE).contains(&count) {
        return Err(fail());
    }
    let period = match unit.trim_end_matches('s') {
        "second" | "sec" => 1,
        "minute" | "min" => 60,
        "hour" => 3600,
        _ => return Err(fail()),
    };
    Ok(Rate { count, period })
}

/// The body of `PUT /limits/{name}`: the limit, whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LimitRequest {
    /// The states it covers: `coding`, or `<workflow>/<state>` for a child
    /// workflow's state; 1 to [`MOST_LIMIT_STATES`].
    pub states: Vec<String>,
    /// Slots at once: 1 to 1,000,000.
    pub max: i64,
    /// An expression of the guard language over the token's context
    /// (`ctx['repo']`): each distinct value has `max` slots of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<String>,
    /// `N per second|minute|hour`: claims of the pool (all keys together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
}

/// The slots one key of a pool holds now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyUse {
    /// The value of `per` as Python writes it (`'acme/api'`); empty for a limit
    /// without `per`.
    pub key: String,
    /// Claimed attempts holding a slot of this key.
    pub used: i64,
}

/// A limit as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitView {
    /// Its name.
    pub name: String,
    /// The states it covers.
    pub states: Vec<String>,
    /// Slots at once (in each key, with `per`).
    pub max: i64,
    /// The key expression, if any.
    pub per: Option<String>,
    /// The rate, in words (`30 per minute`), if any.
    pub rate: Option<String>,
    /// When it was last set (ISO 8601, UTC).
    pub set_at: String,
    /// Slots held now, in all keys together.
    pub used: i64,
    /// Slots held now, by key (keys holding none are left out).
    pub keys: Vec<KeyUse>,
    /// Queued tasks waiting in the limit's states (a claim may still take some).
    #[serde(default)]
    pub waiting: i64,
}

/// `GET /limits`: every limit, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LimitList {
    /// The limits.
    pub limits: Vec<LimitView>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_read_in_words_and_zero_is_refused() {
        assert_eq!(
            parse_rate("30 per minute"),
            Ok(Rate {
                count: 30,
                period: 60
            })
        );
        assert_eq!(
            parse_rate("10 per second").map(|r| r.words()),
            Ok("10 per second".into())
        );
        assert!(parse_rate("0 per second").is_err());
        assert!(parse_rate("5 per fortnight").is_err());
        assert!(parse_rate("five per hour").is_err());
    }

    #[test]
    fn names_and_maxima_have_their_rules() {
        assert!(name_problem("coding-per-repo").is_none());
        assert!(name_problem("Coding.v2").is_none());
        assert!(name_problem("-coding").is_some());
        assert!(name_problem("coding per repo").is_some());
        assert!(name_problem(&"a".repeat(65)).is_some());
        assert!(name_problem("").is_some());
        assert!(max_problem(1).is_none());
        assert!(max_problem(0).is_some());
        assert!(max_problem(1_000_001).is_some());
    }

    #[test]
    fn a_limits_file_that_writes_a_name_or_a_setting_twice_is_refused_at_its_line() {
        let twice = "limits:\n  coding:\n    max: 2\n    max: 3\n";
        assert_eq!(
            parse_limits_file(twice, "l.yaml"),
            Err(vec![
                "l.yaml, line 3: limits.coding: 'max' is written twice".to_string()
            ])
        );
        let twice = "limits:\n  coding: {max: 2}\n  coding: {max: 3}\n";
        assert_eq!(
            parse_limits_file(twice, "l.yaml"),
            Err(vec![
                "l.yaml, line 2: limits: 'coding' is written twice".to_string()
            ])
        );
        assert!(parse_limits_file("limits:\n  a: {max: 1}\n  b: {max: 1}\n", "l").is_ok());
    }
}

/// The settings of `serve --limits FILE` (`docs/limits.md`, "The limits file"),
/// as read: each limit's body (as `PUT /limits/{name}` takes it) by name, and each
/// retry policy's body (as `PUT /retry-policies/{state}` takes it) by state, in
/// the file's order. Their fields are checked by the control plane.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitsFile {
    /// `(name, body)` of each limit.
    pub limits: Vec<(String, crate::wire::Object)>,
    /// `(state, body)` of each retry policy.
    pub retry_policies: Vec<(String, crate::wire::Object)>,
}

/// Read a limits file (YAML, of which JSON is a part): a mapping with `limits`
/// (names to bodies) and `retry_policies` (states to bodies), both optional.
/// The error lists every problem, each led by `source`.
pub fn parse_limits_file(text: &str, source: &str) -> Result<LimitsFile, Vec<String>> {
    let (file, problems) = parse_limits_file_partly(text, source);
    if problems.is_empty() {
        Ok(file)
    } else {
        Err(problems)
    }
}

/// As [`parse_limits_file`], but also what could be read despite the problems (a
/// key written twice: its last value), so that the checks of its bodies still
/// run and every problem is listed at once: `(file, problems)`.
pub fn parse_limits_file_partly(text: &str, source: &str) -> (LimitsFile, Vec<String>) {
    use serde_json::Value;
    let mut problems = Vec::new();
    if let Err(error) = crate::compiler::keys_once(text) {
        problems.push(crate::compiler::flow::yaml_problem(&error, source));
    }
    let document: Value = match serde_norway::from_str(text) {
        Ok(document) => document,
        Err(error) => {
            let problem = crate::compiler::flow::yaml_problem(&error, source);
            return (LimitsFile::default(), vec![problem]);
        }
    };
    let top = match document {
        Value::Object(top) => top,
        Value::Null => crate::wire::Object::new(),
        _ => {
            problems.push(format!(
                "{source}: the file is a mapping with limits and retry_policies"
            ));
            return (LimitsFile::default(), problems);
        }
    };
    let mut file = LimitsFile::default();
    for (key, value) in top {
        let into = match key.as_str() {
            "limits" => &mut file.limits,
            "retry_policies" => &mut file.retry_policies,
            _ => {
                problems.push(format!(
                    "{source}: the file has limits and retry_policies, not {key:?}"
                ));
                continue;
            }
        };
        let entries = match value {
            Value::Object(entries) => entries,
            Value::Null => continue,
            _ => {
                problems.push(format!("{source}: {key} maps each name to its settings"));
                continue;
            }
        };
        for (name, body) in entries {
            match body {
                Value::Object(body) => into.push((name, body)),
                _ => problems.push(format!(
                    "{source}: {key} {name:?}: its settings are a mapping"
                )),
            }
        }
    }
    (file, problems)
}
