//! Who may do what (`docs/reference/http.md`, "Access"): the door a request came
//! in by, its access key, and the one check of a key's role against the access
//! class of its route in [`routes::TABLE`](super::routes::TABLE).
//!
//! - The Unix socket is the trusted local door: a peer whose uid is the daemon's
//!   own or root acts as admin; any other peer is refused (`Door`). A request on
//!   it that carries a key acts as that key: its role applies and its name goes
//!   on the ledger.
//! - A scoped `operate` key ([`FireScope`]) may read, and fire the events of its
//!   scope; the token's part of the scope is the engine's to judge in the fire.
//! - While TCP is open (no key was ever made), the callers it serves are noted
//!   ([`OpenCallers`]), so that the first key's maker learns whom it will lock
//!   out (`GET /access/callers`).
//! - On TCP, once any access key was made (revoked ones count: a control plane
//!   never opens again by itself), every request but `GET /health` needs
//!   `Authorization: Bearer SECRET`; before that, TCP is open as it always was.
//! - A key is known by the SHA-256 of its secret, compared in constant time
//!   (`subtle`) with each key's. The keys are kept in memory ([`Keys`]), loaded
//!   when the control plane takes the database and changed with each add and
//!   revoke, so a revoke holds from the next request.
//! - "Last used" is written at most once a minute per key.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use hyper::HeaderMap;
use sha2::{Digest, Sha256};
use stateous_shared::access::{is_secret, KeyView, Role, SECRET_PREFIX};
use stateous_shared::refusal::{Code, Refusal};
use stateous_shared::time::{from_micros, iso};
use subtle::ConstantTimeEq;

use super::routes::{Access, Route};
use crate::store::AccessKeyRow;
use crate::validated::FireScope;

/// How often a key's "last used" moment is written, at most: a minute, in
/// microseconds.
pub const LAST_USED_EVERY: i64 = 60_000_000;

/// How a request reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// TCP (`--listen`): access keys apply. The peer's address, where known.
    Tcp(Option<std::net::IpAddr>),
    /// The Unix socket, from the daemon's own user or root: admin.
    Local,
    /// The Unix socket, from another user (its uid): refused.
    Stranger(u32),
}

/// Who a request comes from, once its key was checked.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The Unix socket's own user or root: admin, without a name.
    Local,
    /// TCP while no access key was ever made, or `GET /health`: as before keys.
    Open,
    /// A request with a known key.
    Key(Arc<KnownKey>),
}

impl Caller {
    /// The supervisor a `supervise` key is bound to: such a caller acts only
    /// under that name.
    pub fn bound(&self) -> Option<&str> {
        match self {
            Caller::Key(key) if key.role == Role::Supervise => key.supervisor.as_deref(),
            _ => None,
        }
    }

    /// The scope of a scoped key, `None` for any other caller.
    pub fn scope(&self) -> Option<Arc<FireScope>> {
        match self {
            Caller::Key(key) => key.scope.clone(),
            _ => None,
        }
    }

    /// The name of the caller's key, `None` without one.
    pub fn key_name(&self) -> Option<&str> {
        match self {
            Caller::Key(key) => Some(&key.name),
            _ => None,
        }
    }

