//! Usage and budgets (`docs/concepts/budgets.md`): what a routine reports it spent
//! (`stateous ctx usage cost_usd=0.12`), the sums of a token, and the most it may
//! spend. The rules for a usage name and an amount, and their sentences, are
//! defined here once: the helper refuses at once what the control plane would
//! refuse later, and the command lines parse `NAME=NUMBER` the same way.
//!
//! Amounts travel as JSON numbers, kept as given (`1200` stays an integer on the
//! ledger); sums are floating point numbers, written back as integers when they
//! are whole.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::wire::Object;

/// The longest usage name, in characters.
pub const MAX_USAGE_NAME: usize = 64;

/// The most names one report or one budget holds.
pub const MOST_USAGE_NAMES: usize = 64;

/// The largest amount one report or one budget gives a name: room for any count
/// of tokens or cents, and sums that stay exact to the cent far beyond it.
pub const MAX_AMOUNT: f64 = 1e15;

/// The rule for a usage name, as every refusal of one says it.
pub const USAGE_NAME_RULE: &str = "a usage name is 1 to 64 of a-z, 0-9, '_' and '.', \
     such as cost_usd or input_tokens";

/// Amounts by usage name (a report, a token's sums, a budget), as numbers.
pub type Amounts = BTreeMap<String, f64>;

