//! The `stateous` command: parses the command line and calls the crates.

use std::path::PathBuf;

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
    /// Check a workflow (flow.yaml) and write its graph file.
    Compile {
        /// The workflow's file, e.g. sdlc/flow.yaml.
        flow: PathBuf,
        /// The graph file to write. Default: build/<workflow>.json next to FLOW.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write a new workflow's folder, or a supervisor's folder.
    #[command(subcommand)]
    Init(Init),
}

#[derive(Subcommand)]
enum Init {
    /// Write the starter workflow NAME/flow.yaml, and compile it to NAME/build/NAME.json.
    Workflow {
        /// The workflow's name; also the name of its folder.
        name: String,
    },
}

/// Print `error: <sentence>` on stderr and exit 1, as every command fails.
fn exit_with(error: impl std::fmt::Display) -> ! {
    eprintln!("error: {error}");
    std::process::exit(1)
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => println!("stateous {}", env!("CARGO_PKG_VERSION")),
        Command::Compile { flow, out } => {
            stateous_shared::compiler::compile_command(&flow, out.as_deref())
                .unwrap_or_else(|e| exit_with(e));
        }
        Command::Init(Init::Workflow { name }) => {
            stateous_shared::compiler::init_workflow(&name).unwrap_or_else(|e| exit_with(e));
        }
    }
    Ok(())
}
