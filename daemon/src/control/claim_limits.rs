//! The requests of limits on claims (`docs/limits.md`): set, remove and list.
//! Each is one transaction of `engine::claim_limits`; nothing is kept in memory,
//! so a control plane that takes over the database (a restart, a standby) counts
//! the same slots.

use stateous_shared::claim_limits::{LimitList, LimitView};
use stateous_shared::refusal::Refusal;

use std::sync::Arc;

use super::Control;
use crate::engine;
use crate::store::claim_switch::ClaimFact;
use crate::store::StoreError;
use crate::validated::claim_limits::{limit_name, LimitInput};

impl Control {
    /// `PUT /limits/{name}`: set a limit whole. The first limit, or the first
    /// with `per`, changes what claims and queued tasks are judged by: its fact is
    /// turned on first, and the set waits for the write transactions that began
    /// before, which may have judged without it (`Store::settle_writes`); 503
    /// `database_busy` when they take longer than the lock limit.
    pub async fn set_limit(&self, input: LimitInput) -> Result<LimitView, Refusal> {
        let switch = self.inner.store.claim_switch();
        let keyed = input.per.is_some();
        let first =
            !switch.applies(ClaimFact::Limits) || (keyed && !switch.applies(ClaimFact::Keys));
        // Kept on until the set ended (`store/claim_switch.rs`).
        let turned = switch.turned();
        if first {
            turned.turn_on(ClaimFact::Limits);
            if keyed {
                turned.turn_on(ClaimFact::Keys);
            }
            let inner = Arc::clone(&self.inner);
            tokio::task::spawn_blocking(move || inner.store.settle_writes())
                .await
                .map_err(|_| Refusal::from(StoreError::Busy))?
                .map_err(Refusal::from)?;
        }
        let set = self
            .write(move |rules, tx| engine::claim_limits::set_limit(rules, tx, &input))
            .await;
        drop(turned);
        set
    }

    /// `DELETE /limits/{name}`: remove a limit (404 `limit_not_found` for none).
    pub async fn remove_limit(&self, name: String) -> Result<(), Refusal> {
        let name = limit_name(&name)?;
        self.write(move |_, tx| engine::claim_limits::remove_limit(tx, &name))
            .await
    }

    /// `serve --limits FILE`: set what the file names and the database does not
    /// hold already, in one transaction, on the journal as `file:PATH`
    /// (`engine/limits_file.rs`); the changes made.
    pub async fn apply_limits_file(
        &self,
        path: &str,
        settings: engine::limits_file::FileSettings,
    ) -> Result<Vec<String>, Refusal> {
        self.acting_as(Some(&format!("file:{path}")))
            .write(move |rules, tx| engine::limits_file::apply(rules, tx, &settings))
            .await
    }

    /// Whether this control plane's claims look at limits, priorities and retry
    /// pauses: some may be set in its database (`store/claim_switch.rs`). Turned
    /// on before one is written; off again at the first tick after the tables hold
    /// none.
    pub fn claims_look_at_limits(&self) -> bool {
        self.inner.store.claim_switch().may_apply()
    }

    /// `GET /limits`: every limit with the slots it holds now.
    pub async fn limits(&self) -> Result<LimitList, Refusal> {
        let limits = self.read(engine::claim_limits::list).await?;
        Ok(LimitList { limits })
    }

    /// `PUT /retry-policies/{state}`: set a state's retry policy, whole.
    pub async fn set_retry_policy(
        &self,
        state: String,
        body: stateous_shared::wire::Object,
    ) -> Result<stateous_shared::retry_policies::RetryPolicyView, Refusal> {
        self.write(move |rules, tx| engine::retry_policy::set_policy(rules, tx, &state, &body))
            .await
    }

    /// `DELETE /retry-policies/{state}`.
    pub async fn remove_retry_policy(&self, state: String) -> Result<(), Refusal> {
        self.write(move |_, tx| engine::retry_policy::remove_policy(tx, &state))
            .await
    }

    /// `GET /retry-policies`.
    pub async fn retry_policies(
        &self,
    ) -> Result<stateous_shared::retry_policies::RetryPolicyList, Refusal> {
        let policies = self.read(engine::retry_policy::policies).await?;
        Ok(stateous_shared::retry_policies::RetryPolicyList { policies })
    }
}
