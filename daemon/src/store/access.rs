//! The table `access_keys` (`docs/inside/data.md`): each key's name, role, bound
//! supervisor, the SHA-256 of its secret, and when it was made, last used and
//! revoked. The daemon's checks of keys are `api/access.rs`; nothing here decides.

use stateous_shared::access::Role;

use super::through::passed_through;
use super::StoreResult;

/// A row of `access_keys`. Times are microseconds since 1970.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessKeyRow {
    /// The key's name, unique for ever (a revoked key keeps its row).
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The supervisor a `supervise` key acts for; `None` for other roles.
    pub supervisor: Option<String>,
    /// The scope of a scoped `operate` key, as JSON text (`wire`'s `Scope`);
    /// `None`: the whole role. Version 0011.
    pub scope: Option<String>,
    /// The SHA-256 of the secret, as 64 lowercase hex digits.
    pub hash: String,
    /// When it was made.
    pub created_at: i64,
    /// When a request last carried it (moved at most once a minute).
    pub last_used_at: Option<i64>,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

passed_through! {
    /// The table `access_keys`.
    pub trait AccessKeys {
        /// Every key, revoked ones included, by name.
        fn access_keys(&self) -> StoreResult<Vec<AccessKeyRow>>;
        /// Add a key; false (nothing written) when a key with its name exists,
        /// revoked or not.
        fn insert_access_key(&self, row: &AccessKeyRow) -> StoreResult<bool>;
        /// Mark the key revoked at `Tx::now`; false when no key that is not revoked
        /// has this name.
        fn revoke_access_key(&self, name: &str) -> StoreResult<bool>;
        /// Move each named key's `last_used_at` to the moment given with it, only
        /// forward.
        fn touch_access_keys(&self, used: &[(String, i64)]) -> StoreResult<()>;
    }
}

/// `'read', 'operate', 'supervise', 'admin'`: the roles as a CHECK constraint's list.
pub fn role_list() -> String {
    Role::ALL
        .iter()
        .map(|role| format!("'{}'", role.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The role stored as `text`, or the store's error for a value no build wrote.
pub fn stored_role(text: &str) -> StoreResult<Role> {
    Role::parse(text)
        .ok_or_else(|| super::StoreError::Corrupt(format!("the role {text:?} of an access key")))
}
