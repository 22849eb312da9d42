//! The shop host `shop.test` (with [`crate::FarmConfig::shop`] on): a small
//! online shop whose product pages carry typed fields (price and currency,
//! availability, release date, authors, rating, stock count) in realistic
//! and deliberately awkward markup, so that crawl rules extracting fields
//! can be scored against ground truth ([`products`]).
//!
//! **Pages.** `/` (home), `/products?page=N` (listings of [`PER_PAGE`]
//! product cards), `/product/K` for K in `1..=products`, `/promo/1..=3`,
//! `/about`, `/help/1..=2`, and `/cart`, which robots.txt disallows (it is
//! served anyway, so a crawler that ignores the rule shows in the stats).
//! Anything else answers 404, other query strings included: every page has
//! exactly one URL.
//!
//! **Awkward on purpose.** Prices come in four formats (`€1,299.00`,
//! `1.299,00 €`, `$24.50`, `£7.99`) with the plain decimal in a `content`
//! attribute and in the JSON-LD. On about half the products every field's
//! element sits in a wrapper `<div>` with a generated id (`id="p-8f3a2c"`)
//! that differs from product to product, a badge may come first, and the
//! rating sits above or below the buy box, so id- and position-based
//! selectors do worse than class-based ones. Every 7th product has no price
//! at all; every 11th (that is not a 7th) shows `Call us` instead of one
//! ([`price_anomaly`]).
//!
//! Like the rest of the farm, everything is computed on request from
//! `xxh3(seed, SHOP, stream, K)`: nothing is stored, and the truth comes
//! from the same generator as the HTML.

use std::fmt::Write as _;

use bytes::Bytes;
use hyper::{Response, StatusCode};
use serde::{Deserialize, Serialize};

use super::body::FarmBody;
use super::render::{sentence, Html};
use super::rng::{self, tag, Rng, FIRST_NAMES, LAST_NAMES};
use super::server;
use super::site::World;
use super::truth::LinkRole;

/// The shop's host name.
pub const HOST: &str = "shop.test";
/// Its origin, without a trailing slash.
const ORIGIN: &str = "http://shop.test";
/// Product cards on one listing page.
pub const PER_PAGE: u32 = 10;
/// Promotion pages `/promo/1..=PROMOS`.
pub const PROMOS: u32 = 3;
/// Help pages `/help/1..=HELP_PAGES`.
pub const HELP_PAGES: u32 = 2;
/// Most products a shop may have: SKUs keep their five digits.
pub const MAX_PRODUCTS: u32 = 99_999;
/// Everything is allowed but the cart; no Crawl-delay.
pub const ROBOTS: &str = "User-agent: *\nDisallow: /cart\n";

/// Sub-streams of [`tag::SHOP`], so that e.g. a product's fields do not
/// move when its layout or description changes.
mod stream {
    /// The shop itself: its name, the price format rotation.
    pub const SHOP: u64 = 0;
    pub const FIELDS: u64 = 1;
    pub const TEXT: u64 = 2;
    pub const RELATED: u64 = 3;
    pub const IDS: u64 = 4;
    pub const LAYOUT: u64 = 5;
    pub const FEATURED: u64 = 6;
}

/// The fields of a product page that get a wrapper with a generated id;
/// each field's id is drawn from its own number.
mod field {
    pub const TITLE: u64 = 0;
    pub const PRICE: u64 = 1;
    pub const AVAILABILITY: u64 = 2;
    pub const STOCK: u64 = 3;
    pub const RATING: u64 = 4;
    pub const RELEASED: u64 = 5;
    pub const AUTHORS: u64 = 6;
    pub const DESCRIPTION: u64 = 7;
    /// Brand and SKU.
    pub const BYLINE: u64 = 8;
}

/// What follows the words of a product's name.
#[rustfmt::skip]
static NOUNS: &[&str] = &[
    "Atlas", "Field Guide", "Notebook", "Board Game", "Puzzle", "Lantern", "Kettle", "Backpack", "Poster",
    "Cookbook", "Journal", "Map Set", "Card Game", "Calendar", "Sketchbook", "Audiobook",
];

/// What follows the word of a brand's name.
static BRANDS: &[&str] = &["Works", "Press", "Goods", "Studio", "Supply", "Editions"];

/// Badges some product pages show above the title.
static BADGES: &[&str] = &["Bestseller", "New", "Staff pick", "Limited edition"];

