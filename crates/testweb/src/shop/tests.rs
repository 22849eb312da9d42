//! Tests of the shop host: its pages fetched over real HTTP on loopback
//! hold exactly the truth's values (anomalies included), the listings
//! cover every product once, the truth BFS sees the shop coherently, and
//! with the shop off nothing changes.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use url::Url;

use super::product::{price_anomaly, PriceAnomaly, PriceStyle};
use super::*;
use crate::render::Html;
use crate::site::{HostId, World};
use crate::truth::{self, classify, Target};
use crate::{Farm, FarmConfig, FarmError};

fn shop_config() -> FarmConfig {
    FarmConfig { sites: 3, pages: 30, faults: false, shop: true, ..FarmConfig::default() }
}

/// GETs `url` over a real connection to the farm (Host header from the
/// URL, as a crawler with the resolve rule sends it): status and body.
fn http_get(farm: &Farm, url: &str) -> (u16, String) {
    let u = Url::parse(url).expect("url");
    let target = &u.as_str()[u.origin().ascii_serialization().len()..];
    let mut s = TcpStream::connect(farm.addr()).expect("connect to the farm");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    write!(s, "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", u.host_str().expect("host"))
        .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("status line");
    let len = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_string))
        .and_then(|v| v.parse::<usize>().ok());
    assert_eq!(len, Some(body.len()), "{url}: whole body");
    (status, body.to_string())
}

/// The text between `start` and the next `end` after it.
fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    Some(&s[from..from + s[from..].find(end)?])
}

/// Rough well-formedness: a doctype, one title, and balanced block tags.
fn assert_well_formed(url: &str, html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"), "{url}");
    assert!(html.ends_with("</body></html>\n"), "{url}");
    assert_eq!(html.matches("<title>").count(), 1, "{url}");
    for t in ["div", "ul", "li", "p", "nav", "main", "section", "aside", "article", "header", "footer", "a", "span"] {
        let open = html.matches(&format!("<{t}>")).count() + html.matches(&format!("<{t} ")).count();
        assert_eq!(open, html.matches(&format!("</{t}>")).count(), "{url}: <{t}> balanced");
    }
}

