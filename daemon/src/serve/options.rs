//! `stateous serve`'s flags as the command line gives them, and the checks that make
//! them options: the address to listen on, the database URL, the timings.
//!
//! The wording of the `--listen` refusal and the defaults are the reference's
//! (`docs/reference/cli.md`; the timings in `docs/reference/bounds.md`).

use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use stateous_shared::durations::{parse_timing, TimingOf};

use super::args::ServeArgs;
use crate::control::notify_retain::NotifyRetainPass;
use crate::control::prune::RetainPass;
pub use crate::store::backend::{without_password, Database};
use crate::store::postgres::PgOptions;

/// The database when `--db` names none: `stateous.db` in the current folder.
pub const DEFAULT_DB: &str = "sqlite:///stateous.db";
/// The address when `--listen` names none.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The default lease of a claimed task, as the reference's (`docs/reference/bounds.md`).
pub const DEFAULT_LEASE: &str = "2m";
/// The default time between two ticks of the clock, as the reference's.
pub const DEFAULT_TICK: &str = "1s";
/// The default time SQLite waits for the write lock, as the reference's.
pub const DEFAULT_BUSY_TIMEOUT: &str = "30s";
/// The default of the old `--stale-after` (unused).
pub const DEFAULT_STALE_AFTER: &str = "30s";
/// Postgres: how long making a connection may take (`docs/guarantees.md`, "Time limits
/// on each database").
pub const DEFAULT_CONNECT_TIMEOUT: &str = "10s";
/// Postgres: how long one statement may run.
pub const DEFAULT_STATEMENT_TIMEOUT: &str = "30s";
/// Postgres: how long a statement may wait for a lock, a token's too.
pub const DEFAULT_LOCK_TIMEOUT: &str = "10s";
/// Postgres: TCP keepalives, the first probe after this long without traffic.
pub const DEFAULT_KEEPALIVE_IDLE: &str = "30s";
/// Postgres: TCP keepalives, then a probe this often.
pub const DEFAULT_KEEPALIVE_INTERVAL: &str = "10s";
/// Postgres: TCP keepalives, this many unanswered probes end a connection.
pub const DEFAULT_KEEPALIVE_COUNT: &str = "3";
/// Postgres: how many connections the pool keeps.
pub const DEFAULT_POOL_SIZE: &str = "16";
/// How many TCP connections are open at most (`api::server::DEFAULT_MAX_CONNECTIONS`).
pub const DEFAULT_MAX_CONNECTIONS: &str = "1024";
/// How long a request head may take (`api::server::DEFAULT_HEADER_WITHIN`).
pub const DEFAULT_HEADER_TIMEOUT: &str = "10s";
/// The default time between two passes of retention.
pub const DEFAULT_RETAIN_EVERY: &str = "1m";

/// The TLS files of `args`, `None` without `--tls-cert`.
///
/// Errors: `--tls-cert` without `--tls-key` or the other way round, and
/// `--tls-client-ca` without `--tls-cert`, each in one sentence.
pub fn tls_files(args: &ServeArgs) -> Result<Option<crate::api::tls::TlsFiles>, String> {
    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Ok(Some(crate::api::tls::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: args.tls_client_ca.clone(),
        })),
        (Some(_), None) => Err("--tls-cert needs --tls-key, the certificate's private key".into()),
        (None, Some(_)) => {
            Err("--tls-key needs --tls-cert, the certificate it is the key of".into())
        }
        (None, None) if args.tls_client_ca.is_some() => Err(
            "--tls-client-ca needs --tls-cert and --tls-key: client certificates are asked \
             for over HTTPS only"
                .into(),
        ),
        (None, None) => Ok(None),
    }
}