/// Titles of the promotion pages, `/promo/1` first.
static PROMO_TITLES: [&str; PROMOS as usize] = ["Spring sale", "Bundle deals", "Clearance"];
/// Titles of the help pages, `/help/1` first.
static HELP_TITLES: [&str; HELP_PAGES as usize] = ["Shipping", "Returns"];

/// A page of the shop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShopPage {
    Home,
    /// `/products?page=N`, N from 1.
    Listing(u32),
    /// `/product/K`, K from 1.
    Product(u32),
    /// `/promo/K`, K in `1..=PROMOS`.
    Promo(u32),
    About,
    /// `/help/K`, K in `1..=HELP_PAGES`.
    Help(u32),
    /// `/cart`: disallowed by robots.txt.
    Cart,
}

impl ShopPage {
    /// The page kind's name: `home`, `listing`, `product`, `promo`,
    /// `utility` (about and help) or `private` (the cart).
    #[must_use]
    pub fn kind(self) -> &'static str {
        match self {
            Self::Home => "home",
            Self::Listing(_) => "listing",
            Self::Product(_) => "product",
            Self::Promo(_) => "promo",
            Self::About | Self::Help(_) => "utility",
            Self::Cart => "private",
        }
    }

    /// The page's path and query, e.g. `/products?page=2`.
    pub fn push_path(self, out: &mut String) {
        let _ = match self {
            Self::Home => write!(out, "/"),
            Self::Listing(n) => write!(out, "/products?page={n}"),
            Self::Product(k) => write!(out, "/product/{k}"),
            Self::Promo(k) => write!(out, "/promo/{k}"),
            Self::About => write!(out, "/about"),
            Self::Help(k) => write!(out, "/help/{k}"),
            Self::Cart => write!(out, "/cart"),
        };
    }

    /// The page's absolute URL, its one and canonical URL.
    #[must_use]
    pub fn url(self) -> String {
        let mut s = String::from(ORIGIN);
        self.push_path(&mut s);
        s
    }
}

/// Whether the shop's robots.txt forbids `path` (prefix match, as RFC 9309).
#[must_use]
pub fn disallows(path: &str) -> bool {
    path.starts_with("/cart")
}

/// Listing pages of a shop with `products` products.
#[must_use]
pub fn listing_pages(products: u32) -> u32 {
    products.div_ceil(PER_PAGE)
}

/// The listing page that shows product `k`.
fn listing_of(k: u32) -> u32 {
    k.saturating_sub(1) / PER_PAGE + 1
}

/// A positive decimal number as pages write it: digits, no leading zero.
fn number(s: &str) -> Option<u32> {
    if s.starts_with('0') || s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Maps a request to a page of a shop with `products` products. `path`
/// must already have its unreserved percent-escapes decoded. Only the
/// listing takes a query (`page=N`, nothing else); `None` is a 404.
#[must_use]
pub fn route(products: u32, path: &str, query: Option<&str>) -> Option<ShopPage> {
    let within = |k: u32, last: u32| (1..=last).contains(&k).then_some(k);
    if path == "/products" {
        let n = query?.strip_prefix("page=").and_then(number)?;
        return within(n, listing_pages(products)).map(ShopPage::Listing);
    }
    if query.is_some() {
        return None;
    }
    match path {
        "/" => Some(ShopPage::Home),
        "/about" => Some(ShopPage::About),
        "/cart" => Some(ShopPage::Cart),
        _ => {
            let (dir, k) = path.strip_prefix('/')?.split_once('/')?;
            let k = number(k)?;
            match dir {
                "product" => within(k, products).map(ShopPage::Product),
                "promo" => within(k, PROMOS).map(ShopPage::Promo),
                "help" => within(k, HELP_PAGES).map(ShopPage::Help),
                _ => None,
            }
        }
    }
}

/// Answers a request to `shop.test` (`path` decoded as for [`route`]).
#[must_use]
pub fn respond(world: &World, path: &str, query: Option<&str>) -> Response<FarmBody> {
    if path == "/robots.txt" {
        return server::typed(StatusCode::OK, "text/plain", Bytes::from_static(ROBOTS.as_bytes()));
    }
    match route(world.shop.unwrap_or(0), path, query) {
        Some(page) => {
            let mut h = Html::new(16 * 1024, None);
            render(&mut h, world, page);
            server::html(StatusCode::OK, h.out)
        }
        None => server::not_found(),
    }
}

/// One product as its page shows it: the shop's ground truth (the JSON of
/// `/__farm/shop`, with the listing pages).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShopProduct {
    /// `http://shop.test/product/K`.
    pub url: String,
    /// `SKU-00042`: the card's `data-sku` and the JSON-LD `sku`.
    pub sku: String,
    /// The `<h1 class="product-title">` text and the JSON-LD `name`.
    pub name: String,
    /// The JSON-LD `brand.name`.
    pub brand: String,
    /// The price as a number (the `content` attribute and the JSON-LD
    /// `offers.price`); `None` when the page shows no price or `Call us`.
    pub price: Option<f64>,
    /// The visible text of `<span class="price">`, e.g. `1.299,00 €` or
    /// `Call us`; `None` when the page has no price element.
    pub price_text: Option<String>,
    /// `EUR`, `USD` or `GBP` (the JSON-LD `offers.priceCurrency`).
    pub currency: String,
    /// `In stock` or `Out of stock` on the page.
    pub in_stock: bool,
    /// `YYYY-MM-DD`: the `datetime` of `<time class="released">`.
    pub released: String,
    /// The `<ul class="authors">` items, in order.
    pub authors: Vec<String>,
    /// The `<span class="rating">` value, out of 5.
    pub rating: f64,
    /// The `<span class="stock-count">` value (0 when out of stock).
    pub stock: i64,
}