#[test]
fn product_pages_over_http_show_the_truth() {
    let farm = Farm::start_background(shop_config()).expect("farm");
    let products = farm.shop_products();
    assert_eq!(products.len(), 60);
    let mut ids = 0;
    let mut styles = std::collections::BTreeSet::new();
    for p in &products {
        let (status, html) = http_get(&farm, &p.url);
        assert_eq!(status, 200, "{}", p.url);
        assert_well_formed(&p.url, &html);
        let k: u32 = p.url.rsplit('/').next().and_then(|k| k.parse().ok()).expect("K");
        assert_eq!(p.sku, format!("SKU-{k:05}"));
        assert!(html.contains(&format!("<title>{} | ", p.name)), "{}", p.url);
        assert!(html.contains(&format!("<h1 class=\"product-title\" itemprop=\"name\">{}</h1>", p.name)));
        let availability = if p.in_stock { "In stock" } else { "Out of stock" };
        assert!(html.contains(&format!("<span class=\"availability\">{availability}</span>")));
        assert!(html.contains(&format!("<time class=\"released\" datetime=\"{}\">", p.released)));
        let authors: Vec<&str> =
            between(&html, "<ul class=\"authors\">", "</ul>").expect("authors").split("</li>").collect();
        let want: Vec<String> = p.authors.iter().map(|a| format!("<li>{a}")).chain([String::new()]).collect();
        assert_eq!(authors, want, "{}", p.url);
        assert!((1..=3).contains(&p.authors.len()));
        assert_eq!(between(&html, "<span class=\"rating\">", "</span>"), Some(format!("{:.1}", p.rating).as_str()));
        assert_eq!(between(&html, "<span class=\"stock-count\">", "</span>"), Some(p.stock.to_string().as_str()));
        assert_eq!(p.stock == 0, !p.in_stock);
        let desc = between(&html, "<div class=\"description\" itemprop=\"description\"><p>", "</p>").expect("text");
        assert!(desc.matches(". ").count() >= 1, "a few sentences");
        let related = between(&html, "<section class=\"related\">", "</section>").expect("related");
        assert_eq!(related.matches("href=\"/product/").count(), 3);
        assert!(!related.contains(&format!("href=\"/product/{k}\"")));
        // The price, as the anomalies have it.
        let price_el = between(&html, "<span class=\"price\"", "</span>");
        match (price_anomaly(k), &p.price, &p.price_text) {
            (Some(PriceAnomaly::Missing), None, None) => {
                assert!(!html.contains("class=\"price\"") && !html.contains("itemprop=\"price\""), "{}", p.url);
            }
            (Some(PriceAnomaly::CallUs), None, Some(t)) => {
                assert_eq!((t.as_str(), price_el), ("Call us", Some(">Call us")));
            }
            (None, Some(v), Some(t)) => {
                assert_eq!(price_el, Some(format!(" itemprop=\"price\" content=\"{v:.2}\">{t}").as_str()));
                let content: f64 = format!("{v:.2}").parse().expect("number");
                assert_eq!(content.to_bits(), v.to_bits());
                let sym = match p.currency.as_str() {
                    "USD" => "$",
                    "GBP" => "£",
                    _ => "€",
                };
                assert!(t.contains(sym), "{t} in {}", p.currency);
                styles.insert(if t.ends_with(" €") { "euro-comma" } else { sym });
            }
            other => panic!("{}: inconsistent price truth {other:?}", p.url),
        }
        // JSON-LD.
        let ld: serde_json::Value = serde_json::from_str(
            between(&html, "<script type=\"application/ld+json\">", "</script>").expect("JSON-LD"),
        )
        .expect("JSON-LD parses");
        assert_eq!(ld["@type"], "Product");
        assert_eq!(ld["name"], p.name.as_str());
        assert_eq!(ld["sku"], p.sku.as_str());
        assert_eq!(ld["brand"]["name"], p.brand.as_str());
        assert_eq!(ld["releaseDate"], p.released.as_str());
        assert_eq!(ld["offers"]["priceCurrency"], p.currency.as_str());
        assert_eq!(ld["offers"]["price"].as_f64(), p.price);
        let schema = format!("https://schema.org/{}", if p.in_stock { "InStock" } else { "OutOfStock" });
        assert_eq!(ld["offers"]["availability"], schema.as_str());
        ids += usize::from(html.contains("<div id=\"p-"));
    }
    assert_eq!(styles.len(), 4, "all four price formats: {styles:?}");
    assert!((10..=50).contains(&ids), "generated ids on some products, not all: {ids}");
    // The served truth is the same.
    let (status, json) = http_get(&farm, "http://shop.test/__farm/shop");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let served: Vec<ShopProduct> = serde_json::from_value(v["products"].clone()).expect("products");
    assert_eq!(served, products);
    assert_eq!(v["listing_pages"], serde_json::json!(farm.shop_listing_pages()));
}

