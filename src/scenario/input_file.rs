//! The one rule for every file a command reads (scenarios, samples files, traces, Prometheus
//! text, fronts, sweep and tune shards, checkpoints): a regular file (links followed), at most
//! a stated number of bytes, refused at once otherwise. A device or a pipe is never read (one
//! that never ends would fill the memory, a FIFO without a writer would wait for ever), a file
//! larger than its bound is refused before a byte is read, and a file that grows past its bound
//! while it is read is refused when it does.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// What kind of file is read, and how large one may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputKind {
    /// The kind in the plural, as refusals name it: "scenario files", "trace files".
    pub plural: &'static str,
    pub max_bytes: u64,
    /// What to do with a file over the bound, said after it ("" for nothing): "split or sample it".
    pub advice: &'static str,
}

/// Why a file was not read. Its text names no path: each reader names its file its own way.
#[derive(Debug)]
pub enum InputRefusal {
    /// It cannot be opened or inspected (missing, no permission), or a read failed.
    Io(std::io::Error),
    Folder,
    /// A device, a pipe or a socket.
    NotRegular,
    /// Larger than the bound: its size, or None when it grew past the bound while read.
    TooLarge {
        size: Option<u64>,
        kind: InputKind,
    },
}

impl std::fmt::Display for InputRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputRefusal::Io(e) => write!(f, "cannot read the file: {e}"),
            InputRefusal::Folder => write!(f, "it is not a regular file but a folder"),
            InputRefusal::NotRegular => {
                write!(f, "it is not a regular file (a device, a pipe or a socket); faultline reads regular files only")
            }
            InputRefusal::TooLarge { size, kind } => {
                let held = match size {
                    Some(size) => format!("it holds {size} bytes"),
                    None => format!("it grew past {} bytes while it was read", kind.max_bytes),
                };
                write!(f, "{held}; {} are limited to {}", kind.plural, bytes_text(kind.max_bytes))?;
                if !kind.advice.is_empty() {
                    write!(f, " ({})", kind.advice)?;
                }
                Ok(())
            }
        }
    }
}

/// A bound exactly and as people say it: "16777216 bytes (16 MiB)".
pub fn bytes_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{b} bytes ({} GiB)", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{b} bytes ({} MiB)", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// An open input file: reads at most its bound, and fails (`InvalidData`, the refusal's text)
/// on the byte after it.
pub struct InputFile {
    file: std::io::Take<File>,
    kind: InputKind,
    /// Its size when it was opened (a hint for buffers).
    pub size: u64,
}

impl Read for InputFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        if self.file.limit() == 0 && n > 0 {
            let refusal = InputRefusal::TooLarge { size: None, kind: self.kind };
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, refusal.to_string()));
        }
        Ok(n)
    }
}

/// Opens `path` under the rule. The type is checked before opening (opening a FIFO waits for a
/// writer), and again on the open file, opened without blocking, so a path swapped meanwhile
/// is refused too.
pub fn open_input(path: &Path, kind: InputKind) -> Result<InputFile, InputRefusal> {
    check_type(&std::fs::metadata(path).map_err(InputRefusal::Io)?, kind)?;
    let file = open_nonblocking(path).map_err(InputRefusal::Io)?;
    let meta = file.metadata().map_err(InputRefusal::Io)?;
    check_type(&meta, kind)?;
    Ok(InputFile { file: file.take(kind.max_bytes + 1), kind, size: meta.len() })
}

/// The whole file under the rule.
pub fn read_input(path: &Path, kind: InputKind) -> Result<Vec<u8>, InputRefusal> {
    let mut file = open_input(path, kind)?;
    let mut bytes = Vec::with_capacity(file.size as usize);
    file.read_to_end(&mut bytes).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => InputRefusal::TooLarge { size: None, kind },
        _ => InputRefusal::Io(e),
    })?;
    Ok(bytes)
}

/// Why a line was not read whole.
#[derive(Debug)]
pub enum LineRefusal {
    /// Longer than the bound: reading stopped one byte past it.
    TooLong {
        max_bytes: u64,
    },
    Io(std::io::Error),
}

impl std::fmt::Display for LineRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineRefusal::TooLong { max_bytes } => write!(f, "longer than {}", bytes_text(*max_bytes)),
            LineRefusal::Io(e) => write!(f, "{e}"),
        }
    }
}

/// The next line of a file read line by line, without its `\n` (or `\r\n`), at most
/// `max_bytes` held: a longer line (an endless one) is refused one byte past the bound, never
/// held whole. None at the end.
pub fn next_line(reader: &mut impl std::io::BufRead, max_bytes: u64) -> Option<Result<Vec<u8>, LineRefusal>> {
    let mut line = Vec::new();
    match std::io::BufRead::read_until(&mut std::io::Read::take(reader, max_bytes + 1), b'\n', &mut line) {
        Err(e) => Some(Err(LineRefusal::Io(e))),
        Ok(0) => None,
        Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 > max_bytes => {
            Some(Err(LineRefusal::TooLong { max_bytes }))
        }
        Ok(_) => {
            if line.last() == Some(&b'\n') {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
            }
            Some(Ok(line))
        }
    }
}