/// The shop's ground truth as `/__farm/shop` serves it.
#[derive(Clone, Debug, Serialize)]
pub struct ShopTruth {
    pub products: Vec<ShopProduct>,
    pub listing_pages: Vec<String>,
}

/// Every product, K ascending (empty with the shop off).
#[must_use]
pub fn products(world: &World) -> Vec<ShopProduct> {
    (1..=world.shop.unwrap_or(0)).map(|k| Product::new(world, k).truth()).collect()
}

/// Every listing page's URL, page 1 first (empty with the shop off).
#[must_use]
pub fn listing_urls(world: &World) -> Vec<String> {
    (1..=listing_pages(world.shop.unwrap_or(0))).map(|n| ShopPage::Listing(n).url()).collect()
}

/// Products and listing pages together.
#[must_use]
pub fn truth(world: &World) -> ShopTruth {
    ShopTruth { products: products(world), listing_pages: listing_urls(world) }
}

/// How a product's price is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PriceStyle {
    /// `€1,299.00`
    EuroDot,
    /// `1.299,00 €`
    EuroComma,
    /// `$1,299.00`
    Dollar,
    /// `£1,299.00`
    Pound,
}

impl PriceStyle {
    const ALL: [PriceStyle; 4] = [Self::EuroDot, Self::EuroComma, Self::Dollar, Self::Pound];

    fn currency(self) -> &'static str {
        match self {
            Self::EuroDot | Self::EuroComma => "EUR",
            Self::Dollar => "USD",
            Self::Pound => "GBP",
        }
    }

    /// Writes `cents` in this style.
    fn push(self, cents: u64, out: &mut String) {
        let (units, frac) = (cents / 100, cents % 100);
        match self {
            Self::EuroComma => {
                push_grouped(units, '.', out);
                let _ = write!(out, ",{frac:02} €");
            }
            _ => {
                out.push_str(match self {
                    Self::Dollar => "$",
                    Self::Pound => "£",
                    _ => "€",
                });
                push_grouped(units, ',', out);
                let _ = write!(out, ".{frac:02}");
            }
        }
    }
}

/// `units` with `sep` between groups of three digits.
fn push_grouped(units: u64, sep: char, out: &mut String) {
    let digits = units.to_string();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(sep);
        }
        out.push(d);
    }
}

/// What a product page shows where the price goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriceAnomaly {
    /// No price element at all, and no price in the JSON-LD (every 7th product).
    Missing,
    /// `Call us` instead of a price, no `content`, no JSON-LD price
    /// (every 11th product that is not a 7th).
    CallUs,
}

/// The deliberate price anomaly of product `k`, if any.
#[must_use]
pub fn price_anomaly(k: u32) -> Option<PriceAnomaly> {
    if k % 7 == 0 {
        Some(PriceAnomaly::Missing)
    } else if k % 11 == 0 {
        Some(PriceAnomaly::CallUs)
    } else {
        None
    }
}

/// A product's generated fields and layout.
struct Product {
    k: u32,
    name: String,
    brand: String,
    cents: u64,
    style: PriceStyle,
    anomaly: Option<PriceAnomaly>,
    in_stock: bool,
    stock: u32,
    /// Year, month, day.
    released: (u32, u32, u32),
    authors: Vec<String>,
    /// Tenths of a star, 10..=50.
    rating: u32,
    /// Every field's element is wrapped in a `<div>` with a generated id.
    ids: bool,
    badge: Option<&'static str>,
    /// The rating comes before the buy box instead of after it.
    rating_first: bool,
}

