//! [`AccessKey`]: the secret a client sends as `Authorization: Bearer SECRET` on
//! every request, the watch stream's and each failover address's included
//! (`docs/reference/http.md`, "Access"). Read from `STATEOUS_ACCESS_KEY`, or from a
//! file that holds only the secret (surrounding blanks and a final newline are
//! ignored).

use std::path::Path;
use std::sync::Arc;

use stateous_shared::access::{is_secret, SECRET_PREFIX};

/// An access key's secret. Its `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessKey(Arc<str>);

impl std::fmt::Debug for AccessKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessKey(..)")
    }
}

impl AccessKey {
    /// The key of `text` (trimmed). Errors: one sentence when it does not have a
    /// secret's shape (`stateous_key_` and 64 hex digits); `from` names where it
    /// came from.
    pub fn parse(text: &str, from: &str) -> Result<AccessKey, String> {
        let secret = text.trim();
        if !is_secret(secret) {
            return Err(format!(
                "{from} does not hold an access key: a key is {SECRET_PREFIX} and 64 hex \
                 digits, as stateous access add prints it"
            ));
        }
        Ok(AccessKey(secret.into()))
    }

    /// The key in the file at `path`. Errors: one sentence when it cannot be
    /// read or does not hold a key.
    pub fn from_file(path: &Path) -> Result<AccessKey, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the access key file {}: {e}", path.display()))?;
        AccessKey::parse(&text, &format!("the access key file {}", path.display()))
    }

    /// The value of the `Authorization` header.
    pub fn header(&self) -> String {
        format!("Bearer {}", self.0)
    }
}
