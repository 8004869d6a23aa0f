//! The access keys through `Control`: list, add, revoke, and the "last used"
//! moments the API gathers. The checks of a request's key are `api/access.rs`;
//! these are the table's reads and writes, each one request of the write path.

use stateous_shared::refusal::{Code, Refusal};

use super::{store_options, Control, Options};
use crate::engine::{refuse, Fail};
use crate::store::backend::Inspected;
use crate::store::schema::ACCESS_KEYS_FROM;
use crate::store::AccessKeyRow;
use crate::store::Store;
use crate::validated::FireScope;
use std::sync::Arc;

impl Control {
    /// Whether the database holds an access key that is not revoked, read
    /// without taking the database (a standby, before it listens wide: `serve`'s
    /// check of `--listen`). False for a database without tables yet, or with an
    /// older schema.
    pub async fn keys_on_record(options: &Options) -> Result<bool, String> {
        Ok(Control::keys_known(options).await?.unwrap_or(false))
    }

    /// Whether the database holds an access key that is not revoked, read
    /// without taking or making the database (a start judges a wide `--listen`
    /// with it before it opens the database): false for a database that does not
    /// exist yet, or whose schema is older than the access keys; `None` for
    /// another older schema, which the open upgrades first.
    pub async fn keys_known(options: &Options) -> Result<Option<bool>, String> {
        let store_options = store_options(options, String::new(), &Default::default());
        let inspected = tokio::task::spawn_blocking(move || {
            Store::inspect(&store_options, |tx| {
                let keys = tx.access_keys()?;
                Ok(keys.iter().any(|key| key.revoked_at.is_none()))
            })
        })
        .await
        .map_err(|_| "the database could not be read".to_string())??;
        Ok(match inspected {
            Inspected::Read(any) => Some(any),
            Inspected::Empty => Some(false),
            Inspected::NotYet { first } if first <= ACCESS_KEYS_FROM => Some(false),
            Inspected::NotYet { .. } => None,
        })
    }

    /// Every access key, revoked ones included, by name.
    pub async fn access_keys(&self) -> Result<Vec<AccessKeyRow>, Refusal> {
        self.read(|tx| Ok(tx.access_keys()?)).await
    }

    /// Add `row` (its `created_at` is the transaction's moment). 409 `key_exists`
    /// when a key has its name, revoked or not; 422 `invalid_argument` when its
    /// `scope` names an event or a state that no workflow of the served graph
    /// has. Answers the row as stored.
    pub async fn add_access_key(
        &self,
        row: AccessKeyRow,
        scope: Option<Arc<FireScope>>,
    ) -> Result<AccessKeyRow, Refusal> {
        self.write(move |rules, tx| {
            if let Some(scope) = &scope {
                if let Some(refused) = crate::engine::scope::unknown_names(rules, scope) {
                    return Err(Fail::Rollback(refused));
                }
            }
            let row = AccessKeyRow {
                created_at: tx.now(),
                ..row.clone()
            };
            if !tx.insert_access_key(&row)? {
                let sentence = format!(
                    "an access key named {} exists already (a revoked key keeps its name); \
                     choose another name",
                    row.name
                );
                return refuse(Code::KeyExists, sentence);
            }
            Ok(row)
        })
        .await
    }

    /// Revoke the key named `name`. 404 `key_not_found` when no key that is not
    /// revoked has that name.
    pub async fn revoke_access_key(&self, name: String) -> Result<(), Refusal> {
        self.write(move |_, tx| {
            if tx.revoke_access_key(&name)? {
                Ok(())
            } else {
                Err(Fail::Rollback(Refusal::new(
                    Code::KeyNotFound,
                    format!("no access key named {name} is in use"),
                )))
            }
        })
        .await
    }

    /// Record when each named key was last used (moments in microseconds).
    pub async fn touch_access_keys(&self, used: Vec<(String, i64)>) -> Result<(), Refusal> {
        self.write(move |_, tx| Ok(tx.touch_access_keys(&used)?))
            .await
    }

    /// The supervisor that claimed the task last, `None` when no one did or
    /// there is no such task: a supervise key's report, note or memory write is
    /// refused for a task another supervisor holds.
    pub async fn task_holder(&self, task: i64) -> Result<Option<String>, Refusal> {
        self.read(move |tx| Ok(tx.task(task)?.and_then(|row| row.claimed_by)))
            .await
    }
}
