//! Response bodies: a whole buffer for ordinary pages, and streams for the
//! faults that depend on timing or size (a > 10 MB page sent in shared
//! 64 KiB chunks, a trickle, a body cut off by a reset). Each body holds
//! the in-flight guard of its request, so "in flight" lasts until the last
//! byte is written or the connection is dropped.

use std::io::Write as _;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use hyper::body::{Body, Frame, SizeHint};

use super::stats::InFlight;

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

/// The body type of every farm response.
pub struct FarmBody {
    inner: Inner,
    guard: Option<InFlight>,
}

enum Inner {
    Full(Option<Bytes>),
    Stream(ByteStream),
}

impl FarmBody {
    #[must_use]
    pub fn full(b: impl Into<Bytes>) -> Self {
        Self { inner: Inner::Full(Some(b.into())), guard: None }
    }

    fn stream(s: impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static) -> Self {
        Self { inner: Inner::Stream(Box::pin(s)), guard: None }
    }

    /// The whole body, when it is one piece (not a stream).
    #[must_use]
    pub fn whole(&self) -> Option<&[u8]> {
        match &self.inner {
            Inner::Full(b) => Some(b.as_deref().unwrap_or_default()),
            Inner::Stream(_) => None,
        }
    }

    /// Keeps the request counted as in flight while this body lives.
    pub fn set_guard(&mut self, g: InFlight) {
        self.guard = Some(g);
    }
}

impl Body for FarmBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let polled = match &mut this.inner {
            Inner::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Inner::Stream(s) => s.as_mut().poll_next(cx).map(|o| o.map(|r| r.map(Frame::data))),
        };
        let ended = matches!(polled, Poll::Ready(None)) || matches!(this.inner, Inner::Full(None));
        if ended {
            // The whole body is handed over, before it is written: the
            // request is no longer in flight.
            if let Some(mut g) = this.guard.take() {
                g.whole();
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.inner, Inner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Inner::Full(None) => SizeHint::with_exact(0),
            Inner::Stream(_) => SizeHint::default(),
        }
    }
}

/// Bytes per chunk of the big page.
const CHUNK: usize = 64 * 1024;
const BIG_HEAD: &str = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>A very large page</title></head><body><h1>A very large page</h1>\n";
const BIG_TAIL: &str = "</body></html>\n";

/// One shared 64 KiB chunk of paragraphs, built once.
fn big_chunk() -> Bytes {
    static CHUNK_BYTES: OnceLock<Bytes> = OnceLock::new();
    CHUNK_BYTES
        .get_or_init(|| {
            let para = "<p>This page is larger than ten megabytes, which a crawler must cut off without running out of memory.</p>\n";
            let mut s = String::with_capacity(CHUNK);
            while s.len() + para.len() <= CHUNK {
                s.push_str(para);
            }
            while s.len() < CHUNK {
                s.push(' ');
            }
            Bytes::from(s)
        })
        .clone()
}

/// The big page: `chunks` shared chunks between a head and a tail; returns
/// the body and its exact length (for a Content-Length header).
#[must_use]
pub fn big(chunks: usize) -> (FarmBody, u64) {
    let len = (BIG_HEAD.len() + chunks * CHUNK + BIG_TAIL.len()) as u64;
    let parts = std::iter::once(Bytes::from_static(BIG_HEAD.as_bytes()))
        .chain(std::iter::repeat_with(big_chunk).take(chunks))
        .chain(std::iter::once(Bytes::from_static(BIG_TAIL.as_bytes())));
    (FarmBody::stream(futures::stream::iter(parts.map(Ok))), len)
}

/// A page that arrives a few bytes every 100 ms for about `total`.
#[must_use]
pub fn trickle(total: Duration) -> FarmBody {
    drip(total, Duration::from_millis(100), b"drip drop ")
}

/// A page that arrives `drop` every `every` for about `total`.
#[must_use]
pub fn drip(total: Duration, every: Duration, drop: &'static [u8]) -> FarmBody {
    let ticks = (total.as_millis() / every.as_millis().max(1)).max(1);
    let head = futures::stream::once(async {
        Ok(Bytes::from_static(b"<!DOCTYPE html>\n<html><head><title>Trickle</title></head><body><p>"))
    });
    let drips = futures::stream::unfold(0u128, move |k| async move {
        if k >= ticks {
            return None;
        }
        tokio::time::sleep(every).await;
        Some((Ok(Bytes::from_static(drop)), k + 1))
    });
    let tail = futures::stream::once(async { Ok(Bytes::from_static(b"</p></body></html>\n")) });
    FarmBody::stream(head.chain(drips).chain(tail))
}