/// Why `name` cannot be a usage name ([`USAGE_NAME_RULE`]), or `None`.
pub fn name_problem(name: &str) -> Option<String> {
    let ok = (1..=MAX_USAGE_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.'));
    if ok {
        None
    } else {
        Some(format!("{USAGE_NAME_RULE}, not {}", quoted(name)))
    }
}

/// Why `amount` cannot be the amount of `name`: a finite number from 0 to
/// [`MAX_AMOUNT`]; or `None`.
pub fn amount_problem(name: &str, amount: f64) -> Option<String> {
    (!(amount.is_finite() && (0.0..=MAX_AMOUNT).contains(&amount)))
        .then(|| format!("the amount of {name} is a finite number from 0 to 1e15, not {amount}"))
}

/// A JSON object of amounts (a report's `usage`, a budget) read into numbers,
/// every name and amount checked; `what` names it in the sentences (`usage`,
/// `budget`). With `removals`, a null amount is kept as a removal (`None`).
pub fn amounts_of(
    object: &Object,
    what: &str,
    removals: bool,
) -> Result<BTreeMap<String, Option<f64>>, String> {
    if object.len() > MOST_USAGE_NAMES {
        return Err(format!(
            "'{what}' names at most {MOST_USAGE_NAMES} usage names, not {}",
            object.len()
        ));
    }
    let mut amounts = BTreeMap::new();
    for (name, value) in object {
        if let Some(problem) = name_problem(name) {
            return Err(problem);
        }
        let amount = match value {
            Value::Null if removals => None,
            Value::Number(number) => {
                let amount = number.as_f64().unwrap_or(f64::NAN);
                if let Some(problem) = amount_problem(name, amount) {
                    return Err(problem);
                }
                Some(amount)
            }
            other => {
                let also = if removals {
                    " (or null to remove it)"
                } else {
                    ""
                };
                return Err(format!(
                    "the amount of {name} in '{what}' is a number{also}, not {other}"
                ));
            }
        };
        amounts.insert(name.clone(), amount);
    }
    Ok(amounts)
}

/// `NAME=NUMBER` of a command line, checked; with `removals`, `NAME=none` is a
/// removal (`None`).
pub fn parse_pair(text: &str, removals: bool) -> Result<(String, Option<f64>), String> {
    let Some((name, number)) = text.split_once('=') else {
        return Err(format!(
            "{} is not NAME=NUMBER, such as cost_usd=0.12",
            quoted(text)
        ));
    };
    if let Some(problem) = name_problem(name) {
        return Err(problem);
    }
    if removals && number == "none" {
        return Ok((name.to_string(), None));
    }
    let amount: f64 = number.trim().parse().map_err(|_| {
        format!(
            "the amount of {name} is a number, such as {name}=0.12, not {}",
            quoted(number)
        )
    })?;
    if let Some(problem) = amount_problem(name, amount) {
        return Err(problem);
    }
    Ok((name.to_string(), Some(amount)))
}

/// Every `NAME=NUMBER` of a command line as one JSON object of amounts (a null for
/// `NAME=none` with `removals`); a name given twice keeps its last amount.
pub fn parse_pairs(texts: &[String], removals: bool) -> Result<Object, String> {
    let mut object = Object::new();
    for text in texts {
        let (name, amount) = parse_pair(text, removals)?;
        object.insert(name, amount.map_or(Value::Null, number));
    }
    if object.len() > MOST_USAGE_NAMES {
        return Err(format!(
            "at most {MOST_USAGE_NAMES} usage names, not {}",
            object.len()
        ));
    }
    Ok(object)
}

/// An amount as a JSON number: an integer when it is whole (and exact), else a
/// floating point number.
pub fn number(amount: f64) -> Value {
    if amount.fract() == 0.0 && amount.abs() < 9.0e15 {
        return Value::Number(Number::from(amount as i64));
    }
    Number::from_f64(amount).map_or(Value::Null, Value::Number)
}

/// Amounts as a JSON object ([`number`] for each).
pub fn object_of(amounts: &Amounts) -> Object {
    amounts
        .iter()
        .map(|(name, amount)| (name.clone(), number(*amount)))
        .collect()
}

/// A JSON object of numbers as amounts; what is not a number is left out.
pub fn amounts(object: &Object) -> Amounts {
    object
        .iter()
        .filter_map(|(name, value)| Some((name.clone(), value.as_f64()?)))
        .collect()
}

/// An amount as people read it: at most 12 significant digits, so that a sum of
/// `0.1` and `0.2` reads `0.3`; `5` for a whole number.
pub fn shown(amount: f64) -> String {
    let rounded: f64 = format!("{amount:.11e}").parse().unwrap_or(amount);
    format!("{rounded}")
}

/// `cost_usd 5.12, input_tokens 1200`: amounts as people read them.
pub fn listed(amounts: &Amounts) -> String {
    amounts
        .iter()
        .map(|(name, amount)| format!("{name} {}", shown(*amount)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names of `used` over `budget` (strictly more than the budget allows), with
/// the amount used and allowed, in name order.
pub fn over(used: &Amounts, budget: &Amounts) -> Vec<(String, f64, f64)> {
    budget
        .iter()
        .filter_map(|(name, most)| {
            let spent = used.get(name).copied().unwrap_or(0.0);
            (spent > *most).then(|| (name.clone(), spent, *most))
        })
        .collect()
}

/// `over budget: cost_usd 5.12 of 5, input_tokens 1200 of 1000`: why a token was
/// paused, as its ledger and `token why` say it.
pub fn over_reason(over: &[(String, f64, f64)]) -> String {
    let parts: Vec<String> = over
        .iter()
        .map(|(name, spent, most)| format!("{name} {} of {}", shown(*spent), shown(*most)))
        .collect();
    format!("over budget: {}", parts.join(", "))
}

/// `cost_usd 5.12 of 5, input_tokens 1200`: each name a token used or has a
/// budget of, with its most when it has one; `None` when it has neither.
pub fn against(view: &TokenBudget) -> Option<String> {
    let (used, budget) = (amounts(&view.usage), amounts(&view.budget));
    let mut names: Vec<&String> = used.keys().chain(budget.keys()).collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return None;
    }
    let parts: Vec<String> = names
        .into_iter()
        .map(|name| {
            let spent = shown(used.get(name).copied().unwrap_or(0.0));
            match budget.get(name) {
                Some(most) => format!("{name} {spent} of {}", shown(*most)),
                None => format!("{name} {spent}"),
            }
        })
        .collect();
    Some(parts.join(", "))
}

fn quoted(text: &str) -> String {
    crate::pyrepr::repr_str(text)
}

/// `POST /tasks/{id}/usage` (ours): what a routine spent, sent by its supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    /// The amounts, by usage name: JSON numbers from 0 to 1e15.
    pub usage: Object,
    /// The attempt that spent it; the task's current attempt when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i64>,
    /// The supervisor that ran the attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<String>,
}

/// The answer of `POST /tasks/{id}/usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageAnswer {
    /// The token whose ledger recorded it.
    pub token: String,
    /// False when the idempotency key was used already: nothing was added again.
    pub recorded: bool,
    /// The tasks whose attempts this report stopped, as it crossed the budget.
    #[serde(default)]
    pub stopped: Vec<i64>,
}

/// A token's usage and budget (`PUT /tokens/{id}/budget`'s answer, and part of
/// `GET /tokens/{id}/detail`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenBudget {
    /// What its routines (its children's included) reported, summed by name.
    #[serde(default)]
    pub usage: Object,
    /// The most it may use, by name; empty without a budget.
    #[serde(default)]
    pub budget: Object,
    /// Where the budget comes from: `token` (its own) or `workflow` (the
    /// workflow's default); left out without a budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_from: Option<String>,
    /// The names whose usage is over the budget.
    #[serde(default)]
    pub over: Vec<String>,
}

