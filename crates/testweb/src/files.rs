//! Fixed bodies: the non-HTML files pages link to (CSS, JS, images, PDF,
//! RSS) and the robots.txt files. Small and static, so they cost nothing
//! per request.

use bytes::Bytes;

use super::site::Resource;

pub const CSS: &str = "body{font-family:serif;max-width:60em;margin:auto}.sidebar{float:right;width:18em}\n";
pub const JS: &str = "document.addEventListener('DOMContentLoaded',function(){console.log('farm');});\n";

/// A 1×1 transparent PNG.
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// JPEG start/end markers around a JFIF header: enough for sniffers.
pub const JPEG: &[u8] = &[
    0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
    0x00, 0xFF, 0xD9,
];

pub const PDF: &str = "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";

pub const FEED: &str = "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Feed</title></channel></rss>\n";

/// Regular sites and blogs: a members area and a cart are off limits; a
/// group for another robot shows that groups are told apart.
pub const ROBOTS_SITE: &str =
    "User-agent: *\nDisallow: /private/\nDisallow: /cart\n\nUser-agent: badbot\nDisallow: /\n";

/// `crawldelay.test`: one request per second, and `/hidden/` is off limits.
pub const ROBOTS_CRAWL_DELAY: &str = "User-agent: *\nCrawl-delay: 1\nDisallow: /hidden/\n";

/// Hosts that allow everything explicitly.
pub const ROBOTS_ALLOW_ALL: &str = "User-agent: *\nDisallow:\n";

pub const NOT_FOUND_HTML: &str = "<!DOCTYPE html>\n<html><head><title>Not found</title></head><body><h1>404 Not Found</h1><p>No such page on this test web.</p></body></html>\n";

/// The body of a resource, without copying the static bytes.
#[must_use]
pub fn resource_body(r: Resource) -> Bytes {
    match r {
        Resource::Css => Bytes::from_static(CSS.as_bytes()),
        Resource::Js => Bytes::from_static(JS.as_bytes()),
        Resource::Jpeg(_) => Bytes::from_static(JPEG),
        Resource::Png(_) => Bytes::from_static(PNG),
        Resource::Pdf(_) => Bytes::from_static(PDF.as_bytes()),
        Resource::Feed => Bytes::from_static(FEED.as_bytes()),
    }
}
