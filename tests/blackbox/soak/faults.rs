//! The soak's seeded randomness and its faults: a splitmix64 generator, the kinds
//! of fault, and the one function that applies a fault to the processes under test.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::harness::{Backend, Daemon};
use crate::supervising::Supervise;

use super::proxy::Proxy;

/// splitmix64: small, fast, and the same sequence from the same seed everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(start: u64) -> Rng {
        Rng(start)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    /// A duration of `low..=high` milliseconds.
    pub fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(self.between(low, high))
    }
}

/// One fault, with what the random numbers chose for it.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// SIGKILL of the daemon, then a start on the same folder and port.
    KillDaemon,
    /// SIGSTOP of the daemon, SIGCONT after the pause (shorter than the lease).
    PauseDaemon(Duration),
    /// SIGKILL of one supervisor, then a start on its folder.
    KillSupervisor(usize),
    /// SIGSTOP of one supervisor, SIGCONT after the pause.
    PauseSupervisor(usize, Duration),
    /// Every connection through the proxy dropped.
    CutConnections,
    /// Every connection through the proxy held (bytes kept, nothing answered).
    BlackHole(Duration),
    /// Postgres: `pg_terminate_backend` of the daemon's sessions.
    EndSessions,
}

impl Fault {
    /// The kind's name, for the figures.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::KillDaemon => "daemon SIGKILL",
            Fault::PauseDaemon(_) => "daemon SIGSTOP",
            Fault::KillSupervisor(_) => "supervisor SIGKILL",
            Fault::PauseSupervisor(..) => "supervisor SIGSTOP",
            Fault::CutConnections => "proxy cut",
            Fault::BlackHole(_) => "proxy black hole",
            Fault::EndSessions => "pg_terminate_backend",
        }
    }

    /// The next fault `rng` picks, among those `backend` allows.
    pub fn pick(rng: &mut Rng, backend: Backend, supervisors: usize) -> Fault {
        let kinds = if backend == Backend::Postgres { 7 } else { 6 };
        let which = rng.between(0, supervisors as u64 - 1) as usize;
        match rng.between(0, kinds - 1) {
            0 => Fault::KillDaemon,
            1 => Fault::PauseDaemon(rng.millis(200, 1500)),
            2 => Fault::KillSupervisor(which),
            3 => Fault::PauseSupervisor(which, rng.millis(200, 1500)),
            4 => Fault::CutConnections,
            5 => Fault::BlackHole(rng.millis(300, 2000)),
            _ => Fault::EndSessions,
        }
    }
}

/// The processes the faults land on, and the logs of those they replaced.
pub struct Target {
    pub daemon: Daemon,
    pub supervisors: Vec<Supervise>,
    pub folders: Vec<PathBuf>,
    pub proxy: Proxy,
    /// The logs of every daemon and supervisor run that a kill ended.
    pub old_logs: Vec<String>,
    /// How many faults of each kind.
    pub counts: BTreeMap<&'static str, u64>,
    /// How many times the daemon was started again after its hold ended.
    pub restarts: u64,
}

impl Target {
    /// Apply `fault` and return once the system runs again.
    pub fn apply(&mut self, fault: Fault) {
        *self.counts.entry(fault.kind()).or_default() += 1;
        match fault {
            Fault::KillDaemon => {
                self.old_logs.push(self.daemon.stderr());
                self.daemon.crash_and_restart();
                self.proxy.set_upstream(&self.daemon.authority);
            }
            Fault::PauseDaemon(pause) => {
                self.daemon.signal(libc::SIGSTOP);
                std::thread::sleep(pause);
                self.daemon.signal(libc::SIGCONT);
            }
            Fault::KillSupervisor(i) => {
                let supervisor = &mut self.supervisors[i];
                supervisor.signal(libc::SIGKILL);
                supervisor.wait();
                self.old_logs.push(supervisor.stderr());
                self.supervisors[i] = Supervise::start(&self.folders[i]);
            }
            Fault::PauseSupervisor(i, pause) => {
                self.supervisors[i].signal(libc::SIGSTOP);
                std::thread::sleep(pause);
                self.supervisors[i].signal(libc::SIGCONT);
            }
            Fault::CutConnections => self.proxy.cut(),
            Fault::BlackHole(pause) => {
                self.proxy.hold(true);
                std::thread::sleep(pause);
                self.proxy.hold(false);
            }
            Fault::EndSessions => {
                self.daemon.end_sessions();
                // The daemon's hold on the database is one of its sessions. When it
                // ends, the daemon stops by design (it cannot know whether another
                // took over), and is started again as a service manager would.
                let deadline = Instant::now() + Duration::from_secs(5);
                while self.daemon.is_running() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                }
                if !self.daemon.is_running() {
                    self.restarts += 1;
                    self.old_logs.push(self.daemon.stderr());
                    self.daemon.start_again();
                }
            }
        }
    }

    /// Every log so far: those of ended runs, then the daemon's and each
    /// supervisor's current one.
    pub fn logs(&self) -> Vec<String> {
        let mut logs = self.old_logs.clone();
        logs.push(self.daemon.stderr());
        logs.extend(self.supervisors.iter().map(|s| s.stderr()));
        logs
    }
}