/// A word of four letters or more (names read better without the glue words).
fn long_word(r: &mut Rng) -> &'static str {
    loop {
        let w = r.word();
        if w.len() > 3 {
            return w;
        }
    }
}

impl Product {
    fn new(world: &World, k: u32) -> Self {
        let seed = world.seed;
        let mut r = Rng::from_parts(seed, &[tag::SHOP, stream::FIELDS, u64::from(k)]);
        let mut name = String::with_capacity(40);
        for _ in 0..r.range(1, 2) {
            rng::push_capitalised(&mut name, long_word(&mut r));
            name.push(' ');
        }
        name.push_str(r.pick(NOUNS));
        let mut brand = String::with_capacity(24);
        rng::push_capitalised(&mut brand, long_word(&mut r));
        brand.push(' ');
        brand.push_str(r.pick(BRANDS));
        // Mostly small prices, some in the hundreds and a few in the
        // thousands, so that the digit grouping shows.
        let units = match r.below(10) {
            0..=4 => r.range(1, 99),
            5..=7 => r.range(100, 999),
            _ => r.range(1000, 4999),
        };
        let frac = match r.below(5) {
            0 => 0,
            1 => 50,
            2 => 95,
            3 => 99,
            _ => r.range(0, 99),
        };
        // The formats take turns, from an offset the seed picks: any four
        // products in a row show all four.
        let turn = rng::mix(seed, &[tag::SHOP, stream::SHOP, 1]);
        let style = PriceStyle::ALL[usize::try_from((u64::from(k) + turn) % 4).unwrap_or(0)];
        let in_stock = r.chance(75);
        let stock = if in_stock { r.range(1, 250) } else { 0 };
        let released = (r.range(2018, 2026), r.range(1, 12), r.range(1, 28));
        let mut authors: Vec<String> = Vec::with_capacity(3);
        let want = r.range(1, 3) as usize;
        while authors.len() < want {
            let a = format!("{} {}", r.pick(FIRST_NAMES), r.pick(LAST_NAMES));
            if !authors.contains(&a) {
                authors.push(a);
            }
        }
        let rating = r.range(10, 50);
        let mut l = Rng::from_parts(seed, &[tag::SHOP, stream::LAYOUT, u64::from(k)]);
        let ids = l.chance(50);
        let badge = l.chance(35).then(|| l.pick(BADGES));
        let rating_first = l.chance(50);
        Self {
            k,
            name,
            brand,
            cents: u64::from(units) * 100 + u64::from(frac),
            style,
            anomaly: price_anomaly(k),
            in_stock,
            stock,
            released,
            authors,
            rating,
            ids,
            badge,
            rating_first,
        }
    }

    /// `SKU-00042`.
    fn push_sku(&self, out: &mut String) {
        let _ = write!(out, "SKU-{:05}", self.k);
    }

    /// The price as a plain decimal, `1299.00`, when the page shows one.
    fn price_decimal(&self) -> Option<String> {
        self.anomaly.is_none().then(|| format!("{}.{:02}", self.cents / 100, self.cents % 100))
    }

    /// The visible text of the price element, when there is one.
    fn price_text(&self) -> Option<String> {
        match self.anomaly {
            Some(PriceAnomaly::Missing) => None,
            Some(PriceAnomaly::CallUs) => Some("Call us".into()),
            None => {
                let mut s = String::with_capacity(16);
                self.style.push(self.cents, &mut s);
                Some(s)
            }
        }
    }

    /// `YYYY-MM-DD`.
    fn released_iso(&self) -> String {
        let (y, m, d) = self.released;
        format!("{y}-{m:02}-{d:02}")
    }

    fn availability(&self) -> &'static str {
        if self.in_stock {
            "In stock"
        } else {
            "Out of stock"
        }
    }

    fn truth(&self) -> ShopProduct {
        let mut sku = String::with_capacity(9);
        self.push_sku(&mut sku);
        ShopProduct {
            url: ShopPage::Product(self.k).url(),
            sku,
            name: self.name.clone(),
            brand: self.brand.clone(),
            price: self.anomaly.is_none().then(|| cents_to_f64(self.cents)),
            price_text: self.price_text(),
            currency: self.style.currency().into(),
            in_stock: self.in_stock,
            released: self.released_iso(),
            authors: self.authors.clone(),
            rating: f64::from(self.rating) / 10.0,
            stock: i64::from(self.stock),
        }
    }
}

