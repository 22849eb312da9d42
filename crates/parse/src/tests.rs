//! Unit tests of the parse on whole pages: block link-text ratios and
//! what stays out of the text, link resolution and filtering, malformed
//! HTML, caps, legacy charsets and HTML sniffing.

use super::*;

fn page(html: &str) -> Page {
    let base = Url::parse("http://s001.test/dir/page.html").expect("base");
    parse_html(html.as_bytes(), Some("text/html; charset=utf-8"), &base, &ParseConfig::default())
}

fn urls(p: &Page) -> Vec<&str> {
    p.links.iter().map(|l| l.url.as_str()).collect()
}

const ARTICLE: &str = r#"<!doctype html><html><head><title>
   The   Title </title>
<style>p { color: red } a { }</style><script>var x = "<a href='/js'>no</a>";</script></head>
<body><header><nav><ul><li><a href="/">Home</a></li><li><a href="/news/">News</a></li><li><a href="/about">About us</a></li></ul></nav></header>
<div class="main"><h1>Big headline</h1>
<p>The first paragraph has plenty of words and one <a href="other.html">inline link</a> in the middle of it, as articles do.</p>
<p>A second paragraph without links, long enough to be content rather than navigation.</p>
<noscript><a href="/noscript">enable js</a></noscript><template><a href="/tpl">tpl</a></template>
<div hidden><a href="/honeypot">trap</a></div><span style="display: none"><a href="/hidden2">x</a></span>
</div>
<aside><h3>Related</h3><ul><li><a href="/r1">Related one</a></li><li><a href="/r2">Related two</a></li></ul></aside>
<footer><p>&copy; 2026 Example. <a href="/privacy">Privacy</a> | <a href="/terms">Terms</a></p></footer>
</body></html>"#;

#[test]
fn blocks_get_link_text_ratios_and_noise_stays_out_of_the_text() {
    let p = page(ARTICLE);
    assert_eq!(p.title.as_deref(), Some("The Title"));
    assert_eq!(
        urls(&p),
        vec![
            "http://s001.test/",
            "http://s001.test/news/",
            "http://s001.test/about",
            "http://s001.test/dir/other.html",
            "http://s001.test/r1",
            "http://s001.test/r2",
            "http://s001.test/privacy",
            "http://s001.test/terms",
        ],
        "no links from script, noscript, template or hidden subtrees"
    );
    let ratio = |u: &str| p.links.iter().find(|l| l.url.as_str().ends_with(u)).expect(u).block_ratio;
    assert!(ratio("/news/") > 0.9, "nav list is all links");
    assert!(ratio("/other.html") < 0.15, "inline link in a paragraph: {}", ratio("/other.html"));
    assert!(ratio("/r1") > 0.9);
    assert!(ratio("/privacy") > 0.25, "footer paragraph is mostly links: {}", ratio("/privacy"));
    assert_eq!(p.links[3].anchor, "inline link");
    assert!(p.text.contains("Big headline"));
    assert!(p.text.contains("one inline link in the middle of it, as articles do."));
    assert!(p.text.contains("A second paragraph"));
    for absent in ["Home", "Related one", "color: red", "var x", "enable js", "trap", "Privacy"] {
        assert!(!p.text.contains(absent), "{absent:?} leaked into text: {}", p.text);
    }
    // "Related" is a heading inside <aside>, outside the link list: it is text of the aside block.
    assert!(p.text.contains("Related"));
}

#[test]
fn base_href_applies_to_every_link_even_before_it() {
    let p = page("<a href='x'>x</a><head><base href='http://blog.s001.test/b/'></head><a href='y?b=2#f'>y</a>");
    assert_eq!(urls(&p), vec!["http://blog.s001.test/b/x", "http://blog.s001.test/b/y?b=2"]);
}

#[test]
fn nofollow_fragments_and_other_schemes() {
    let p = page(
        "<p><a rel='external NoFollow' href='/n'>n</a> <a href='#top'>top</a> <a href=''>e</a> \
         <a href='mailto:a@b.test'>m</a> <a href='javascript:go()'>j</a> <a>no href</a> \
         <a href='/ok'><img src=i.png alt='Logo'></a></p>",
    );
    assert_eq!(urls(&p), vec!["http://s001.test/n", "http://s001.test/ok"]);
    assert!(p.links[0].nofollow && !p.links[1].nofollow);
    assert_eq!(p.links[1].anchor, "Logo", "image alt text is anchor text");
    assert!(!p.meta_nofollow);
    let p = page("<meta name=ROBOTS content='noindex, nofollow'><a href=/a>a</a>");
    assert!(p.meta_nofollow);
}

#[test]
fn malformed_html_is_survived() {
    let p = page("<div><p>unclosed <b>bold <a href=/a>link <div>inner text here</p></span></td>tail</table>");
    assert_eq!(urls(&p), vec!["http://s001.test/a"]);
    // The open <a> wraps the inner div (a block link): its text is anchor
    // text. (The <div> ended the <p>, so the stray </p> ends nothing and
    // the link runs on, as a browser's does.)
    assert!(p.links[0].anchor.starts_with("link inner text here"), "{}", p.links[0].anchor);
    assert!(p.text.contains("unclosed bold"), "{}", p.text);
    // Text after a stray end tag is kept.
    let p = page("<div><p>unclosed <b>bold</b> <div>inner text here</p></span></td>tail</table>");
    assert!(p.text.contains("inner text here") && p.text.contains("tail"), "{}", p.text);
    let p = page("<title>never closed <a href=/x>x</a>");
    assert_eq!(p.title.as_deref(), Some("never closed <a href=/x>x</a>"), "title is RCDATA");
    let p = page("</div></div><a href=/stray>s</a><<<>>>&amp;&bogus;\u{0}");
    assert_eq!(urls(&p), vec!["http://s001.test/stray"]);
}