    /// The 403 of a supervise key acting for `other`, or `Ok` when the caller
    /// may act for it.
    pub fn may_act_for(&self, other: &str) -> Result<(), Refusal> {
        match self.bound() {
            Some(bound) if bound != other => Err(Refusal::new(
                Code::Forbidden,
                format!(
                    "this access key acts for the supervisor {bound} only, not for {other}; \
                     a request for another supervisor needs that supervisor's key or an admin key"
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// A key that is not revoked, as the daemon keeps it in memory.
#[derive(Debug)]
pub struct KnownKey {
    /// Its name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The supervisor of a `supervise` key.
    pub supervisor: Option<String>,
    /// The limit of a scoped `operate` key.
    pub scope: Option<Arc<FireScope>>,
    hash: [u8; 32],
    /// When its use was last written (microseconds).
    last_written: AtomicI64,
}

/// The access keys in memory. Cheap to clone; clones share them.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    inner: Arc<RwLock<Loaded>>,
    /// The TCP callers without a key, while no key was ever made.
    pub open: Arc<OpenCallers>,
}

#[derive(Debug, Default)]
struct Loaded {
    /// Whether any key was ever made: then TCP needs a key.
    closed: bool,
    /// The keys not revoked.
    keys: Vec<Arc<KnownKey>>,
}

impl Keys {
    /// Take `rows` (the whole table) as the keys.
    pub fn replace(&self, rows: &[AccessKeyRow]) {
        let keys = rows
            .iter()
            .filter(|row| row.revoked_at.is_none())
            .filter_map(known)
            .collect();
        if let Ok(mut loaded) = self.inner.write() {
            *loaded = Loaded {
                closed: !rows.is_empty(),
                keys,
            };
        }
    }

    /// Add a key just made.
    pub fn add(&self, row: &AccessKeyRow) {
        if let (Ok(mut loaded), Some(key)) = (self.inner.write(), known(row)) {
            loaded.closed = true;
            loaded.keys.push(key);
        }
        self.open.clear();
    }

    /// Forget a key just revoked.
    pub fn revoke(&self, name: &str) {
        if let Ok(mut loaded) = self.inner.write() {
            loaded.keys.retain(|key| key.name != name);
        }
    }

    /// Whether TCP needs a key: some key was ever made.
    pub fn closed(&self) -> bool {
        self.inner.read().map_or(true, |loaded| loaded.closed)
    }

    /// Who sent a request that came in by `door` with `headers`, for a route of
    /// class `access` (`Public`: the health check); 401 `unauthenticated` for a
    /// missing, unknown or revoked key where one is needed, 403 `forbidden` for a
    /// stranger on the socket.
    pub fn caller(
        &self,
        door: Door,
        headers: &HeaderMap,
        access: Access,
    ) -> Result<Caller, Refusal> {
        match door {
            // The owner's door: admin, unless the request names a key to act as.
            Door::Local => {
                return match bearer(headers) {
                    Presented::Nothing => Ok(Caller::Local),
                    Presented::OtherScheme => Err(Refusal::new(Code::Unauthenticated, NOT_BEARER)),
                    Presented::Bearer(secret) => {
                        self.find(secret).map(Caller::Key).ok_or_else(|| {
                            Refusal::new(
                                Code::Unauthenticated,
                                "the access key is unknown or revoked",
                            )
                        })
                    }
                };
            }
            Door::Stranger(uid) => {
                let sentence = format!(
                    "the Unix socket serves only the user that runs the control plane, and \
                     root; uid {uid} is neither: use an access key over TCP"
                );
                return Err(Refusal::new(Code::Forbidden, sentence));
            }
            Door::Tcp(_) => {}
        }
        let secret = match bearer(headers) {
            Presented::Bearer(secret) => secret,
            Presented::OtherScheme => {
                return Err(Refusal::new(Code::Unauthenticated, NOT_BEARER));
            }
            Presented::Nothing if access == Access::Public || !self.closed() => {
                return Ok(Caller::Open);
            }
            Presented::Nothing => {
                return Err(Refusal::new(
                    Code::Unauthenticated,
                    "this control plane needs an access key: send Authorization: Bearer \
                     SECRET (clients read STATEOUS_ACCESS_KEY or --access-key-file)",
                ));
            }
        };
        match self.find(secret) {
            Some(key) => Ok(Caller::Key(key)),
            None => Err(Refusal::new(
                Code::Unauthenticated,
                "the access key is unknown or revoked",
            )),
        }
    }

    fn find(&self, secret: &str) -> Option<Arc<KnownKey>> {
        let hash = hash_of(secret.trim());
        let loaded = self.inner.read().ok()?;
        let mut found = None;
        // Every key is compared, in constant time each.
        for key in &loaded.keys {
            if bool::from(key.hash.ct_eq(&hash)) {
                found = Some(Arc::clone(key));
            }
        }
        found
    }
}

/// How long a TCP caller without a key is remembered: ten minutes, in
/// microseconds.
pub const OPEN_CALLERS_FOR: i64 = 600_000_000;

/// How often one address's note is written again, at most: five seconds, in
/// microseconds (a supervisor's claims come every second).
const NOTE_EVERY: i64 = 5_000_000;

/// The most addresses remembered; the one seen longest ago makes room.
const OPEN_CALLERS_MAX: usize = 256;

/// The callers served over TCP without a key while no key was ever made: the
/// addresses, and the supervisors that claimed or heartbeat from each. Read by
/// `stateous access add` before the first key, which will lock them out.
#[derive(Debug, Default)]
pub struct OpenCallers {
    seen: Mutex<HashMap<IpAddr, OpenCaller>>,
}

/// One address of [`OpenCallers`].
#[derive(Debug, Clone, Default)]
pub struct OpenCaller {
    /// When a request came from it last (microseconds).
    pub last_seen: i64,
    /// When a supervisor's name was noted last.
    named_at: i64,
    /// The supervisors seen at it, by the names their claims carry.
    pub supervisors: BTreeSet<String>,
}

impl OpenCallers {
    /// Whether a request from `ip` at `now` should be noted: `named` for one that
    /// carries a supervisor's name (then the body is read for it).
    pub fn due(&self, ip: IpAddr, now: i64, named: bool) -> bool {
        let Ok(seen) = self.seen.lock() else {
            return false;
        };
        seen.get(&ip).is_none_or(|caller| {
            let last = if named {
                caller.named_at
            } else {
                caller.last_seen
            };
            now - last >= NOTE_EVERY
        })
    }

    /// Note a request from `ip` at `now`, from the supervisor `supervisor`.
    pub fn note(&self, ip: IpAddr, now: i64, supervisor: Option<String>) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        if !seen.contains_key(&ip) && seen.len() >= OPEN_CALLERS_MAX {
            let oldest = seen
                .iter()
                .min_by_key(|(_, c)| c.last_seen)
                .map(|(ip, _)| *ip);
            if let Some(oldest) = oldest {
                seen.remove(&oldest);
            }
        }
        let caller = seen.entry(ip).or_default();
        caller.last_seen = now;
        if let Some(name) = supervisor {
            caller.named_at = now;
            caller.supervisors.insert(name);
        }
    }

    /// The callers seen within [`OPEN_CALLERS_FOR`] before `now`, by address.
    pub fn recent(&self, now: i64) -> Vec<(IpAddr, OpenCaller)> {
        let Ok(seen) = self.seen.lock() else {
            return Vec::new();
        };
        let mut recent: Vec<_> = seen
            .iter()
            .filter(|(_, caller)| now - caller.last_seen <= OPEN_CALLERS_FOR)
            .map(|(ip, caller)| (*ip, caller.clone()))
            .collect();
        recent.sort_by_key(|(ip, _)| *ip);
        recent
    }

    /// Forget every caller: TCP needs a key from now on.
    pub fn clear(&self) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.clear();
        }
    }
}

/// The one check of a caller against a route's access class: `Ok`, or 403
/// `forbidden` naming the roles that may. A scoped key may read, and fire the
/// events of its scope (`route`, where the request has one); the engine then
/// judges the token.
pub fn permit(caller: &Caller, access: Access, route: Option<&Route>) -> Result<(), Refusal> {
    let Caller::Key(key) = caller else {
        return Ok(());
    };
    if let Some(scope) = &key.scope {
        return match (access, route) {
            (Access::Public | Access::Follow | Access::Read, _) => Ok(()),
            (_, Some(Route::Fire(_, event))) => scope.refuses_event(event).map_or(Ok(()), Err),
            _ => Err(Refusal::new(
                Code::Forbidden,
                format!(
                    "the access key {} may only read and fire {}; this request needs a key \
                     with the role {}",
                    key.name,
                    scope.words,
                    needed(access)
                ),
            )),
        };
    }
    let allowed = match access {
        Access::Public | Access::Follow => true,
        Access::Read => matches!(key.role, Role::Read | Role::Operate | Role::Admin),
        Access::Operate => matches!(key.role, Role::Operate | Role::Admin),
        Access::Supervise => matches!(key.role, Role::Supervise | Role::Admin),
        Access::Admin => key.role == Role::Admin,
    };
    if allowed {
        return Ok(());
    }
    Err(Refusal::new(
        Code::Forbidden,
        format!(
            "this request needs a key with the role {}; the key {} has the role {}",
            needed(access),
            key.name,
            key.role
        ),
    ))
}

/// The roles that may use a route of class `access`, in words.
fn needed(access: Access) -> &'static str {
    match access {
        Access::Read => "read, operate or admin",
        Access::Operate => "operate or admin",
        Access::Supervise => "supervise or admin",
        _ => "admin",
    }
}

/// Whether `caller` may have the control plane write files on its machine (a
/// prune's `archive` folder): the Unix socket's own user, a TCP caller while no key
/// was ever made (who may do anything), or an admin key; a key of another role is
/// refused 403 `forbidden`.
pub fn may_write_files(caller: &Caller) -> Result<(), Refusal> {
    match caller {
        Caller::Local | Caller::Open => Ok(()),
        Caller::Key(key) if key.role == Role::Admin => Ok(()),
        _ => Err(Refusal::new(
            Code::Forbidden,
            "'archive' has the control plane write files on its machine: ask over its Unix \
             socket or with a key with the role admin",
        )),
    }
}

/// Whether the key's use at `now` (microseconds) should be written: at most once
/// a minute per key.
pub fn due_to_write(caller: &Caller, now: i64) -> Option<String> {
    let Caller::Key(key) = caller else {
        return None;
    };
    let last = key.last_written.load(Ordering::Relaxed);
    if now - last < LAST_USED_EVERY {
        return None;
    }
    key.last_written
        .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
        .ok()
        .map(|_| key.name.clone())
}

/// A new secret: the prefix and 256 random bits as hex.
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{SECRET_PREFIX}{}", hex::encode(bytes))
}

