//! [`Client`]: the control plane's HTTP API as typed async methods, one per route.
//!
//! Every route and shape is the reference's (`docs/reference/http.md`); every
//! failure is a [`ClientError`]. The client never sleeps, and sends a request a
//! second time only to the next of its addresses, and only when the first try
//! certainly changed nothing (the rule of [`Endpoints`]); callers that must get
//! through (the supervisor) retry when [`ClientError::is_retryable`] says so.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::access::AccessKey;
use super::calls::{Call, ClaimRequest, HeartbeatRequest, Steer, TokenQuery};
use super::error::ClientError;
use super::failover::{Endpoints, Sent};
use super::routes;
use super::tls::TlsOptions;
use super::transport::{Answer, TransportError};
use super::watch::Watch;
use stateous_shared::access::{KeyView, NewKey};
use stateous_shared::bulk::{BulkAnswer, BulkRequest, RetryRequest};
use stateous_shared::watch::{GraphList, SupervisorList, TokenDetail};
use stateous_shared::why::Why;
use stateous_shared::wire::{Grant, Health, HistoryEntry, Lost, Object, Outcome, TokenView};

/// How long a call waits for its answer unless told otherwise: 30 s, as the
/// reference's client.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The answer to a fired event.
#[derive(Debug, Clone, PartialEq)]
pub struct Fired {
    /// The token after the event, or as it is now for a duplicate.
    pub token: TokenView,
    /// True when the idempotency key was used before, so nothing changed.
    pub duplicate: bool,
}

/// The API of one control plane, reached at one of the addresses it was given
/// (see [`Endpoints`] for when it moves to the next). Cheap to clone; clones share
/// which address serves, and the connection pool of a keep-alive client.
#[derive(Debug, Clone)]
pub struct Client {
    endpoints: Endpoints,
}

impl Client {
    /// A client for `url` (`http://HOST:PORT`, `https://HOST:PORT` or
    /// `unix:///PATH`, or several of them separated by commas, tried in that
    /// order) that opens a connection per call and waits [`DEFAULT_TIMEOUT`] for
    /// each answer.
    ///
    /// Errors: [`ClientError::BadUrl`] when an address is empty or cannot name a
    /// control plane.
    pub fn new(url: &str) -> Result<Client, ClientError> {
        Client::with_timeout(url, DEFAULT_TIMEOUT)
    }

    /// As [`Client::new`], waiting at most `timeout` for each answer.
    pub fn with_timeout(url: &str, timeout: Duration) -> Result<Client, ClientError> {
        Ok(Client::from_endpoints(Endpoints::parse(
            url, timeout, false,
        )?))
    }

    /// As [`Client::with_timeout`], keeping connections open between calls
    /// (HTTP/1.1 keep-alive), for many calls in a row.
    pub fn keep_alive(url: &str, timeout: Duration) -> Result<Client, ClientError> {
        Ok(Client::from_endpoints(Endpoints::parse(
            url, timeout, true,
        )?))
    }

    /// As [`Client::with_timeout`] (or [`Client::keep_alive`] when `keep_alive`),
    /// an https address trusting what `tls` says: a CA file instead of the
    /// platform's roots, a client certificate for mutual TLS.
    ///
    /// Errors: also [`ClientError::BadTls`] when a file of `tls` cannot be used.
    pub fn with_tls(
        url: &str,
        timeout: Duration,
        keep_alive: bool,
        tls: &TlsOptions,
    ) -> Result<Client, ClientError> {
        Ok(Client::from_endpoints(Endpoints::parse_with_tls(
            url, timeout, keep_alive, tls,
        )?))
    }

    /// A client over `endpoints`; it shares with them which address serves.
    pub fn from_endpoints(endpoints: Endpoints) -> Client {
        Client { endpoints }
    }

    /// This client sending `key` as `Authorization: Bearer SECRET` with every
    /// call, at every address and on the watch stream (none when `None`).
    pub fn with_access_key(self, key: Option<&AccessKey>) -> Client {
        Client::from_endpoints(self.endpoints.with_access_key(key))
    }

    /// The endpoints: which address serves, and the requests sent raw.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The URL of the address that served last (the first one given before any
    /// call), less a trailing `/`; errors name the address that gave them.
    pub fn url(&self) -> &str {
        self.endpoints.url()
    }

