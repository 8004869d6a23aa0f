//! The body of `POST /schedules` (`docs/reference/http.md`, "Schedules"): each field's
//! type, in the order of [`NEW_SCHEDULE_FIELDS`], and no field beside them (a
//! misspelt policy must not pass as its default). The values are the inputs
//! layer's to judge (`schedule::input`).

use serde_json::Value;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::schedules::{NewSchedule, NEW_SCHEDULE_FIELDS};
use stateous_shared::wire::Object;

fn refuse(sentence: impl Into<String>) -> Refusal {
    Refusal::new(Code::InvalidBody, sentence)
}

/// The body as a [`NewSchedule`]: `name` and `spec` strings, the rest strings, an
/// object (`context`), an integer (`cap`) or a boolean (`replace`) when given.
pub fn new_schedule(body: &Object) -> Result<NewSchedule, Refusal> {
    if let Some(unknown) = body
        .keys()
        .find(|key| !NEW_SCHEDULE_FIELDS.contains(&key.as_str()))
    {
        return Err(refuse(format!(
            "a schedule has no field {unknown:?}; its fields are {}",
            NEW_SCHEDULE_FIELDS.join(", ")
        )));
    }
    let text = |name: &str| -> Result<Option<String>, Refusal> {
        match body.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(refuse(format!("'{name}' must be a string"))),
        }
    };
    let needed = |name: &str| -> Result<String, Refusal> {
        text(name)?.ok_or_else(|| refuse(format!("a schedule needs '{name}', a string")))
    };
    let name = needed("name")?;
    let spec = needed("spec")?;
    let (zone, token) = (text("zone")?, text("token")?);
    let context = match body.get("context") {
        None | Some(Value::Null) => None,
        Some(Value::Object(context)) => Some(context.clone()),
        Some(_) => {
            return Err(Refusal::new(
                Code::InvalidContext,
                "'context' must be a JSON object, or null",
            ))
        }
    };
    let (jitter, overlap, catch_up, window) = (
        text("jitter")?,
        text("overlap")?,
        text("catch_up")?,
        text("window")?,
    );
    let cap = match body.get("cap") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
        Some(_) => return Err(refuse("'cap' must be a whole number")),
    };
    let replace = match body.get("replace") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(replace)) => *replace,
        Some(_) => return Err(refuse("'replace' must be true or false")),
    };
    Ok(NewSchedule {
        name,
        spec,
        zone,
        token,
        context,
        jitter,
        overlap,
        catch_up,
        window,
        cap,
        replace,
    })
}
