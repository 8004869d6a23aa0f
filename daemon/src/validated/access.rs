//! The validated inputs of access keys (`docs/how-to/approve-with-keys.md`): a
//! new key, and the scope of a scoped `operate` key.

use stateous_shared::access::Scope;
use stateous_shared::guards::filter::{parse_filter, Filter};
use stateous_shared::refusal::{Code, Refusal};

use super::{refuse, Supervisor, MAX_STATE};

/// The longest access key name (`stateous_shared::access::is_key_name`).
pub use stateous_shared::access::MAX_KEY_NAME;

/// `POST /access`: a new access key (`docs/reference/http.md`, "Access").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKeyInput {
    /// 1 to 64 of `[A-Za-z0-9._-]`.
    pub name: String,
    /// Its role.
    pub role: stateous_shared::access::Role,
    /// The supervisor of a `supervise` key (and only of one).
    pub supervisor: Option<Supervisor>,
    /// The scope of a scoped `operate` key (and only of one), checked here for
    /// its shape; the names it holds are checked against the graph when the key
    /// is added (`Control::add_access_key`).
    pub scope: Option<(Scope, std::sync::Arc<FireScope>)>,
}

/// The most events, and the most states, one key's scope names.
pub const MAX_SCOPE_NAMES: usize = 100;

/// The scope of a scoped access key, checked for its shape
/// (`docs/how-to/approve-with-keys.md`): the key may read, and fire the named
/// events; a fire is allowed only for a token in one of `states` (any, when empty)
/// that `filter` matches (any, without one). The engine judges the token's part in
/// the fire's transaction ([`FireScope::refuses`]).
#[derive(Debug, Clone)]
pub struct FireScope {
    /// The key's name, for the refusals' sentences.
    pub key: String,
    /// The events it may fire.
    pub events: std::collections::BTreeSet<String>,
    /// The states a token must be in; empty: any.
    pub states: std::collections::BTreeSet<String>,
    /// The filter a token must match.
    pub filter: Option<Filter>,
    /// The filter as it was written.
    pub filter_text: Option<String>,
    /// The scope in words (`Scope::describe`).
    pub words: String,
}

/// Two scopes are the same when they say the same: the key, the events, the
/// states and the filter's text are all in `words`.
impl PartialEq for FireScope {
    fn eq(&self, other: &FireScope) -> bool {
        self.key == other.key && self.words == other.words
    }
}

impl Eq for FireScope {}

impl FireScope {
    /// Check `scope`, of the key `key`: 1 to [`MAX_SCOPE_NAMES`] events and at
    /// most as many states, each a name of 1 to [`MAX_STATE`] characters; a filter
    /// that parses. 422 `invalid_argument` otherwise.
    pub fn new(key: &str, scope: &Scope) -> Result<FireScope, Refusal> {
        if scope.events.is_empty() || scope.events.len() > MAX_SCOPE_NAMES {
            let sentence =
                format!("a scope names 1 to {MAX_SCOPE_NAMES} events the key may fire ('events')");
            return Err(refuse(Code::InvalidArgument, sentence));
        }
        if scope.states.len() > MAX_SCOPE_NAMES {
            let sentence = format!("a scope names at most {MAX_SCOPE_NAMES} states");
            return Err(refuse(Code::InvalidArgument, sentence));
        }
        let bad = |name: &String| name.is_empty() || name.chars().count() > MAX_STATE;
        if let Some(name) = scope.events.iter().chain(&scope.states).find(|n| bad(n)) {
            let sentence = format!(
                "a scope's event and state names are 1 to {MAX_STATE} characters, not {name:?}"
            );
            return Err(refuse(Code::InvalidArgument, sentence));
        }
        let filter = match &scope.filter {
            Some(text) => Some(parse_filter(text).map_err(|error| {
                refuse(
                    Code::InvalidArgument,
                    format!("the scope's filter does not parse: {}", error.0),
                )
            })?),
            None => None,
        };
        Ok(FireScope {
            key: key.to_string(),
            events: scope.events.iter().cloned().collect(),
            states: scope.states.iter().cloned().collect(),
            filter,
            filter_text: scope.filter.clone(),
            words: scope.describe(),
        })
    }

    /// The scope kept as JSON text (`access_keys.scope`), checked again as it is
    /// read; `None` for text no build wrote.
    pub fn stored(key: &str, text: &str) -> Option<(Scope, FireScope)> {
        let scope: Scope = serde_json::from_str(text).ok()?;
        let checked = FireScope::new(key, &scope).ok()?;
        Some((scope, checked))
    }

    /// 403 `forbidden` for an event the key may not fire, whatever the token.
    pub fn refuses_event(&self, event: &str) -> Option<Refusal> {
        if self.events.contains(event) {
            return None;
        }
        Some(refuse(
            Code::Forbidden,
            format!(
                "the access key {} may fire only {}; not {event}",
                self.key, self.words
            ),
        ))
    }
}