    /// Every address given, in order.
    pub fn urls(&self) -> Vec<&str> {
        self.endpoints.urls()
    }

    /// `GET /health`: the served workflow's name and checksum.
    pub async fn health(&self) -> Result<Health, ClientError> {
        self.typed(&Call::health()).await
    }

    /// `GET /states` (ours): how many tokens each state holds, by status.
    pub async fn states(&self) -> Result<stateous_shared::watch::StateList, ClientError> {
        self.typed(&Call::states()).await
    }

    /// `POST /clock/advance` (ours): move a dev clock `by` (e.g. `10m`) forward.
    /// A daemon without `--dev-clock` refuses with 404 `not_found`.
    pub async fn clock_advance(
        &self,
        by: &str,
    ) -> Result<stateous_shared::watch::DevClock, ClientError> {
        self.typed(&Call::clock_advance(by)).await
    }

    /// `POST /clock/freeze` (true) or `/clock/thaw` (false) (ours).
    pub async fn clock_freeze(
        &self,
        freeze: bool,
    ) -> Result<stateous_shared::watch::DevClock, ClientError> {
        self.typed(&Call::clock_freeze(freeze)).await
    }

    /// `GET /access` (ours, admin): every access key, revoked ones included.
    pub async fn access_keys(&self) -> Result<Vec<KeyView>, ClientError> {
        self.typed(&Call::access_list()).await
    }

    /// `POST /access` (ours, admin): make a key; the answer holds its secret,
    /// shown this once.
    pub async fn add_access_key(&self, key: &NewKey) -> Result<KeyView, ClientError> {
        self.typed(&Call::access_add(key)).await
    }

    /// `GET /access/callers` (ours, admin): the addresses served over TCP
    /// without a key in the last ten minutes, while no key was ever made, with the
    /// supervisors seen at each; the first key locks them out.
    pub async fn open_callers(
        &self,
    ) -> Result<Vec<stateous_shared::access::OpenCallerView>, ClientError> {
        self.typed(&Call::access_callers()).await
    }

    /// `GET /access/self` (ours, any caller): the caller's own key, as
    /// `{name, role, supervisor, scope}` (`name` null without a key).
    pub async fn own_key(&self) -> Result<stateous_shared::access::OwnKey, ClientError> {
        self.typed(&Call::access_self()).await
    }

    /// `DELETE /access/{name}` (ours, admin): revoke a key.
    pub async fn revoke_access_key(&self, name: &str) -> Result<(), ClientError> {
        self.send(&Call::access_revoke(name)).await.map(|_| ())
    }

    /// `GET /supervisors` (ours): each supervisor seen.
    pub async fn supervisors(&self) -> Result<SupervisorList, ClientError> {
        self.typed(&Call::supervisors()).await
    }

    /// `GET /journal` (ours): a page of the journal of `subject` (and of the one
    /// named `name`), after the entry with id `after`, in id order.
    pub async fn journal(
        &self,
        subject: &str,
        name: Option<&str>,
        after: i64,
    ) -> Result<stateous_shared::journal::JournalPage, ClientError> {
        self.typed(&Call::journal(subject, name, after)).await
    }

    /// `POST /schedules` (ours): add a schedule (or change one, with `replace`);
    /// its view.
    pub async fn add_schedule(
        &self,
        schedule: &stateous_shared::schedules::NewSchedule,
    ) -> Result<stateous_shared::schedules::ScheduleView, ClientError> {
        self.typed(&Call::schedule_add(schedule)).await
    }

    /// `GET /schedules` (ours): every schedule.
    pub async fn schedules(&self) -> Result<stateous_shared::schedules::ScheduleList, ClientError> {
        self.typed(&Call::schedules()).await
    }

    /// `GET /schedules/{name}` (ours).
    pub async fn schedule(
        &self,
        name: &str,
    ) -> Result<stateous_shared::schedules::ScheduleView, ClientError> {
        self.typed(&Call::schedule(name)).await
    }

    /// `POST /schedules/{name}/pause` (`pause` true) or `/resume` (ours).
    pub async fn pause_schedule(
        &self,
        name: &str,
        pause: bool,
    ) -> Result<stateous_shared::schedules::ScheduleView, ClientError> {
        let what = if pause { "pause" } else { "resume" };
        self.typed(&Call::schedule_steer(name, what)).await
    }