/// The body of `PUT /tokens/{id}/budget` and `PUT /budgets/{workflow}` (ours).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetRequest {
    /// The amounts by usage name (null removes a name from a token's budget).
    pub budget: Object,
}

/// One workflow's default budget, as `GET /budgets` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetDefault {
    /// The workflow (the main workflow's name).
    pub workflow: String,
    /// The most a token of it may use, by name, unless it has a budget of its own.
    pub budget: Object,
    /// When it was set, ISO 8601 in UTC.
    pub set_at: String,
}

/// The answer of `GET /budgets`: the default budget of each workflow that has one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetDefaults {
    /// By workflow name.
    pub budgets: Vec<BudgetDefault>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_amounts_have_one_rule() {
        assert_eq!(name_problem("cost_usd"), None);
        assert_eq!(name_problem("gpt.4o_tokens"), None);
        assert_eq!(name_problem(&"a".repeat(64)), None);
        for bad in ["", "Cost", "cost-usd", "cost usd", "é", &"a".repeat(65)] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
        assert_eq!(amount_problem("x", 0.0), None);
        assert_eq!(amount_problem("x", 1e15), None);
        for bad in [-0.5, f64::NAN, f64::INFINITY, 2e15] {
            assert!(amount_problem("x", bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn pairs_parse_into_json_numbers() {
        let pairs = ["cost_usd=0.12".to_string(), "input_tokens=1200".to_string()];
        let object = parse_pairs(&pairs, false).unwrap();
        assert_eq!(
            Value::Object(object),
            json!({"cost_usd": 0.12, "input_tokens": 1200})
        );
        assert!(parse_pair("cost_usd", false).is_err());
        assert!(parse_pair("cost_usd=-1", false).is_err());
        assert!(parse_pair("cost_usd=nan", false).is_err());
        assert!(parse_pair("cost_usd=inf", false).is_err());
        assert!(parse_pair("cost_usd=none", false).is_err());
        assert_eq!(
            parse_pair("cost_usd=none", true).unwrap(),
            ("cost_usd".to_string(), None)
        );
        let err = parse_pair("Cost=1", false).unwrap_err();
        assert!(err.starts_with("a usage name is 1 to 64"), "{err}");
    }

    #[test]
    fn objects_of_amounts_are_checked_whole() {
        let object = json!({"cost_usd": 1.5, "n": null});
        let object = object.as_object().unwrap();
        assert!(amounts_of(object, "usage", false).is_err());
        let read = amounts_of(object, "budget", true).unwrap();
        assert_eq!(read["cost_usd"], Some(1.5));
        assert_eq!(read["n"], None);
        let text = json!({"cost_usd": "1"});
        let err = amounts_of(text.as_object().unwrap(), "usage", false).unwrap_err();
        assert!(err.contains("is a number"), "{err}");
    }

    #[test]
    fn sums_read_as_people_write_them() {
        assert_eq!(shown(0.1 + 0.2), "0.3");
        assert_eq!(shown(5.0), "5");
        assert_eq!(shown(5.12), "5.12");
        assert_eq!(shown(1200.0), "1200");
        assert_eq!(number(5.0), json!(5));
        assert_eq!(number(0.25), json!(0.25));
        let used = Amounts::from([("cost_usd".into(), 5.12), ("n".into(), 3.0)]);
        let budget = Amounts::from([("cost_usd".into(), 5.0), ("n".into(), 3.0)]);
        let over = over(&used, &budget);
        assert_eq!(over, vec![("cost_usd".to_string(), 5.12, 5.0)]);
        assert_eq!(over_reason(&over), "over budget: cost_usd 5.12 of 5");
        assert_eq!(listed(&used), "cost_usd 5.12, n 3");
    }
}
