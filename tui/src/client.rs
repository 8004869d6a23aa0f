//! The client task: carries out the commands of `update` over HTTP and sends each
//! answer back as a message. All of the TUI's I/O with the daemon is here.

use stateous_client::{Client, ClientError, Steer, TokenQuery};
use stateous_shared::bulk::{operator_name, BulkAnswer, BulkRequest, RetryRequest};
use stateous_shared::refusal::Code;
use stateous_shared::watch::{StateCount, SupervisorList, TokenDetail};
use tokio::sync::mpsc::UnboundedSender;

use crate::message::{Acted, Command, Msg};
use crate::model::Problem;

/// A bulk run: each page of the walk in turn (the answer's `next`), its outcomes
/// merged and told after each page, until the walk ends or a refusal stops it.
async fn run(client: &Client, mut request: BulkRequest, to: &UnboundedSender<Msg>) {
    let mut so_far: Option<BulkAnswer> = None;
    loop {
        let answer = match client.bulk(&request).await {
            Ok(answer) => answer,
            Err(error) => {
                let _ = to.send(Msg::RunFailed(problem(error)));
                return;
            }
        };
        let next = answer.next.clone();
        let merged = match so_far.take() {
            None => answer,
            Some(mut total) => {
                stateous_client::add_bulk_page(&mut total, answer);
                total
            }
        };
        let done = next.is_none();
        if to
            .send(Msg::Ran {
                so_far: merged.clone(),
                done,
            })
            .is_err()
            || done
        {
            return;
        }
        request.after = next;
        so_far = Some(merged);
    }
}

/// How a client error reads in the model.
pub fn problem(error: ClientError) -> Problem {
    match error {
        ClientError::Refused {
            status, refusal, ..
        } => Problem::Refused {
            status,
            code: refusal.code.as_str().to_string(),
            sentence: refusal.error,
        },
        ClientError::Unreachable { source, .. } => Problem::Unreachable(source.to_string()),
        other => Problem::Other(other.to_string()),
    }
}

/// Carry out `command` on a task of its own; its answer goes to `to` (a bulk
/// run's progress too, after each of its pages).
pub fn spawn(client: &Client, command: Command, to: &UnboundedSender<Msg>) {
    let (client, to) = (client.clone(), to.clone());
    tokio::spawn(async move {
        if let Command::Run(request) = command {
            return run(&client, request, &to).await;
        }
        let msg = perform(&client, command).await;
        // The loop may have ended (quit) while the request was out.
        let _ = to.send(msg);
    });
}

/// The message that answers `command`.
pub async fn perform(client: &Client, command: Command) -> Msg {
    match command {
        Command::Tokens(query) => {
            let answer = client.list(&query).await.map_err(problem);
            Msg::Page {
                status: query.status,
                filter: query.filter,
                answer,
            }
        }
        Command::Why(id) => {
            let answer = match client.why(&id).await {
                Ok(why) => Ok(Some(Box::new(why))),
                // A daemon without the route: its 404 is `not_found`, not the token's.
                Err(error) if error.code() == Some(Code::NotFound) => Ok(None),
                Err(error) => Err(problem(error)),
            };
            Msg::Why(id, answer)
        }
        Command::Preview(request) => {
            let answer = client.bulk(&request).await.map_err(problem);
            Msg::Previewed(Box::new(request), answer)
        }
        Command::Token { id, detail } => {
            let answer = read_token(client, &id, detail).await;
            Msg::Token(id, answer)
        }
        Command::History(id) => {
            let answer = client.history(&id).await.map_err(problem);
            Msg::History(id, answer)
        }
        Command::Children(id) => {
            let query = TokenQuery {
                parent: Some(id.clone()),
                limit: Some(50),
                ..TokenQuery::default()
            };
            Msg::Children(id, client.tokens(&query).await.map_err(problem))
        }
        Command::Exact(id) => {
            let answer = match client.token(&id).await {
                Ok(token) => Ok(Some(token)),
                Err(error) if error.code() == Some(Code::TokenNotFound) => Ok(None),
                Err(error) => Err(problem(error)),
            };
            Msg::Exact(id, answer)
        }
        Command::Workflow => Msg::Workflow(
            client
                .workflow()
                .await
                .map(serde_json::Value::Object)
                .map_err(problem),
        ),
        Command::Supervisors => Msg::Supervisors(supervisors(client).await),
        Command::States => Msg::States(states(client).await),
        // Only the graph view reads it, as a line beside its title: a daemon
        // without the route, or a failed read, shows none.
        Command::Graphs => Msg::Graphs(
            client
                .graphs()
                .await
                .map_or_else(|_| Vec::new(), |list| list.graphs),
        ),
        Command::Health => Msg::Health(client.health().await.map_err(problem)),
        Command::OwnKey => Msg::OwnKey(client.own_key().await.ok()),
        Command::Pools => Msg::Pools(
            client
                .limits()
                .await
                .map(|list| list.limits)
                .map_err(problem),
        ),
        Command::Schedules => Msg::Schedules(
            client
                .schedules()
                .await
                .map(|list| list.schedules)
                .map_err(problem),
        ),
        Command::PauseSchedule { name, pause } => {
            Msg::ScheduleSteered(client.pause_schedule(&name, pause).await.map_err(problem))
        }
        Command::Subscriptions => Msg::Subscriptions(
            client
                .subscriptions()
                .await
                .map(|list| list.subscriptions)
                .map_err(problem),
        ),
        other => Msg::Done(act(client, other).await),
    }
}

