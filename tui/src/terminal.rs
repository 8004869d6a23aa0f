//! The loop that runs the TUI on a real terminal: keys and ticks in, `update`,
//! commands out to the client task, `view` on the screen.

use std::time::Duration;

use chrono::Utc;
use crossterm::event::{Event, KeyEventKind};
use stateous_client::{Backoff, Client, ClientError, Followed, Follower, TokenQuery};
use stateous_shared::refusal::Code;
use tokio::sync::mpsc::{self, UnboundedSender};

use crate::message::{Command, Msg};
use crate::model::{Model, StreamState};
use crate::{client, update, view, Options, TuiError};

/// How often the screen is refreshed from the daemon.
const TICK: Duration = Duration::from_secs(1);

/// Run the TUI against the control plane at `url` until `q`.
pub async fn run(url: &str, options: &Options) -> Result<(), TuiError> {
    let api = options
        .connection
        .client_at(url, Duration::from_secs(5), false)
        .map_err(|error| TuiError::Client(error.to_string()))?;
    refused_filter(&api, options).await?;
    let mut terminal = ratatui::try_init().map_err(TuiError::Terminal)?;
    let result = looping(&api, &mut terminal, options).await;
    ratatui::restore();
    result
}

/// `--where` asked of the daemon before the screen is taken: one it refuses
/// with a 422 (a state or a workflow the graph does not have) is refused here
/// with its sentence, as one that does not parse is. Any other failure (an
/// unreachable daemon) is left to the screen, which keeps trying.
async fn refused_filter(api: &Client, options: &Options) -> Result<(), TuiError> {
    let Some(filter) = &options.filter else {
        return Ok(());
    };
    let query = TokenQuery {
        limit: Some(1),
        filter: Some(filter.clone()),
        ..TokenQuery::default()
    };
    match api.list(&query).await {
        Err(ClientError::Refused {
            status: 422,
            refusal,
            ..
        }) => Err(TuiError::Options(format!("--where: {}", refusal.error))),
        _ => Ok(()),
    }
}

async fn looping(
    api: &Client,
    terminal: &mut ratatui::DefaultTerminal,
    options: &Options,
) -> Result<(), TuiError> {
    let (to, mut from) = mpsc::unbounded_channel();
    read_keys(to.clone());
    let ticker = to.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(TICK);
        loop {
            every.tick().await;
            if ticker.send(Msg::Tick(Utc::now())).is_err() {
                break;
            }
        }
    });
    watch_stream(api.clone(), to.clone());
    let mut model = Model::new(api.url(), Utc::now());
    model.addresses = api.urls().into_iter().map(str::to_string).collect();
    options.apply(&mut model);
    let size = terminal.size().map_err(TuiError::Terminal)?;
    model.size = (size.width, size.height);
    loop {
        terminal
            .draw(|frame| view::view(&model, frame))
            .map_err(TuiError::Terminal)?;
        let Some(first) = from.recv().await else {
            return Ok(());
        };
        // Take every message that is waiting before drawing again.
        let mut next = Some(first);
        while let Some(msg) = next {
            for command in update::update(&mut model, msg) {
                match command {
                    Command::Copy(text) => copy(terminal, &text)?,
                    command => client::spawn(api, command, &to),
                }
            }
            next = from.try_recv().ok();
        }
        // Of several addresses, the client moved to another that serves.
        if api.url() != model.url {
            update::update(&mut model, Msg::Serving(api.url().to_string()));
        }
        if model.quit {
            return Ok(());
        }
    }
}

/// Put `text` on the clipboard: the OSC 52 sequence, written to the terminal.
fn copy(terminal: &mut ratatui::DefaultTerminal, text: &str) -> Result<(), TuiError> {
    use std::io::Write;
    let writer = terminal.backend_mut();
    writer
        .write_all(crate::describe::osc52(text).as_bytes())
        .and_then(|()| writer.flush())
        .map_err(TuiError::Terminal)
}

/// The live stream: opened, read, and opened again after a break from the last
/// event id (so nothing is lost); given up only on a daemon that has none.
fn watch_stream(api: Client, to: UnboundedSender<Msg>) {
    tokio::spawn(async move {
        let mut follower = Follower::new(api, None, Backoff::new(vec![TICK]));
        loop {
            let sent = match follower.next().await {
                Followed::Opened => to.send(Msg::Stream(StreamState::Live)),
                Followed::Event(event) => match event.entry() {
                    Some(entry) => to.send(Msg::Entry(entry)),
                    None => Ok(()),
                },
                Followed::Broke => to.send(Msg::Stream(StreamState::Off)),
                Followed::Unopened(error) if error.code() == Some(Code::NotFound) => {
                    let _ = to.send(Msg::Stream(StreamState::Unsupported));
                    return;
                }
                Followed::Unopened(_) => Ok(()),
            };
            if sent.is_err() || to.is_closed() {
                return;
            }
        }
    });
}

/// Keys and resizes, read on a thread of their own (crossterm's read blocks).
fn read_keys(to: UnboundedSender<Msg>) {
    std::thread::spawn(move || loop {
        let msg = match crossterm::event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => Msg::Key(key),
            Ok(Event::Resize(columns, rows)) => Msg::Resize(columns, rows),
            Ok(_) => continue,
            Err(_) => break,
        };
        if to.send(msg).is_err() {
            break;
        }
    });
}