/// The SHA-256 of a secret.
fn hash_of(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// The SHA-256 of a secret as the table keeps it: 64 lowercase hex digits.
pub fn stored_hash(secret: &str) -> String {
    hex::encode(hash_of(secret))
}

/// A row as kept in memory; `None` for a hash that is not 32 bytes of hex.
fn known(row: &AccessKeyRow) -> Option<Arc<KnownKey>> {
    let hash: [u8; 32] = hex::decode(&row.hash).ok()?.try_into().ok()?;
    // A scope no build wrote leaves the key unusable rather than unlimited.
    let scope = match &row.scope {
        Some(text) => Some(Arc::new(FireScope::stored(&row.name, text)?.1)),
        None => None,
    };
    Some(Arc::new(KnownKey {
        name: row.name.clone(),
        role: row.role,
        supervisor: row.supervisor.clone(),
        scope,
        hash,
        last_written: AtomicI64::new(row.last_used_at.unwrap_or(i64::MIN / 2)),
    }))
}

/// The sentence of an `Authorization` header of another scheme than `Bearer`.
pub const NOT_BEARER: &str = "the Authorization header must be Authorization: Bearer <key>, \
                              with the secret of an access key; another scheme (such as \
                              Basic) is not read";

/// What a request's `Authorization` header presents.
#[derive(Debug, PartialEq, Eq)]
enum Presented<'a> {
    /// No header (or `Bearer` with nothing after it).
    Nothing,
    /// `Bearer SECRET`: the secret, or "" for a value that is not a secret's
    /// shape (no key has it).
    Bearer(&'a str),
    /// Another scheme (`Basic ...`), or a value that is not one.
    OtherScheme,
}

/// What the `Authorization` header of `headers` presents.
fn bearer(headers: &HeaderMap) -> Presented<'_> {
    let Some(value) = headers.get(hyper::header::AUTHORIZATION) else {
        return Presented::Nothing;
    };
    let Ok(value) = value.to_str() else {
        return Presented::OtherScheme;
    };
    let value = value.trim();
    let (scheme, secret) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Presented::OtherScheme;
    }
    let secret = secret.trim();
    if secret.is_empty() {
        return Presented::Nothing;
    }
    Presented::Bearer(if is_secret(secret) { secret } else { "" })
}

