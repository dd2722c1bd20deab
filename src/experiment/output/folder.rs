//! An output set that appears as a whole or not at all. Every file of a command is written into
//! a staging folder beside the destination, a manifest is written last, and the staging folder
//! then trades places with the destination in one `renameat2(RENAME_EXCHANGE)`. A kill at any
//! moment leaves either the old complete set or the new one; whatever a killed command left
//! beside the destination is removed by the next command that commits there.

use super::formats::VERSION;
use crate::experiment::command::CommandError;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The file every output folder carries; readers trust the files it lists.
pub const MANIFEST: &str = "manifest.json";

/// Names a faultline folder held before manifests existed; such a folder may be replaced too.
const LEGACY_FILES: [&str; 4] = ["summary.json", "timeseries.csv", "sweep.csv", "sweep.json"];

/// What a manifest records: which command wrote the set, from what, and every file in it.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: String,
    pub version: String,
    pub command: String,
    pub scenario: String,
    /// `run`'s: [`super::formats::scenario_digest`] of the scenario it simulated, so that
    /// `faultline compare` can tell two folders of one scenario from two of different ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_digest: Option<String>,
    pub files: Vec<String>,
}

/// A folder being written; dropped without [`OutputFolder::commit`], it vanishes.
pub struct OutputFolder {
    target: PathBuf,
    /// The destination as the user named it: what messages say, never the staging folder.
    shown: PathBuf,
    staging: PathBuf,
    files: Vec<String>,
    /// Recorded in the manifest (`run` only).
    scenario_digest: Option<String>,
    committed: bool,
    /// Held until the folder is dropped: no other faultline process writes the same target.
    _lock: OutputLock,
}

/// An exclusive advisory lock (flock) on `.NAME.faultline-lock` beside an output: one writer
/// per output at a time. The kernel releases it when its holder exits, however it exits, so a
/// killed command never blocks the next one (its lock file stays until the next writer's end).
/// The holder removes the file as it lets go, while still holding the lock; a process that
/// locked the file just before it was removed sees that the path no longer names what it locked
/// and starts over, so two writers never hold locks at once.
pub struct OutputLock {
    file: File,
    path: PathBuf,
    /// The folders taking the lock created, deepest first: removed again on drop while they are
    /// empty, so a refused command leaves no empty folders behind.
    created_folders: Vec<PathBuf>,
}

/// The folders `create_dir_all(folder)` would create, deepest first.
fn missing_folders(folder: &Path) -> Vec<PathBuf> {
    folder.ancestors().take_while(|a| !a.as_os_str().is_empty() && !a.exists()).map(Path::to_path_buf).collect()
}

fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        (Ok(_), Err(_)) | (Err(_), Ok(_)) | (Err(_), Err(_)) => false,
    }
}

impl OutputLock {
    /// Takes the lock for `target` at once, or says who holds it.
    pub fn take(target: &Path) -> Result<OutputLock, CommandError> {
        Self::take_for(target, target)
    }

    /// As [`OutputLock::take`], naming `shown` (the user's words for `target`) in messages.
    fn take_for(target: &Path, shown: &Path) -> Result<OutputLock, CommandError> {
        use std::os::fd::AsRawFd;
        let path = sibling(target, "lock");
        let mut created_folders = Vec::new();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            created_folders = missing_folders(parent);
            std::fs::create_dir_all(parent).map_err(|e| beside_error(shown, parent, e))?;
        }
        for _ in 0..10 {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| beside_error(shown, path.parent().unwrap_or(Path::new(".")), e))?;
            // SAFETY: flock on a descriptor this function owns; it only changes the lock.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    return Err(CommandError::Input(format!(
                        "another faultline process is writing {} (it holds {}); wait for it to finish or choose another output",
                        shown.display(),
                        path.display()
                    )));
                }
                return Err(io_error("lock", shown, e));
            }
            if same_file(&file, &path) {
                return Ok(OutputLock { file, path, created_folders });
            }
            // The holder removed the file between our open and our lock: start over.
        }
        Err(CommandError::Input(format!("cannot lock {}: its lock file keeps changing", shown.display())))
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        // Removed while still locked (the descriptor closes after this).
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
        // remove_dir refuses a folder that holds anything: the output written keeps its folders.
        for folder in &self.created_folders {
            if std::fs::remove_dir(folder).is_err() {
                break;
            }
        }
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> CommandError {
    CommandError::Io(format!("cannot {what} {}: {}", path.display(), plain_reason(&e)))
}

