//! A SQLite VFS over the default one that can lose power: every write to a file
//! under an armed folder is held in memory until that file is synced, as a disk's
//! cache holds it, and [`Power::cut`] drops whatever is still held and fails every
//! later call on those files. What is on disk then is what SQLite synced, which is
//! what a machine finds after a power loss; [`Power::snapshot`] copies it (the
//! database and its WAL, never the shared-memory index, which a reboot loses) into
//! another folder to open and check.
//!
//! It is registered as the process's default VFS, so code under test (the daemon's
//! store, the supervisor's outbox) opens its files through it unchanged. Files
//! outside an armed folder pass straight through to the default VFS; so do all the
//! other tests of this binary. Memory mapping is refused for armed files
//! (`xFetch` answers no page), so that every read goes through `xRead`.
//!
//! The held writes of a file are shared by all its handles, as the page cache is,
//! and a sync through any handle writes all of them, in order, then syncs the file.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use rusqlite::ffi;

/// A change held until its file is synced.
#[derive(Debug, Clone)]
enum Held {
    Write(i64, Vec<u8>),
    Truncate(i64),
}

#[derive(Debug, Default)]
struct Disk {
    /// The armed folders (canonical paths), each with whether its power was cut:
    /// its files then fail every call. Each test arms a folder of its own, so
    /// that tests side by side in this process cut only their own.
    armed: Vec<(PathBuf, bool)>,
    /// The held changes of each armed file, by path.
    held: HashMap<String, Vec<Held>>,
}

impl Disk {
    /// Whether the power of the folder that holds `path` was cut.
    fn is_cut(&self, path: &str) -> bool {
        self.armed
            .iter()
            .any(|(folder, cut)| *cut && Path::new(path).starts_with(folder))
    }
}

struct Installed {
    /// The default VFS this one wraps.
    inner: usize,
    disk: Mutex<Disk>,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

fn installed() -> &'static Installed {
    INSTALLED.get_or_init(install_now)
}

fn disk() -> MutexGuard<'static, Disk> {
    installed()
        .disk
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn inner_vfs() -> *mut ffi::sqlite3_vfs {
    installed().inner as *mut ffi::sqlite3_vfs
}

/// The power of one armed folder.
pub struct Power {
    folder: PathBuf,
}

impl Power {
    /// Arm `folder`: files opened under it from now on are held until synced.
    pub fn arm(folder: &Path) -> Power {
        let folder = folder.canonicalize().expect("the folder exists");
        disk().armed.push((folder.clone(), false));
        Power { folder }
    }

    /// Cut the power: every held write is lost, and every later call on an armed
    /// file fails with an I/O error.
    pub fn cut(&self) {
        let mut disk = disk();
        for (folder, cut) in &mut disk.armed {
            if *folder == self.folder {
                *cut = true;
            }
        }
        let folder = &self.folder;
        disk.held
            .retain(|path, _| !Path::new(path).starts_with(folder));
    }

    /// Whether the power was cut.
    pub fn is_cut(&self) -> bool {
        disk()
            .armed
            .iter()
            .any(|(folder, cut)| *cut && *folder == self.folder)
    }

    /// Copy the files that `names` gives (e.g. `stateous.db`, `stateous.db-wal`)
    /// as they are on disk into `to`, leaving out any that do not exist.
    pub fn snapshot(&self, names: &[&str], to: &Path) {
        for name in names {
            let from = self.folder.join(name);
            if from.exists() {
                let target = to.join(name);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).expect("the copy's folder is made");
                }
                std::fs::copy(&from, target).expect("a file is copied");
            }
        }
    }
}

impl Drop for Power {
    fn drop(&mut self) {
        let mut disk = disk();
        disk.armed.retain(|(folder, _)| folder != &self.folder);
        let folder = &self.folder;
        disk.held
            .retain(|path, _| !Path::new(path).starts_with(folder));
    }
}

/// Install the VFS as the default one, once per process.
pub fn install() {
    installed();
}

/// The file a handle of this VFS wraps, and its path when it is armed.
#[repr(C)]
struct File {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    inner_size: usize,
    armed: *mut String,
}

fn install_now() -> Installed {
    // SAFETY: `sqlite3_vfs_find(NULL)` answers the default VFS, which lives as long
    // as the process; the VFS registered here is leaked, so it does too.
    unsafe {
        let inner = ffi::sqlite3_vfs_find(std::ptr::null());
        assert!(!inner.is_null(), "SQLite has a default VFS");
        let mut vfs: ffi::sqlite3_vfs = *inner;
        vfs.szOsFile = std::mem::size_of::<File>() as c_int;
        vfs.pNext = std::ptr::null_mut();
        vfs.zName = CString::new("power-loss").unwrap().into_raw();
        vfs.xOpen = Some(x_open);
        vfs.xDelete = Some(x_delete);
        let vfs = Box::into_raw(Box::new(vfs));
        let installed = Installed {
            inner: inner as usize,
            disk: Mutex::new(Disk::default()),
        };
        assert_eq!(ffi::sqlite3_vfs_register(vfs, 1), ffi::SQLITE_OK);
        installed
    }
}

