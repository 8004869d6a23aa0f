//! The spawner's messages: a request with the routine's stdin, stdout and stderr
//! attached, and the answers; each one `SOCK_SEQPACKET` message. The descriptors
//! travel as `SCM_RIGHTS` through rustix, which owns every descriptor it hands
//! back, so this module needs no unsafe code.

use std::ffi::OsString;
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::Duration;

use rustix::io::Errno;
use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

use super::Launch;

/// The answer kinds, the first byte of each answer.
pub(super) const STARTED: u8 = 1;
pub(super) const FAILED: u8 = 2;
pub(super) const EXITED: u8 = 3;
/// The longest answer: a failure's sentence is cut to fit.
pub(super) const MAX_ANSWER: usize = 4096;
/// The longest request: a program, its arguments and environment. A larger one is
/// started by the supervisor itself.
pub(super) const MAX_REQUEST: usize = 1 << 20;
/// One answer of the spawner.
#[derive(Debug)]
pub(super) enum Answer {
    Started { id: u64, pid: i32 },
    Failed { id: u64, error: io::Error },
    Exited { pid: i32, status: i32 },
}

pub(super) fn encode_answer(answer: &Answer) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    match answer {
        Answer::Started { id, pid } => {
            out.push(STARTED);
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&pid.to_le_bytes());
        }
        Answer::Failed { id, error } => {
            out.push(FAILED);
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&error.raw_os_error().unwrap_or(0).to_le_bytes());
            let text = error.to_string();
            let room = MAX_ANSWER - out.len();
            let mut end = text.len().min(room);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            out.extend_from_slice(&text.as_bytes()[..end]);
        }
        Answer::Exited { pid, status } => {
            out.push(EXITED);
            out.extend_from_slice(&pid.to_le_bytes());
            out.extend_from_slice(&status.to_le_bytes());
        }
    }
    out
}

pub(super) fn decode_answer(bytes: &[u8]) -> Option<Answer> {
    let (&kind, rest) = bytes.split_first()?;
    let u64_at = |at: usize| Some(u64::from_le_bytes(rest.get(at..at + 8)?.try_into().ok()?));
    let i32_at = |at: usize| Some(i32::from_le_bytes(rest.get(at..at + 4)?.try_into().ok()?));
    match kind {
        STARTED => Some(Answer::Started {
            id: u64_at(0)?,
            pid: i32_at(8)?,
        }),
        FAILED => {
            let (id, errno) = (u64_at(0)?, i32_at(8)?);
            let text = String::from_utf8_lossy(rest.get(12..)?).into_owned();
            // An OS error reads as the supervisor's own `Command` wrote it.
            let error = if errno != 0 {
                io::Error::from_raw_os_error(errno)
            } else {
                io::Error::other(text)
            };
            Some(Answer::Failed { id, error })
        }
        EXITED => Some(Answer::Exited {
            pid: i32_at(0)?,
            status: i32_at(4)?,
        }),
        _ => None,
    }
}

/// A request: the id, the counts, the grace in milliseconds, then each string
/// ended by a NUL byte: the program, the folder, the arguments, and the
/// environment as `KEY=VALUE`.
pub(super) fn encode_request(id: u64, launch: &Launch<'_>) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&(launch.args.len() as u32).to_le_bytes());
    out.extend_from_slice(&(launch.env.len() as u32).to_le_bytes());
    let grace = u64::try_from(launch.grace.as_millis()).unwrap_or(u64::MAX);
    out.extend_from_slice(&grace.to_le_bytes());
    let mut put = |text: &[u8]| {
        if text.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "nul byte found in provided data",
            ));
        }
        out.extend_from_slice(text);
        out.push(0);
        Ok(())
    };
    put(launch.program.as_bytes())?;
    put(launch.folder.as_os_str().as_bytes())?;
    for arg in launch.args {
        put(arg.as_bytes())?;
    }
    for (key, value) in launch.env {
        let mut pair = key.as_bytes().to_vec();
        pair.push(b'=');
        pair.extend_from_slice(value.as_bytes());
        put(&pair)?;
    }
    Ok(out)
}

/// A request as the spawner reads it.
#[derive(Debug, PartialEq)]
pub(super) struct Request {
    pub(super) id: u64,
    pub(super) program: OsString,
    pub(super) folder: PathBuf,
    pub(super) args: Vec<OsString>,
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) grace: Duration,
}

