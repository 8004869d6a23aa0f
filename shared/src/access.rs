//! Access keys (`docs/reference/http.md`, "Access"): the roles a key grants, the
//! shape of a key's secret, and the JSON of the `/access` routes.
//!
//! A secret is [`SECRET_PREFIX`] followed by 64 lowercase hex digits (256 random
//! bits). The prefix is fixed so that secret scanners can recognise a leaked key;
//! the daemon keeps only a hash of the whole secret.

use serde::{Deserialize, Serialize};

/// The start of every secret: `stateous_key_`.
pub const SECRET_PREFIX: &str = "stateous_key_";

/// How many hex digits follow the prefix: 32 random bytes.
pub const SECRET_HEX_DIGITS: usize = 64;

/// The environment variable a client reads its secret from.
pub const ACCESS_KEY_ENV: &str = "STATEOUS_ACCESS_KEY";

/// The longest access key name.
pub const MAX_KEY_NAME: usize = 64;

/// The rule of an access key's name, as `POST /access` refuses another.
pub const KEY_NAME_RULE: &str = "a key's name is 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'";

/// Whether `name` can name an access key: 1 to [`MAX_KEY_NAME`] of `A-Z a-z 0-9
/// . _ -` ([`KEY_NAME_RULE`]; unlike a limit's name, any of them may come first).
pub fn is_key_name(name: &str) -> bool {
    (1..=MAX_KEY_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The refusal of a name that no access key can have: `stateous access revoke
/// a/b` says it before it sends a request, and the control plane of such a name
/// that reaches it in one segment (`DELETE /access/a%20b`, 404 `key_not_found`).
pub fn no_such_key(name: &str) -> String {
    format!("no access key is named {name}: {KEY_NAME_RULE}")
}

/// What a key may do. Not a ladder: `supervise` does not include `operate`, nor
/// `operate` what a supervisor does (`docs/reference/http.md`, "Access").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Every read: tokens, histories, the stream, the metrics.
    Read,
    /// Reads, and changing tokens from outside: start, fire, pause, resume,
    /// cancel, retry, bulk actions.
    Operate,
    /// What one supervisor does, under the supervisor name the key is bound to:
    /// claim, heartbeat, report, note, memory, its stop, and the graph and stream
    /// it reads.
    Supervise,
    /// Everything, with the access keys, the dev clock and any supervisor's stop.
    Admin,
}

impl Role {
    /// Every role, from the one that may do least.
    pub const ALL: [Role; 4] = [Role::Read, Role::Operate, Role::Supervise, Role::Admin];

    /// The role as the CLI, the API and the database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Operate => "operate",
            Role::Supervise => "supervise",
            Role::Admin => "admin",
        }
    }

    /// The role spelt `text`, or `None`.
    pub fn parse(text: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == text)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `text` has the shape of a secret: the prefix and 64 lowercase hex
/// digits. A key file's text is trimmed before this check.
pub fn is_secret(text: &str) -> bool {
    text.strip_prefix(SECRET_PREFIX).is_some_and(|hex| {
        hex.len() == SECRET_HEX_DIGITS
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The body of `POST /access`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewKey {
    /// The key's name: 1 to 64 letters, digits, `.`, `_` or `-`.
    pub name: String,
    /// `read`, `operate`, `supervise` or `admin`.
    pub role: String,
    /// The supervisor a `supervise` key acts for; only with that role, and needed
    /// with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<String>,
    /// What an `operate` key is limited to: firing the named events only
    /// (`docs/how-to/approve-with-keys.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

/// The limit of a scoped key: it may read, and fire `events`, only in `states`
/// (every state when empty) and only for tokens `where` matches (every token
/// when absent); nothing else. The states are checked, and the filter evaluated,
/// in the fire's own transaction, against the token as it is then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// The events the key may fire: at least one.
    pub events: Vec<String>,
    /// The states a token must be in; empty: any state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<String>,
    /// A filter of the `--where` language (`docs/reference/cli.md`) the token
    /// must match.
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
}

impl Scope {
    /// The scope in words: `approved or rejected in review where ctx['team'] ==
    /// 'infra'`.
    pub fn describe(&self) -> String {
        let mut words = or_list(&self.events);
        if !self.states.is_empty() {
            words.push_str(" in ");
            words.push_str(&or_list(&self.states));
        }
        if let Some(filter) = &self.filter {
            words.push_str(" where ");
            words.push_str(filter);
        }
        words
    }
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// One key as `GET /access` lists it, and as `POST /access` answers it with its
/// secret. Times are ISO 8601 in UTC with `Z`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyView {
    /// The key's name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The supervisor a `supervise` key acts for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<String>,
    /// What it is limited to, for a scoped key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// When it was made.
    pub created: String,
    /// When a request last carried it, to about a minute; `None` before any did.
    #[serde(default)]
    pub last_used: Option<String>,
    /// When it was revoked; revoked keys are listed so that the ledger's `by`
    /// names stay explained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<String>,
    /// Only in the answer to `POST /access`: the secret, shown this once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// The caller's own key, as `GET /access/self` answers: `name` is `None` for a
/// caller without a key (the socket's owner, or TCP while no key was ever made),
/// whose role is then admin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnKey {
    /// The key's name.
    pub name: Option<String>,
    /// Its role.
    pub role: Role,
    /// The supervisor of a `supervise` key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<String>,
    /// The scope of a scoped key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

/// One caller as `GET /access/callers` lists it: an address served over TCP
/// without a key in the last ten minutes, while no key was ever made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenCallerView {
    /// The peer's IP address.
    pub address: String,
    /// The supervisors whose claims or heartbeats came from it, by name.
    #[serde(default)]
    pub supervisors: Vec<String>,
    /// When a request came from it last, ISO 8601 in UTC.
    pub last_seen: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_read_back_and_secrets_have_one_shape() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
        let good = format!("{SECRET_PREFIX}{}", "0a".repeat(32));
        assert!(is_secret(&good));
        assert!(!is_secret(&good[1..]));
        assert!(!is_secret(&format!("{SECRET_PREFIX}{}", "0A".repeat(32))));
        assert!(!is_secret(&format!("{good}0")));
    }

    #[test]
    fn a_scope_reads_as_a_sentence_and_keeps_its_json_names() {
        let scope = Scope {
            events: vec!["approved".into(), "rejected".into()],
            states: vec!["review".into()],
            filter: Some("ctx['team'] == 'infra'".into()),
        };
        assert_eq!(
            scope.describe(),
            "approved or rejected in review where ctx['team'] == 'infra'"
        );
        let json = serde_json::to_value(&scope).unwrap();
        assert_eq!(json["where"], "ctx['team'] == 'infra'");
        let bare: Scope =
            serde_json::from_value(serde_json::json!({"events": ["a", "b", "c"]})).unwrap();
        assert_eq!(bare.describe(), "a, b or c");
    }
}