/// An output's folder could not be used where faultline writes beside it (its lock and the
/// staging folder of the new set): names the user's output and the folder that refused.
fn beside_error(shown: &Path, folder: &Path, e: std::io::Error) -> CommandError {
    let folder = if folder.as_os_str().is_empty() { Path::new(".") } else { folder };
    CommandError::Io(format!("cannot write {} ({}: {})", shown.display(), folder.display(), plain_reason(&e)))
}

/// The system's reason in plain words for the failures a user can act on; the OS message
/// otherwise. The error number stays, for a search.
fn plain_reason(e: &std::io::Error) -> String {
    let words = match e.raw_os_error() {
        Some(libc::EROFS) => "the file system is mounted read-only",
        Some(libc::EACCES) | Some(libc::EPERM) => "permission denied",
        Some(libc::ENOSPC) => "no space left on the device",
        Some(libc::EDQUOT) => "the disk quota is used up",
        Some(libc::EBUSY) => "busy: a mount point, or in use by the system",
        Some(libc::ENOENT) => "no such file or folder",
        Some(libc::ENOTDIR) => "a part of the path is a file, not a folder",
        _ => return e.to_string(),
    };
    match e.raw_os_error() {
        Some(n) => format!("{words} (os error {n})"),
        None => words.to_string(),
    }
}

/// True when `target` is a folder another file system is mounted on: it cannot be renamed,
/// so it cannot be replaced as a whole.
fn is_mount_point(target: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(target) else { return false };
    if !meta.is_dir() {
        return false;
    }
    match target.parent().map(std::fs::metadata) {
        Some(Ok(parent)) => parent.dev() != meta.dev(),
        Some(Err(_)) => false,
        None => true,
    }
}

/// A name beside `target` that only faultline uses: `.NAME.faultline-KIND[-pid]`.
fn sibling(target: &Path, kind: &str) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    target.with_file_name(format!(".{name}.faultline-{kind}"))
}

/// The folder where a sweep toward `target` keeps its finished points until it commits.
pub fn checkpoint_folder(target: &Path) -> PathBuf {
    sibling(target, "checkpoint")
}

