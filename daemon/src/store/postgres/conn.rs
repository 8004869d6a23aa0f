//! One Postgres connection with its prepared statements, how connections are made with
//! their time limits (`docs/how-to/use-postgres.md`), and the pool's manager (r2d2).
//!
//! A statement is prepared once per connection and kept: sent as text each time,
//! every query would cost the server a parse and the network a round trip more.
//!
//! Every wait on the server has a deadline on this side too (`docs/guarantees.md`,
//! "Time limits on each database"): the server's `statement_timeout` cannot stop a
//! statement that never reached it, and a server that accepted the TCP connection
//! and then says nothing would hold the login for ever. The connection is
//! tokio-postgres's, driven on a runtime of its own inside each wait, as the sync
//! `postgres` client drives it, with `tokio::time::timeout` around the wait.

use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{tls, PgOptions};
use crate::store::{limit_words, StoreError, StoreResult};

/// How much longer than `statement_timeout` this side waits for an answer: when the
/// server is there, its own refusal (which leaves the connection usable) comes first.
pub const STATEMENT_GRACE: Duration = Duration::from_millis(500);

/// How long this side waits for the server: for a connection (the TCP connect and
/// the login exchange together), and for each statement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deadlines {
    /// The whole connect: `--connect-timeout`.
    pub connect: Duration,
    /// Each statement, the commit too: `--statement-timeout` plus [`STATEMENT_GRACE`].
    pub statement: Duration,
}

impl Deadlines {
    /// The deadlines of `options`.
    pub fn of(options: &PgOptions) -> Deadlines {
        Deadlines {
            connect: options.connect_timeout,
            statement: options.statement_timeout + STATEMENT_GRACE,
        }
    }
}

/// Why a connection could not be made.
#[derive(Debug)]
pub enum Unconnected {
    /// The server answered with an error, or the connection failed.
    Failed(tokio_postgres::Error),
    /// No answer within the connect deadline (the TCP connect or the login).
    Silent(Duration),
    /// Anything else, in words (this process could not start the connection's
    /// runtime; the server refused the lock's question).
    Other(String),
}

impl std::fmt::Display for Unconnected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unconnected::Failed(error) => write!(f, "{error}"),
            Unconnected::Silent(limit) => write!(
                f,
                "the server did not answer within {} (the connect timeout)",
                limit_words(*limit)
            ),
            Unconnected::Other(why) => write!(f, "{why}"),
        }
    }
}

/// Whether the server answers: set when a deadline passed, cleared by the next
/// answer in time on any connection of the store. Cheap to clone; shared by the
/// store's connections.
#[derive(Debug, Clone, Default)]
pub struct Answering(Arc<AtomicBool>);

impl Answering {
    /// Note whether a wait was answered in time; a change is logged once.
    fn note(&self, answered: bool) {
        let was_silent = self.0.swap(!answered, Ordering::SeqCst);
        if was_silent == answered {
            if answered {
                tracing::info!(target: "stateous.serve", "the database answers again");
            } else {
                tracing::warn!(
                    target: "stateous.serve",
                    "the database did not answer in time; requests answer 503 database_busy \
                     until it answers again"
                );
            }
        }
    }

    /// True while the last wait on the server passed its deadline.
    pub fn silent(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How connections are made: the settings of [`config`], the TLS of the URL's
/// `sslmode` (`tls.rs`), the deadlines, and the store's [`Answering`].
#[derive(Clone)]
pub struct Connector {
    config: Config,
    /// TLS as the URL's `sslmode` says; `None` for plain TCP.
    tls: Option<MakeRustlsConnect>,
    /// The deadlines on this side.
    pub deadlines: Deadlines,
    /// Told whether the server answers.
    pub answering: Answering,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("config", &self.config)
            .field("tls", &self.tls.is_some())
            .field("deadlines", &self.deadlines)
            .finish()
    }
}

/// A connection's I/O as a future to poll, plain or over TLS.
type Io = Pin<Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + Send>>;

/// A connection and its prepared statements, keyed by their SQL.
pub struct PgConn {
    client: Client,
    driver: Driver,
    statements: HashMap<String, Statement>,
    session: Session,
    /// A `BEGIN` not sent yet: it goes with the transaction's first statement, in
    /// the same round trip ([`PgConn::begin`]).
    begin: Option<&'static str>,
}

/// Which server session a connection is: its process id and when it started,
/// together unique on the server (a process id alone is used again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// `pg_backend_pid()`.
    pub pid: i32,
    /// `backend_start` as text.
    pub started: String,
}

