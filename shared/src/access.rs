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
}