/// A price in cents as a number: prices stay far below 2^53 cents, and
/// the quotient is the double nearest the decimal, the one that parsing
/// the `content` attribute (`1299.00`) gives.
fn cents_to_f64(cents: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let c = cents as f64;
    c / 100.0
}

/// The shop's name: two words and "Store", the same on every page.
fn push_shop_name(world: &World, out: &mut String) {
    let mut r = Rng::from_parts(world.seed, &[tag::SHOP, stream::SHOP, 0]);
    rng::push_capitalised(out, long_word(&mut r));
    out.push(' ');
    rng::push_capitalised(out, long_word(&mut r));
    out.push_str(" Store");
}

/// Up to `want` distinct products of `1..=n` other than `exclude`, drawn
/// from `r` (fewer only when the shop has fewer).
fn pick_products(r: &mut Rng, n: u32, exclude: u32, want: usize) -> Vec<u32> {
    let others = n.saturating_sub(u32::from((1..=n).contains(&exclude))) as usize;
    let want = want.min(others);
    let mut out = Vec::with_capacity(want);
    let mut next = 1;
    for attempt in 0.. {
        if out.len() == want {
            break;
        }
        // Random draws first; in a small shop, fill up in order.
        let k = if attempt < 4 * want {
            r.below_u32(n) + 1
        } else {
            next += 1;
            next - 1
        };
        if k != exclude && !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// Renders a shop page into `h`.
pub fn render(h: &mut Html, world: &World, page: ShopPage) {
    match page {
        ShopPage::Home => home(h, world),
        ShopPage::Listing(n) => listing(h, world, n),
        ShopPage::Product(k) => product(h, world, &Product::new(world, k)),
        ShopPage::Promo(k) => {
            let title = PROMO_TITLES[(k as usize).saturating_sub(1) % PROMO_TITLES.len()];
            plain(h, world, page, title, "Our offers change every week.");
        }
        ShopPage::About => plain(h, world, page, "About us", "We are a small shop with a large catalogue."),
        ShopPage::Help(k) => {
            let title = HELP_TITLES[(k as usize).saturating_sub(1) % HELP_TITLES.len()];
            plain(h, world, page, title, "Answers to the questions our customers ask most.");
        }
        ShopPage::Cart => plain(h, world, page, "Your cart", "Your cart is empty."),
    }
}

/// `<!DOCTYPE html>…<body>`: the title and the canonical link.
fn head(h: &mut Html, world: &World, page: ShopPage, title: &str) {
    h.push("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    h.push(title).push(" | ");
    push_shop_name(world, &mut h.out);
    h.push("</title><link rel=\"canonical\" href=\"");
    h.push(&page.url());
    h.push("\"></head>\n<body>");
}

/// The shop header with its navigation bar (role Header).
fn header(h: &mut Html, world: &World) {
    let role = LinkRole::Header;
    h.push("<header class=\"site-header\">");
    h.open(role, false, |s| s.push('/'));
    h.push("<span class=\"logo\">");
    push_shop_name(world, &mut h.out);
    h.push("</span>");
    h.close();
    h.push("<nav class=\"main-nav\"><ul>");
    for (page, label) in [
        (ShopPage::Home, "Home"),
        (ShopPage::Listing(1), "Products"),
        (ShopPage::Promo(1), "Offers"),
        (ShopPage::Help(1), "Help"),
        (ShopPage::Cart, "Cart"),
    ] {
        h.push("<li>");
        h.link(role, false, |s| page.push_path(s), label);
        h.push("</li>");
    }
    h.push("</ul></nav></header>\n");
}

/// Home › (listing page) › current, the current page's name written by `current`.
fn breadcrumb(h: &mut Html, listing: Option<u32>, current: &str) {
    let role = LinkRole::Breadcrumb;
    h.push("<nav class=\"breadcrumb\">");
    h.link(role, false, |s| s.push('/'), "Home");
    if let Some(n) = listing {
        h.push(" &rsaquo; ");
        h.link(role, false, |s| ShopPage::Listing(n).push_path(s), "Products");
    }
    h.push(" &rsaquo; <span>").push(current).push("</span></nav>\n");
}

/// The promotions sidebar (role Sidebar).
fn promo_aside(h: &mut Html) {
    h.push("<aside class=\"promo\"><h2>Offers</h2><ul>");
    for (i, title) in (1..=PROMOS).zip(PROMO_TITLES) {
        h.push("<li>");
        h.link(LinkRole::Sidebar, false, |s| ShopPage::Promo(i).push_path(s), title);
        h.push("</li>");
    }
    h.push("</ul></aside>");
}

/// The shop footer (role Footer): about, help, cart.
fn footer(h: &mut Html, world: &World) {
    let role = LinkRole::Footer;
    h.push("<footer class=\"site-footer\"><ul class=\"links\"><li>");
    h.link(role, false, |s| ShopPage::About.push_path(s), "About us");
    h.push("</li>");
    for (k, title) in (1..=HELP_PAGES).zip(HELP_TITLES) {
        h.push("<li>");
        h.link(role, false, |s| ShopPage::Help(k).push_path(s), title);
        h.push("</li>");
    }
    h.push("<li>");
    h.link(role, false, |s| ShopPage::Cart.push_path(s), "Cart");
    h.push("</li></ul><p class=\"copyright\">&copy; 2026 ");
    push_shop_name(world, &mut h.out);
    h.push(". All prices include VAT.</p></footer>\n</body></html>\n");
}

/// The product's name as a link to its page.
fn product_link(h: &mut Html, role: LinkRole, class: Option<&str>, p: &Product) {
    h.open_class(role, false, class, |s| ShopPage::Product(p.k).push_path(s));
    h.push(&p.name);
    h.close();
}

fn home(h: &mut Html, world: &World) {
    let n = world.shop.unwrap_or(0);
    head(h, world, ShopPage::Home, "Home");
    header(h, world);
    h.push("<div class=\"page\"><main id=\"main\"><h1>Welcome to ");
    push_shop_name(world, &mut h.out);
    h.push("</h1><p class=\"intro\">");
    let mut r = Rng::from_parts(world.seed, &[tag::SHOP, stream::TEXT, 0]);
    sentence(&mut r, &mut h.out);
    h.push("</p>\n<section class=\"catalogue\"><h2>Catalogue</h2><p>");
    h.open(LinkRole::Content, false, |s| ShopPage::Listing(1).push_path(s));
    let _ = write!(h.out, "Browse all {n} products");
    h.close();
    h.push("</p></section>\n<section class=\"featured\"><h2>Featured</h2><ul>");
    let mut r = Rng::from_parts(world.seed, &[tag::SHOP, stream::FEATURED]);
    for k in pick_products(&mut r, n, 0, 4) {
        h.push("<li>");
        product_link(h, LinkRole::Content, None, &Product::new(world, k));
        h.push("</li>");
    }
    h.push("</ul></section>\n<section class=\"offers\"><h2>This week</h2><ul>");
    for (k, title) in (1..=PROMOS).zip(PROMO_TITLES) {
        h.push("<li>");
        h.link(LinkRole::Content, false, |s| ShopPage::Promo(k).push_path(s), title);
        h.push("</li>");
    }
    h.push("</ul></section>\n<p class=\"cart-note\">");
    h.link(LinkRole::Content, false, |s| ShopPage::Cart.push_path(s), "View your cart");
    h.push(" &middot; ");
    h.link(LinkRole::Content, false, |s| ShopPage::About.push_path(s), "About the shop");
    h.push("</p></main></div>\n");
    footer(h, world);
}

/// Previous, page numbers around the current one (and the first and
/// last), next; only pages that exist (role Pagination).
fn pagination(h: &mut Html, cur: u32, last: u32) {
    if last < 2 {
        return;
    }
    let role = LinkRole::Pagination;
    let link = |h: &mut Html, k: u32, text: &str| h.link(role, false, |s| ShopPage::Listing(k).push_path(s), text);
    h.push("<nav class=\"pagination\">");
    if cur > 1 {
        link(h, cur - 1, "&lsaquo; Previous");
        h.push(" ");
    }
    let (lo, hi) = (cur.saturating_sub(2).max(1), (cur + 2).min(last));
    let mut shown: Vec<u32> = (lo..=hi).collect();
    shown.extend([1, last]);
    shown.sort_unstable();
    shown.dedup();
    let mut prev = 0;
    for k in shown {
        if k > prev + 1 {
            h.push("<span class=\"gap\">&hellip;</span> ");
        }
        if k == cur {
            let _ = write!(h.out, "<span class=\"current\">{k}</span> ");
        } else {
            link(h, k, &k.to_string());
            h.push(" ");
        }
        prev = k;
    }
    if cur < last {
        link(h, cur + 1, "Next &rsaquo;");
    }
    h.push("</nav>\n");
}

fn listing(h: &mut Html, world: &World, cur: u32) {
    let n = world.shop.unwrap_or(0);
    let last = listing_pages(n);
    let first = cur.saturating_sub(1) * PER_PAGE + 1;
    let end = (cur * PER_PAGE).min(n);
    head(h, world, ShopPage::Listing(cur), &format!("Products, page {cur} of {last}"));
    header(h, world);
    h.push("<div class=\"page\"><main id=\"main\">");
    breadcrumb(h, None, "Products");
    let _ = write!(
        h.out,
        "<h1>All products</h1><p class=\"count\">Showing {first}&ndash;{end} of {n}</p>\n<ul class=\"results\">\n"
    );
    for k in first..=end {
        let p = Product::new(world, k);
        h.push("<li class=\"card\" data-sku=\"");
        p.push_sku(&mut h.out);
        h.push("\">");
        product_link(h, LinkRole::Content, Some("name"), &p);
        if let Some(text) = p.price_text() {
            h.push(" <span class=\"price\">").push(&text).push("</span>");
        }
        h.push("</li>\n");
    }
    h.push("</ul>\n");
    pagination(h, cur, last);
    h.push("</main>\n");
    promo_aside(h);
    h.push("</div>\n");
    footer(h, world);
}

/// Opens field `field`'s wrapper (`<div id="p-8f3a2c">`) on products with
/// generated ids; the id differs per product and per field.
fn wrap_open(h: &mut Html, world: &World, p: &Product, field: u64) {
    if p.ids {
        let id = rng::mix(world.seed, &[tag::SHOP, stream::IDS, u64::from(p.k), field]) & 0xFF_FFFF;
        let _ = write!(h.out, "<div id=\"p-{id:06x}\">");
    }
}

fn wrap_close(h: &mut Html, p: &Product) {
    if p.ids {
        h.push("</div>");
    }
}

/// `<p class="rating-line">Rated <span class="rating">4.5</span> / 5</p>`, wrapped.
fn rating(h: &mut Html, world: &World, p: &Product) {
    wrap_open(h, world, p, field::RATING);
    let _ = write!(
        h.out,
        "<p class=\"rating-line\">Rated <span class=\"rating\">{}.{}</span> / 5</p>",
        p.rating / 10,
        p.rating % 10
    );
    wrap_close(h, p);
    h.push("\n");
}

fn product(h: &mut Html, world: &World, p: &Product) {
    let n = world.shop.unwrap_or(0);
    let page = ShopPage::Product(p.k);
    head(h, world, page, &p.name);
    header(h, world);
    h.push("<div class=\"page\"><main id=\"main\">");
    breadcrumb(h, Some(listing_of(p.k)), &p.name);
    h.push("<article class=\"product\" itemscope itemtype=\"https://schema.org/Product\">\n");
    if let Some(b) = p.badge {
        h.push("<p class=\"badge\">").push(b).push("</p>");
    }
    wrap_open(h, world, p, field::TITLE);
    h.push("<h1 class=\"product-title\" itemprop=\"name\">").push(&p.name).push("</h1>");
    wrap_close(h, p);
    h.push("\n");
    wrap_open(h, world, p, field::BYLINE);
    h.push("<p class=\"byline\">by <span class=\"brand\" itemprop=\"brand\">").push(&p.brand);
    h.push("</span> &middot; <span class=\"sku\" itemprop=\"sku\">");
    p.push_sku(&mut h.out);
    h.push("</span></p>");
    wrap_close(h, p);
    h.push("\n");
    if p.rating_first {
        rating(h, world, p);
    }
    h.push("<div class=\"buy-box\" itemprop=\"offers\" itemscope itemtype=\"https://schema.org/Offer\">\n");
    match (p.price_text(), p.price_decimal()) {
        (Some(text), Some(dec)) => {
            wrap_open(h, world, p, field::PRICE);
            let _ = write!(
                h.out,
                "<div class=\"price-line\"><span class=\"price\" itemprop=\"price\" content=\"{dec}\">{text}</span><meta itemprop=\"priceCurrency\" content=\"{}\"></div>",
                p.style.currency()
            );
            wrap_close(h, p);
        }
        (Some(text), None) => {
            wrap_open(h, world, p, field::PRICE);
            h.push("<div class=\"price-line\"><span class=\"price\">").push(&text);
            h.push("</span> <small>for a quote</small></div>");
            wrap_close(h, p);
        }
        _ => {}
    }
    h.push("\n");
    wrap_open(h, world, p, field::AVAILABILITY);
    h.push("<p class=\"availability-line\"><span class=\"availability\">").push(p.availability());
    let _ = write!(
        h.out,
        "</span><meta itemprop=\"availability\" content=\"https://schema.org/{}\"></p>",
        if p.in_stock { "InStock" } else { "OutOfStock" }
    );
    wrap_close(h, p);
    h.push("\n");
    wrap_open(h, world, p, field::STOCK);
    let _ = write!(h.out, "<p class=\"stock\">Units left: <span class=\"stock-count\">{}</span></p>", p.stock);
    wrap_close(h, p);
    h.push("\n<button type=\"button\">Add to cart</button></div>\n");
    if !p.rating_first {
        rating(h, world, p);
    }
    wrap_open(h, world, p, field::RELEASED);
    let (y, m, d) = p.released;
    let _ = write!(
        h.out,
        "<p class=\"release\">Released <time class=\"released\" datetime=\"{}\">{d} {} {y}</time></p>",
        p.released_iso(),
        super::traps::MONTHS[(m as usize).saturating_sub(1) % 12]
    );
    wrap_close(h, p);
    h.push("\n");
    wrap_open(h, world, p, field::AUTHORS);
    h.push("<div class=\"credits\"><h2>Authors</h2><ul class=\"authors\">");
    for a in &p.authors {
        h.push("<li>").push(a).push("</li>");
    }
    h.push("</ul></div>");
    wrap_close(h, p);
    h.push("\n<h2>Description</h2>");
    wrap_open(h, world, p, field::DESCRIPTION);
    h.push("<div class=\"description\" itemprop=\"description\"><p>");
    let mut r = Rng::from_parts(world.seed, &[tag::SHOP, stream::TEXT, u64::from(p.k)]);
    for i in 0..r.range(2, 4) {
        if i > 0 {
            h.push(" ");
        }
        sentence(&mut r, &mut h.out);
    }
    h.push("</p></div>");
    wrap_close(h, p);
    h.push("\n</article>\n<section class=\"related\"><h2>You may also like</h2><ul>");
    let mut r = Rng::from_parts(world.seed, &[tag::SHOP, stream::RELATED, u64::from(p.k)]);
    for k in pick_products(&mut r, n, p.k, 3) {
        h.push("<li>");
        product_link(h, LinkRole::Sidebar, None, &Product::new(world, k));
        h.push("</li>");
    }
    h.push("</ul></section>\n");
    json_ld(h, p);
    h.push("</main>\n");
    promo_aside(h);
    h.push("</div>\n");
    footer(h, world);
}

/// The schema.org Product as JSON-LD. Every string is generated ASCII
/// without quotes or backslashes, so nothing needs JSON escaping.
fn json_ld(h: &mut Html, p: &Product) {
    h.push(
        "<script type=\"application/ld+json\">{\"@context\":\"https://schema.org\",\"@type\":\"Product\",\"name\":\"",
    );
    h.push(&p.name).push("\",\"sku\":\"");
    p.push_sku(&mut h.out);
    h.push("\",\"brand\":{\"@type\":\"Brand\",\"name\":\"").push(&p.brand).push("\"},\"releaseDate\":\"");
    h.push(&p.released_iso()).push("\",\"offers\":{\"@type\":\"Offer\",");
    if let Some(dec) = p.price_decimal() {
        let _ = write!(h.out, "\"price\":{dec},");
    }
    let _ = writeln!(
        h.out,
        "\"priceCurrency\":\"{}\",\"availability\":\"https://schema.org/{}\"}},\"aggregateRating\":{{\"@type\":\"AggregateRating\",\"ratingValue\":{}.{},\"bestRating\":5}}}}</script>",
        p.style.currency(),
        if p.in_stock { "InStock" } else { "OutOfStock" },
        p.rating / 10,
        p.rating % 10
    );
}

/// A plain page with the shop's chrome, a little text and a link home.
fn plain(h: &mut Html, world: &World, page: ShopPage, title: &str, lead: &str) {
    head(h, world, page, title);
    header(h, world);
    h.push("<div class=\"page\"><main id=\"main\">");
    breadcrumb(h, None, title);
    h.push("<h1>").push(title).push("</h1><p>").push(lead).push(" ");
    let salt = match page {
        ShopPage::Promo(k) => 100 + u64::from(k),
        ShopPage::Help(k) => 200 + u64::from(k),
        _ => 300,
    };
    let mut r = Rng::from_parts(world.seed, &[tag::SHOP, stream::TEXT, u64::MAX, salt]);
    sentence(&mut r, &mut h.out);
    h.push(" ");
    sentence(&mut r, &mut h.out);
    h.push("</p><p>");
    h.link(LinkRole::Nav, false, |s| s.push('/'), "Back to the shop");
    h.push("</p></main></div>\n");
    footer(h, world);
}

#[cfg(test)]
mod tests;