/// What drives a connection: its I/O, the runtime it is polled on, the deadline.
struct Driver {
    /// The connection's I/O, polled inside each wait (no task of its own).
    /// `None` only while the connection is dropped.
    connection: Option<Io>,
    /// The connection's future finished: the socket closed.
    ended: bool,
    /// `None` only while the connection is dropped.
    runtime: Option<Runtime>,
    /// How long a statement may take on this side; `None`: no limit (a migration).
    deadline: Option<Duration>,
    /// A deadline passed with a statement out: what the server makes of it is
    /// unknown, so the connection is used no more (the pool drops it).
    broken: bool,
    /// Told each time a wait ends: whether the server answered in time.
    answering: Answering,
}

impl PgConn {
    /// Connect with `connector`'s settings within its connect deadline.
    pub fn connect(connector: &Connector) -> Result<PgConn, Unconnected> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Unconnected::Other(format!("cannot start a connection's runtime: {e}")))?;
        let limit = connector.deadlines.connect;
        // The timer is made inside `block_on`, so that it is this runtime's. The
        // session's identity is read within the same deadline.
        let connected = runtime.block_on(async {
            tokio::time::timeout(limit, async {
                let (client, mut connection): (Client, Io) = match &connector.tls {
                    Some(tls) => {
                        let (client, connection) = connector.config.connect(tls.clone()).await?;
                        (client, Box::pin(connection))
                    }
                    None => {
                        let (client, connection) = connector.config.connect(NoTls).await?;
                        (client, Box::pin(connection))
                    }
                };
                let row = {
                    let mut asked = pin!(client.query_one(SESSION, &[]));
                    let mut ended = false;
                    poll_fn(|cx| {
                        // A connection that ends leaves the question to the deadline.
                        if !ended && connection.as_mut().poll(cx).is_ready() {
                            ended = true;
                        }
                        asked.as_mut().poll(cx)
                    })
                    .await?
                };
                let session = Session {
                    pid: row.try_get(0)?,
                    started: row.try_get(1)?,
                };
                Ok::<_, tokio_postgres::Error>((client, connection, session))
            })
            .await
        });
        let (client, connection, session) = match connected {
            Ok(Ok(parts)) => parts,
            Ok(Err(error)) => return Err(Unconnected::Failed(error)),
            // Noted by the pool's manager, not here: a start that meets silence
            // says so in its one `error:` line.
            Err(_) => return Err(Unconnected::Silent(limit)),
        };
        connector.answering.note(true);
        Ok(PgConn {
            client,
            driver: Driver {
                connection: Some(connection),
                ended: false,
                runtime: Some(runtime),
                deadline: Some(connector.deadlines.statement),
                broken: false,
                answering: connector.answering.clone(),
            },
            statements: HashMap::new(),
            session,
            begin: None,
        })
    }

    /// Open a transaction with `sql` (`BEGIN ...`), sent with the next statement:
    /// one round trip less per transaction. A transaction that sends nothing
    /// before its end was never opened ([`PgConn::end`]).
    pub fn begin(&mut self, sql: &'static str) {
        self.begin = Some(sql);
    }

    /// Whether the `BEGIN` given to [`PgConn::begin`] was sent (then the
    /// server ran it before any later statement).
    pub fn begin_sent(&self) -> bool {
        self.begin.is_none()
    }

    /// End the transaction with `sql` (`COMMIT`, `ROLLBACK`, or a fence and a
    /// commit). With `unless_unsent`, a transaction whose `BEGIN` was never sent
    /// (it sent no statement) sends nothing: a rollback, or a read's commit.
    pub fn end(&mut self, sql: &str, unless_unsent: bool) -> StoreResult<()> {
        if unless_unsent && self.begin.take().is_some() {
            return Ok(());
        }
        self.batch(sql)
    }

    /// Which server session this connection is.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Run `work` with no deadline on this side (a migration takes its time; the
    /// server's keepalives still find a dead connection).
    pub fn unlimited<R>(&mut self, work: impl FnOnce(&mut PgConn) -> R) -> R {
        let deadline = self.driver.deadline.take();
        let result = work(self);
        self.driver.deadline = deadline;
        result
    }

    fn prepared(&mut self, sql: &str) -> StoreResult<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = run(
            &self.client,
            &mut self.driver,
            &mut self.begin,
            self.client.prepare(sql),
        )?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    /// Run a statement that returns rows.
    pub fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Row>> {
        let statement = self.prepared(sql)?;
        run(
            &self.client,
            &mut self.driver,
            &mut self.begin,
            self.client.query(&statement, params),
        )
    }

    /// Run a statement; how many rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<u64> {
        let statement = self.prepared(sql)?;
        run(
            &self.client,
            &mut self.driver,
            &mut self.begin,
            self.client.execute(&statement, params),
        )
    }

    /// Run `first` (only its success matters), then a statement that returns
    /// rows, in one round trip. When `first` fails, its error is the answer.
    pub fn execute_then_query(
        &mut self,
        first: (&str, &[&(dyn ToSql + Sync)]),
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<Row>> {
        let before = self.prepared(first.0)?;
        let statement = self.prepared(sql)?;
        let client = &self.client;
        run(client, &mut self.driver, &mut self.begin, async {
            let (before, rows) = futures_util::future::join(
                client.execute(&before, first.1),
                client.query(&statement, params),
            )
            .await;
            before?;
            rows
        })
    }

    /// Run `first` if any (only its success matters), then statements that
    /// return rows, in one round trip: the server runs each after the one before
    /// it ended, so a lock the one takes holds when the next one's snapshot is
    /// taken. When one fails, its error (or the first one's) is the answer.
    pub fn execute_then_queries(
        &mut self,
        first: Option<(&str, &[&(dyn ToSql + Sync)])>,
        statements: &[(&str, &[&(dyn ToSql + Sync)])],
    ) -> StoreResult<Vec<Vec<Row>>> {
        let before = first
            .map(|(sql, params)| Ok::<_, StoreError>((self.prepared(sql)?, params)))
            .transpose()?;
        let prepared = statements
            .iter()
            .map(|(sql, params)| Ok((self.prepared(sql)?, *params)))
            .collect::<StoreResult<Vec<_>>>()?;
        let client = &self.client;
        run(client, &mut self.driver, &mut self.begin, async {
            let before = async {
                match &before {
                    Some((statement, params)) => client.execute(statement, params).await.map(drop),
                    None => Ok(()),
                }
            };
            let queries = futures_util::future::join_all(
                prepared
                    .iter()
                    .map(|(statement, params)| client.query(statement, params)),
            );
            let (before, rows) = futures_util::future::join(before, queries).await;
            before?;
            rows.into_iter().collect()
        })
    }

    /// Run `first` (only its success matters), then statements without
    /// parameters (the simple protocol), in one round trip: `Ok` with each one's
    /// own answer (after a failed `first`, the transaction is aborted and the
    /// statements after it do not run); `Err` when the wait itself failed (no
    /// answer in time, a connection that ended), when neither answer is known.
    pub fn execute_then_batch(
        &mut self,
        first: (&str, &[&(dyn ToSql + Sync)]),
        sql: &str,
    ) -> StoreResult<(StoreResult<()>, StoreResult<()>)> {
        let before = self.prepared(first.0)?;
        let client = &self.client;
        let (before, after) = run(client, &mut self.driver, &mut self.begin, async {
            Ok(futures_util::future::join(
                client.execute(&before, first.1),
                client.batch_execute(sql),
            )
            .await)
        })?;
        Ok((
            before.map(drop).map_err(StoreError::from),
            after.map_err(StoreError::from),
        ))
    }

    /// Run statements without parameters in one round trip (the simple protocol).
    pub fn batch(&mut self, sql: &str) -> StoreResult<()> {
        run(
            &self.client,
            &mut self.driver,
            &mut self.begin,
            self.client.batch_execute(sql),
        )
    }

    /// Ask one statement, outside any transaction, and read the
    /// first column of its first row as a bool; a deadline that passes leaves the
    /// connection usable (see `Driver::wait`).
    pub fn ask_bool(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<bool> {
        let row = self.driver.wait(true, self.client.query_one(sql, params))?;
        row.try_get(0)
            .map_err(|e| StoreError::Corrupt(e.to_string()))
    }

    /// Run statements without parameters outside any transaction; a deadline that
    /// passes leaves the connection usable (see `Driver::wait`).
    pub fn ping(&mut self, sql: &str) -> StoreResult<()> {
        self.driver.wait(true, self.client.batch_execute(sql))
    }

    /// For tests: run statements without parameters (the simple protocol) and read
    /// the first column of each row they return, as text.
    #[cfg(test)]
    pub fn texts(&mut self, sql: &str) -> StoreResult<Vec<String>> {
        let messages = self.driver.wait(false, self.client.simple_query(sql))?;
        Ok(messages
            .iter()
            .filter_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
                _ => None,
            })
            .collect())
    }

    /// Whether the connection is known to be closed, or may not be used again.
    pub fn is_closed(&self) -> bool {
        self.driver.broken || self.driver.ended || self.client.is_closed()
    }
}

