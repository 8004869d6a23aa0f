//! A stop flag that many tasks can wait on: set once, seen by all.

use tokio::sync::watch;

/// A flag that goes from "running" to "stopping" once. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Stop {
    sender: std::sync::Arc<watch::Sender<bool>>,
}

impl Default for Stop {
    fn default() -> Stop {
        Stop::new()
    }
}

impl Stop {
    /// A flag that is not set.
    pub fn new() -> Stop {
        let (sender, _) = watch::channel(false);
        Stop {
            sender: std::sync::Arc::new(sender),
        }
    }

    /// Set the flag; every waiter wakes.
    pub fn set(&self) {
        self.sender.send_replace(true);
    }

    /// Whether the flag is set.
    pub fn is_set(&self) -> bool {
        *self.sender.borrow()
    }

    /// Wait until the flag is set (at once when it is).
    pub async fn wait(&self) {
        let mut receiver = self.sender.subscribe();
        // The sender lives as long as `self`, so the wait ends only by the flag.
        let _ = receiver.wait_for(|set| *set).await;
    }
}