/// The token with its tasks, timers and held events; from a daemon without the
/// detail route, the plain token.
async fn read_token(
    client: &Client,
    id: &str,
    detail: bool,
) -> Result<(TokenDetail, bool), Problem> {
    if detail {
        match client.detail(id).await {
            Ok(detail) => return Ok((detail, true)),
            Err(error) if error.code() != Some(Code::NotFound) => return Err(problem(error)),
            Err(_) => {}
        }
    }
    let token = client.token(id).await.map_err(problem)?;
    let plain = TokenDetail {
        token,
        tasks: Vec::new(),
        timers: Vec::new(),
        held: Vec::new(),
        graph: None,
        graph_served: true,
        priority: 0,
        budget: None,
    };
    Ok((plain, false))
}

/// `GET /supervisors`; `None` from a daemon without it.
async fn supervisors(client: &Client) -> Result<Option<SupervisorList>, Problem> {
    match client.supervisors().await {
        Ok(list) => Ok(Some(list)),
        Err(error) if error.code() == Some(Code::NotFound) => Ok(None),
        Err(error) => Err(problem(error)),
    }
}

/// `GET /states`; `None` from a daemon without it.
async fn states(client: &Client) -> Result<Option<Vec<StateCount>>, Problem> {
    match client.states().await {
        Ok(list) => Ok(Some(list.states)),
        Err(error) if error.code() == Some(Code::NotFound) => Ok(None),
        Err(error) => Err(problem(error)),
    }
}

/// A pause, resume, cancel, fire or start.
async fn act(client: &Client, command: Command) -> Result<Acted, Problem> {
    let plain = |token| Acted {
        token,
        duplicate: false,
        said: None,
    };
    let answer = match command {
        Command::Steer(id, Steer::Pause) => client.pause(&id).await.map(plain),
        Command::Steer(id, Steer::Resume) => client.resume(&id).await.map(plain),
        Command::Steer(id, Steer::Cancel) => client.cancel(&id).await.map(plain),
        Command::Start { token, context } => client.start(&token, &context).await.map(plain),
        Command::Retry(token) => {
            let request = RetryRequest {
                by: Some(operator_name()),
                ..RetryRequest::default()
            };
            client.retry(&token, &request).await.map(plain)
        }
        Command::Fire {
            token,
            event,
            payload,
            key,
        } => client
            .fire(&token, &event, payload.as_ref(), key.as_deref())
            .await
            .map(|fired| Acted {
                token: fired.token,
                duplicate: fired.duplicate,
                said: None,
            }),
        Command::Priority { token, priority } => {
            match client.token_priority(&token, priority).await {
                Ok(_) => client.token(&token).await.map(|view| Acted {
                    token: view,
                    duplicate: false,
                    said: Some(format!("{token}: priority {priority}")),
                }),
                Err(error) => Err(error),
            }
        }
        read => return Err(Problem::Other(format!("{read:?} is a read, not an action"))),
    };
    answer.map_err(problem)
}
