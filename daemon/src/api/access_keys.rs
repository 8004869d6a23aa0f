//! The routes of access keys (`docs/how-to/approve-with-keys.md`; routed by
//! [`super::routes::TABLE`]): list, add and revoke keys, the open callers, and
//! the caller's own key.

use stateous_shared::refusal::{Code, Refusal};

use super::access::{self, Caller};
use super::{body, json, no_content, Answer, Api};

impl Api {
    /// `GET /access`: every key, revoked ones included, never a secret.
    pub(super) async fn access_list(&self) -> Result<Answer, Refusal> {
        let rows = self.control.access_keys().await?;
        let views: Vec<_> = rows.iter().map(access::view).collect();
        Ok(json(200, &views))
    }

    /// `POST /access`: 201 with the key and its secret, shown this once.
    pub(super) async fn access_add(&self, raw: &[u8]) -> Result<Answer, Refusal> {
        let input = crate::validated::NewKeyInput::parse(&body::json_object(raw)?)?;
        let secret = access::new_secret();
        let row = crate::store::AccessKeyRow {
            name: input.name,
            role: input.role,
            supervisor: input.supervisor.map(|s| s.as_str().to_string()),
            scope: input
                .scope
                .as_ref()
                .and_then(|(scope, _)| serde_json::to_string(scope).ok()),
            hash: access::stored_hash(&secret),
            created_at: 0,
            last_used_at: None,
            revoked_at: None,
        };
        let checked = input.scope.map(|(_, checked)| checked);
        let row = self.control.add_access_key(row, checked).await?;
        self.keys.add(&row);
        let mut view = access::view(&row);
        view.secret = Some(secret);
        Ok(json(201, &view))
    }

    /// `GET /access/callers`: the TCP callers served without a key in the last
    /// ten minutes, while no key was ever made (`[]` after).
    pub(super) fn access_callers(&self) -> Answer {
        let now = self.control.options().clock.now();
        let callers: Vec<_> = self
            .keys
            .open
            .recent(now)
            .into_iter()
            .map(|(ip, caller)| stateous_shared::access::OpenCallerView {
                address: ip.to_string(),
                supervisors: caller.supervisors.into_iter().collect(),
                last_seen: stateous_shared::time::iso(stateous_shared::time::from_micros(
                    caller.last_seen,
                )),
            })
            .collect();
        json(200, &callers)
    }

    /// `DELETE /access/{name}`: 204; the key is refused from the next request.
    /// A name no key can have is 404 `key_not_found` too, with the rule.
    pub(super) async fn access_revoke(&self, name: String) -> Result<Answer, Refusal> {
        if !stateous_shared::access::is_key_name(&name) {
            return Err(Refusal::new(
                Code::KeyNotFound,
                stateous_shared::access::no_such_key(&name),
            ));
        }
        self.control.revoke_access_key(name.clone()).await?;
        self.keys.revoke(&name);
        Ok(no_content())
    }
}

/// `GET /access/self`: the caller's own key as `GET /access` lists it; without
/// a key, `{"name": null, "role": ...}` with the role the door gives (admin on the
/// socket, or on TCP while no key was ever made).
pub(super) fn access_self(caller: &Caller) -> Answer {
    match caller {
        Caller::Key(key) => json(200, &access::known_view(key)),
        Caller::Local | Caller::Open => {
            json(200, &serde_json::json!({"name": null, "role": "admin"}))
        }
    }
}