impl OutputFolder {
    /// Starts a set that will replace `target`. Refuses a target that holds anything but an
    /// earlier faultline output, so `--out .` can never move a user's files away.
    pub fn create(target: &Path) -> Result<OutputFolder, CommandError> {
        let target = if target.as_os_str().is_empty() { Path::new(".") } else { target };
        let shown = target.to_path_buf();
        let target = absolute(target)?;
        if is_mount_point(&target) {
            return Err(CommandError::Input(format!(
                "argument `--out {}`: it is a mount point (another file system is mounted on it); faultline replaces its output folder as a whole, which cannot be done to a mount point, so name a folder inside it, such as {}",
                shown.display(),
                shown.join("results").display()
            )));
        }
        // Before anything is read or written: a second process on the same folder stops here.
        let lock = OutputLock::take_for(&target, &shown)?;
        check_replaceable(&target)?;
        let parent = target.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(parent).map_err(|e| beside_error(&shown, parent, e))?;
        let staging = sibling(&target, &format!("new-{}", std::process::id()));
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(|e| beside_error(&shown, parent, e))?;
        }
        std::fs::create_dir(&staging).map_err(|e| beside_error(&shown, parent, e))?;
        Ok(OutputFolder {
            target,
            shown,
            staging,
            files: Vec::new(),
            scenario_digest: None,
            committed: false,
            _lock: lock,
        })
    }

    /// The destination, as an absolute path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Names the simulated scenario's digest in the manifest.
    pub fn set_scenario_digest(&mut self, digest: String) {
        self.scenario_digest = Some(digest);
    }

    /// A buffered writer for a file of the set (folders are created as needed).
    pub fn writer(&mut self, relative: &str) -> Result<BufWriter<File>, CommandError> {
        let path = self.staging.join(relative);
        let shown = self.shown.join(relative);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io_error("write", &shown, e))?;
        }
        let file = File::create(&path).map_err(|e| io_error("write", &shown, e))?;
        if !self.files.iter().any(|f| f == relative) {
            self.files.push(relative.to_string());
        }
        Ok(BufWriter::new(file))
    }

    pub fn write(&mut self, relative: &str, bytes: &[u8]) -> Result<(), CommandError> {
        let shown = self.shown.join(relative);
        let mut w = self.writer(relative)?;
        w.write_all(bytes).and_then(|_| w.flush()).map_err(|e| io_error("write", &shown, e))
    }

    /// Writes the manifest, then puts the set in place of the target in one step. Returns the
    /// files written, relative to the folder.
    pub fn commit(mut self, command: &str, scenario: &str) -> Result<Vec<String>, CommandError> {
        let manifest = Manifest {
            format: "faultline-output".into(),
            version: VERSION.into(),
            command: command.into(),
            scenario: scenario.into(),
            scenario_digest: self.scenario_digest.clone(),
            files: self.files.clone(),
        };
        let mut text = serde_json::to_string_pretty(&manifest).expect("a manifest always serializes");
        text.push('\n');
        let path = self.staging.join(MANIFEST);
        std::fs::write(&path, text).map_err(|e| io_error("write", &self.shown.join(MANIFEST), e))?;
        // On disk before the swap, so a crash of the machine (not only of the process) after it
        // cannot leave a set whose files are empty.
        for relative in self.files.iter().map(String::as_str).chain([MANIFEST]) {
            let file = self.staging.join(relative);
            let shown = self.shown.join(relative);
            File::open(&file).and_then(|f| f.sync_all()).map_err(|e| io_error("write", &shown, e))?;
        }
        swap_into_place(&self.staging, &self.target).map_err(|e| io_error("replace", &self.shown, e))?;
        sync_folder(self.target.parent());
        self.committed = true;
        remove_leftovers(&self.target);
        Ok(std::mem::take(&mut self.files))
    }
}

impl Drop for OutputFolder {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf, CommandError> {
    std::path::absolute(path).map_err(|e| io_error("resolve", path, e))
}

/// A target may be replaced when it is absent, empty, or a faultline output set.
fn check_replaceable(target: &Path) -> Result<(), CommandError> {
    let meta = match std::fs::symlink_metadata(target) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error("read", target, e)),
    };
    let refuse = |why: &str| {
        CommandError::Input(format!(
            "argument `--out {}`: {why}; faultline replaces its output folder as a whole, so name a new or empty folder, or one it wrote",
            target.display()
        ))
    };
    if !meta.is_dir() {
        return Err(refuse("it exists and is not a folder"));
    }
    if target.join(MANIFEST).is_file() || is_legacy_output(target) {
        return Ok(());
    }
    Err(refuse("the folder holds files faultline did not write"))
}

/// A folder written before manifests: only faultline's file names, one level of policy folders.
fn is_legacy_output(dir: &Path) -> bool {
    let entries = |d: &Path| -> Option<Vec<(String, bool)>> {
        std::fs::read_dir(d)
            .ok()?
            .map(|e| e.ok().map(|e| (e.file_name().to_string_lossy().into_owned(), e.path().is_dir())))
            .collect()
    };
    let Some(top) = entries(dir) else { return false };
    top.iter().all(|(name, is_dir)| match is_dir {
        false => LEGACY_FILES.contains(&name.as_str()),
        true => entries(&dir.join(name))
            .is_some_and(|inner| inner.iter().all(|(n, d)| !d && LEGACY_FILES.contains(&n.as_str()))),
    })
}

/// Makes a rename in `folder` durable; best effort (some file systems refuse to sync a folder).
fn sync_folder(folder: Option<&Path>) {
    if let Some(folder) = folder.filter(|f| !f.as_os_str().is_empty()) {
        let _ = File::open(folder).and_then(|f| f.sync_all());
    }
}

