//! `stateous serve`'s flags as the command line gives them, and the checks that make
//! them options: the address to listen on, the database URL, the timings.
//!
//! The wording of the `--listen` refusal and the defaults are the reference's
//! (`docs/reference/cli.md`, "stateous serve"; SPEC section 2 for the timings).

use std::net::{IpAddr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

use stateous_shared::durations::parse_duration;

/// The flags of `stateous serve`, as text, before any check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeArgs {
    /// The graph file.
    pub graph: PathBuf,
    /// `--db`: the database URL. Default [`DEFAULT_DB`].
    pub db: String,
    /// `--listen`: `HOST:PORT`. Default [`DEFAULT_LISTEN`].
    pub listen: String,
    /// `--socket`: the Unix socket's path; `None` for the default path.
    pub socket: Option<PathBuf>,
    /// `--lease`: how long a claimed task's lease lasts. Default `2m`.
    pub lease: String,
    /// `--tick`: the time between two ticks of the clock. Default `1s`.
    pub tick: String,
    /// `--busy-timeout`: how long SQLite waits for another process's write lock.
    /// Default `30s`.
    pub busy_timeout: String,
    /// `--stale-after`: how long a hold on the database lasts without renewal
    /// before a new control plane may take it. Default `30s`.
    pub stale_after: String,
}

/// The database when `--db` names none: `stateous.db` in the current folder.
pub const DEFAULT_DB: &str = "sqlite:///stateous.db";
/// The address when `--listen` names none.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The default lease of a claimed task (SPEC section 2).
pub const DEFAULT_LEASE: &str = "2m";
/// The default time between two ticks of the clock (SPEC section 2).
pub const DEFAULT_TICK: &str = "1s";
/// The default time SQLite waits for the write lock (SPEC section 2).
pub const DEFAULT_BUSY_TIMEOUT: &str = "30s";
/// The default time after which an unrenewed hold on the database is stale.
pub const DEFAULT_STALE_AFTER: &str = "30s";

impl ServeArgs {
    /// The flags with their defaults, for `graph`.
    pub fn new(graph: PathBuf) -> ServeArgs {
        ServeArgs {
            graph,
            db: DEFAULT_DB.into(),
            listen: DEFAULT_LISTEN.into(),
            socket: None,
            lease: DEFAULT_LEASE.into(),
            tick: DEFAULT_TICK.into(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT.into(),
            stale_after: DEFAULT_STALE_AFTER.into(),
        }
    }
}

/// The timings of a control plane, each from its flag or environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// A claimed task's lease.
    pub lease: Duration,
    /// The time between two ticks of the clock.
    pub tick: Duration,
    /// How long SQLite waits for the write lock.
    pub busy_timeout: Duration,
    /// How long an unrenewed hold on the database lasts.
    pub stale_after: Duration,
}

impl Timings {
    /// The timings of `args`, or the sentence of the first that is wrong.
    pub fn parse(args: &ServeArgs) -> Result<Timings, String> {
        Ok(Timings {
            lease: flag_duration("--lease", &args.lease)?,
            tick: flag_duration("--tick", &args.tick)?,
            busy_timeout: flag_duration("--busy-timeout", &args.busy_timeout)?,
            stale_after: flag_duration("--stale-after", &args.stale_after)?,
        })
    }
}

/// A timing flag: a workflow duration (`30s`, `2m`, `1h`, `1d`) or, so that tests
/// can run in moments, whole milliseconds (`500ms`). Zero is refused.
pub fn flag_duration(flag: &str, text: &str) -> Result<Duration, String> {
    if let Some(millis) = text.strip_suffix("ms") {
        let parsed = (!millis.is_empty() && millis.bytes().all(|b| b.is_ascii_digit()))
            .then(|| millis.parse::<u64>().ok())
            .flatten()
            .filter(|ms| *ms > 0 && *ms <= 86_400_000);
        return parsed.map(Duration::from_millis).ok_or_else(|| {
            format!("{flag} '{text}' is not a duration; write e.g. 500ms, 30s, 2m or 1h")
        });
    }
    parse_duration(text).map_err(|problem| format!("{flag}: {problem}"))
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

    /// The warning line when other computers can reach the API, else `None`.
    pub fn warning(&self) -> Option<String> {
        if LOCAL_HOSTS.contains(&self.host.as_str()) {
            return None;
        }
        Some(format!(
            "warning: other computers can reach {}, and the API has no authentication; \
             put a proxy or a VPN in front of it",
            self.host
        ))
    }

    /// Where a client on this computer reaches a listener on this host and on
    /// `port` (the port it got): "every address" becomes this computer's.
    pub fn url(&self, port: u16) -> String {
        let near = match self.host.as_str() {
            "0.0.0.0" => "127.0.0.1",
            "::" => "::1",
            host => host,
        };
        match near.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => format!("http://[{near}]:{port}"),
            _ => format!("http://{near}:{port}"),
        }
    }
}

/// The database a `--db` URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file.
    Sqlite(PathBuf),
}

/// `--db` as a database: `sqlite:///relative/path`, `sqlite:////absolute/path`.
/// A `postgresql://` URL is refused for now: this control plane does not speak
/// Postgres yet.
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
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    if scheme.is_some_and(|s| s == "postgres" || s.starts_with("postgresql")) {
        return Err(format!(
            "cannot open the database {}: Postgres is not supported yet; use a sqlite:/// URL",
            without_password(url)
        ));
    }
    Err(format!(
        "--db '{}' is not a database URL; write sqlite:///stateous.db (a file here) \
         or sqlite:////absolute/path.db",
        without_password(url)
    ))
}

/// A URL as a message shows it: its password, if any, as `***`.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Some((credentials, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_string(),
    }
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
        assert_eq!(Listen::parse("127.0.0.1:1").unwrap().warning(), None);
        assert_eq!(Listen::parse("[::1]:1").unwrap().warning(), None);
        let wide = Listen::parse("0.0.0.0:8080").unwrap();
        assert!(wide
            .warning()
            .unwrap()
            .starts_with("warning: other computers can reach 0.0.0.0"));
        assert_eq!(wide.url(8080), "http://127.0.0.1:8080");
        assert_eq!(Listen::parse("[::]:1").unwrap().url(5), "http://[::1]:5");
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
        let postgres = parse_database("postgresql://u:secret@h/db").unwrap_err();
        assert!(postgres.contains("not supported yet") && !postgres.contains("secret"));
    }

    #[test]
    fn timing_flags_take_durations_and_milliseconds() {
        assert_eq!(
            flag_duration("--tick", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            flag_duration("--lease", "2m").unwrap(),
            Duration::from_secs(120)
        );
        for bad in ["0ms", "ms", "1.5s", "0s", "soon", "-1ms"] {
            assert!(
                flag_duration("--lease", bad)
                    .unwrap_err()
                    .contains("--lease"),
                "{bad}"
            );
        }
        let defaults = Timings::parse(&ServeArgs::new("g.json".into())).unwrap();
        assert_eq!(defaults.lease, Duration::from_secs(120));
        assert_eq!(defaults.tick, Duration::from_secs(1));
        assert_eq!(defaults.busy_timeout, Duration::from_secs(30));
    }
}
