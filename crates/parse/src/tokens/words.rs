//! Text scanning for the tokenizer pass: words at Unicode whitespace,
//! bytes first (ASCII, nearly all of a page, is never decoded as chars).

/// The prefix of `s` of `max` bytes, when longer, cut on a char
/// boundary, rounded up to the next boundary (the text limit is soft by
/// one char, as it always was).
pub(super) fn truncate_chars(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end += 1;
    }
    &s[..end]
}

/// Splits text into words at Unicode whitespace, scanning bytes: ASCII
/// (nearly all of a page) never goes through char decoding.
pub(super) struct Words<'a> {
    pub(super) s: &'a str,
    pub(super) at: usize,
}

impl<'a> Words<'a> {
    /// The next word, whether whitespace came before it, and its length in
    /// chars. A trailing whitespace run yields an empty word.
    #[inline]
    pub(super) fn next_word(&mut self) -> Option<(bool, &'a str, u32)> {
        let bytes = self.s.as_bytes();
        if self.at >= bytes.len() {
            return None;
        }
        let mut space = false;
        while self.at < bytes.len() {
            let len = self.space_len(bytes[self.at]);
            if len == 0 {
                break;
            }
            space = true;
            self.at += len;
        }
        let start = self.at;
        let mut chars = 0u32;
        while self.at < bytes.len() {
            let b = bytes[self.at];
            if b < 0x80 {
                if is_ascii_space(b) {
                    break;
                }
                self.at += 1;
            } else {
                if self.space_len(b) > 0 {
                    break;
                }
                self.at += utf8_len(b);
            }
            chars += 1;
        }
        Some((space, &self.s[start..self.at], chars))
    }

    /// The byte length of the whitespace char at `self.at`, whose first
    /// byte is `b`, or 0 when it is not whitespace.
    #[inline]
    fn space_len(&self, b: u8) -> usize {
        if b < 0x80 {
            return usize::from(is_ascii_space(b));
        }
        match self.s[self.at..].chars().next() {
            Some(c) if c.is_whitespace() => c.len_utf8(),
            _ => 0,
        }
    }
}

/// `char::is_whitespace` for ASCII (which includes vertical tab).
#[inline]
pub(super) fn is_ascii_space(b: u8) -> bool {
    // Branch-free: a bit mask of \t \n \x0b \x0c \r and space.
    const MASK: u64 = (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12) | (1 << 13) | (1 << 32);
    (b <= b' ') & ((MASK >> (b & 63)) & 1 == 1)
}

/// Length of the UTF-8 sequence that starts with `lead`.
#[inline]
fn utf8_len(lead: u8) -> usize {
    match lead {
        0..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Copies ASCII `core` (which starts and ends with a non-whitespace byte)
/// into `out` with each whitespace run collapsed to one space; returns the
/// count of non-whitespace bytes.
///
/// Eight bytes at a time: prose is words separated by single spaces, and a
/// word of eight bytes with no whitespace but plain single spaces is copied
/// as it is. Only a word holding a tab, a line break, a control byte or two
/// spaces in a row goes byte by byte.
pub(super) fn collapse_ascii(core: &[u8], out: &mut Vec<u8>) -> u32 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    out.clear();
    out.resize(core.len(), 0);
    let (mut w, mut prev_space, mut chars) = (0usize, false, 0u32);
    let mut chunks = core.chunks_exact(8);
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        // Per byte (exact, as every byte is below 0x80): the high bit set
        // when the byte is above b' ', and when it is not b' '.
        let above = ((x | HI) - (0x21 * LO)) & HI;
        let not_space = (((x ^ (0x20 * LO)) | HI) - LO) & HI;
        let spaces = !not_space & HI;
        let adjacent = spaces & ((spaces << 8) | (u64::from(prev_space) << 7));
        if above == not_space && adjacent == 0 {
            out[w..w + 8].copy_from_slice(chunk);
            w += 8;
            chars += 8 - spaces.count_ones();
            prev_space = spaces >> 63 == 1;
        } else {
            for &c in chunk {
                let space = is_ascii_space(c);
                out[w] = if space { b' ' } else { c };
                w += usize::from(!(space && prev_space));
                prev_space = space;
                chars += u32::from(!space);
            }
        }
    }
    for &c in chunks.remainder() {
        let space = is_ascii_space(c);
        out[w] = if space { b' ' } else { c };
        w += usize::from(!(space && prev_space));
        prev_space = space;
        chars += u32::from(!space);
    }
    out.truncate(w);
    chars
}

#[cfg(test)]
mod tests {
    use super::{collapse_ascii, is_ascii_space};

    /// The byte-by-byte definition the fast path must agree with.
    fn reference(core: &[u8]) -> (Vec<u8>, u32) {
        let (mut out, mut prev, mut chars) = (Vec::new(), false, 0u32);
        for &c in core {
            let space = is_ascii_space(c);
            if !(space && prev) {
                out.push(if space { b' ' } else { c });
            }
            prev = space;
            chars += u32::from(!space);
        }
        (out, chars)
    }

    #[test]
    fn collapse_matches_the_byte_loop_on_every_layout_of_spaces() {
        let mut cases: Vec<Vec<u8>> = vec![
            b"a".to_vec(),
            b"one two three four five six seven".to_vec(),
            b"abcdefg  hijklmn".to_vec(),
            b"abcdefg hijklmno pqrstuvw x".to_vec(),
            b"abcdefg\n\n\thijklmn\x0bopq\x0crs\rtu".to_vec(),
            b"ctrl\x01\x02bytes\x1fstay as they are".to_vec(),
            b"exactly8 exactly8".to_vec(),
        ];
        // A space at every position of a 24-byte run, alone and doubled,
        // across the 8-byte boundaries.
        for at in 1..23 {
            let mut one = vec![b'x'; 24];
            one[at] = b' ';
            cases.push(one.clone());
            if at + 1 < 23 {
                one[at + 1] = b' ';
                cases.push(one.clone());
            }
            one[at] = b'\t';
            cases.push(one);
        }
        // Pseudo-random mixes of letters, spaces and other whitespace.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for len in 1..200 {
            let mut v = Vec::with_capacity(len);
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                v.push(match seed % 16 {
                    0..=2 => b' ',
                    3 => b'\n',
                    4 => b'\t',
                    5 => 0x01,
                    n => b'a' + u8::try_from(n).unwrap_or(0),
                });
            }
            let (first, last) =
                (v.iter().position(|&c| !is_ascii_space(c)), v.iter().rposition(|&c| !is_ascii_space(c)));
            if let (Some(f), Some(l)) = (first, last) {
                cases.push(v[f..=l].to_vec());
            }
        }
        let mut out = Vec::new();
        for case in &cases {
            let chars = collapse_ascii(case, &mut out);
            let (want, want_chars) = reference(case);
            assert_eq!(out, want, "collapsing {:?}", String::from_utf8_lossy(case));
            assert_eq!(chars, want_chars, "chars of {:?}", String::from_utf8_lossy(case));
        }
    }
}