/// Exchanges `staging` and `target` atomically (the old set ends up in `staging` and is
/// removed); a first set is a plain rename. On a file system without RENAME_EXCHANGE the old
/// set is renamed aside first, which leaves a moment with no set at all.
fn swap_into_place(staging: &Path, target: &Path) -> std::io::Result<()> {
    if !target.exists() {
        return std::fs::rename(staging, target);
    }
    let c_path = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (from, to) = (c_path(staging)?, c_path(target)?);
    // The system call, not glibc's wrapper: the wrapper appeared in glibc 2.28, and the
    // binary for cluster nodes links against glibc 2.17 (scripts/glibc-floor.sh). A kernel
    // without the call (before 3.15) answers ENOSYS, handled below.
    // SAFETY: both pointers are NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD as libc::c_long,
            from.as_ptr(),
            libc::AT_FDCWD as libc::c_long,
            to.as_ptr(),
            libc::RENAME_EXCHANGE as libc::c_long,
        )
    };
    if rc == 0 {
        let _ = std::fs::remove_dir_all(staging);
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => {
            let aside = sibling(target, &format!("old-{}", std::process::id()));
            std::fs::rename(target, &aside)?;
            std::fs::rename(staging, target)?;
            let _ = std::fs::remove_dir_all(&aside);
            Ok(())
        }
        _ => Err(e),
    }
}

/// Staging and set-aside folders that killed commands left beside `target`.
fn remove_leftovers(target: &Path) {
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else { return };
    let Some(parent) = target.parent() else { return };
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let prefix = format!(".{name}.faultline-");
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(kind) = file.strip_prefix(&prefix) else { continue };
        if kind.starts_with("new-") || kind.starts_with("old-") {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A single-file output, by what its path names (one rule for `-o`, `--junit`, sweep shard files
/// and every other path the user gives; files faultline names itself, checkpoints, tune shards and
/// samples files, are always replaced: [`AtomicFile::create_internal`]):
/// - a new path or a regular file: written under a temporary name in its folder and renamed into
///   place on commit, so a reader sees the old file or the new one, never a part; dropped
///   uncommitted, the temporary file vanishes, and a commit removes what killed writers of the
///   same target left;
/// - a character device, a FIFO or a socket (`/dev/stdout`, `/dev/null`, a named pipe): written
///   to directly as a stream, never replaced;
/// - a symbolic link: followed, and its target treated by these rules (the link stays);
/// - anything else (a directory, a block device): refused, naming the path.
pub struct AtomicFile {
    /// The path the user gave, for messages.
    shown: PathBuf,
    /// Where the file lands (the link's target for a symbolic link).
    path: PathBuf,
    /// None when writing a stream in place.
    temp: Option<PathBuf>,
    writer: Option<BufWriter<File>>,
    /// Synced to disk before the rename (outputs); checkpoints skip it, since a point whose file
    /// a machine crash left empty does not read back and is simply computed again.
    durable: bool,
}

/// What a path names, once its symbolic links are followed.
enum Destination {
    /// Absent, or a regular file: replaced atomically.
    Replace(PathBuf),
    /// A character device, FIFO or socket: written in place.
    Stream(PathBuf),
}

/// Follows `path`'s symbolic links (at most 40, as the kernel does) and says how to write it.
fn destination(path: &Path) -> Result<Destination, CommandError> {
    use std::os::unix::fs::FileTypeExt;
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        let meta = match std::fs::symlink_metadata(&current) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Destination::Replace(current)),
            Err(e) => return Err(io_error("write", path, e)),
            Ok(meta) => meta,
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let link = std::fs::read_link(&current).map_err(|e| io_error("follow the link", path, e))?;
            current = match current.parent() {
                Some(dir) if link.is_relative() => dir.join(link),
                Some(_) | None => link,
            };
            continue;
        }
        if kind.is_file() {
            return Ok(Destination::Replace(current));
        }
        if kind.is_char_device() || kind.is_fifo() || kind.is_socket() {
            return Ok(Destination::Stream(current));
        }
        let what = if kind.is_dir() { "a directory" } else { "neither a regular file nor a stream (a block device?)" };
        return Err(CommandError::Input(format!(
            "cannot write {}: it is {what}; give a file path (or a stream such as /dev/stdout)",
            path.display()
        )));
    }
    Err(CommandError::Input(format!("cannot write {}: too many levels of symbolic links", path.display())))
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<AtomicFile, CommandError> {
        let shown = path.to_path_buf();
        match destination(path)? {
            Destination::Stream(target) => {
                let file =
                    std::fs::OpenOptions::new().write(true).open(&target).map_err(|e| io_error("write", path, e))?;
                Ok(AtomicFile { shown, path: target, temp: None, writer: Some(BufWriter::new(file)), durable: false })
            }
            Destination::Replace(target) => AtomicFile::replacing(shown, target),
        }
    }

    /// Written under a temporary name beside `target` and renamed onto it on commit.
    fn replacing(shown: PathBuf, target: PathBuf) -> Result<AtomicFile, CommandError> {
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = target.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
        }
        let file = File::create(&temp).map_err(|e| io_error("write", &shown, e))?;
        let writer = Some(BufWriter::new(file));
        Ok(AtomicFile { shown, path: target, temp: Some(temp), writer, durable: true })
    }

    /// A file faultline names itself (a checkpoint, a shard, a samples file), never a path the
    /// user typed: always replaced by rename, whatever is at its path. A FIFO, a device or a
    /// link someone left there is replaced, never written through (a FIFO would block the
    /// command for ever, a link to /dev/null would swallow the file); a directory is refused.
    pub fn create_internal(path: &Path) -> Result<AtomicFile, CommandError> {
        if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir()) {
            return Err(CommandError::Input(format!(
                "cannot write {}: it is a directory, where faultline keeps one of its own files; remove it",
                path.display()
            )));
        }
        AtomicFile::replacing(path.to_path_buf(), path.to_path_buf())
    }

    pub fn commit(mut self) -> Result<(), CommandError> {
        let writer = self.writer.take().expect("an atomic file is committed once");
        let file = writer.into_inner().map_err(|e| io_error("write", &self.shown, e.into_error()))?;
        let Some(temp) = self.temp.clone() else {
            // A stream: everything is written once the buffer is flushed (a full device says
            // so here).
            return Ok(());
        };
        if self.durable {
            file.sync_all().map_err(|e| io_error("write", &self.shown, e))?;
        }
        std::fs::rename(&temp, &self.path).map_err(|e| io_error("write", &self.shown, e))?;
        if self.durable {
            sync_folder(self.path.parent());
        }
        remove_dead_temporaries(&self.path);
        Ok(())
    }
}