/// The timings of a control plane, each from its flag or environment variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Timings {
    /// A claimed task's lease.
    pub lease: Duration,
    /// The time between two ticks of the clock.
    pub tick: Duration,
    /// How long SQLite waits for the write lock.
    pub busy_timeout: Duration,
    /// Postgres: the time limits of each connection and the pool's size.
    pub postgres: PgOptions,
    /// At most this many TCP connections open at once.
    pub max_connections: usize,
    /// A request head (and a TLS handshake) must come within this long.
    pub header_timeout: Duration,
    /// `--retain-ended`: what each pass of retention prunes, and the time between
    /// two passes; `None`: no retention.
    pub retention: Option<(RetainPass, Duration)>,
    /// The notifications' sender (`--notify-*`).
    pub notify: crate::notify::sender::SenderOptions,
    /// `--notify-keep`: what each pass of the notifications' retention deletes,
    /// and the time between two passes (`--retain-every`).
    pub notify_retention: (NotifyRetainPass, Duration),
}

impl Timings {
    /// The timings of `args`, or the sentence of the first that is wrong.
    pub fn parse(args: &ServeArgs) -> Result<Timings, String> {
        // Still checked, so that a typo is not silently taken; no longer used.
        flag_duration("--stale-after", &args.stale_after)?;
        Ok(Timings {
            lease: flag_duration("--lease", &args.lease)?,
            tick: flag_duration("--tick", &args.tick)?,
            busy_timeout: flag_duration("--busy-timeout", &args.busy_timeout)?,
            postgres: PgOptions {
                connect_timeout: flag_duration("--connect-timeout", &args.connect_timeout)?,
                statement_timeout: flag_duration("--statement-timeout", &args.statement_timeout)?,
                lock_timeout: flag_duration("--lock-timeout", &args.lock_timeout)?,
                keepalive_idle: flag_duration("--keepalive-idle", &args.keepalive_idle)?,
                keepalive_interval: flag_duration(
                    "--keepalive-interval",
                    &args.keepalive_interval,
                )?,
                keepalive_count: flag_count("--keepalive-count", &args.keepalive_count, 1..=100)?,
                pool: flag_count("--pool-size", &args.pool_size, 1..=1000)?,
            },
            max_connections: flag_count("--max-connections", &args.max_connections, 1..=1_000_000)?
                as usize,
            header_timeout: flag_duration("--header-timeout", &args.header_timeout)?,
            retention: retention(args)?,
            notify: crate::notify::sender::SenderOptions {
                timeout: flag_duration("--notify-timeout", &args.notify_timeout)?,
                dead_after: flag_duration("--notify-dead-after", &args.notify_dead_after)?,
                first_backoff: flag_duration("--notify-backoff", &args.notify_backoff)?,
                ..Default::default()
            },
            notify_retention: (
                NotifyRetainPass {
                    keep: flag_duration("--notify-keep", &args.notify_keep)?,
                    window: super::retain::NOTIFY_WINDOW,
                    pause: super::retain::PAUSE,
                },
                flag_duration("--retain-every", &args.retain_every)?,
            ),
        })
    }
}

/// The retention of `--retain-ended`, `--retain-every` and `--archive`.
fn retention(args: &ServeArgs) -> Result<Option<(RetainPass, Duration)>, String> {
    let every = flag_duration("--retain-every", &args.retain_every)?;
    let Some(after) = &args.retain_ended else {
        if args.archive.is_some() {
            return Err(
                "--archive goes with --retain-ended: it keeps the histories \
                        that retention prunes"
                    .to_string(),
            );
        }
        return Ok(None);
    };
    let after = flag_duration("--retain-ended", after)?;
    if let Some(dir) = &args.archive {
        crate::archive::check_folder(dir)?;
    }
    let pass = RetainPass {
        after,
        archive: args.archive.clone(),
        batch: super::retain::BATCH,
        pause: super::retain::PAUSE,
    };
    Ok(Some((pass, every)))
}

/// A whole-number flag within `range`.
fn flag_count(flag: &str, text: &str, range: std::ops::RangeInclusive<u32>) -> Result<u32, String> {
    text.parse::<u32>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            format!(
                "{flag} '{text}' is not a whole number from {} to {}",
                range.start(),
                range.end()
            )
        })
}

/// How many threads answer requests: one fewer than the cores (at least one), so that
/// the SQLite writer's thread, or the Postgres server beside the daemon, has a core to
/// itself; `TOKIO_WORKER_THREADS` still sets it. Measured: on 2 cores, with two request
/// threads the writer and they waited for each other's core; one request thread gave
/// about 15% more tokens/s through `orders` and a lower p99 (`farm-bench`, 13 pairs of
/// `stateous bench`), Postgres no less.
pub fn request_threads() -> Option<usize> {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    Some(cores.saturating_sub(1).max(1))
}