    /// `POST /schedules/{name}/trigger` (ours): an occurrence now.
    pub async fn trigger_schedule(
        &self,
        name: &str,
    ) -> Result<stateous_shared::schedules::Triggered, ClientError> {
        self.typed(&Call::schedule_steer(name, "trigger")).await
    }

    /// `DELETE /schedules/{name}` (ours).
    pub async fn remove_schedule(&self, name: &str) -> Result<(), ClientError> {
        self.send(&Call::schedule_remove(name)).await.map(|_| ())
    }

    /// `POST /notify` (ours): add a subscription; its view and its secret.
    pub async fn add_subscription(
        &self,
        body: &stateous_shared::notify::NewSubscription,
    ) -> Result<stateous_shared::notify::SubscriptionAdded, ClientError> {
        self.typed(&Call::subscription_add(body)).await
    }

    /// `GET /notify` (ours): every subscription with its counts.
    pub async fn subscriptions(
        &self,
    ) -> Result<stateous_shared::notify::SubscriptionList, ClientError> {
        self.typed(&Call::subscriptions()).await
    }

    /// `GET /notify/{name}` (ours): one, with its latest attempts.
    pub async fn subscription(
        &self,
        name: &str,
    ) -> Result<stateous_shared::notify::SubscriptionDetail, ClientError> {
        self.typed(&Call::subscription(name)).await
    }

    /// `POST /notify/{name}/pause` (`pause` true) or `/resume` (ours).
    pub async fn pause_subscription(
        &self,
        name: &str,
        pause: bool,
    ) -> Result<stateous_shared::notify::SubscriptionView, ClientError> {
        let what = if pause { "pause" } else { "resume" };
        self.typed(&Call::subscription_steer(name, what)).await
    }

    /// `POST /notify/{name}/rotate` (ours): a new secret beside the last.
    pub async fn rotate_subscription(
        &self,
        name: &str,
    ) -> Result<stateous_shared::notify::SubscriptionAdded, ClientError> {
        self.typed(&Call::subscription_steer(name, "rotate")).await
    }

    /// `POST /notify/{name}/test` (ours): a test notification.
    pub async fn test_subscription(
        &self,
        name: &str,
    ) -> Result<stateous_shared::notify::Queued, ClientError> {
        self.typed(&Call::subscription_steer(name, "test")).await
    }

    /// `POST /notify/{name}/redeliver` (ours): its dead notifications (or `id`).
    pub async fn redeliver(
        &self,
        name: &str,
        id: Option<i64>,
    ) -> Result<stateous_shared::notify::Queued, ClientError> {
        self.typed(&Call::subscription_redeliver(name, id)).await
    }

    /// `DELETE /notify/{name}` (ours).
    pub async fn remove_subscription(&self, name: &str) -> Result<(), ClientError> {
        self.send(&Call::subscription_remove(name))
            .await
            .map(|_| ())
    }

    /// `GET /notifications/failed` (ours): the dead notifications.
    pub async fn failed_notifications(
        &self,
    ) -> Result<stateous_shared::notify::FailedList, ClientError> {
        self.typed(&Call::notifications_failed()).await
    }

    /// `GET /graphs` (ours): the structures the database keeps.
    pub async fn graphs(&self) -> Result<GraphList, ClientError> {
        self.typed(&Call::graphs()).await
    }

    /// `GET /tokens/{id}/detail` (ours): the token with its tasks, timers, held
    /// events and graph.
    pub async fn detail(&self, token: &str) -> Result<TokenDetail, ClientError> {
        self.typed(&Call::detail(token)).await
    }

    /// `GET /workflow`: the graph file the control plane serves, as JSON.
    pub async fn workflow(&self) -> Result<Object, ClientError> {
        self.typed(&Call::workflow()).await
    }

    /// `POST /tokens`: start a token; a token that exists comes back unchanged.
    pub async fn start(&self, token: &str, context: &Object) -> Result<TokenView, ClientError> {
        self.typed(&Call::start(token, context)).await
    }

