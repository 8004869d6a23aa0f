//! One Postgres connection with its prepared statements, how connections are made with
//! their time limits and TLS (`docs/how-to/use-postgres.md`), and the pool's manager
//! (r2d2).
//!
//! A statement is prepared once per connection and kept: sent as text each time,
//! every query would cost the server a parse and the network a round trip more.

use std::collections::HashMap;

use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{tls, PgOptions};
use crate::store::{StoreError, StoreResult};

/// A connection and its prepared statements, keyed by their SQL.
pub struct PgConn {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl PgConn {
    /// Connect with `config` (see [`config`]).
    pub fn connect(config: &PgConfig) -> Result<PgConn, postgres::Error> {
        let client = match &config.tls {
            Some(tls) => config.config.connect(tls.clone())?,
            None => config.config.connect(NoTls)?,
        };
        Ok(PgConn {
            client,
            statements: HashMap::new(),
        })
    }

    /// The connection itself, for statements that need no preparing.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    fn prepared(&mut self, sql: &str) -> StoreResult<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    /// Run a statement that returns rows.
    pub fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Row>> {
        let statement = self.prepared(sql)?;
        Ok(self.client.query(&statement, params)?)
    }

    /// Run a statement; how many rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<u64> {
        let statement = self.prepared(sql)?;
        Ok(self.client.execute(&statement, params)?)
    }

    /// Run statements without parameters in one round trip (the simple protocol).
    pub fn batch(&mut self, sql: &str) -> StoreResult<()> {
        Ok(self.client.batch_execute(sql)?)
    }

    /// Whether the connection is known to be closed.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// How to connect: the settings, and the TLS connector when the URL asks for TLS.
/// Cheap to clone.
#[derive(Clone)]
pub struct PgConfig {
    /// The connection settings.
    pub config: Config,
    /// TLS of the URL's `sslmode` (`tls.rs`), `None` for plain TCP.
    pub tls: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConfig")
            .field("config", &self.config)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// The connection settings of `url` with the time limits of `options`: the
/// connect timeout, TCP keepalives (on this side and, as session settings, on the
/// server's), and `statement_timeout` and `lock_timeout` as settings of each
/// session (so that every statement, a migration's too, has them); TLS as its
/// `sslmode` and `sslrootcert` say (`tls.rs`).
///
/// Errors: a URL that cannot be used, a `sslmode` not known, a `sslrootcert` that
/// cannot be read; each one sentence.
pub fn config(url: &str, options: &PgOptions) -> Result<PgConfig, String> {
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
        .application_name(&application_name())
        .options(&settings);
    Ok(PgConfig {
        config,
        tls: tls.connector()?,
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
    config: PgConfig,
}

impl Manager {
    /// A manager that connects with `config`.
    pub fn new(config: PgConfig) -> Manager {
        Manager { config }
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = StoreError;

    fn connect(&self) -> Result<PgConn, StoreError> {
        PgConn::connect(&self.config).map_err(|e| {
            tracing::warn!("cannot connect to Postgres: {e}");
            StoreError::Busy
        })
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), StoreError> {
        conn.batch("")
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.is_closed()
    }
}