/// A timing flag: a workflow duration (`30s`, `2m`, `1h`, `1d`) or, so that tests
/// can run in moments, whole milliseconds (`500ms`). Zero and a negative value
/// (`-1s`) are refused as not more than 0.
fn flag_duration(flag: &str, text: &str) -> Result<Duration, String> {
    parse_timing(text, TimingOf::Flag(flag))
}

/// Where to listen: the host to bind (an IPv6 address without brackets) and the
/// port (0: the system picks one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// The host, e.g. `127.0.0.1`, `::1`, `0.0.0.0` or a name.
    pub host: String,
    /// The port.
    pub port: u16,
}

/// The hosts only this computer reaches: no warning for them.
const LOCAL_HOSTS: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

impl Listen {
    /// `--listen` as a host and a port, as the reference reads it: the port is 1
    /// to 5 digits up to 65535; an empty host is `127.0.0.1`; an IPv6 address
    /// is written in brackets.
    pub fn parse(listen: &str) -> Result<Listen, String> {
        let usage = || {
            format!(
                "--listen '{listen}' is not HOST:PORT with a port from 0 to 65535; \
                 write, for example, 127.0.0.1:8080 or [::1]:8080"
            )
        };
        let (host, port) = listen.rsplit_once(':').ok_or_else(usage)?;
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(usage());
        }
        let port: u16 = port.parse().map_err(|_| usage())?;
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            let address: Ipv6Addr = inner.parse().map_err(|_| usage())?;
            return Ok(Listen {
                host: address.to_string(),
                port,
            });
        }
        if host.contains([':', '[', ']']) {
            return Err(usage());
        }
        let host = if host.is_empty() { "127.0.0.1" } else { host };
        Ok(Listen {
            host: host.to_string(),
            port,
        })
    }

    /// Whether only this computer reaches the address: `localhost`, or a loopback
    /// address (all of 127.0.0.0/8, and ::1).
    pub fn is_local(&self) -> bool {
        LOCAL_HOSTS.contains(&self.host.as_str())
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|address| address.is_loopback())
    }

    /// The refusal of an address other computers reach, unless the control plane
    /// has at least one access key (`keys`) and serves TLS (`tls`), or is told
    /// `insecure` (`docs/guarantees.md`, "Access"). One sentence that says how to
    /// fix it; `None` when it may listen.
    pub fn refusal(&self, keys: bool, tls: bool, insecure: bool) -> Option<String> {
        if self.is_local() || insecure || (keys && tls) {
            return None;
        }
        let (missing, fix) = match (keys, tls) {
            (false, false) => (
                "no access key and no TLS",
                "make an access key over the socket (stateous access add NAME --role admin) \
                 and serve TLS with --tls-cert and --tls-key",
            ),
            (false, true) => (
                "no access key",
                "make an access key over the socket (stateous access add NAME --role admin)",
            ),
            _ => ("no TLS", "serve TLS with --tls-cert and --tls-key"),
        };
        Some(format!(
            "other computers can reach {}, and this control plane has {missing}: {fix}, \
             listen on 127.0.0.1, or pass --insecure to serve it open anyway",
            self.host
        ))
    }

    /// The warning line when other computers can reach the API without a key, or
    /// over plain HTTP, where keys travel in clear (`--insecure`); else `None`.
    pub fn warning(&self, keys: bool, tls: bool) -> Option<String> {
        if self.is_local() || (keys && tls) {
            return None;
        }
        if keys {
            return Some(format!(
                "warning: other computers can reach {}, and the API is plain HTTP \
                 (--insecure): access keys travel in clear; serve TLS with --tls-cert and \
                 --tls-key",
                self.host
            ));
        }
        Some(format!(
            "warning: other computers can reach {}, and the API has no access key \
             (--insecure); make one over the socket with stateous access add",
            self.host
        ))
    }

    /// The names a client on this computer reaches an address of every interface
    /// (`0.0.0.0`, `::`) by, the one to say first: its loopback address, then
    /// `localhost`. None for another address.
    pub fn near_names(&self) -> &'static [&'static str] {
        match self.host.as_str() {
            "0.0.0.0" => &["127.0.0.1", "localhost"],
            "::" => &["::1", "localhost"],
            _ => &[],
        }
    }

    /// Where `serve` says it serves, after `serving on ` (or `standby on `): the
    /// URL of this address; for an address of every interface, that it listens on
    /// all of them, and the URL of `near` (one of [`Listen::near_names`]), which
    /// a client on this computer uses, or, when `near` is `None` (a certificate
    /// that names none of them), that such a client uses a name the certificate
    /// holds.
    pub fn announced(&self, scheme: &str, port: u16, near: Option<&str>) -> String {
        let Some(loopback) = self.near_names().first() else {
            return self.url_of(scheme, port);
        };
        let every = format!(
            "{}, every interface of this computer",
            with_port(&self.host, port)
        );
        match near {
            Some(name) => format!(
                "{every}; from this computer: {scheme}://{}",
                with_port(name, port)
            ),
            None => format!(
                "{every}; its certificate names neither {loopback} nor localhost, so a client \
                 on this computer uses a name it holds, or the Unix socket"
            ),
        }
    }

    /// Where a client on this computer reaches a listener on this host and on
    /// `port` (the port it got): "every address" becomes this computer's.
    pub fn url(&self, port: u16) -> String {
        self.url_of("http", port)
    }

    /// [`Listen::url`] with the scheme `scheme` (`http` or `https`).
    pub fn url_of(&self, scheme: &str, port: u16) -> String {
        let near = match self.host.as_str() {
            "0.0.0.0" => "127.0.0.1",
            "::" => "::1",
            host => host,
        };
        format!("{scheme}://{}", with_port(near, port))
    }
}