    /// `POST /tokens/{id}/events/{event}` with an optional payload and idempotency
    /// key. A repeated key answers the token as it is now, with `duplicate` set.
    pub async fn fire(
        &self,
        token: &str,
        event: &str,
        payload: Option<&Object>,
        key: Option<&str>,
    ) -> Result<Fired, ClientError> {
        let call = Call::fire(token, event, payload, key);
        let (status, answer) = self.json(&call).await?;
        fired(answer).map_err(|detail| self.bad_answer(status, detail))
    }

    /// `GET /tokens/{id}`. Errors: refused 404 `token_not_found`.
    pub async fn token(&self, token: &str) -> Result<TokenView, ClientError> {
        self.typed(&Call::token(token)).await
    }

    /// `GET /tokens`: the tokens, the most recently moved first.
    pub async fn tokens(&self, query: &TokenQuery) -> Result<Vec<TokenView>, ClientError> {
        self.typed(&Call::tokens(query)).await
    }

    /// `GET /tokens` with its total: a page of the tokens the query matches, and
    /// how many match in all (`None` from a control plane that does not say).
    pub async fn list(
        &self,
        query: &TokenQuery,
    ) -> Result<(Vec<TokenView>, Option<u64>), ClientError> {
        let answer = self.send(&Call::tokens(query)).await?;
        let tokens = serde_json::from_slice(&answer.body)
            .map_err(|error| self.bad_answer(answer.status, error.to_string()))?;
        Ok((tokens, answer.total))
    }

    /// `POST /tokens/bulk`: a preview (`dry_run`) or one run of a bulk action.
    pub async fn bulk(&self, request: &BulkRequest) -> Result<BulkAnswer, ClientError> {
        self.typed(&Call::bulk(request)).await
    }

    /// `POST /tokens/{id}/retry`: a failed token enters a state again.
    pub async fn retry(
        &self,
        token: &str,
        request: &RetryRequest,
    ) -> Result<TokenView, ClientError> {
        self.typed(&Call::retry(token, request)).await
    }

    /// `GET /tokens/{id}/why`: why the token is where it is.
    pub async fn why(&self, token: &str) -> Result<Why, ClientError> {
        self.typed(&Call::why(token)).await
    }

    /// `GET /tokens/{id}/history`: the token's ledger, in order.
    pub async fn history(&self, token: &str) -> Result<Vec<HistoryEntry>, ClientError> {
        self.typed(&Call::history(token)).await
    }

    /// `POST /tokens/{id}/pause`.
    pub async fn pause(&self, token: &str) -> Result<TokenView, ClientError> {
        self.typed(&Call::steer(token, Steer::Pause)).await
    }

    /// `POST /tokens/{id}/resume`.
    pub async fn resume(&self, token: &str) -> Result<TokenView, ClientError> {
        self.typed(&Call::steer(token, Steer::Resume)).await
    }

    /// `POST /tokens/{id}/cancel`.
    pub async fn cancel(&self, token: &str) -> Result<TokenView, ClientError> {
        self.typed(&Call::steer(token, Steer::Cancel)).await
    }

    /// `POST /tasks/claim`: a grant, or `None` when no task is queued (204).
    pub async fn claim(&self, claim: &ClaimRequest) -> Result<Option<Grant>, ClientError> {
        let answer = self.send(&Call::claim(claim)).await?;
        if answer.status == 204 {
            return Ok(None);
        }
        let grant = serde_json::from_slice(&answer.body)
            .map_err(|error| self.bad_answer(answer.status, error.to_string()))?;
        Ok(Some(grant))
    }

    /// `POST /tasks/heartbeat`: renews the leases of `tasks`; answers the ids
    /// among them that the supervisor no longer holds.
    pub async fn heartbeat(
        &self,
        supervisor: &str,
        tasks: &[i64],
        outbox: Option<u64>,
    ) -> Result<Vec<i64>, ClientError> {
        let beat = HeartbeatRequest {
            supervisor: supervisor.to_string(),
            tasks: tasks.to_vec(),
            outbox,
            ..HeartbeatRequest::default()
        };
        let lost: Lost = self.typed(&Call::heartbeat(&beat)).await?;
        Ok(lost.lost)
    }

    /// `POST /tasks/{id}/report`: the token after the outcome.
    pub async fn report(&self, task: i64, outcome: &Outcome) -> Result<TokenView, ClientError> {
        self.typed(&Call::report(task, outcome)).await
    }

