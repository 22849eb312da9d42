//! An append-only log of records in an unnamed temporary file.
//!
//! What grows with the crawl but is read back only now and then lives
//! here instead of in the process: the kernel's page cache holds it (and
//! writes it out under memory pressure), while the process keeps an
//! 8-byte slot per record. A read is one `pread`, about a microsecond when
//! the page is cached. The file is in the temporary folder (`TMPDIR`, else
//! `/tmp`) and vanishes when the log is dropped or the process dies.

use std::fs::File;
use std::io::{Error, ErrorKind, Write};
use std::os::unix::fs::FileExt;

/// Longest record: a slot holds its length in 24 bits.
pub const MAX_RECORD: usize = (1 << 24) - 1;

/// Bytes gathered before they are written to the file.
const BUFFER: usize = 64 << 10;

/// The log. Records are appended whole and read back by slot.
pub struct SpillLog {
    file: File,
    /// Bytes already in the file; later ones are still in `buffer`.
    written: u64,
    buffer: Vec<u8>,
}

impl SpillLog {
    /// An empty log in a new unnamed temporary file.
    ///
    /// # Errors
    /// When no temporary file can be created.
    pub fn new() -> std::io::Result<Self> {
        Ok(Self { file: tempfile::tempfile()?, written: 0, buffer: Vec::with_capacity(BUFFER) })
    }

    /// Appends one record made of `parts`, in order, and returns its slot
    /// (`offset << 24 | length`).
    ///
    /// # Errors
    /// When the record is longer than [`MAX_RECORD`] or the file cannot be
    /// written.
    pub fn append(&mut self, parts: &[&[u8]]) -> std::io::Result<u64> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > MAX_RECORD {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("a spill record of {len} bytes (limit {MAX_RECORD})"),
            ));
        }
        let offset = self.written + self.buffer.len() as u64;
        for p in parts {
            self.buffer.extend_from_slice(p);
        }
        if self.buffer.len() >= BUFFER {
            self.flush()?;
        }
        Ok(offset << 24 | len as u64)
    }

    /// Writes the buffered records to the file and lets the buffer go:
    /// a log that is only read from now on holds no memory but its slots.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.file.write_all(&self.buffer)?;
        self.written += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// The record at `slot`, from the buffer or the file.
    ///
    /// # Errors
    /// When the file cannot be read.
    pub fn read(&self, slot: u64) -> std::io::Result<Vec<u8>> {
        let (offset, len) = (slot >> 24, (slot & MAX_RECORD as u64) as usize);
        let mut bytes = vec![0; len];
        if offset >= self.written {
            // Still buffered: records move to the file whole.
            let at = usize::try_from(offset - self.written).map_err(|e| Error::new(ErrorKind::InvalidInput, e))?;
            let src = self
                .buffer
                .get(at..at + len)
                .ok_or_else(|| Error::new(ErrorKind::InvalidInput, "slot past the end of the spill log"))?;
            bytes.copy_from_slice(src);
        } else {
            self.file.read_exact_at(&mut bytes, offset)?;
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_from_the_buffer_and_from_the_file() {
        let mut log = SpillLog::new().expect("temp file");
        let first = log.append(&[b"ab", b"", b"cd"]).expect("append");
        assert_eq!(log.read(first).expect("read"), b"abcd", "buffered");
        let many: Vec<u64> = (0..4000)
            .map(|i| log.append(&[format!("record {i} {}", "x".repeat(i % 50)).as_bytes()]).expect("append"))
            .collect();
        assert!(log.written > 0, "the log reached the file");
        assert_eq!(log.read(first).expect("read"), b"abcd", "from the file");
        log.flush().expect("flush");
        assert!(log.buffer.is_empty());
        for (i, &slot) in many.iter().enumerate() {
            assert_eq!(log.read(slot).expect("read"), format!("record {i} {}", "x".repeat(i % 50)).as_bytes());
        }
        let empty = log.append(&[]).expect("append");
        assert!(log.read(empty).expect("read").is_empty());
    }

    #[test]
    fn an_oversized_record_is_refused_and_nothing_is_written() {
        let mut log = SpillLog::new().expect("temp file");
        let big = vec![b'x'; MAX_RECORD];
        let err = log.append(&[&big, b"y"]).expect_err("too long");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("limit"), "{err}");
        assert_eq!((log.written, log.buffer.len()), (0, 0));
    }
}