/// `HOST:PORT`, an IPv6 address in brackets.
fn with_port(host: &str, port: u16) -> String {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(_)) => format!("[{host}]:{port}"),
        _ => format!("{host}:{port}"),
    }
}

/// `--db` as a database: `sqlite:///relative/path`, `sqlite:////absolute/path`, or
/// `postgresql://USER:PASSWORD@HOST:PORT/NAME` (also `postgres://`).
pub fn parse_database(url: &str) -> Result<Database, String> {
    if let Some(path) = url.strip_prefix("sqlite:///") {
        if path.is_empty() || path == ":memory:" {
            return Err(format!(
                "--db '{url}' names no database file; write sqlite:///stateous.db or sqlite:////absolute/path.db"
            ));
        }
        if path.contains('?') {
            return Err(format!(
                "--db '{url}' has options after '?', which this control plane does not take"
            ));
        }
        return Ok(Database::Sqlite(PathBuf::from(path)));
    }
    if url.starts_with("postgresql://") || url.starts_with("postgres://") {
        return Ok(Database::Postgres(url.to_string()));
    }
    Err(format!(
        "--db '{}' is not a database URL; write sqlite:///stateous.db (a file here), \
         sqlite:////absolute/path.db or postgresql://USER:PASSWORD@HOST:PORT/NAME",
        without_password(url)
    ))
}

