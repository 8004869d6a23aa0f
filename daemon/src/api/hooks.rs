//! Webhooks in (`docs/reference/http.md`, "Hooks"): `POST /hooks/{name}` checks a
//! delivery's signature on the raw body bytes, makes a token, an event, a key and a
//! payload of it with the hook's templates, and fires the event with the delivery id
//! as its idempotency key, so a redelivery, days later or after a restart, is a
//! `duplicate`. `GET /hooks` lists the hooks with their counts, never a secret.
//!
//! The hooks file is read, and the secrets taken from the environment, once at
//! start (`serve`); here they are only used.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use stateous_shared::graph::Graph;
use stateous_shared::hooks::{self, Delivery, HookSpec, Missing, Template, Verify};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::{Duplicate, Object};

use super::{json, Answer, Api};
use crate::validated::{FireInput, HookMark, HookStart, Key, StartInput};

/// The hooks a control plane serves, with their keys. Cheap to clone.
#[derive(Clone, Default)]
pub struct Hooks {
    served: Arc<Vec<Served>>,
}

struct Served {
    spec: HookSpec,
    /// The HMAC keys: the current secret's, then the previous one's.
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        let names: Vec<&str> = self.served.iter().map(|s| s.spec.name.as_str()).collect();
        f.debug_struct("Hooks").field("names", &names).finish()
    }
}

impl Hooks {
    /// The hooks of a file's text for `graph`, their secrets read by `env`; every
    /// problem at once, one sentence each (`hooks::parse_partly`, `hooks::keys`,
    /// `hooks::check_against`).
    pub fn load(
        text: &str,
        source: &str,
        env: impl Fn(&str) -> Option<String>,
        insecure: bool,
        graph: &Graph,
    ) -> Result<Hooks, Vec<String>> {
        let (specs, mut problems) = hooks::parse_partly(text, source);
        let keys = hooks::keys(&specs, env, insecure).unwrap_or_else(|more| {
            problems.extend(more);
            Vec::new()
        });
        problems.extend(hooks::check_against(&specs, graph));
        if !problems.is_empty() {
            return Err(problems);
        }
        let served = specs
            .into_iter()
            .zip(keys)
            .map(|(spec, keys)| Served { spec, keys })
            .collect();
        Ok(Hooks {
            served: Arc::new(served),
        })
    }

    /// The names of the hooks, in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.served.iter().map(|s| s.spec.name.as_str())
    }

    fn find(&self, name: &str) -> Option<&Served> {
        self.served.iter().find(|s| s.spec.name == name)
    }
}

/// How a delivery ended, as `GET /hooks` and `/metrics` count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The event was applied (or held by a paused token).
    Accepted,
    /// The delivery id was already on the token's ledger: nothing changed.
    Duplicate,
    /// The hook ignores the event (`events:` maps it to null): 202.
    Ignored,
    /// Refused after its signature was good: a template that found nothing, an
    /// event the token's state does not take, ...
    Refused,
    /// Refused for its signature: 401.
    BadSignature,
}

impl Outcome {
    /// Every outcome, in the order `GET /hooks` lists them.
    pub const ALL: [Outcome; 5] = [
        Outcome::Accepted,
        Outcome::Duplicate,
        Outcome::Ignored,
        Outcome::Refused,
        Outcome::BadSignature,
    ];

    /// The outcome as a label.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Duplicate => "duplicate",
            Outcome::Ignored => "ignored",
            Outcome::Refused => "refused",
            Outcome::BadSignature => "bad_signature",
        }
    }
}

/// One hook as `GET /hooks` lists it.
#[derive(Serialize)]
struct Listed<'a> {
    name: &'a str,
    verify: &'static str,
    path: String,
    starts_tokens: bool,
    counts: serde_json::Map<String, Value>,
}

/// The 202 answer of an event the hook ignores.
#[derive(Serialize)]
struct Ignored<'a> {
    ignored: bool,
    hook: &'a str,
    event: &'a str,
    reason: String,
}

/// What a delivery becomes before the control plane sees it.
struct Made {
    start: Option<HookStart>,
    fire: FireInput,
}

fn missing(field: &str) -> impl Fn(Missing) -> Refusal + '_ {
    move |missing| Refusal::new(Code::InvalidBody, missing.sentence(field))
}

impl Api {
    /// `GET /hooks`.
    pub(super) fn list_hooks(&self) -> Answer {
        let metrics = self.control.metrics();
        let listed: Vec<Listed> = self
            .hooks
            .served
            .iter()
            .map(|served| {
                let name = served.spec.name.as_str();
                let counts = Outcome::ALL
                    .iter()
                    .map(|o| {
                        (
                            o.as_str().to_string(),
                            metrics.hook_count(name, o.as_str()).into(),
                        )
                    })
                    .collect();
                Listed {
                    name,
                    verify: served.spec.verify.as_str(),
                    path: format!("/hooks/{name}"),
                    starts_tokens: served.spec.start.is_some(),
                    counts,
                }
            })
            .collect();
        json(200, &listed)
    }