/// Removes `.NAME.tmp-PID` files beside `target` whose writer is no longer running: what a
/// killed `replay -o`, `gate --junit` or shard write left. A live writer's file is kept.
fn remove_dead_temporaries(target: &Path) {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else { return };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let prefix = format!(".{}.tmp-", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl std::ops::Deref for AtomicFile {
    type Target = BufWriter<File>;
    fn deref(&self) -> &Self::Target {
        self.writer.as_ref().expect("an atomic file is open until committed")
    }
}

impl std::ops::DerefMut for AtomicFile {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.writer.as_mut().expect("an atomic file is open until committed")
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp
            && (self.writer.take().is_some() || temp.exists())
        {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Writes `bytes` to `path` atomically and durably (see [`AtomicFile`]).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CommandError> {
    AtomicFile::create(path)?.write_whole(bytes)
}

impl AtomicFile {
    /// Writes `bytes` as the whole file and puts it in place: for a file opened before a long
    /// computation, so that a path that cannot be written is said before the work, not after.
    pub fn write_whole(mut self, bytes: &[u8]) -> Result<(), CommandError> {
        let shown = self.shown.clone();
        self.write_all(bytes).map_err(|e| io_error("write", &shown, e))?;
        self.commit()
    }
}

/// Writes `bytes` to a file of faultline's own (see [`AtomicFile::create_internal`]),
/// atomically, and durably when `durable`.
pub fn write_internal(path: &Path, bytes: &[u8], durable: bool) -> Result<(), CommandError> {
    let mut file = AtomicFile::create_internal(path)?;
    file.durable = durable;
    file.write_all(bytes).map_err(|e| io_error("write", path, e))?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("faultline-folder-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn make_node(path: &Path, mode: libc::mode_t, device: libc::dev_t) -> std::io::Result<()> {
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mknod only reads it.
        match unsafe { libc::mknod(c.as_ptr(), mode, device) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    }

    fn file_type(path: &Path) -> std::fs::FileType {
        std::fs::symlink_metadata(path).unwrap().file_type()
    }

    #[test]
    fn a_regular_file_is_replaced_and_a_symlink_is_followed_not_replaced() {
        use std::os::unix::fs::symlink;
        let dir = scratch("links");
        write_atomically(&dir.join("plain.txt"), b"old").unwrap();
        write_atomically(&dir.join("plain.txt"), b"new").unwrap();
        assert_eq!(std::fs::read(dir.join("plain.txt")).unwrap(), b"new");
        // A link into a shared folder, and a dangling one: the link stays, its target is written.
        std::fs::create_dir_all(dir.join("shared")).unwrap();
        symlink("shared/report.xml", dir.join("link.xml")).unwrap();
        write_atomically(&dir.join("link.xml"), b"<a/>").unwrap();
        assert!(file_type(&dir.join("link.xml")).is_symlink());
        assert_eq!(std::fs::read(dir.join("shared/report.xml")).unwrap(), b"<a/>");
        write_atomically(&dir.join("link.xml"), b"<b/>").unwrap();
        assert!(file_type(&dir.join("link.xml")).is_symlink());
        assert_eq!(std::fs::read(dir.join("shared/report.xml")).unwrap(), b"<b/>");
        // A chain of links ends at a regular file; a loop is refused.
        symlink("link.xml", dir.join("chain.xml")).unwrap();
        write_atomically(&dir.join("chain.xml"), b"<c/>").unwrap();
        assert_eq!(std::fs::read(dir.join("shared/report.xml")).unwrap(), b"<c/>");
        symlink("loop2", dir.join("loop1")).unwrap();
        symlink("loop1", dir.join("loop2")).unwrap();
        let e = write_atomically(&dir.join("loop1"), b"x").unwrap_err().to_string();
        assert!(e.contains("loop1") && e.contains("symbolic links"), "{e}");
        assert!(file_type(&dir.join("loop1")).is_symlink());
        let e = write_atomically(&dir.join("shared"), b"x").unwrap_err().to_string();
        assert!(e.contains("shared") && e.contains("a directory"), "{e}");
    }

    #[test]
    fn a_fifo_and_a_character_device_are_written_as_streams_never_replaced() {
        let dir = scratch("streams");
        let fifo = dir.join("pipe");
        make_node(&fifo, libc::S_IFIFO | 0o600, 0).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomically(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&file_type(&fifo)));
        // Character devices need root (as CI runs): /dev/null's and /dev/full's numbers.
        let null = dir.join("null");
        match make_node(&null, libc::S_IFCHR | 0o666, libc::makedev(1, 3)) {
            Ok(()) => {
                write_atomically(&null, b"discarded").unwrap();
                assert!(std::os::unix::fs::FileTypeExt::is_char_device(&file_type(&null)));
                let full = dir.join("full");
                make_node(&full, libc::S_IFCHR | 0o666, libc::makedev(1, 7)).unwrap();
                let e = write_atomically(&full, b"no room").unwrap_err();
                assert!(matches!(e, CommandError::Io(_)), "a full device is an I/O failure (exit 1)");
                assert!(e.to_string().contains("full"), "{e}");
                assert!(std::os::unix::fs::FileTypeExt::is_char_device(&file_type(&full)));
            }
            Err(e) => eprintln!("SKIPPED the character-device half: mknod needs root here ({e})"),
        }
        // No temporary file is left beside a stream.
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().contains(".tmp-")), "{left:?}");
    }

    #[test]
    fn a_write_removes_what_killed_writers_of_the_same_target_left() {
        let dir = scratch("leftovers");
        // PID 2^22 + 1 is above the kernel's pid_max default limit: no such process.
        let dead = dir.join(".gate.xml.tmp-4194305");
        std::fs::write(&dead, b"half").unwrap();
        let live = dir.join(format!(".gate.xml.tmp-{}", std::process::id()));
        let other = dir.join(".other.xml.tmp-4194305");
        std::fs::write(&other, b"not ours").unwrap();
        write_atomically(&dir.join("gate.xml"), b"<ok/>").unwrap();
        assert!(!dead.exists(), "a dead writer's leftover is removed");
        assert!(!live.exists(), "our own temporary became the file");
        assert!(other.exists(), "another target's temporaries are not touched");
    }

    #[test]
    fn a_set_replaces_the_old_one_whole() {
        let dir = scratch("replace");
        let target = dir.join("out");
        let mut first = OutputFolder::create(&target).unwrap();
        first.write("a/summary.json", b"1").unwrap();
        first.write("b/summary.json", b"1").unwrap();
        first.commit("run", "s").unwrap();
        let mut second = OutputFolder::create(&target).unwrap();
        second.write("a/summary.json", b"2").unwrap();
        second.commit("run", "s").unwrap();
        assert_eq!(std::fs::read(target.join("a/summary.json")).unwrap(), b"2");
        assert!(!target.join("b").exists(), "the old set's other files go with it");
        let manifest: Manifest = serde_json::from_slice(&std::fs::read(target.join(MANIFEST)).unwrap()).unwrap();
        assert_eq!(manifest.files, vec!["a/summary.json".to_string()]);
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("out")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn messages_name_the_users_path_never_the_staging_folder() {
        let dir = scratch("shown");
        let shown = dir.join("out");
        let mut set = OutputFolder::create(&shown).unwrap();
        // The staging folder vanishes behind the command's back: the failure names what the
        // user asked for.
        std::fs::remove_dir_all(&set.staging).unwrap();
        std::fs::write(&set.staging, b"a file where the staging folder was").unwrap();
        let Err(CommandError::Io(message)) = set.writer("naive/summary.json") else { panic!("a write must fail") };
        assert_eq!(
            message,
            format!(
                "cannot write {}: a part of the path is a file, not a folder (os error 20)",
                shown.join("naive/summary.json").display()
            )
        );
        assert!(!message.contains("faultline-new"), "{message}");
        std::fs::remove_file(&set.staging).unwrap();
        drop(set);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_reasons_a_user_can_act_on_are_said_in_plain_words() {
        let reason = |n| plain_reason(&std::io::Error::from_raw_os_error(n));
        assert_eq!(reason(libc::EROFS), "the file system is mounted read-only (os error 30)");
        assert_eq!(reason(libc::EACCES), "permission denied (os error 13)");
        assert_eq!(reason(libc::ENOSPC), "no space left on the device (os error 28)");
        assert_eq!(reason(libc::EBUSY), "busy: a mount point, or in use by the system (os error 16)");
        assert_eq!(reason(libc::EXDEV), std::io::Error::from_raw_os_error(libc::EXDEV).to_string());
    }

    #[test]
    fn a_mount_point_is_refused_as_an_output_folder_before_anything_is_written() {
        assert!(is_mount_point(Path::new("/")));
        let dir = scratch("mount");
        assert!(!is_mount_point(&dir), "a plain folder is no mount point");
        // /proc is a file system of its own on every Linux this runs on.
        if Path::new("/proc/self").exists() {
            assert!(is_mount_point(Path::new("/proc")));
            let Err(CommandError::Input(message)) = OutputFolder::create(Path::new("/proc")) else {
                panic!("a mount point must be refused")
            };
            assert!(message.starts_with("argument `--out /proc`: it is a mount point"), "{message}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_uncommitted_set_leaves_nothing_and_a_killed_ones_leftovers_are_swept() {
        let dir = scratch("drop");
        let target = dir.join("out");
        {
            let mut set = OutputFolder::create(&target).unwrap();
            set.write("x.csv", b"x").unwrap();
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        // What `kill -9` between staging and renaming leaves.
        std::fs::create_dir_all(dir.join(".out.faultline-new-999999")).unwrap();
        let set = OutputFolder::create(&target).unwrap();
        set.commit("run", "s").unwrap();
        assert!(!dir.join(".out.faultline-new-999999").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_of_other_files_is_never_replaced() {
        let dir = scratch("foreign");
        std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
        let err = OutputFolder::create(&dir).err().expect("refused");
        assert!(matches!(err, CommandError::Input(_)), "{err}");
        assert!(err.to_string().contains("did not write"), "{err}");
        // A folder from before manifests may be replaced.
        let legacy = dir.join("legacy");
        std::fs::create_dir_all(legacy.join("naive")).unwrap();
        std::fs::write(legacy.join("naive/summary.json"), b"{}").unwrap();
        assert!(OutputFolder::create(&legacy).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