/// A SQLite database's folder must exist: the file and its lock file are made in
/// it, but a missing folder is the user's to make (a typo is not made silently).
pub fn check_database_folder(database: &Database) -> Result<(), String> {
    let Database::Sqlite(path) = database else {
        return Ok(());
    };
    let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    if folder.is_dir() {
        return Ok(());
    }
    let problem = if folder.exists() {
        "is not a folder"
    } else {
        "does not exist"
    };
    // `sqlite:///var/tmp/x.db` is `var/tmp/x.db` here: say so when the folder
    // exists from the root.
    let absolute = Path::new("/").join(path);
    let hint = if path.is_relative() && absolute.parent().is_some_and(Path::is_dir) {
        format!(
            " (an absolute path takes a fourth slash: sqlite:///{})",
            absolute.display()
        )
    } else {
        String::new()
    };
    Err(format!(
        "cannot open the database {}: its folder {} {problem}; make it first, or give \
         another --db{hint}",
        path.display(),
        folder.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_takes_host_and_port_like_the_reference() {
        let cases = [
            ("127.0.0.1:8080", "127.0.0.1", 8080),
            (":9000", "127.0.0.1", 9000),
            ("[::1]:0", "::1", 0),
            ("[0:0:0:0:0:0:0:1]:80", "::1", 80),
            ("0.0.0.0:65535", "0.0.0.0", 65535),
            ("localhost:1", "localhost", 1),
        ];
        for (text, host, port) in cases {
            assert_eq!(
                Listen::parse(text).unwrap(),
                Listen {
                    host: host.into(),
                    port
                },
                "{text}"
            );
        }
        for bad in [
            "0.0.0.0",
            "x:65536",
            "x:123456",
            "x:",
            "::1:80",
            "[nope]:80",
            "x:-1",
            "x:８０",
        ] {
            assert!(
                Listen::parse(bad).unwrap_err().contains("is not HOST:PORT"),
                "{bad}"
            );
        }
    }

    #[test]
    fn only_a_wide_address_warns_and_urls_name_this_computer() {
        assert_eq!(
            Listen::parse("127.0.0.1:1").unwrap().warning(false, false),
            None
        );
        assert_eq!(
            Listen::parse("[::1]:1").unwrap().warning(false, false),
            None
        );
        assert_eq!(
            Listen::parse("127.0.0.2:1").unwrap().warning(false, false),
            None
        );
        let wide = Listen::parse("0.0.0.0:8080").unwrap();
        assert!(wide
            .warning(false, true)
            .unwrap()
            .starts_with("warning: other computers can reach 0.0.0.0"));
        assert_eq!(wide.warning(true, true), None);
        assert!(wide
            .warning(true, false)
            .unwrap()
            .contains("travel in clear"));
        let no_tls = wide.refusal(true, false, false).unwrap();
        assert!(!no_tls.contains("access add"), "{no_tls}");
        assert!(wide
            .refusal(false, false, false)
            .unwrap()
            .contains("--insecure"));
        assert!(wide.refusal(true, false, false).unwrap().contains("no TLS"));
        assert_eq!(wide.refusal(true, true, false), None);
        assert_eq!(wide.refusal(false, false, true), None);
        assert_eq!(
            Listen::parse("127.0.0.1:1")
                .unwrap()
                .refusal(false, false, false),
            None
        );
        assert_eq!(wide.url(8080), "http://127.0.0.1:8080");
        assert_eq!(Listen::parse("[::]:1").unwrap().url(5), "http://[::1]:5");
    }

    #[test]
    fn an_address_of_every_interface_is_announced_as_such_with_a_url_for_this_computer() {
        let wide = Listen::parse("0.0.0.0:0").unwrap();
        assert_eq!(
            wide.announced("http", 8080, Some("127.0.0.1")),
            "0.0.0.0:8080, every interface of this computer; from this computer: \
             http://127.0.0.1:8080"
        );
        assert!(wide.announced("https", 8443, None).ends_with(
            "its certificate names neither 127.0.0.1 nor localhost, so a client \
                        on this computer uses a name it holds, or the Unix socket"
        ));
        let six = Listen::parse("[::]:0").unwrap();
        assert_eq!(
            six.announced("https", 5, Some("localhost")),
            "[::]:5, every interface of this computer; from this computer: https://localhost:5"
        );
        let here = Listen::parse("127.0.0.1:0").unwrap();
        assert!(here.near_names().is_empty());
        assert_eq!(here.announced("http", 5, None), "http://127.0.0.1:5");
        let named = Listen::parse("[::1]:0").unwrap();
        assert_eq!(named.announced("https", 5, None), "https://[::1]:5");
    }

    #[test]
    fn sqlite_urls_name_relative_and_absolute_files() {
        assert_eq!(
            parse_database("sqlite:///stateous.db").unwrap(),
            Database::Sqlite("stateous.db".into())
        );
        assert_eq!(
            parse_database("sqlite:////var/lib/s.db").unwrap(),
            Database::Sqlite("/var/lib/s.db".into())
        );
        assert!(parse_database("sqlite:///").is_err());
        assert!(parse_database("mysql://x")
            .unwrap_err()
            .contains("is not a database URL"));
        assert_eq!(
            parse_database("postgresql://u:secret@h/db").unwrap(),
            Database::Postgres("postgresql://u:secret@h/db".into())
        );
    }

    #[test]
    fn a_sqlite_database_in_a_missing_folder_names_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nodir");
        let db = Database::Sqlite(missing.join("x.db"));
        let problem = check_database_folder(&db).unwrap_err();
        assert!(
            problem.contains(&format!("its folder {} does not exist", missing.display())),
            "{problem}"
        );
        // Written with three slashes, a folder that exists from the root.
        let relative = missing
            .parent()
            .unwrap()
            .strip_prefix("/")
            .unwrap()
            .join("x.db");
        let problem = check_database_folder(&Database::Sqlite(relative)).unwrap_err();
        let four = format!(
            "a fourth slash: sqlite:///{}",
            dir.path().join("x.db").display()
        );
        assert!(problem.contains(&four), "{problem}");
        assert!(!check_database_folder(&db).unwrap_err().contains("slash"));
        std::fs::write(&missing, "a file").unwrap();
        let problem = check_database_folder(&db).unwrap_err();
        assert!(problem.contains("is not a folder"), "{problem}");
        for fine in [
            Database::Sqlite(dir.path().join("x.db")),
            Database::Sqlite("x.db".into()),
            Database::Postgres("postgresql://h/db".into()),
        ] {
            assert_eq!(check_database_folder(&fine), Ok(()));
        }
    }

    #[test]
    fn retention_is_off_by_default_and_its_flags_are_checked() {
        let mut args = ServeArgs::new("g.json".into());
        assert_eq!(Timings::parse(&args).unwrap().retention, None);
        args.archive = Some("kept".into());
        assert!(Timings::parse(&args)
            .unwrap_err()
            .starts_with("--archive goes with --retain-ended"));
        args.retain_ended = Some("30d".into());
        let dir = tempfile::tempdir().unwrap();
        args.archive = Some(dir.path().join("nope"));
        assert!(Timings::parse(&args)
            .unwrap_err()
            .contains("does not exist or is not a folder"));
        args.archive = Some(dir.path().to_path_buf());
        let (pass, every) = Timings::parse(&args).unwrap().retention.unwrap();
        assert_eq!(pass.after, Duration::from_secs(30 * 86_400));
        assert_eq!(every, Duration::from_secs(60));
        args.retain_ended = Some("-1d".into());
        assert!(Timings::parse(&args)
            .unwrap_err()
            .starts_with("--retain-ended must be more than 0"));
    }

    #[test]
    fn the_notifications_are_kept_7_days_by_default_and_the_flag_is_checked() {
        let mut args = ServeArgs::new("g.json".into());
        let (pass, every) = Timings::parse(&args).unwrap().notify_retention;
        assert_eq!(pass.keep, Duration::from_secs(7 * 86_400));
        assert_eq!(every, Duration::from_secs(60));
        args.notify_keep = "36h".into();
        let (pass, _) = Timings::parse(&args).unwrap().notify_retention;
        assert_eq!(pass.keep, Duration::from_secs(36 * 3600));
        args.notify_keep = "0s".into();
        assert!(Timings::parse(&args)
            .unwrap_err()
            .starts_with("--notify-keep must be more than 0"));
    }

    #[test]
    fn timing_flags_are_read_with_their_defaults() {
        // The forms each flag takes, and their refusals: `durations::parse_timing`.
        let mut args = ServeArgs::new("g.json".into());
        args.tick = "500ms".into();
        assert_eq!(
            Timings::parse(&args).unwrap().tick,
            Duration::from_millis(500)
        );
        args.lease = "0s".into();
        assert_eq!(
            Timings::parse(&args).unwrap_err(),
            "--lease must be more than 0, not '0s'; write e.g. 500ms, 30s, 2m or 1h"
        );
        let defaults = Timings::parse(&ServeArgs::new("g.json".into())).unwrap();
        assert_eq!(defaults.lease, Duration::from_secs(120));
        assert_eq!(defaults.tick, Duration::from_secs(1));
        assert_eq!(defaults.busy_timeout, Duration::from_secs(30));
    }
}
