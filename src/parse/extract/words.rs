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