    /// `POST /hooks/{name}`: the answer, counted by its outcome.
    pub(super) async fn hook(
        &self,
        name: &str,
        parts: &hyper::http::request::Parts,
        raw: &[u8],
    ) -> Result<Answer, Refusal> {
        let Some(served) = self.hooks.find(name) else {
            return Err(Refusal::new(
                Code::NotFound,
                format!("there is no hook {name:?}"),
            ));
        };
        let metrics = self.control.metrics();
        let header = |wanted: &str| {
            parts
                .headers
                .get(wanted)
                .and_then(|value| value.to_str().ok())
        };
        let now = self.control.options().clock.now() / 1_000_000;
        let spec = &served.spec;
        if let Err(bad) = hooks::sign::verify(spec.verify, &served.keys, header, raw, now) {
            metrics.hook_bad_signature(name, bad.reason());
            // One line, never the body nor a signature.
            tracing::warn!(
                target: "stateous.hooks",
                "hook {name}: a delivery was refused: {} ({})",
                bad.sentence(),
                bad.reason()
            );
            return Err(Refusal::new(Code::BadSignature, bad.sentence()));
        }
        let answered = self.delivered(spec, parts, raw).await;
        let outcome = match &answered {
            Ok((_, outcome)) => *outcome,
            Err(_) => Outcome::Refused,
        };
        metrics.hook_delivered(name, outcome.as_str());
        answered.map(|(answer, _)| answer)
    }

    /// A delivery whose signature is good: made into an event and fired.
    async fn delivered(
        &self,
        spec: &HookSpec,
        parts: &hyper::http::request::Parts,
        raw: &[u8],
    ) -> Result<(Answer, Outcome), Refusal> {
        let body: Value = if raw.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice(raw).map_err(|error| {
                Refusal::new(
                    Code::BadRequest,
                    format!("the delivery's body is not JSON: {error}"),
                )
            })?
        };
        let headers: Vec<(String, String)> = parts
            .headers
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_string(), value.to_str().ok()?.to_string()))
            })
            .collect();
        let query = super::routes::query_pairs(parts.uri.query().unwrap_or(""));
        let delivery = Delivery {
            body: &body,
            headers: &headers,
            query: &query,
        };
        let given = spec
            .event
            .render_text(&delivery)
            .map_err(missing("event"))?;
        let Some(event) = spec.mapped(&given) else {
            let ignored = Ignored {
                ignored: true,
                hook: &spec.name,
                event: &given,
                reason: format!(
                    "the hook {:?} ignores the event {given:?} (events: {given}: null)",
                    spec.name
                ),
            };
            return Ok((json(202, &ignored), Outcome::Ignored));
        };
        let mut made = make(spec, &delivery, event.to_string())?;
        // A token the delivery starts continues the sender's trace.
        made.start = match made.start {
            Some(HookStart::Start(input)) => {
                let trace = super::trace_header::caller_trace(parts, self.control.metrics());
                Some(HookStart::Start(input.in_trace(trace)))
            }
            other => other,
        };
        let fired = self.control.hook(made.start, made.fire).await?;
        if fired.duplicate {
            let duplicate = Duplicate {
                duplicate: true,
                token: fired.token,
            };
            Ok((json(200, &duplicate), Outcome::Duplicate))
        } else {
            Ok((json(200, &fired.token), Outcome::Accepted))
        }
    }
}

/// The start (when the hook starts tokens) and the event of a delivery.
fn make(spec: &HookSpec, delivery: &Delivery, event: String) -> Result<Made, Refusal> {
    let text =
        |template: &Template, field: &str| template.render_text(delivery).map_err(missing(field));
    let key = text(&spec.key, "key")?;
    let token = text(&spec.token, "token")?;
    let payload = match &spec.payload {
        None => None,
        Some(template) => match template.render(delivery).map_err(missing("payload"))? {
            Value::Null => None,
            Value::Object(object) => Some(object),
            _ => {
                return Err(Refusal::new(
                    Code::InvalidPayload,
                    "the hook's payload template gives no object",
                ))
            }
        },
    };
    // A start context the delivery cannot fill refuses the delivery only when
    // the token is missing, which the engine judges in the event's transaction.
    let start = match &spec.start {
        None => None,
        Some(shape) => Some(match shape.render(delivery) {
            Ok(rendered) => {
                let context = match rendered {
                    Value::Object(object) => object,
                    _ => Object::new(),
                };
                HookStart::Start(StartInput::new(token.clone(), context)?)
            }
            Err(gap) => HookStart::Cannot(missing("start.context")(gap)),
        }),
    };
    let fire = FireInput {
        token,
        event,
        payload,
        key: Some(Key::new(key.clone())?),
        hook: Some(HookMark {
            name: spec.name.clone(),
            delivery: key,
        }),
        scope: None,
    };
    Ok(Made { start, fire })
}

/// `Verify::None` is served only with `--insecure`; this says so in the log.
pub fn insecure_names(hooks: &Hooks) -> Vec<&str> {
    hooks
        .served
        .iter()
        .filter(|s| s.spec.verify == Verify::None)
        .map(|s| s.spec.name.as_str())
        .collect()
}
