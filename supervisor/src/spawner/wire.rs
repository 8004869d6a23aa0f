//! The spawner's messages: a request with the routine's stdin, stdout and stderr
//! attached, and the answers; each one `SOCK_SEQPACKET` message.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::Duration;

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
    let raw: [RawFd; 3] = [fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd()];
    let size = std::mem::size_of_val(&raw);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(size as u32) } as usize;
    // u64s keep the control buffer aligned for cmsghdr.
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: an all-zero msghdr is valid; the fields are set below.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = space;
    // SAFETY: the control buffer holds CMSG_SPACE(size) bytes, so the first header
    // and its data (size bytes) fit; sendmsg reads only the buffers named above.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size as u32) as usize;
        std::ptr::copy_nonoverlapping(raw.as_ptr().cast::<u8>(), libc::CMSG_DATA(header), size);
        loop {
            let sent = libc::sendmsg(socket.as_raw_fd(), &message, libc::MSG_NOSIGNAL);
            if sent >= 0 {
                return Ok(());
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

/// Receive one message and the descriptors attached to it (close-on-exec, so a
/// routine gets no other routine's pipes); `None` at the end.
pub(super) fn receive_with_fds(
    socket: RawFd,
    buffer: &mut [u8],
) -> io::Result<Option<(usize, Vec<OwnedFd>)>> {
    // Room for more descriptors than a request carries: extra ones are closed.
    let size = std::mem::size_of::<RawFd>() * 8;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(size as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // SAFETY: an all-zero msghdr is valid; the fields are set below.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = space;
    // SAFETY: recvmsg writes only into the buffers the header names, within their
    // lengths.
    let read = unsafe { libc::recvmsg(socket, &mut message, libc::MSG_CMSG_CLOEXEC) };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the headers walked are those recvmsg wrote into the control buffer;
    // each SCM_RIGHTS header's data holds the descriptors it counts, now ours.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header);
                let bytes = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for n in 0..bytes / std::mem::size_of::<RawFd>() {
                    let fd = data.cast::<RawFd>().add(n).read_unaligned();
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    if read == 0 {
        return Ok(None);
    }
    if message.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(io::Error::other("a request was cut short"));
    }
    Ok(Some((read as usize, fds)))
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