/// Whether `path` is under an armed folder.
fn armed_path(path: *const c_char) -> Option<String> {
    if path.is_null() {
        return None;
    }
    // SAFETY: SQLite passes a NUL-terminated path.
    let text = unsafe { CStr::from_ptr(path) }.to_str().ok()?.to_string();
    let disk = disk();
    disk.armed
        .iter()
        .any(|(folder, _)| Path::new(&text).starts_with(folder))
        .then_some(text)
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let inner_vfs = inner_vfs();
    let size = (*inner_vfs).szOsFile as usize;
    // 8-byte aligned room for the default VFS's file.
    let words = vec![0u64; size.div_ceil(8).max(1)].into_boxed_slice();
    let inner = Box::into_raw(words) as *mut ffi::sqlite3_file;
    let ours = file as *mut File;
    (*ours).base.pMethods = std::ptr::null();
    let rc = ((*inner_vfs).xOpen.unwrap())(inner_vfs, name, inner, flags, out_flags);
    if rc != ffi::SQLITE_OK {
        free_inner(inner, size);
        return rc;
    }
    (*ours).inner = inner;
    (*ours).inner_size = size;
    (*ours).armed = match armed_path(name) {
        Some(path) => Box::into_raw(Box::new(path)),
        None => std::ptr::null_mut(),
    };
    (*ours).base.pMethods = &METHODS;
    ffi::SQLITE_OK
}

unsafe fn free_inner(inner: *mut ffi::sqlite3_file, size: usize) {
    let words = size.div_ceil(8).max(1);
    drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
        inner as *mut u64,
        words,
    )));
}

unsafe extern "C" fn x_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    if let Some(path) = armed_path(name) {
        let mut disk = disk();
        if disk.is_cut(&path) {
            return ffi::SQLITE_IOERR_DELETE;
        }
        disk.held.remove(&path);
    }
    let inner_vfs = inner_vfs();
    ((*inner_vfs).xDelete.unwrap())(inner_vfs, name, sync_dir)
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

unsafe fn parts(file: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, Option<&'static String>) {
    let ours = file as *mut File;
    let armed = (*ours).armed;
    (
        (*ours).inner,
        if armed.is_null() { None } else { Some(&*armed) },
    )
}

unsafe fn methods(inner: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
    &*(*inner).pMethods
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let ours = file as *mut File;
    let inner = (*ours).inner;
    let rc = (methods(inner).xClose.unwrap())(inner);
    free_inner(inner, (*ours).inner_size);
    if !(*ours).armed.is_null() {
        drop(Box::from_raw((*ours).armed));
        (*ours).armed = std::ptr::null_mut();
    }
    rc
}

/// The size of the file on disk.
unsafe fn disk_size(inner: *mut ffi::sqlite3_file) -> Result<i64, c_int> {
    let mut size: ffi::sqlite3_int64 = 0;
    match (methods(inner).xFileSize.unwrap())(inner, &mut size) {
        ffi::SQLITE_OK => Ok(size),
        rc => Err(rc),
    }
}