#[test]
fn listing_pages_over_http_cover_every_product_once() {
    let farm = Farm::start_background(shop_config()).expect("farm");
    let products = farm.shop_products();
    let pages = farm.shop_listing_pages();
    assert_eq!(pages, (1..=6).map(|n| format!("http://shop.test/products?page={n}")).collect::<Vec<_>>());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, url) in pages.iter().enumerate() {
        let n = i + 1;
        let (status, html) = http_get(&farm, url);
        assert_eq!(status, 200, "{url}");
        assert_well_formed(url, &html);
        let results = between(&html, "<ul class=\"results\">", "</ul>").expect("results");
        let cards: Vec<&str> = results.split("<li class=\"card\" ").skip(1).collect();
        assert_eq!(cards.len(), 10, "{url}");
        for card in cards {
            let sku = between(card, "data-sku=\"", "\"").expect("sku");
            let p = products.iter().find(|p| p.sku == sku).expect("a product of the truth");
            let path = &p.url["http://shop.test".len()..];
            assert!(card.contains(&format!("<a class=\"name\" href=\"{path}\">{}</a>", p.name)), "{card}");
            assert_eq!(between(card, "<span class=\"price\">", "</span>"), p.price_text.as_deref(), "{card}");
            *seen.entry(p.url.clone()).or_default() += 1;
        }
        // Pagination: only existing pages, with previous and next where they exist.
        let nav = between(&html, "<nav class=\"pagination\">", "</nav>").expect("pagination");
        for href in nav.split("href=\"").skip(1).filter_map(|s| s.split('"').next()) {
            let k: usize = href.strip_prefix("/products?page=").and_then(|k| k.parse().ok()).expect("listing link");
            assert!((1..=6).contains(&k) && k != n, "{url} links {href}");
        }
        assert_eq!(nav.contains("Previous"), n > 1);
        assert_eq!(nav.contains("Next"), n < 6);
        assert!(nav.contains(&format!("<span class=\"current\">{n}</span>")));
        let aside = between(&html, "<aside class=\"promo\">", "</aside>").expect("promo sidebar");
        for k in 1..=3 {
            assert!(aside.contains(&format!("href=\"/promo/{k}\"")));
        }
        let foot = between(&html, "<footer", "</footer>").expect("footer");
        for href in ["/about", "/help/1", "/help/2", "/cart"] {
            assert!(foot.contains(&format!("href=\"{href}\"")), "footer links {href}");
        }
    }
    assert_eq!(seen.len(), products.len());
    assert!(seen.values().all(|c| *c == 1), "each product on exactly one listing");
    // A shop whose last page is partly filled.
    let small = Farm::start_background(FarmConfig { shop_products: 23, ..shop_config() }).expect("farm");
    let last = small.shop_listing_pages().pop().expect("pages");
    assert_eq!(last, "http://shop.test/products?page=3");
    let (_, html) = http_get(&small, &last);
    assert_eq!(html.matches("<li class=\"card\"").count(), 3);
}

#[test]
fn anomalies_and_other_pages_over_http() {
    let farm = Farm::start_background(shop_config()).expect("farm");
    let missing: Vec<u32> = (1..=60).filter(|k| price_anomaly(*k) == Some(PriceAnomaly::Missing)).collect();
    let call_us: Vec<u32> = (1..=60).filter(|k| price_anomaly(*k) == Some(PriceAnomaly::CallUs)).collect();
    assert_eq!(missing, [7, 14, 21, 28, 35, 42, 49, 56]);
    assert_eq!(call_us, [11, 22, 33, 44, 55]);
    assert_eq!(price_anomaly(77), Some(PriceAnomaly::Missing), "7 wins over 11");
    let (_, html) = http_get(&farm, "http://shop.test/product/14");
    assert!(!html.contains("class=\"price\"") && !html.contains("\"price\":"));
    let (_, html) = http_get(&farm, "http://shop.test/product/22");
    assert!(html.contains("<span class=\"price\">Call us</span>") && !html.contains("\"price\":"));
    assert_eq!(between(&html, "<span class=\"price\"", "</span>"), Some(">Call us"), "no content attribute");
    let truth = farm.shop_products();
    assert!(truth[13].price.is_none() && truth[13].price_text.is_none());
    assert_eq!((truth[21].price, truth[21].price_text.as_deref()), (None, Some("Call us")));

    let (status, robots) = http_get(&farm, "http://shop.test/robots.txt");
    assert_eq!((status, robots.as_str()), (200, "User-agent: *\nDisallow: /cart\n"));
    let (_, home) = http_get(&farm, "http://shop.test/");
    assert_well_formed("home", &home);
    for href in ["/products?page=1", "/about", "/cart", "/promo/1", "/promo/2", "/promo/3"] {
        assert!(home.contains(&format!("href=\"{href}\"")), "home links {href}");
    }
    for path in ["/promo/1", "/promo/3", "/about", "/help/1", "/help/2", "/cart"] {
        let (status, html) = http_get(&farm, &format!("http://shop.test{path}"));
        assert_eq!(status, 200, "{path}");
        assert_well_formed(path, &html);
        let main = between(&html, "<main id=\"main\">", "</main>").expect("main");
        assert!(main.contains("<a href=\"/\">"), "{path} links back home");
    }
    for path in [
        "/product/0",
        "/product/61",
        "/product/01",
        "/product/1/",
        "/product/1?ref=home",
        "/products",
        "/products?page=0",
        "/products?page=7",
        "/products?page=1&sort=price",
        "/promo/4",
        "/help/3",
        "/index.html",
        "/static/site.css",
    ] {
        assert_eq!(http_get(&farm, &format!("http://shop.test{path}")).0, 404, "{path}");
    }
    // The audit sees the shop as a host of its own, the cart as disallowed.
    let stats = farm.stats();
    let shop = &stats.hosts["shop.test"];
    assert_eq!(shop.robots_requests, 1);
    assert_eq!(shop.disallowed_requests, ["/cart"]);
}

