//! An archive's CDXJ lines, sorted without holding them all in memory: a
//! map task of a large layer indexes tens of thousands of pages (about
//! 430 bytes a line on the test web), and every partition of the layer
//! indexes at once. Lines wait in memory up to [`RUN_BYTES`]; a full run is
//! sorted and spilled to a temporary file (`TMPDIR`), and at the end the
//! runs are merged into the index file, a line at a time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;

/// Bytes of lines held before a sorted run is spilled.
const RUN_BYTES: usize = 1 << 20;

/// One archive's index lines (without line breaks).
#[derive(Debug, Default)]
pub struct IndexLines {
    held: Vec<String>,
    held_bytes: usize,
    /// Sorted runs spilled so far: the file and each run's extent in it.
    spill: Option<File>,
    runs: Vec<(u64, u64)>,
    spilled: u64,
}

impl IndexLines {
    /// Adds a line; spills a sorted run when enough are held.
    ///
    /// # Errors
    /// When the temporary file cannot be made or written.
    pub fn push(&mut self, line: String) -> std::io::Result<()> {
        self.held_bytes += line.len() + 1;
        self.held.push(line);
        if self.held_bytes >= RUN_BYTES {
            self.spill_run()?;
        }
        Ok(())
    }

    fn spill_run(&mut self) -> std::io::Result<()> {
        self.held.sort_unstable();
        let file = match &mut self.spill {
            Some(f) => f,
            None => self.spill.insert(tempfile::tempfile()?),
        };
        let mut w = BufWriter::with_capacity(64 << 10, &*file);
        for l in self.held.drain(..) {
            w.write_all(l.as_bytes())?;
            w.write_all(b"\n")?;
        }
        w.flush()?;
        let len = self.held_bytes as u64;
        self.runs.push((self.spilled, len));
        self.spilled += len;
        self.held_bytes = 0;
        Ok(())
    }

    /// Writes every line, sorted byte-wise (as `sort` with `LC_ALL=C` and
    /// the replay tools compare), each ending with a line break, to `out`.
    /// Blocking file I/O: run it on a blocking thread.
    ///
    /// # Errors
    /// When the temporary file cannot be read or `out` written.
    pub fn write_sorted(mut self, out: &mut impl Write) -> std::io::Result<()> {
        let mut w = BufWriter::with_capacity(64 << 10, out);
        if self.runs.is_empty() {
            self.held.sort_unstable();
            for l in &self.held {
                w.write_all(l.as_bytes())?;
                w.write_all(b"\n")?;
            }
            return w.flush();
        }
        if !self.held.is_empty() {
            self.spill_run()?;
        }
        let file = self.spill.as_ref().expect("runs were spilled to it");
        let mut runs: Vec<_> = self
            .runs
            .iter()
            .map(|&(at, len)| BufReader::with_capacity(16 << 10, Run { file, at, end: at + len }))
            .collect();
        // The smallest next line of every run, merged.
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for (i, r) in runs.iter_mut().enumerate() {
            if let Some(l) = next_line(r)? {
                heap.push(Reverse((l, i)));
            }
        }
        while let Some(Reverse((line, i))) = heap.pop() {
            w.write_all(&line)?;
            if let Some(l) = next_line(&mut runs[i])? {
                heap.push(Reverse((l, i)));
            }
        }
        w.flush()
    }
}

/// The next line of a run, with its line break.
fn next_line(r: &mut BufReader<Run<'_>>) -> std::io::Result<Option<Vec<u8>>> {
    let mut l = Vec::with_capacity(512);
    Ok((r.read_until(b'\n', &mut l)? > 0).then_some(l))
}

/// One spilled run, read by position, so runs of one file are read side by
/// side.
struct Run<'a> {
    file: &'a File,
    at: u64,
    end: u64,
}

impl Read for Run<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = usize::try_from(self.end - self.at).unwrap_or(usize::MAX);
        let n = buf.len().min(left);
        if n == 0 {
            return Ok(0);
        }
        let got = self.file.read_at(&mut buf[..n], self.at)?;
        self.at += got as u64;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_out_sorted_from_memory_or_from_spilled_runs() {
        // A few lines stay in memory.
        let mut few = IndexLines::default();
        for l in ["b 2", "a 1", "c 3"] {
            few.push(l.to_string()).expect("push");
        }
        assert!(few.spill.is_none(), "no temporary file for a few lines");
        let mut out = Vec::new();
        few.write_sorted(&mut out).expect("write");
        assert_eq!(String::from_utf8(out).expect("utf8"), "a 1\nb 2\nc 3\n");

        // Enough for several runs: spilled, then merged.
        let mut many = IndexLines::default();
        let lines: Vec<String> = (0..100_000u64)
            .map(|i| format!("test,s{:03})/p/{} 20261125 {{\"n\":{i}}}", (i * 7919) % 997, i % 101))
            .collect();
        for l in &lines {
            many.push(l.clone()).expect("push");
        }
        assert!(many.runs.len() >= 2, "{} runs", many.runs.len());
        let mut out = Vec::new();
        many.write_sorted(&mut out).expect("write");
        let mut want = lines;
        want.sort();
        let got: Vec<&str> = std::str::from_utf8(&out).expect("utf8").lines().collect();
        assert_eq!(got, want.iter().map(String::as_str).collect::<Vec<_>>());
    }
}
