//! The calls of limits on claims (ours; `docs/reference/http.md`, "Limits";
//! `docs/limits.md`): list, set and remove.

use stateous_shared::claim_limits::LimitRequest;

use super::Call;
use crate::routes;

impl Call {
    /// `GET /limits` (ours): every limit with the slots it holds now.
    pub fn limits() -> Call {
        Call::get(routes::LIMITS)
    }

    /// `PUT /limits/{name}` (ours): a limit, whole.
    pub fn set_limit(name: &str, limit: &LimitRequest) -> Call {
        Call {
            method: "PUT",
            ..Call::post(routes::limit(name), limit)
        }
    }

    /// `DELETE /limits/{name}` (ours): remove a limit.
    pub fn remove_limit(name: &str) -> Call {
        Call::new("DELETE", routes::limit(name), None)
    }
}