#[test]
fn links_and_text_are_capped() {
    let many: String = (0..50).map(|i| format!("<a href='/l{i}'>l</a>")).collect();
    let base = Url::parse("http://s001.test/").expect("base");
    let cfg = ParseConfig { max_links: 7, max_text: 100, ..ParseConfig::default() };
    let p = parse_html(format!("<p>{}</p>{many}", "word ".repeat(500)).as_bytes(), None, &base, &cfg);
    assert_eq!(p.links.len(), 7);
    assert!(p.text.len() <= 110, "{}", p.text.len());
}

#[test]
fn legacy_charsets_decode_to_the_right_text() {
    let base = Url::parse("http://charset.test/").expect("base");
    let cfg = ParseConfig::default();
    let body =
        "<html><head><meta charset=shift_jis><title>日本語のページ</title></head><body><p>東京の天気</p></body></html>";
    let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(body);
    let p = parse_html(&bytes, Some("text/html"), &base, &cfg);
    assert_eq!(
        (p.encoding.name(), p.title.as_deref(), p.text.as_str()),
        ("Shift_JIS", Some("日本語のページ"), "東京の天気")
    );
    let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode("<p>Café crème brûlée</p>");
    let p = parse_html(&bytes, Some("text/html; charset=windows-1252"), &base, &cfg);
    assert_eq!(p.text, "Café crème brûlée");
}

#[test]
fn html_is_recognised_by_type_and_by_sniffing() {
    assert!(is_html(Some("text/html; charset=utf-8"), b"<p>x"));
    assert!(is_html(Some("application/xhtml+xml"), b"<html>"));
    assert!(is_html(Some("text/plain"), b"\n  <!DOCTYPE html><html>"));
    assert!(is_html(None, b"<html><body>x"));
    assert!(is_html(Some("application/octet-stream"), b"<div class=x>"));
    assert!(!is_html(Some("text/plain"), b"just words <html> later"));
    assert!(!is_html(Some("text/html"), b"\x89PNG\r\n\x1a\n...."), "a PNG labelled as HTML");
    assert!(!is_html(Some("text/html"), b"%PDF-1.7"));
    assert!(!is_html(Some("application/pdf"), b"<html>"));
    assert!(!is_html(Some("image/png"), b"<html>"));
}

#[test]
fn whitespace_collapses_the_same_on_the_ascii_and_the_general_path() {
    // Text tokens that are pure ASCII take a byte-level path; any other
    // char sends the token word by word. Both must collapse alike.
    let ascii = page("<p> one\t\n two \x0c three\r\n</p><p>four<b> five </b>six</p>");
    assert_eq!(ascii.text, "one two three\nfour five six");
    let mixed = page("<p> one\t\n two \x0c three\u{a0}é\r\n</p><p>four<b> five </b>six\u{3000}</p>");
    assert_eq!(mixed.text, "one two three é\nfour five six");
    let blank = page("<p>a<b>   </b>b</p>");
    assert_eq!(blank.text, "a b");
}

#[test]
fn invisible_break_hints_and_ruby_readings_are_not_text() {
    let p = page("<p>Mag&shy;da\u{ad}le\u{200b}na</p><p><ruby>子<rp>(</rp><rt>こ</rt><rp>)</rp></ruby>ども</p>");
    assert!(p.text.contains("Magdalena"), "{:?}", p.text);
    assert!(p.text.contains("子ども") && !p.text.contains('こ') && !p.text.contains('('), "{:?}", p.text);
}

/// The one-pass DOM: the same DOM as a parse of its own, and the same
/// pass result, on ordinary and on hostile pages (no panic where the tree
/// builder and the pass disagree on raw text).
#[test]
fn the_dom_built_in_the_same_pass_equals_a_parse_of_its_own() {
    let pages = [
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\"><title>M</title></head><body><p>after <a href=/m>meta</a></p></body></html>",
        "<!doctype html><html><head><title>T &amp; x</title><style>p{}</style><script>if (a<b) {}</script></head><body><p>One <a href=/x>two</a><p>three<table><tr><td>c</table>fostered<b><p>mis</b>nested</p><textarea><b>t</b></textarea><noscript><p>ns</p></noscript></body></html>",
        "<div hidden><title>a<b>c</title></div><p>after</p>",
        "<title/>x<b>y</b><p>z",
        "<svg><style><b>x</b></style><title><i>s</i></title></svg><math><mi><title>m<b>q</b></title></mi></math>",
        "<template><title>a <b> c</title></template><plaintext><p>raw",
        "<select><textarea>t</textarea><script>s</script></select><frameset><noframes><p>n</noframes>",
        "",
    ];
    for html in pages {
        let alone = tokens::tokenize(html, 100, 1 << 20);
        let (with, dom) = tokens::tokenize_with_dom(html, 100, 1 << 20);
        let reference = scraper::Html::parse_document(html);
        assert_eq!(dom.html(), reference.html(), "{html}");
        // The pass is the same where the two agree on raw text (not on
        // the pages built to make them disagree).
        if !html.contains("<title/>")
            && !html.contains("hidden")
            && !html.contains("<svg>")
            && !html.contains("<template>")
        {
            assert_eq!((with.text, with.title), (alone.text, alone.title), "{html}");
            assert_eq!(with.links.len(), alone.links.len(), "{html}");
        }
    }
}