pub(super) fn decode_request(bytes: &[u8]) -> Option<Request> {
    let id = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let args = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) as usize;
    let env = u32::from_le_bytes(bytes.get(12..16)?.try_into().ok()?) as usize;
    let grace = u64::from_le_bytes(bytes.get(16..24)?.try_into().ok()?);
    let body = bytes.get(24..)?.strip_suffix(&[0])?;
    let mut parts = body
        .split(|b| *b == 0)
        .map(|p| OsString::from_vec(p.to_vec()));
    let program = parts.next()?;
    let folder = PathBuf::from(parts.next()?);
    let args: Vec<OsString> = parts.by_ref().take(args).collect();
    let env: Vec<(OsString, OsString)> = parts
        .by_ref()
        .take(env)
        .map(|pair| {
            let pair = pair.into_vec();
            let at = pair.iter().position(|b| *b == b'=').unwrap_or(pair.len());
            let value = pair.get(at + 1..).unwrap_or_default().to_vec();
            let mut key = pair;
            key.truncate(at);
            (OsString::from_vec(key), OsString::from_vec(value))
        })
        .collect();
    if parts.next().is_some() {
        return None;
    }
    Some(Request {
        id,
        program,
        folder,
        args,
        env,
        grace: Duration::from_millis(grace),
    })
}

/// Send `bytes` with `fds` attached, as one message.
pub(super) fn send_with_fds(socket: &OwnedFd, bytes: &[u8], fds: &[OwnedFd; 3]) -> io::Result<()> {
    let rights = [fds[0].as_fd(), fds[1].as_fd(), fds[2].as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    loop {
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !control.push(SendAncillaryMessage::ScmRights(&rights)) {
            return Err(io::Error::other(
                "the descriptors do not fit the control buffer",
            ));
        }
        match sendmsg(
            socket,
            &[IoSlice::new(bytes)],
            &mut control,
            SendFlags::NOSIGNAL,
        ) {
            Ok(_) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(error) => return Err(error.into()),
        }
    }
}

/// Receive one message and the descriptors attached to it (close-on-exec, so a
/// routine gets no other routine's pipes); `None` at the end.
pub(super) fn receive_with_fds(
    socket: &OwnedFd,
    buffer: &mut [u8],
) -> io::Result<Option<(usize, Vec<OwnedFd>)>> {
    // Room for more descriptors than a request carries: extra ones are closed.
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = recvmsg(
        socket,
        &mut [IoSliceMut::new(buffer)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = message {
            fds.extend(rights);
        }
    }
    if received.bytes == 0 {
        return Ok(None);
    }
    if received
        .flags
        .intersects(ReturnFlags::TRUNC | ReturnFlags::CTRUNC)
    {
        return Err(io::Error::other("a request was cut short"));
    }
    Ok(Some((received.bytes, fds)))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::path::Path;

    use super::*;

    #[test]
    fn a_request_reads_back_as_it_was_written() {
        let args = [OsString::from("-c"), OsString::from("echo 'a b'")];
        let env = [
            (OsString::from("PATH"), OsString::from("/bin:/usr/bin")),
            (OsString::from("EMPTY"), OsString::new()),
            (OsString::from("EQ"), OsString::from("a=b")),
        ];
        let launch = Launch {
            program: OsStr::new("/bin/sh"),
            args: &args,
            folder: Path::new("/tmp/box"),
            env: &env,
            grace: Duration::from_millis(1500),
        };
        let bytes = encode_request(7, &launch).unwrap();
        assert_eq!(
            decode_request(&bytes).unwrap(),
            Request {
                id: 7,
                program: "/bin/sh".into(),
                folder: "/tmp/box".into(),
                args: args.to_vec(),
                env: env.to_vec(),
                grace: Duration::from_millis(1500),
            }
        );
        assert!(decode_request(&bytes[..bytes.len() - 1]).is_none());
    }

    #[test]
    fn a_nul_byte_is_refused_as_command_refuses_it() {
        let args = [OsString::from("a\0b")];
        let launch = Launch {
            program: OsStr::new("/bin/sh"),
            args: &args,
            folder: Path::new("/"),
            env: &[],
            grace: Duration::ZERO,
        };
        let error = encode_request(1, &launch).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn answers_read_back_and_a_failure_keeps_its_os_error() {
        let started = decode_answer(&encode_answer(&Answer::Started { id: 9, pid: 1234 }));
        assert!(matches!(
            started,
            Some(Answer::Started { id: 9, pid: 1234 })
        ));
        let exited = decode_answer(&encode_answer(&Answer::Exited {
            pid: 1234,
            status: 0x0f00,
        }));
        assert!(matches!(
            exited,
            Some(Answer::Exited {
                pid: 1234,
                status: 0x0f00
            })
        ));
        let missing = io::Error::from_raw_os_error(libc::ENOENT);
        let text = missing.to_string();
        let failed = decode_answer(&encode_answer(&Answer::Failed {
            id: 3,
            error: missing,
        }));
        let Some(Answer::Failed { id: 3, error }) = failed else {
            panic!("{failed:?}");
        };
        assert_eq!(error.to_string(), text);
        let long = io::Error::other("é".repeat(MAX_ANSWER));
        let bytes = encode_answer(&Answer::Failed { id: 4, error: long });
        assert!(bytes.len() <= MAX_ANSWER);
        assert!(decode_answer(&bytes).is_some());
        assert!(decode_answer(&[STARTED, 1, 2]).is_none());
    }
}
