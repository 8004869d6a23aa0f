//! `GET /health` with the dev clock, and `POST /clock/advance`, `/clock/freeze` and
//! `/clock/thaw` (ours: `serve --dev-clock`). Without a dev clock, `/health` is the
//! reference's answer, serialized once, and the clock's routes answer 404 `not_found`.

use bytes::Bytes;
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::wire::Health;

use super::parse::AdvanceInput;
use super::routes::ClockMove;
use super::{body, json, json_bytes, Answer, Api};

impl Api {
    /// `GET /health`: the workflow, its checksum and, with a dev clock, where it
    /// stands. While the database cannot take requests (it does not answer in
    /// time, or its disk is full), 503 `database_busy` with the reason's sentence,
    /// `database` (`not_answering`, `disk_full`), and the workflow and checksum.
    pub(super) fn health(&self) -> Answer {
        if let Some(trouble) = self.control.trouble() {
            let graph = self.control.graph();
            let refused = Refusal::new(Code::DatabaseBusy, trouble.sentence);
            let mut answer = json(
                refused.status(),
                &serde_json::json!({
                    "error": refused.error,
                    "code": refused.code,
                    "database": trouble.database,
                    "workflow": graph.main.name,
                    "checksum": graph.checksum,
                }),
            );
            answer.extensions_mut().insert(refused.code);
            return answer;
        }
        let Some(dev_clock) = self.control.dev_clock() else {
            return json_bytes(200, self.health.clone());
        };
        let graph = self.control.graph();
        let health = Health {
            workflow: graph.main.name.clone(),
            checksum: graph.checksum.clone(),
            dev_clock: Some(dev_clock),
        };
        json_bytes(200, Bytes::from(super::to_json(&health)))
    }

    /// `POST /clock/...`.
    pub(super) async fn clock(&self, how: ClockMove, raw: &[u8]) -> Result<Answer, Refusal> {
        let control = &self.control;
        let moved = match how {
            ClockMove::Advance => {
                // Without a dev clock the route is not there, whatever the body.
                control
                    .dev_clock()
                    .ok_or_else(crate::control::no_dev_clock)?;
                let input = AdvanceInput::parse(&body::json_object(raw)?)?;
                control.advance(input.by).await?
            }
            ClockMove::Freeze => control.freeze()?,
            ClockMove::Thaw => control.thaw()?,
        };
        Ok(json(200, &moved))
    }
}