#[test]
fn truth_and_page_kinds_see_the_shop() {
    let farm = Farm::start_background(shop_config()).expect("farm");
    let seeds = farm.start_urls();
    assert_eq!(seeds.last().map(String::as_str), Some("http://shop.test/"));
    let t = farm.truth(&seeds, 9);
    let products = farm.shop_products();
    for p in &products {
        assert!(t.content_pages.contains_key(&p.url), "{} is a content page", p.url);
    }
    for u in farm.shop_listing_pages() {
        assert!(t.pages.contains_key(&u) && !t.content_pages.contains_key(&u), "{u}");
    }
    assert_eq!(t.pages["http://shop.test/"], 0);
    assert!(t.pages.contains_key("http://shop.test/help/2"));
    assert!(t.disallowed.contains(&"http://shop.test/cart".to_string()));
    assert!(!t.pages.contains_key("http://shop.test/cart"));
    let shop_pages = t.pages.keys().filter(|u| u.starts_with("http://shop.test/")).count();
    assert_eq!(shop_pages, 1 + 6 + 60 + 3 + 1 + 2, "home, listings, products, promos, about, help");
    for (url, kind) in [
        ("http://shop.test/", Some("home")),
        ("http://shop.test/products?page=2", Some("listing")),
        ("http://shop.test/product/7", Some("product")),
        ("http://shop.test/promo/2", Some("promo")),
        ("http://shop.test/about", Some("utility")),
        ("http://shop.test/help/1", Some("utility")),
        ("http://shop.test/cart", None),
        ("http://shop.test/product/99", None),
    ] {
        assert_eq!(farm.page_kind(url), kind, "{url}");
    }
    // Every link of every shop page the truth reaches answers, with the role it was recorded with.
    let c = &farm.core;
    for page in t.pages.keys().filter(|u| u.starts_with("http://shop.test/")) {
        let links = farm.page_links(page).expect("links");
        assert!(
            links.iter().any(|l| l.role == truth::LinkRole::Header)
                && links.iter().any(|l| l.role == truth::LinkRole::Footer)
        );
        for l in links {
            let u = Url::parse(&l.url).expect("url");
            assert!(matches!(classify(&c.world, &u), Target::Page { .. } | Target::Disallowed), "{page} links {u}");
            assert_eq!(http_get(&farm, u.as_str()).0, 200, "{page} links {u}");
        }
    }
    // The pages the truth renders are the pages served.
    let (_, served) = http_get(&farm, "http://shop.test/product/3");
    let mut h = Html::new(0, None);
    render(&mut h, &c.world, ShopPage::Product(3));
    assert_eq!(served, h.out);
}

