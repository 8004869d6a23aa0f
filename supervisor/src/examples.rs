//! The example supervisors of `assets/` (`orders-supervisor`, `sdlc-supervisor`),
//! built into the binary so that `stateous demo` needs nothing but itself.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// One file of an example folder: its name, its text, and whether it runs.
type ExampleFile = (&'static str, &'static str, bool);

const ORDERS: &[ExampleFile] = &[
    (
        "contract.json",
        include_str!("../../assets/orders-supervisor/contract.json"),
        false,
    ),
    (
        "draft.sh",
        include_str!("../../assets/orders-supervisor/draft.sh"),
        true,
    ),
    (
        "review.sh",
        include_str!("../../assets/orders-supervisor/review.sh"),
        true,
    ),
];

const SDLC: &[ExampleFile] = &[
    (
        "contract.json",
        include_str!("../../assets/sdlc-supervisor/contract.json"),
        false,
    ),
    (
        "coding.sh",
        include_str!("../../assets/sdlc-supervisor/coding.sh"),
        true,
    ),
    (
        "testing.sh",
        include_str!("../../assets/sdlc-supervisor/testing.sh"),
        true,
    ),
];

/// The names of the examples: `orders`, `sdlc`.
pub const EXAMPLES: [&str; 2] = ["orders", "sdlc"];

/// Write the example supervisor `name` (`orders` or `sdlc`) into `folder`, with a
/// `stateous.yaml` that names `url` and adds `extra` settings lines (e.g. short
/// timings). The folder is made when missing; files in it are replaced.
pub fn write_example(name: &str, folder: &Path, url: &str, extra: &str) -> std::io::Result<()> {
    let files = match name {
        "orders" => ORDERS,
        "sdlc" => SDLC,
        other => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("there is no example supervisor '{other}'; there are orders and sdlc"),
            ))
        }
    };
    std::fs::create_dir_all(folder)?;
    for (file, text, runs) in files {
        let path = folder.join(file);
        let _ = std::fs::remove_file(&path);
        let mode = if *runs { 0o755 } else { 0o644 };
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)?;
        out.write_all(text.as_bytes())?;
    }
    let config = format!(
        "url: {}\ntasks: 4\nname: demo-supervisor\n{extra}",
        serde_json::to_string(url).unwrap_or_default()
    );
    std::fs::write(folder.join(crate::config::CONFIG_FILE), config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::contract::Contract;

    #[test]
    fn each_example_is_a_folder_a_supervisor_can_use() {
        for name in EXAMPLES {
            let dir = tempfile::tempdir().unwrap();
            write_example(name, dir.path(), "http://127.0.0.1:1", "idle: 50ms\n").unwrap();
            let config = Config::load(&dir.path().join("stateous.yaml")).unwrap();
            assert_eq!(
                config.control_plane(None).as_deref(),
                Ok("http://127.0.0.1:1")
            );
            let contract = Contract::load(&dir.path().join("contract.json")).unwrap();
            let found = crate::routines::discover(dir.path(), &contract, &config.routines).unwrap();
            assert_eq!(found.by_state.len(), contract.states.len(), "{name}");
        }
        assert!(write_example("nope", Path::new("/nonexistent"), "", "").is_err());
    }
}
