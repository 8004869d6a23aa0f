//! The table `priorities` (schema 0017, `docs/inside/data.md`; `docs/limits.md`,
//! "Priorities"): a token's priority when it is not 0. Claims take the tasks of
//! higher priorities first, then the oldest; a database without a row here claims
//! in queue order alone, as before.

use super::through::passed_through;
use super::StoreResult;

/// A queued task a claim may take, with what decides its turn: its token's
/// workflow, context and priority.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The task.
    pub task: i64,
    /// Its token.
    pub token: String,
    /// Its state.
    pub state: String,
    /// The token's workflow (`None`: the main one).
    pub workflow: Option<String>,
    /// The token's context, as JSON text.
    pub context: String,
    /// The token's priority.
    pub priority: i64,
}

passed_through! {
    /// The table `priorities`.
    pub trait Priorities {
        /// The token's priority: 0 when it has no row.
        fn priority(&self, token: &str) -> StoreResult<i64>;
        /// Set the token's priority (0 deletes its row).
        fn set_priority(&self, token: &str, priority: i64) -> StoreResult<()>;
        /// Whether any token has a priority other than 0.
        fn any_priority(&self) -> StoreResult<bool>;
        /// Up to `limit` queued tasks of tokens with a priority above 0, the highest
        /// first, then by id: `(task, priority)`.
        fn prioritized_queued(&self, limit: i64) -> StoreResult<Vec<(i64, i64)>>;
        /// Up to `limit` oldest queued tasks of active tokens in each of these
        /// states, and (with `prioritized`) up to `limit` queued tasks of tokens
        /// with a priority above 0 in any state, read in one statement each,
        /// without locks: the claim locks the one it takes and reads it again.
        fn queued_candidates(
            &self,
            states: &[(Option<String>, String)],
            limit: i64,
            prioritized: bool,
        ) -> StoreResult<Vec<Candidate>>;
        /// The priorities of these tokens that are not 0.
        fn priorities_of(&self, tokens: &[String]) -> StoreResult<Vec<(String, i64)>>;
    }
}