#[test]
fn shop_off_changes_nothing() {
    let base = FarmConfig { sites: 4, pages: 40, faults: true, ..FarmConfig::default() };
    let off = Farm::start_background(base.clone()).expect("farm");
    let on = Farm::start_background(FarmConfig { shop: true, ..base }).expect("farm");
    assert!(off.start_urls().iter().all(|u| !u.contains("shop.test")));
    assert_eq!(on.start_urls()[..on.start_urls().len() - 1], off.start_urls()[..]);
    assert!(off.shop_products().is_empty() && off.shop_listing_pages().is_empty());
    assert_eq!(http_get(&off, "http://shop.test/").0, 404);
    assert_eq!(http_get(&off, "http://shop.test/product/1").0, 404);
    assert_eq!(off.page_kind("http://shop.test/product/1"), None);
    assert_eq!(off.core.world.parse_host("shop.test"), None);
    assert_eq!(on.core.world.parse_host("SHOP.test:80"), Some(HostId::Shop));
    let (_, json) = http_get(&off, "http://s000.test/__farm/shop");
    assert_eq!(json.split_whitespace().collect::<String>(), "{\"products\":[],\"listing_pages\":[]}");
    // The other hosts are the same with the shop on: pages and truth.
    let seeds = off.start_urls();
    let t_off = off.truth(&seeds, 2);
    assert_eq!(t_off, on.truth(&seeds, 2));
    for u in t_off.pages.keys().take(60) {
        assert_eq!(http_get(&off, u), http_get(&on, u), "{u}");
    }
    // The stats slots of the other hosts do not move.
    assert_eq!(http_get(&on, "http://norobots.test/").0, 200);
    assert!(on.stats().hosts.contains_key("norobots.test") && !on.stats().hosts.contains_key("shop.test"));
}

#[test]
fn settings_and_generation() {
    let bad = Farm::start_background(FarmConfig { shop_products: 0, ..shop_config() });
    assert!(matches!(bad, Err(FarmError::Config(_))));
    assert!(Farm::start_background(FarmConfig { shop: false, shop_products: 0, ..shop_config() }).is_ok());
    // Price formats.
    let fmt = |s: PriceStyle, cents: u64| {
        let mut out = String::new();
        s.push(cents, &mut out);
        out
    };
    assert_eq!(fmt(PriceStyle::EuroDot, 129_900), "€1,299.00");
    assert_eq!(fmt(PriceStyle::EuroComma, 129_900), "1.299,00 €");
    assert_eq!(fmt(PriceStyle::Dollar, 2450), "$24.50");
    assert_eq!(fmt(PriceStyle::Pound, 799), "£7.99");
    assert_eq!(fmt(PriceStyle::EuroComma, 123_456_789), "1.234.567,89 €");
    assert_eq!(fmt(PriceStyle::Dollar, 5), "$0.05");
    // Deterministic per seed; another seed, other products.
    let w = World::new(1, 1, 1, false, 8).with_shop(60);
    let again = World::new(1, 1, 1, false, 8).with_shop(60);
    let other = World::new(2, 1, 1, false, 8).with_shop(60);
    assert_eq!(products(&w), products(&again));
    assert_ne!(products(&w), products(&other));
    let page = |w: &World, p: ShopPage| {
        let mut h = Html::new(0, None);
        render(&mut h, w, p);
        h.out
    };
    assert_eq!(page(&w, ShopPage::Product(5)), page(&again, ShopPage::Product(5)));
    // Generated ids differ from product to product.
    let id_of = |k: u32| {
        let html = page(&w, ShopPage::Product(k));
        between(&html, "<div id=\"p-", "\"").map(str::to_string)
    };
    let ids: Vec<String> = (1..=60).filter_map(id_of).collect();
    let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len());
    // Routing is strict: one URL per page.
    assert_eq!(route(60, "/products", Some("page=6")), Some(ShopPage::Listing(6)));
    assert_eq!(route(60, "/product/60", None), Some(ShopPage::Product(60)));
    assert_eq!(route(60, "/product/+6", None), None);
    assert!(disallows("/cart") && disallows("/cart/add") && !disallows("/product/1"));
    assert_eq!(ShopPage::Listing(3).url(), "http://shop.test/products?page=3");
}