fn check_type(meta: &std::fs::Metadata, kind: InputKind) -> Result<(), InputRefusal> {
    if meta.is_dir() {
        return Err(InputRefusal::Folder);
    }
    if !meta.is_file() {
        return Err(InputRefusal::NotRegular);
    }
    if meta.len() > kind.max_bytes {
        return Err(InputRefusal::TooLarge { size: Some(meta.len()), kind });
    }
    Ok(())
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK changes nothing for a regular file's reads; for a FIFO it makes the open
    // return at once instead of waiting for a writer.
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: InputKind = InputKind { plural: "test files", max_bytes: 8, advice: "" };

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("faultline-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_file_within_its_bound_reads_and_one_byte_more_is_refused_unread() {
        let dir = scratch("bound");
        std::fs::write(dir.join("eight"), b"12345678").unwrap();
        std::fs::write(dir.join("nine"), b"123456789").unwrap();
        assert_eq!(read_input(&dir.join("eight"), SMALL).unwrap(), b"12345678");
        let refusal = read_input(&dir.join("nine"), SMALL).unwrap_err();
        assert_eq!(refusal.to_string(), "it holds 9 bytes; test files are limited to 8 bytes");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn folders_devices_and_fifos_are_refused_at_once() {
        let dir = scratch("kinds");
        assert!(matches!(read_input(&dir, SMALL), Err(InputRefusal::Folder)));
        assert!(matches!(read_input(Path::new("/dev/zero"), SMALL), Err(InputRefusal::NotRegular)));
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid, NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer: opening it for reading would wait for ever.
        assert!(matches!(read_input(&fifo, SMALL), Err(InputRefusal::NotRegular)));
        assert!(matches!(read_input(&dir.join("missing"), SMALL), Err(InputRefusal::Io(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stream_stops_with_an_error_on_the_byte_past_its_bound() {
        let dir = scratch("stream");
        std::fs::write(dir.join("f"), b"1234").unwrap();
        let mut file = open_input(&dir.join("f"), SMALL).unwrap();
        // The file grows past the bound after it was opened.
        std::fs::write(dir.join("f"), b"123456789abc").unwrap();
        let mut bytes = Vec::new();
        let e = file.read_to_end(&mut bytes).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("grew past 8 bytes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_that_says_it_is_empty_but_holds_more_than_its_bound_is_refused_as_too_large() {
        // /proc files report size 0 and hold more: the bound is kept while reading.
        let refusal = read_input(Path::new("/proc/self/status"), SMALL).unwrap_err();
        assert!(matches!(refusal, InputRefusal::TooLarge { size: None, .. }), "{refusal:?}");
    }

    #[test]
    fn no_line_is_handed_out_from_a_read_that_went_past_the_bound() {
        let dir = scratch("past-the-bound");
        std::fs::write(dir.join("f"), b"1234").unwrap();
        let file = open_input(&dir.join("f"), SMALL).unwrap();
        // Grown after the open: the first read takes 9 bytes, one past the bound, and fails,
        // though its first line alone would fit.
        std::fs::write(dir.join("f"), b"1234567\n9").unwrap();
        let mut reader = std::io::BufReader::new(file);
        assert!(matches!(next_line(&mut reader, 100), Some(Err(LineRefusal::Io(_)))));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn lines_are_read_up_to_their_bound_and_no_further() {
        let text = b"12345678\nabc\r\n123456789\nlast";
        let mut reader = &text[..];
        let mut next = || next_line(&mut reader, 8).map(|r| r.map_err(|e| e.to_string()));
        assert_eq!(next(), Some(Ok(b"12345678".to_vec())));
        assert_eq!(next(), Some(Ok(b"abc".to_vec())));
        assert_eq!(next(), Some(Err("longer than 8 bytes".to_string())));
        // An endless line: refused after 9 bytes, whatever follows.
        let mut endless = std::io::BufReader::new(std::io::repeat(b'x'));
        assert!(matches!(next_line(&mut endless, 8), Some(Err(LineRefusal::TooLong { max_bytes: 8 }))));
        // A last line without its newline, exactly at the bound, is whole.
        let mut last = &b"abc\n12345678"[..];
        assert_eq!(next_line(&mut last, 8).unwrap().unwrap(), b"abc");
        assert_eq!(next_line(&mut last, 8).unwrap().unwrap(), b"12345678");
        assert!(next_line(&mut last, 8).is_none());
    }

    #[test]
    fn bounds_read_as_people_say_them() {
        assert_eq!(bytes_text(16 << 20), "16777216 bytes (16 MiB)");
        assert_eq!(bytes_text(4 << 30), "4294967296 bytes (4 GiB)");
        assert_eq!(bytes_text(1000), "1000 bytes");
        // Whole units only, and only from one unit up: 0 is no "0 GiB", 1.5 GiB is in MiB.
        assert_eq!(bytes_text(0), "0 bytes");
        assert_eq!(bytes_text(3 << 29), "1610612736 bytes (1536 MiB)");
    }
}