/// Wait on `driver` for `work`, after the `BEGIN` that waits, if any: both
/// requests go out together and their answers come back in order.
fn run<T>(
    client: &Client,
    driver: &mut Driver,
    begin: &mut Option<&'static str>,
    work: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> StoreResult<T> {
    let Some(sql) = begin.take() else {
        return driver.wait(false, work);
    };
    let begun = client.batch_execute(sql);
    driver.wait(false, async move {
        let (begun, done) = futures_util::future::join(begun, work).await;
        begun?;
        done
    })
}

impl Driver {
    /// Wait for `work` while driving the connection, at most the statement
    /// deadline. When it passes, the connection is marked broken unless `keeps`
    /// (a statement outside any transaction, whose late answer changes nothing:
    /// the connection matches each answer to its request, and drops one nobody
    /// waits for).
    fn wait<T>(
        &mut self,
        keeps: bool,
        work: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> StoreResult<T> {
        let limit = self.deadline;
        if self.broken {
            return Err(StoreError::NotAnswering(limit.unwrap_or_default()));
        }
        let (Some(runtime), Some(connection)) = (self.runtime.as_ref(), self.connection.as_mut())
        else {
            return Err(StoreError::Busy);
        };
        if self.ended {
            return Err(StoreError::Busy);
        }
        let ended = &mut self.ended;
        // Why the connection ended, when it ended with an error of the server's
        // (e.g. the session was terminated).
        let mut why: Option<tokio_postgres::Error> = None;
        let mut work = pin!(work);
        let driven = poll_fn(|cx| {
            if !*ended {
                if let Poll::Ready(result) = connection.as_mut().poll(cx) {
                    *ended = true;
                    why = result.err();
                }
            }
            match work.as_mut().poll(cx) {
                Poll::Ready(result) => Poll::Ready(Some(result)),
                // Nothing drives the request any more: it can never be answered.
                Poll::Pending if *ended => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            }
        });
        let answered = match limit {
            Some(limit) => runtime.block_on(async { tokio::time::timeout(limit, driven).await }),
            None => Ok(runtime.block_on(driven)),
        };
        match answered {
            Ok(Some(result)) => {
                self.answering.note(true);
                Ok(result?)
            }
            Ok(None) => Err(why.map_or(StoreError::Busy, StoreError::from)),
            Err(_) => {
                self.answering.note(false);
                self.broken = !keeps;
                Err(StoreError::NotAnswering(limit.unwrap_or_default()))
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let (Some(runtime), Some(connection)) = (self.runtime.take(), self.connection.take())
        else {
            return;
        };
        // A broken or closed connection has nothing more to say. A healthy one says
        // goodbye (its client, dropped first, closed the channel, so the connection
        // sends Terminate and ends) on a thread of its own, for at most a moment: a
        // runtime cannot be driven from a thread that drives async tasks.
        if self.broken || self.ended {
            drop(connection);
            runtime.shutdown_background();
            return;
        }
        let _ = std::thread::Builder::new()
            .name("postgres-goodbye".into())
            .spawn(move || {
                let _ = runtime.block_on(async { tokio::time::timeout(GOODBYE, connection).await });
            });
    }
}

/// The question that tells a new connection which session it is.
const SESSION: &str =
    "SELECT pg_backend_pid(), backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()";

/// How long a closing connection may take to say goodbye.
const GOODBYE: Duration = Duration::from_millis(500);

/// The connection settings of `url` with the time limits of `options`: the
/// connect timeout, TCP keepalives (on this side and, as session settings, on the
/// server's), and `statement_timeout` and `lock_timeout` as settings of each
/// session (so that every statement, a migration's too, has them); TLS as its
/// `sslmode` and `sslrootcert` say (`tls.rs`); the deadlines on this side
/// ([`Deadlines::of`]).
///
/// Errors: a URL that cannot be used, a `sslmode` not known, a `sslrootcert` that
/// cannot be read; each one sentence.
pub fn config(url: &str, options: &PgOptions) -> Result<Connector, String> {
    let (url, tls) = tls::split(url)?;
    let mut config: Config = url
        .parse()
        .map_err(|e| format!("--db is not a Postgres URL that can be used: {e}"))?;
    config.ssl_mode(tls.mode());
    // The server's side of the keepalives too (settings each session may make):
    // a control plane whose machine died holds its serving lock only until the
    // server finds its connection dead, about a minute, not the system's 2 hours.
    let settings = format!(
        "-c statement_timeout={} -c lock_timeout={} -c tcp_keepalives_idle={} \
         -c tcp_keepalives_interval={} -c tcp_keepalives_count={}",
        options.statement_timeout.as_millis(),
        options.lock_timeout.as_millis(),
        options.keepalive_idle.as_secs().max(1),
        options.keepalive_interval.as_secs().max(1),
        options.keepalive_count
    );
    config
        .connect_timeout(options.connect_timeout)
        .keepalives(true)
        .keepalives_idle(options.keepalive_idle)
        .keepalives_interval(options.keepalive_interval)
        .keepalives_retries(options.keepalive_count)
        .application_name(application_name())
        .options(&settings);
    Ok(Connector {
        config,
        tls: tls.connector()?,
        deadlines: Deadlines::of(options),
        answering: Answering::default(),
    })
}

/// How this process's sessions name themselves in `pg_stat_activity`:
/// `stateous <pid>`, so that an operator (or a test) can tell two control planes'
/// sessions apart, e.g. to end a stopped one's with `pg_terminate_backend`.
pub fn application_name() -> String {
    format!("stateous {}", std::process::id())
}

/// The pool's manager: it makes connections with the limits, and drops closed ones.
#[derive(Debug, Clone)]
pub struct Manager {
    connector: Connector,
}

impl Manager {
    /// A manager that connects with `connector`.
    pub fn new(connector: Connector) -> Manager {
        Manager { connector }
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = StoreError;

    fn connect(&self) -> Result<PgConn, StoreError> {
        PgConn::connect(&self.connector).map_err(|e| {
            tracing::warn!("cannot connect to Postgres: {e}");
            match e {
                Unconnected::Silent(limit) => {
                    self.connector.answering.note(false);
                    StoreError::NotAnswering(limit)
                }
                _ => StoreError::Busy,
            }
        })
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), StoreError> {
        conn.batch("")
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.is_closed()
    }
}
