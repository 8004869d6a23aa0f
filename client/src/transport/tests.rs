//! The endpoints a URL names: TCP, a Unix socket or https.

use super::*;

#[test]
fn urls_name_tcp_unix_or_https_endpoints() {
    assert_eq!(
        Endpoint::parse("http://127.0.0.1:8080").unwrap(),
        Endpoint::Tcp {
            authority: "127.0.0.1:8080".into()
        }
    );
    assert_eq!(
        Endpoint::parse("http://localhost/").unwrap(),
        Endpoint::Tcp {
            authority: "localhost:80".into()
        }
    );
    assert_eq!(
        Endpoint::parse("unix:///run/s.sock").unwrap(),
        Endpoint::Unix {
            path: "/run/s.sock".into()
        }
    );
    assert_eq!(
        Endpoint::parse("https://stateous.example").unwrap(),
        Endpoint::Https {
            authority: "stateous.example:443".into(),
            host: "stateous.example".into(),
        }
    );
    assert_eq!(
        Endpoint::parse("https://[::1]:8443/").unwrap(),
        Endpoint::Https {
            authority: "[::1]:8443".into(),
            host: "::1".into(),
        }
    );
    assert!(Endpoint::parse("https://").is_err());
    assert!(Endpoint::parse("https://x/path").is_err());
    assert!(Endpoint::parse("ftp://x").is_err());
    assert!(Endpoint::parse("unix://").is_err());
}