/// A whole page sent in two halves `pause` apart (a slow server).
#[must_use]
pub fn halves(page: String, pause: Duration) -> FarmBody {
    let mut first = page;
    let second = first.split_off(first.len() / 2);
    let a = futures::stream::once(async move { Ok(Bytes::from(first)) });
    let b = futures::stream::once(async move {
        tokio::time::sleep(pause).await;
        Ok(Bytes::from(second))
    });
    FarmBody::stream(a.chain(b))
}

/// Sends `sent` bytes of HTML and then fails, which makes hyper drop the
/// connection mid-body (the declared Content-Length is never reached).
/// The error is a stream item, so a client sees a clean head, then a cut.
#[must_use]
pub fn reset_after(sent: usize) -> FarmBody {
    let mut page = String::with_capacity(sent);
    page.push_str("<!DOCTYPE html>\n<html><head><title>Reset</title></head><body>");
    while page.len() < sent {
        page.push_str("<p>The connection will be reset before this page ends.</p>\n");
    }
    page.truncate(sent);
    let first = futures::stream::once(async move { Ok(Bytes::from(page)) });
    // Pending for a moment first, so hyper flushes the head and the bytes
    // before the error aborts the connection.
    let cut = futures::stream::once(async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "test web: reset mid-body"))
    });
    FarmBody::stream(first.chain(cut))
}

/// Uncompressed size of the gzip bomb.
pub const BOMB_INFLATED: u64 = 1 << 30;

/// A gzip stream of 1 GiB of zeros (≈ 1 MB: deflate's best ratio is about
/// 1:1000), built once on first use by streaming zeros through flate2.
#[must_use]
pub fn gzip_bomb() -> Bytes {
    static BOMB: OnceLock<Bytes> = OnceLock::new();
    BOMB.get_or_init(|| {
        let zeros = vec![0u8; 1 << 20];
        let mut enc = flate2::write::GzEncoder::new(Vec::with_capacity(1 << 21), flate2::Compression::best());
        for _ in 0..BOMB_INFLATED / zeros.len() as u64 {
            enc.write_all(&zeros).expect("writing to a Vec cannot fail");
        }
        Bytes::from(enc.finish().expect("finishing a Vec-backed encoder cannot fail"))
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    #[tokio::test]
    async fn big_page_streams_its_declared_length() {
        let (body, len) = big(3);
        let got = body.collect().await.expect("body").to_bytes();
        assert_eq!(got.len() as u64, len);
        assert!(got.starts_with(b"<!DOCTYPE html>") && got.ends_with(b"</html>\n"));
    }

    #[tokio::test]
    async fn reset_body_errors_after_its_bytes() {
        let mut body = reset_after(1000);
        let first = body.frame().await.expect("frame").expect("ok").into_data().expect("data");
        assert_eq!(first.len(), 1000);
        assert!(body.frame().await.expect("frame").is_err());
    }

    #[tokio::test]
    async fn trickle_takes_its_time() {
        let t = std::time::Instant::now();
        let got = trickle(Duration::from_millis(300)).collect().await.expect("body").to_bytes();
        assert!(t.elapsed() >= Duration::from_millis(290), "{:?}", t.elapsed());
        assert!(got.ends_with(b"</html>\n"));
    }

    #[test]
    fn gzip_bomb_is_small_and_inflates_to_a_gibibyte() {
        use std::io::Read as _;
        let bomb = gzip_bomb();
        assert!(bomb.len() < 2 << 20, "compressed size {}", bomb.len());
        // ISIZE, the gzip trailer's last four bytes: the inflated size mod 2^32.
        let isize = u32::from_le_bytes(bomb[bomb.len() - 4..].try_into().expect("4 bytes"));
        assert_eq!(u64::from(isize), BOMB_INFLATED % (1 << 32));
        let mut dec = flate2::read::GzDecoder::new(&bomb[..]);
        let mut buf = vec![1u8; 8 << 20];
        dec.read_exact(&mut buf).expect("inflate the first 8 MiB");
        assert!(buf.iter().all(|b| *b == 0));
    }
}
