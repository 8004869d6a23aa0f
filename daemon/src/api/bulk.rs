//! The handlers of the bulk actions, additions of ours that the reference's
//! clients never call: `POST /tokens/bulk` and `POST /tokens/{id}/retry`, a bulk
//! retry's step on one token (routed by [`super::routes::TABLE`]).

use stateous_shared::refusal::Refusal;

use super::access::{self, Caller};
use super::{body, json, parse, Answer, Api};

impl Api {
    /// `POST /tokens/bulk`.
    /// A prune's `archive` needs a caller that may write files
    /// ([`access::may_write_files`]).
    pub(super) async fn bulk(&self, raw: &[u8], caller: &Caller) -> Result<Answer, Refusal> {
        let input = parse::bulk::bulk(&body::json_object(raw)?)?;
        if input.archive.is_some() {
            access::may_write_files(caller)?;
        }
        Ok(json(200, &self.control.bulk(input).await?))
    }

    /// `POST /tokens/{id}/retry`.
    pub(super) async fn retry(&self, token: String, raw: &[u8]) -> Result<Answer, Refusal> {
        let input = parse::bulk::retry(token, &body::json_object(raw)?)?;
        Ok(json(200, &self.control.retry(input).await?))
    }
}
