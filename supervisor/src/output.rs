//! What the supervisor keeps of a routine's output: each line in its log and in
//! the attempt's file under `.stateous/logs/`, within caps, so that a routine that
//! prints without end cannot fill the disk or the supervisor's memory.
//!
//! - A line keeps at most [`LINE_CAP`] bytes, then says how many more it had. The
//!   rest is read and dropped as it comes, never held whole.
//! - An attempt keeps at most [`ATTEMPT_CAP`] bytes of output (both streams), then
//!   one line saying the rest is not kept.
//! - The failure reason quotes the last lines of stderr, each by its end (the
//!   last [`TAIL_WIDTH`] characters), where a long error line says what went wrong.
//! - `.stateous/logs/` keeps the newest [`MAX_LOG_FILES`] files: each new attempt's
//!   file removes the oldest ones beyond that.
//! - An attempt's file is made at its first line: an attempt that prints nothing
//!   makes none. Making a file (and removing the oldest) was about a tenth of the
//!   supervisor's time per short routine, as `bench-routines` measured it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::log_line;

/// The most bytes of one line that are kept.
pub const LINE_CAP: usize = 8 * 1024;
/// The most bytes of output one attempt keeps, its two streams together.
pub const ATTEMPT_CAP: usize = 1024 * 1024;
/// The most files `.stateous/logs/` keeps.
pub const MAX_LOG_FILES: usize = 100;
/// How many of the last lines of stderr a failure's reason quotes.
pub const TAIL_LINES: usize = 5;
/// The most characters of each quoted line: its end.
pub const TAIL_WIDTH: usize = 300;
/// The bytes of a line's end kept while it is read: enough for [`TAIL_WIDTH`]
/// characters of up to four bytes.
const END_BYTES: usize = TAIL_WIDTH * 4;

/// One line as read: its start (at most [`LINE_CAP`] bytes), its end, its length.
#[derive(Debug, Default)]
struct Line {
    head: Vec<u8>,
    end: VecDeque<u8>,
    length: usize,
}

impl Line {
    fn push(&mut self, bytes: &[u8]) {
        let room = LINE_CAP.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let keep = bytes.len().min(END_BYTES);
        self.end.extend(&bytes[bytes.len() - keep..]);
        while self.end.len() > END_BYTES {
            self.end.pop_front();
        }
        self.length += bytes.len();
    }

    /// The line as the log shows it: its start, and how much was not kept.
    fn shown(&self) -> String {
        let text = String::from_utf8_lossy(&self.head);
        let text = text.trim_end_matches('\r');
        if self.length > self.head.len() {
            format!(
                "{text} [{} more bytes of this line not kept]",
                self.length - self.head.len()
            )
        } else {
            text.to_string()
        }
    }

    /// The line's end, trimmed, at most [`TAIL_WIDTH`] characters, for a reason.
    fn ending(&self) -> String {
        let bytes: Vec<u8> = self.end.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        let count = text.chars().count();
        if count <= TAIL_WIDTH && self.length <= END_BYTES {
            return text.to_string();
        }
        let end: String = text
            .chars()
            .skip(count.saturating_sub(TAIL_WIDTH))
            .collect();
        format!("...{end}")
    }
}

/// Read the next line of `reader`, without its `\n`; `None` at the end.
async fn next_line<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Option<Line> {
    let mut line = Line::default();
    let mut any = false;
    loop {
        let buffer = match reader.fill_buf().await {
            Ok(buffer) if !buffer.is_empty() => buffer,
            _ => return any.then_some(line),
        };
        any = true;
        match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => {
                line.push(&buffer[..at]);
                reader.consume(at + 1);
                return Some(line);
            }
            None => {
                let taken = buffer.len();
                line.push(buffer);
                reader.consume(taken);
            }
        }
    }
}

