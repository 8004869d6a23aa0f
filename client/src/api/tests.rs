//! The client's own checks of URLs and answers.

use super::*;

#[test]
fn urls_with_bad_hosts_are_one_sentence() {
    for good in [
        "http://127.0.0.1:8080",
        "http://localhost:1/",
        "http://[::1]:8080",
        "http://cp.internal:8080",
        "unix:///tmp/s.sock",
    ] {
        assert!(Client::new(good).is_ok(), "{good}");
    }
    let error = Client::new("http://my host:8000").unwrap_err().to_string();
    assert_eq!(
        error,
        "http://my host:8000 has a host that is not valid: a host has only letters, \
         digits, '-' and '.', or is an IP address"
    );
    let error = Client::new("http://[::1").unwrap_err().to_string();
    assert!(error.starts_with("http://[::1 is not a URL"), "{error}");
    assert!(Client::new("ftp://x:1").is_err());
    let error = Client::new("https://my host").unwrap_err().to_string();
    assert!(
        error.starts_with("https://my host has a host that is not valid"),
        "{error}"
    );
    assert!(Client::new("http://x:99999").is_err());
    assert_eq!(Client::new("http://x:1/").unwrap().url(), "http://x:1");
}

#[test]
fn a_fire_answer_is_a_token_or_a_duplicate() {
    let token = serde_json::json!({"token": "T", "state": "s", "status": "active",
        "visit": 1, "context": {}, "entered_at": "2026-10-07T05:43:39Z"});
    let plain = fired(token.clone()).unwrap();
    assert!(!plain.duplicate);
    let again = fired(serde_json::json!({"duplicate": true, "token": token})).unwrap();
    assert!(again.duplicate);
    assert_eq!(again.token, plain.token);
    assert!(fired(serde_json::json!([1])).is_err());
}
