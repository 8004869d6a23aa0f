//! A TCP proxy between the supervisors and the daemon, for the soak: it passes bytes
//! both ways, and on demand cuts every connection it holds, or black-holes them
//! (holds the bytes it reads and sends nothing on) until it is told to pass again.
//! The daemon's address may change (a restart): the proxy reads it at each connect.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running proxy; its threads end when the test process does.
#[derive(Clone)]
pub struct Proxy {
    /// `127.0.0.1:PORT`, where the supervisors connect.
    pub authority: String,
    upstream: Arc<Mutex<String>>,
    holding: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// A proxy in front of `upstream` (`HOST:PORT`).
    pub fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let proxy = Proxy {
            authority: listener.local_addr().expect("its address").to_string(),
            upstream: Arc::new(Mutex::new(upstream.to_string())),
            holding: Arc::new(AtomicBool::new(false)),
            open: Arc::new(Mutex::new(Vec::new())),
        };
        let accepting = proxy.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let proxy = accepting.clone();
                std::thread::spawn(move || proxy.serve(client));
            }
        });
        proxy
    }

    /// Point the proxy at the daemon's new address (new connections only).
    pub fn set_upstream(&self, upstream: &str) {
        *lock(&self.upstream) = upstream.to_string();
    }

    /// Drop every connection the proxy holds, both sides, as a network that fails.
    pub fn cut(&self) {
        for stream in lock(&self.open).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Hold (`true`) or pass (`false`) the bytes of every connection, old and new.
    pub fn hold(&self, holding: bool) {
        self.holding.store(holding, Ordering::SeqCst);
    }

    fn serve(&self, client: TcpStream) {
        // A black hole holds a new connection too: it is accepted, and nothing
        // goes upstream until the proxy passes again.
        while self.holding.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let upstream = lock(&self.upstream).clone();
        let Ok(server) = TcpStream::connect(&upstream) else {
            return;
        };
        let (Ok(client_back), Ok(server_back)) = (client.try_clone(), server.try_clone()) else {
            return;
        };
        {
            let mut open = lock(&self.open);
            open.retain(|s| s.peer_addr().is_ok());
            for stream in [&client, &server] {
                if let Ok(clone) = stream.try_clone() {
                    open.push(clone);
                }
            }
        }
        let holding = self.holding.clone();
        let up = std::thread::spawn(move || pump(client, server, &holding));
        pump(server_back, client_back, &self.holding);
        let _ = up.join();
    }
}

/// Copy `from` to `to` until either ends; while `holding`, bytes read wait here.
fn pump(mut from: TcpStream, mut to: TcpStream, holding: &AtomicBool) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        while holding.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if to.write_all(&buffer[..read]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

/// The value behind `mutex`, also after a panic elsewhere.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