/// What one attempt's output goes to: the log, its file, and the stderr tail.
#[derive(Clone)]
pub struct Sinks {
    task: i64,
    file: Arc<Mutex<LogFile>>,
    kept: Arc<AtomicUsize>,
    over: Arc<AtomicBool>,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl Sinks {
    /// The sinks of task `task`'s attempt, writing to the file at `path`. The file
    /// (and its folder) is made at the first line, when the folder's oldest files
    /// are removed; until then nothing touches the disk.
    pub fn open(task: i64, path: &Path) -> Sinks {
        Sinks {
            task,
            file: Arc::new(Mutex::new(LogFile::Unopened(path.to_path_buf()))),
            kept: Arc::new(AtomicUsize::new(0)),
            over: Arc::new(AtomicBool::new(false)),
            tail: Arc::new(Mutex::new(VecDeque::new())),
        }
    }

    /// The last lines of stderr, oldest first, each by its end.
    pub fn tail(&self) -> Vec<String> {
        self.tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Copy `stream` line by line until it ends; `stderr` lines also feed the tail.
    pub async fn copy(self, stream: impl AsyncRead + Unpin, stderr: bool) {
        let mut reader = BufReader::new(stream);
        while let Some(line) = next_line(&mut reader).await {
            self.keep(&line.shown());
            if stderr {
                let ending = line.ending();
                if !ending.is_empty() {
                    if let Ok(mut tail) = self.tail.lock() {
                        if tail.len() == TAIL_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(ending);
                    }
                }
            }
        }
    }

    fn keep(&self, text: &str) {
        let before = self.kept.fetch_add(text.len() + 1, Ordering::SeqCst);
        if before + text.len() + 1 > ATTEMPT_CAP {
            if !self.over.swap(true, Ordering::SeqCst) {
                let notice = format!(
                    "[this attempt's output passed {ATTEMPT_CAP} bytes; the rest is not kept]"
                );
                self.write(&notice);
            }
            return;
        }
        self.write(text);
    }

    fn write(&self, text: &str) {
        log_line!("task {} | {text}", self.task);
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(file) = file.opened() {
            use std::io::Write;
            let _ = writeln!(file, "{text}");
        }
    }
}

/// An attempt's file under `.stateous/logs/`: made at the first line.
enum LogFile {
    /// No line yet: the file's path.
    Unopened(PathBuf),
    /// Open for appending.
    Open(std::fs::File),
    /// It could not be made: the lines go to the log only.
    Failed,
}

impl LogFile {
    /// The open file, made (with its folder, the folder's oldest files removed)
    /// on the first call; `None` when it cannot be.
    fn opened(&mut self) -> Option<&mut std::fs::File> {
        if let LogFile::Unopened(path) = self {
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
                rotate(parent, MAX_LOG_FILES.saturating_sub(1));
            }
            *self = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&*path)
                .map_or(LogFile::Failed, LogFile::Open);
        }
        match self {
            LogFile::Open(file) => Some(file),
            _ => None,
        }
    }
}

/// Remove the oldest files of `folder` (by modification time) beyond `keep`.
fn rotate(folder: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, std::path::PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let meta = entry.metadata().ok().filter(|m| m.is_file())?;
            Some((meta.modified().ok()?, entry.path()))
        })
        .collect();
    if files.len() <= keep {
        return;
    }
    files.sort();
    let extra = files.len() - keep;
    for (_, path) in files.into_iter().take(extra) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_long_line_keeps_its_start_for_the_log_and_its_end_for_the_reason() {
        let mut text = vec![b'a'; 3 * LINE_CAP];
        text.extend_from_slice(b" the real error\nshort\n\nlast");
        let mut reader = BufReader::with_capacity(1000, &text[..]);
        let long = next_line(&mut reader).await.unwrap();
        assert_eq!(long.length, 3 * LINE_CAP + 15);
        assert!(long.shown().ends_with(&format!(
            "[{} more bytes of this line not kept]",
            2 * LINE_CAP + 15
        )));
        assert!(long.ending().starts_with("...a"));
        assert!(long.ending().ends_with("the real error"));
        assert_eq!(long.ending().chars().count(), 3 + TAIL_WIDTH);
        assert_eq!(next_line(&mut reader).await.unwrap().shown(), "short");
        assert_eq!(next_line(&mut reader).await.unwrap().shown(), "");
        assert_eq!(next_line(&mut reader).await.unwrap().ending(), "last");
        assert!(next_line(&mut reader).await.is_none());
    }

    #[test]
    fn rotation_keeps_the_newest_files() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..5 {
            std::fs::write(dir.path().join(format!("{n}.log")), "x").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        rotate(dir.path(), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["3.log", "4.log"]);
    }
}