    /// `POST /tasks/{id}/note`: one line of progress (1 to 500 characters).
    pub async fn note(
        &self,
        task: i64,
        text: &str,
        attempt: Option<i64>,
    ) -> Result<(), ClientError> {
        self.send(&Call::note(task, text, attempt)).await.map(drop)
    }

    /// `PUT /tasks/{id}/memory`: save one key of the routine's memory; `null`
    /// deletes it.
    pub async fn set_memory(
        &self,
        task: i64,
        key: &str,
        value: &Value,
        attempt: Option<i64>,
    ) -> Result<(), ClientError> {
        let call = Call::set_memory(task, key, value, attempt);
        self.send(&call).await.map(drop)
    }

    /// `GET /watch`, the live stream of ledger entries (`docs/reference/http.md`): only
    /// `token`'s when given; after the event `last_event_id` when given (sent as
    /// `Last-Event-ID`), so a reconnect loses nothing.
    pub async fn watch(
        &self,
        token: Option<&str>,
        last_event_id: Option<&str>,
    ) -> Result<Watch, ClientError> {
        let path = routes::watch(token);
        let headers: Vec<(&str, &str)> = last_event_id
            .map(|id| vec![("last-event-id", id)])
            .unwrap_or_default();
        let sent = self.endpoints.watch(&path, &headers).await;
        match sent.result {
            Ok(Ok(watch)) => Ok(watch),
            Ok(Err((status, body))) => Err(ClientError::refused(&sent.url, status, &body)),
            Err(source) => Err(ClientError::Unreachable {
                url: sent.url,
                source,
            }),
        }
    }

    /// Send `call` and read its answer as JSON (`Value::Null` for a 204): what
    /// the `--json` output of the commands prints.
    pub async fn json(&self, call: &Call) -> Result<(u16, Value), ClientError> {
        let answer = self.send(call).await?;
        if answer.status == 204 || answer.body.is_empty() {
            return Ok((answer.status, Value::Null));
        }
        let value = serde_json::from_slice(&answer.body)
            .map_err(|_| self.bad_answer(answer.status, "not JSON".to_string()))?;
        Ok((answer.status, value))
    }

    /// Send `call` once by the rule of [`Endpoints`], whatever the answer: for a
    /// caller with a retry policy of its own (the supervisor), which reads the
    /// status and the addresses passed over itself.
    pub async fn attempt(&self, call: &Call) -> Sent<Result<Answer, TransportError>> {
        let body = call.body.as_ref().map(|body| body.to_string().into_bytes());
        let key;
        let headers: &[(&str, &str)] = match &call.key {
            Some(given) => {
                key = [("idempotency-key", given.as_str())];
                &key
            }
            None => &[],
        };
        let longer = call.waits.unwrap_or_default();
        self.endpoints
            .send(call.method, &call.path, body, headers, longer)
            .await
    }

    /// Send `call`; an answer of 400 or more becomes [`ClientError::Refused`].
    pub async fn send(&self, call: &Call) -> Result<Answer, ClientError> {
        if let Some(problem) = call.problem() {
            return Err(ClientError::BadCall(problem));
        }
        let sent = self.attempt(call).await;
        let answer = sent.result.map_err(|source| ClientError::Unreachable {
            url: sent.url.clone(),
            source,
        })?;
        if answer.status >= 400 {
            return Err(ClientError::refused(&sent.url, answer.status, &answer.body));
        }
        if answer.status >= 300 {
            // No route of the API redirects: some other server answered.
            return Err(ClientError::BadAnswer {
                url: sent.url,
                status: answer.status,
                detail: format!("a redirect, status {}", answer.status),
            });
        }
        Ok(answer)
    }

    // Usage and budgets (ours; `docs/concepts/budgets.md`).

    /// `POST /tokens` with the token's own budget.
    pub async fn start_with_budget(
        &self,
        token: &str,
        context: &Object,
        budget: &Object,
    ) -> Result<TokenView, ClientError> {
        self.typed(&Call::start_with_budget(token, context, budget))
            .await
    }

    /// `PUT /tokens/{id}/budget`: set (or, null, remove) names of a token's budget;
    /// the answer is its usage and budget.
    pub async fn token_budget(
        &self,
        token: &str,
        budget: &Object,
    ) -> Result<stateous_shared::usage::TokenBudget, ClientError> {
        self.typed(&Call::token_budget(token, budget)).await
    }

