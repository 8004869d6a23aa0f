//! The connection flags every command that talks to a daemon takes (`token`,
//! `access`, `tui`, `bench`, `clock`, `supervise`), in one struct flattened into
//! each ([`ConnectArgs`]): `--url`, the access key flags, and the TLS flags, what
//! an `https://` control plane is trusted by and the certificate shown to one
//! that asks for it (`docs/reference/cli.md`, "Clients over https"); and how a
//! comma-separated flag's items are read ([`list_item`]).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use stateous_client::{Connection, Identity, TlsOptions};

use crate::access_args::AccessArgs;

/// One item of a comma-separated flag (`--states "a, b"`), without the spaces
/// around it: clap's `value_parser` of every such flag.
pub fn list_item(text: &str) -> Result<String, String> {
    Ok(text.trim().to_string())
}

/// `name`, when a `what` (`schedule`, `limit`, `subscription`) can have it
/// (`stateous_shared::limits::is_name`). Else none has it (adding one refuses
/// such a name), and the command says so before it sends a request: in the
/// request's path, a name with a `/` would reach no route at all, since the
/// control plane decodes a path before it matches it. An empty name goes on, to
/// the client's own sentence for it (`the name given is empty`).
pub fn named(what: &str, name: String) -> Result<String, String> {
    if name.is_empty() || stateous_shared::limits::is_name(&name) {
        Ok(name)
    } else {
        Err(stateous_shared::limits::no_such_name(what, &name))
    }
}

/// `--url`, declared once with its help, for every command that talks to a
/// daemon (`hooks bench` takes it alone).
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlArg {
    /// The control plane's URL: http(s)://HOST:PORT or unix:///PATH, or several
    /// separated by commas (a control plane and its standby): each is tried in
    /// turn when it refuses the connection or answers 503 not_serving or
    /// standby. Default: STATEOUS_URL (a list too), else the default socket when
    /// a daemon listens there, else http://127.0.0.1:8080 (`supervise` reads
    /// `url:` of stateous.yaml before STATEOUS_URL; `access` goes to the default
    /// socket, where the daemon's own user acts as admin).
    #[arg(long, global = true)]
    pub url: Option<String>,
}

/// `stateous token|schedule|notify|budget|limit ...`: the connection flags and `--json`, then the action.
#[derive(Args)]
pub struct CommandArgs<A: Subcommand> {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Print the control plane's JSON answer instead of the lines.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub action: A,
}

/// `--url`, `--access-key-file` and the TLS flags: how a command reaches a
/// daemon.
#[derive(Args, Debug, Clone, Default)]
pub struct ConnectArgs {
    #[command(flatten)]
    pub url: UrlArg,
    #[command(flatten)]
    pub access: AccessArgs,
    #[command(flatten)]
    pub tls: ClientTlsArgs,
}

impl ConnectArgs {
    /// The connection these flags name; one sentence when the access key's
    /// file or variable does not hold a key.
    pub fn connection(&self) -> Result<Connection, String> {
        Ok(Connection {
            url: self.url.url.clone(),
            key: self.access.key()?,
            tls: self.tls.options(),
        })
    }
}

/// `--cacert`, `--client-cert`, `--client-key`. Read only when an address is
/// `https://`; a file that cannot be used is refused in one sentence before any
/// request.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTlsArgs {
    /// A PEM file of CA certificates to trust for https:// addresses instead of
    /// the platform's roots (e.g. the CA that signed the daemon's --tls-cert).
    #[arg(long, value_name = "PEM", env = "STATEOUS_CACERT", global = true)]
    pub cacert: Option<PathBuf>,
    /// A client certificate (PEM) to show a daemon that asks for one
    /// (serve --tls-client-ca); needs --client-key.
    #[arg(long, value_name = "PEM", requires = "client_key", global = true)]
    pub client_cert: Option<PathBuf>,
    /// The private key (PEM) of --client-cert.
    #[arg(long, value_name = "PEM", requires = "client_cert", global = true)]
    pub client_key: Option<PathBuf>,
}

impl ClientTlsArgs {
    /// The client's TLS options of these flags.
    pub fn options(&self) -> TlsOptions {
        TlsOptions {
            ca_file: self.cacert.clone(),
            identity: match (&self.client_cert, &self.client_key) {
                (Some(cert), Some(key)) => Some(Identity {
                    cert_file: cert.clone(),
                    key_file: key.clone(),
                }),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        tls: ClientTlsArgs,
    }

    #[test]
    fn the_flags_make_the_options_and_a_lone_client_cert_is_refused() {
        let parsed = Command::try_parse_from([
            "x",
            "--cacert",
            "ca.pem",
            "--client-cert",
            "c.pem",
            "--client-key",
            "k.pem",
        ])
        .unwrap();
        let options = parsed.tls.options();
        assert_eq!(options.ca_file, Some(PathBuf::from("ca.pem")));
        assert_eq!(options.identity.unwrap().key_file, PathBuf::from("k.pem"));
        assert!(Command::try_parse_from(["x", "--client-cert", "c.pem"]).is_err());
    }
}