/// The size the held changes give a file of `size` bytes on disk.
fn held_size(size: i64, held: &[Held]) -> i64 {
    held.iter().fold(size, |size, change| match change {
        Held::Write(at, bytes) => size.max(at + bytes.len() as i64),
        Held::Truncate(to) => *to,
    })
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    let (inner, armed) = parts(file);
    let Some(path) = armed else {
        return (methods(inner).xRead.unwrap())(inner, buf, amount, offset);
    };
    let disk = disk();
    if disk.is_cut(path) {
        return ffi::SQLITE_IOERR_READ;
    }
    let rc = (methods(inner).xRead.unwrap())(inner, buf, amount, offset);
    if rc != ffi::SQLITE_OK && rc != ffi::SQLITE_IOERR_SHORT_READ {
        return rc;
    }
    let out = std::slice::from_raw_parts_mut(buf as *mut u8, amount as usize);
    let held: &[Held] = disk.held.get(path).map_or(&[], Vec::as_slice);
    let size = match disk_size(inner) {
        Ok(size) => size,
        Err(rc) => return rc,
    };
    let (start, end) = (offset, offset + i64::from(amount));
    for change in held {
        match change {
            Held::Write(at, bytes) => {
                let (from, to) = (start.max(*at), end.min(at + bytes.len() as i64));
                if from < to {
                    out[(from - start) as usize..(to - start) as usize]
                        .copy_from_slice(&bytes[(from - at) as usize..(to - at) as usize]);
                }
            }
            Held::Truncate(to) if *to < end => {
                out[((*to).max(start) - start) as usize..].fill(0);
            }
            Held::Truncate(_) => {}
        }
    }
    let size = held_size(size, held);
    if size < end {
        out[(size.max(start) - start) as usize..].fill(0);
        return ffi::SQLITE_IOERR_SHORT_READ;
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    let (inner, armed) = parts(file);
    let Some(path) = armed else {
        return (methods(inner).xWrite.unwrap())(inner, buf, amount, offset);
    };
    let mut disk = disk();
    if disk.is_cut(path) {
        return ffi::SQLITE_IOERR_WRITE;
    }
    let bytes = std::slice::from_raw_parts(buf as *const u8, amount as usize).to_vec();
    disk.held
        .entry(path.clone())
        .or_default()
        .push(Held::Write(offset, bytes));
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    let (inner, armed) = parts(file);
    let Some(path) = armed else {
        return (methods(inner).xTruncate.unwrap())(inner, size);
    };
    let mut disk = disk();
    if disk.is_cut(path) {
        return ffi::SQLITE_IOERR_TRUNCATE;
    }
    disk.held
        .entry(path.clone())
        .or_default()
        .push(Held::Truncate(size));
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let (inner, armed) = parts(file);
    let Some(path) = armed else {
        return (methods(inner).xSync.unwrap())(inner, flags);
    };
    // The lock is held through the writes, so that a cut comes before or after a
    // whole sync, never inside one.
    let mut disk = disk();
    if disk.is_cut(path) {
        return ffi::SQLITE_IOERR_FSYNC;
    }
    let held = disk.held.remove(path).unwrap_or_default();
    let io = methods(inner);
    for change in held {
        let rc = match change {
            Held::Write(at, bytes) => (io.xWrite.unwrap())(
                inner,
                bytes.as_ptr() as *const c_void,
                bytes.len() as c_int,
                at,
            ),
            Held::Truncate(to) => (io.xTruncate.unwrap())(inner, to),
        };
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    (io.xSync.unwrap())(inner, flags)
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    let (inner, armed) = parts(file);
    let Some(path) = armed else {
        return (methods(inner).xFileSize.unwrap())(inner, out);
    };
    let disk = disk();
    if disk.is_cut(path) {
        return ffi::SQLITE_IOERR_FSTAT;
    }
    match disk_size(inner) {
        Ok(size) => {
            *out = held_size(size, disk.held.get(path).map_or(&[], Vec::as_slice));
            ffi::SQLITE_OK
        }
        Err(rc) => rc,
    }
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let (inner, armed) = parts(file);
    if armed.is_some_and(|path| disk().is_cut(path)) {
        return ffi::SQLITE_IOERR_LOCK;
    }
    (methods(inner).xLock.unwrap())(inner, level)
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let (inner, _) = parts(file);
    (methods(inner).xUnlock.unwrap())(inner, level)
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    let (inner, _) = parts(file);
    (methods(inner).xCheckReservedLock.unwrap())(inner, out)
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    let (inner, _) = parts(file);
    (methods(inner).xFileControl.unwrap())(inner, op, arg)
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    let (inner, _) = parts(file);
    (methods(inner).xSectorSize.unwrap())(inner)
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    let (inner, _) = parts(file);
    (methods(inner).xDeviceCharacteristics.unwrap())(inner)
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let (inner, _) = parts(file);
    (methods(inner).xShmMap.unwrap())(inner, region, size, extend, out)
}

unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    let (inner, _) = parts(file);
    (methods(inner).xShmLock.unwrap())(inner, offset, n, flags)
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    let (inner, _) = parts(file);
    (methods(inner).xShmBarrier.unwrap())(inner)
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    let (inner, _) = parts(file);
    (methods(inner).xShmUnmap.unwrap())(inner, delete)
}

unsafe extern "C" fn x_fetch(
    file: *mut ffi::sqlite3_file,
    offset: ffi::sqlite3_int64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let (inner, armed) = parts(file);
    if armed.is_some() {
        // No mapped page: SQLite reads through xRead instead.
        *out = std::ptr::null_mut();
        return ffi::SQLITE_OK;
    }
    (methods(inner).xFetch.unwrap())(inner, offset, amount, out)
}

unsafe extern "C" fn x_unfetch(
    file: *mut ffi::sqlite3_file,
    offset: ffi::sqlite3_int64,
    page: *mut c_void,
) -> c_int {
    let (inner, armed) = parts(file);
    if armed.is_some() {
        return ffi::SQLITE_OK;
    }
    (methods(inner).xUnfetch.unwrap())(inner, offset, page)
}
