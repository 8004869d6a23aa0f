//! The body of `POST /notify` (`docs/reference/http.md`, "Notifications"): the
//! fields of [`NEW_SUBSCRIPTION_FIELDS`] only (a misspelt one must not pass as
//! its default), each of its type. The values are the inputs layer's to judge
//! (`notify::input`).

use serde_json::Value;
use stateous_shared::notify::{NewSubscription, NEW_SUBSCRIPTION_FIELDS};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::Object;

/// The body as a [`NewSubscription`]; 422 `invalid_body` for a field it does not
/// have or a value of the wrong type, 422 `invalid_subscription` for an empty
/// `kinds`.
pub fn new_subscription(body: &Object) -> Result<NewSubscription, Refusal> {
    if let Some(unknown) = body
        .keys()
        .find(|key| !NEW_SUBSCRIPTION_FIELDS.contains(&key.as_str()))
    {
        return Err(Refusal::new(
            Code::InvalidBody,
            format!(
                "a subscription has no field {unknown:?}; its fields are {}",
                NEW_SUBSCRIPTION_FIELDS.join(", ")
            ),
        ));
    }
    // Left out, `kinds` takes its default; given empty, it would read the same,
    // which is not what a body that names no kind asked for.
    if body
        .get("kinds")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        return Err(Refusal::new(
            Code::InvalidSubscription,
            stateous_shared::notify::NO_KIND,
        ));
    }
    serde_json::from_value(Value::Object(body.clone())).map_err(|error| {
        Refusal::new(
            Code::InvalidBody,
            format!("the subscription cannot be read: {error}"),
        )
    })
}

/// The body of `POST /notify/{name}/redeliver`: `{"id": N}` for one dead
/// notification, or nothing for all of them.
pub fn redeliver_id(body: &Object) -> Result<Option<i64>, Refusal> {
    match body.get("id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_i64().is_some() => Ok(n.as_i64()),
        Some(_) => Err(Refusal::new(
            Code::InvalidBody,
            "'id' must be a notification's id, an integer",
        )),
    }
}