    /// `GET /budgets`: the workflows' default budgets.
    pub async fn budgets(&self) -> Result<stateous_shared::usage::BudgetDefaults, ClientError> {
        self.typed(&Call::budgets()).await
    }

    /// `PUT /budgets/{workflow}`: a workflow's default budget, whole.
    pub async fn set_budget(
        &self,
        workflow: &str,
        budget: &Object,
    ) -> Result<stateous_shared::usage::BudgetDefault, ClientError> {
        self.typed(&Call::set_budget(workflow, budget)).await
    }

    /// `DELETE /budgets/{workflow}`: whether the workflow had a default budget.
    pub async fn remove_budget(&self, workflow: &str) -> Result<bool, ClientError> {
        let answer: serde_json::Value = self.typed(&Call::remove_budget(workflow)).await?;
        Ok(answer["removed"].as_bool().unwrap_or(false))
    }

    /// `POST /tokens` with ours, the token's own budget and its priority.
    pub async fn start_with(
        &self,
        token: &str,
        context: &Object,
        budget: Option<&Object>,
        priority: Option<i64>,
    ) -> Result<TokenView, ClientError> {
        self.typed(&Call::start_with(token, context, budget, priority))
            .await
    }

    /// `PUT /tokens/{id}/priority` (ours): the answer is `{"token", "priority"}`.
    pub async fn token_priority(
        &self,
        token: &str,
        priority: i64,
    ) -> Result<serde_json::Value, ClientError> {
        self.typed(&Call::token_priority(token, priority)).await
    }

    /// `GET /retry-policies` (ours).
    pub async fn retry_policies(
        &self,
    ) -> Result<stateous_shared::retry_policies::RetryPolicyList, ClientError> {
        self.typed(&Call::retry_policies()).await
    }

    /// `PUT /retry-policies/{state}` (ours).
    pub async fn set_retry_policy(
        &self,
        state: &str,
        policy: &stateous_shared::retry_policies::RetryPolicyRequest,
    ) -> Result<stateous_shared::retry_policies::RetryPolicyView, ClientError> {
        self.typed(&Call::set_retry_policy(state, policy)).await
    }

    /// `DELETE /retry-policies/{state}` (ours).
    pub async fn remove_retry_policy(&self, state: &str) -> Result<(), ClientError> {
        let _: serde_json::Value = self.typed(&Call::remove_retry_policy(state)).await?;
        Ok(())
    }

    /// `GET /limits` (ours): every limit with the slots it holds now.
    pub async fn limits(&self) -> Result<stateous_shared::claim_limits::LimitList, ClientError> {
        self.typed(&Call::limits()).await
    }

    /// `PUT /limits/{name}` (ours): set a limit whole.
    pub async fn set_limit(
        &self,
        name: &str,
        limit: &stateous_shared::claim_limits::LimitRequest,
    ) -> Result<stateous_shared::claim_limits::LimitView, ClientError> {
        self.typed(&Call::set_limit(name, limit)).await
    }

    /// `DELETE /limits/{name}` (ours): remove a limit (404 `limit_not_found`).
    pub async fn remove_limit(&self, name: &str) -> Result<(), ClientError> {
        let _: serde_json::Value = self.typed(&Call::remove_limit(name)).await?;
        Ok(())
    }

    async fn typed<T: DeserializeOwned>(&self, call: &Call) -> Result<T, ClientError> {
        let answer = self.send(call).await?;
        serde_json::from_slice(&answer.body)
            .map_err(|error| self.bad_answer(answer.status, error.to_string()))
    }

    fn bad_answer(&self, status: u16, detail: String) -> ClientError {
        ClientError::BadAnswer {
            url: self.url().to_string(),
            status,
            detail,
        }
    }
}

/// The token of a fire answer: `{"duplicate": true, "token": {...}}` or the token.
fn fired(answer: Value) -> Result<Fired, String> {
    let duplicate = answer.get("duplicate").and_then(Value::as_bool) == Some(true);
    let token = if duplicate {
        answer.get("token").cloned().unwrap_or_default()
    } else {
        answer
    };
    let token = serde_json::from_value(token).map_err(|error| error.to_string())?;
    Ok(Fired { token, duplicate })
}

#[cfg(test)]
mod tests;