/// A key in memory as `GET /access/self` shows it: its name, role, supervisor
/// and scope.
pub fn known_view(key: &KnownKey) -> serde_json::Value {
    let mut view = serde_json::json!({"name": key.name, "role": key.role});
    if let Some(supervisor) = &key.supervisor {
        view["supervisor"] = supervisor.as_str().into();
    }
    if let Some(scope) = &key.scope {
        view["scope"] = serde_json::json!({"events": scope.events, "states": scope.states});
        if let Some(filter) = &scope.filter_text {
            view["scope"]["where"] = filter.as_str().into();
        }
    }
    view
}

/// A row as `GET /access` lists it.
pub fn view(row: &AccessKeyRow) -> KeyView {
    KeyView {
        name: row.name.clone(),
        role: row.role,
        supervisor: row.supervisor.clone(),
        scope: row
            .scope
            .as_deref()
            .and_then(|text| FireScope::stored(&row.name, text))
            .map(|(scope, _)| scope),
        created: iso(from_micros(row.created_at)),
        last_used: row.last_used_at.map(|at| iso(from_micros(at))),
        revoked: row.revoked_at.map(|at| iso(from_micros(at))),
        secret: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, role: Role, secret: &str) -> AccessKeyRow {
        AccessKeyRow {
            name: name.into(),
            role,
            supervisor: (role == Role::Supervise).then(|| "box".into()),
            scope: None,
            hash: stored_hash(secret),
            created_at: 0,
            last_used_at: None,
            revoked_at: None,
        }
    }

    fn with_key(secret: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = format!("Bearer {secret}").parse().unwrap();
        headers.insert(hyper::header::AUTHORIZATION, value);
        headers
    }

    #[test]
    fn each_role_is_allowed_its_classes_only() {
        let keys = Keys::default();
        let secrets: Vec<String> = Role::ALL.iter().map(|_| new_secret()).collect();
        let rows: Vec<AccessKeyRow> = Role::ALL
            .iter()
            .zip(&secrets)
            .map(|(role, secret)| row(role.as_str(), *role, secret))
            .collect();
        keys.replace(&rows);
        let classes = [
            Access::Follow,
            Access::Read,
            Access::Operate,
            Access::Supervise,
            Access::Admin,
        ];
        let expected = [
            (Role::Read, [true, true, false, false, false]),
            (Role::Operate, [true, true, true, false, false]),
            (Role::Supervise, [true, false, false, true, false]),
            (Role::Admin, [true, true, true, true, true]),
        ];
        for ((role, allowed), secret) in expected.iter().zip(&secrets) {
            let caller = keys
                .caller(Door::Tcp(None), &with_key(secret), Access::Read)
                .unwrap();
            for (class, allowed) in classes.iter().zip(allowed) {
                assert_eq!(
                    permit(&caller, *class, None).is_ok(),
                    *allowed,
                    "{role} {class:?}"
                );
            }
        }
    }

    #[test]
    fn only_the_bearer_scheme_presents_a_secret() {
        let secret = new_secret();
        let presented = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(hyper::header::AUTHORIZATION, value.parse().unwrap());
            format!("{:?}", bearer(&headers))
        };
        assert_eq!(bearer(&HeaderMap::new()), Presented::Nothing);
        assert_eq!(
            presented(&format!("Bearer {secret}")),
            format!("Bearer({secret:?})")
        );
        assert_eq!(
            presented(&format!("bearer  {secret} ")),
            format!("Bearer({secret:?})")
        );
        assert_eq!(presented("Bearer not-a-key"), "Bearer(\"\")");
        assert_eq!(presented("Bearer"), "Nothing");
        assert_eq!(presented("Basic dXNlcjpwYXNz"), "OtherScheme");
        assert_eq!(presented(&secret), "OtherScheme");
        let keys = Keys::default();
        let mut basic = HeaderMap::new();
        basic.insert(hyper::header::AUTHORIZATION, "Basic eA==".parse().unwrap());
        let refused = keys
            .caller(Door::Tcp(None), &basic, Access::Read)
            .unwrap_err();
        assert_eq!(
            (refused.code, refused.error.as_str()),
            (Code::Unauthenticated, NOT_BEARER)
        );
    }

    #[test]
    fn tcp_is_open_until_a_key_is_made_and_a_revoked_key_is_unknown() {
        let keys = Keys::default();
        let none = HeaderMap::new();
        assert!(matches!(
            keys.caller(Door::Tcp(None), &none, Access::Admin),
            Ok(Caller::Open)
        ));
        let secret = new_secret();
        keys.add(&row("ops", Role::Operate, &secret));
        let refused = keys
            .caller(Door::Tcp(None), &none, Access::Read)
            .unwrap_err();
        assert_eq!(refused.code, Code::Unauthenticated);
        assert!(keys.caller(Door::Tcp(None), &none, Access::Public).is_ok());
        assert!(keys
            .caller(Door::Tcp(None), &with_key(&secret), Access::Read)
            .is_ok());
        keys.revoke("ops");
        let refused = keys
            .caller(Door::Tcp(None), &with_key(&secret), Access::Read)
            .unwrap_err();
        assert_eq!(refused.code, Code::Unauthenticated);
        assert!(keys.closed());
        assert!(matches!(
            keys.caller(Door::Local, &none, Access::Admin),
            Ok(Caller::Local)
        ));
        let stranger = keys
            .caller(Door::Stranger(1000), &none, Access::Read)
            .unwrap_err();
        assert_eq!(stranger.code, Code::Forbidden);
    }

    #[test]
    fn a_keys_use_is_written_at_most_once_a_minute() {
        let keys = Keys::default();
        let secret = new_secret();
        keys.add(&row("ops", Role::Operate, &secret));
        let caller = keys
            .caller(Door::Tcp(None), &with_key(&secret), Access::Read)
            .unwrap();
        assert_eq!(due_to_write(&caller, 1_000), Some("ops".into()));
        assert_eq!(due_to_write(&caller, 1_000 + LAST_USED_EVERY - 1), None);
        assert_eq!(
            due_to_write(&caller, 1_000 + LAST_USED_EVERY),
            Some("ops".into())
        );
    }

    #[test]
    fn a_supervise_key_acts_for_its_supervisor_only() {
        let keys = Keys::default();
        let secret = new_secret();
        keys.add(&row("box-key", Role::Supervise, &secret));
        let caller = keys
            .caller(Door::Tcp(None), &with_key(&secret), Access::Read)
            .unwrap();
        assert!(caller.may_act_for("box").is_ok());
        assert_eq!(
            caller.may_act_for("other").unwrap_err().code,
            Code::Forbidden
        );
        assert!(Caller::Local.may_act_for("other").is_ok());
    }
}
