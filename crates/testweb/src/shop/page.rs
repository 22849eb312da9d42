//! The shop's pages and their URLs: which page a request names, and the
//! answer to it.

use std::fmt::Write as _;

use bytes::Bytes;
use hyper::{Response, StatusCode};

use super::{render, HELP_PAGES, ORIGIN, PER_PAGE, PROMOS, ROBOTS};
use crate::body::FarmBody;
use crate::render::Html;
use crate::server;
use crate::site::World;

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
pub(super) fn listing_of(k: u32) -> u32 {
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
