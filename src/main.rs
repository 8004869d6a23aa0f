//! The `stateous` command: parses the command line and calls the crates.

use clap::{Parser, Subcommand};

/// Stateous: a durable state-machine engine.
#[derive(Parser)]
#[command(name = "stateous", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => println!("stateous {}", env!("CARGO_PKG_VERSION")),
    }
    Ok(())
}
