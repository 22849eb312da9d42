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
//!
//! The code is in modules, one concept each: the pages and their URLs
//! (`page`), the generated products (`product`), the ground truth
//! (`truth`), what every page shares (`chrome`), the home, listing and
//! plain pages (`pages`) and the product page (`product_page`).

mod chrome;
mod page;
mod pages;
mod product;
mod product_page;
mod truth;

pub use page::{disallows, listing_pages, respond, route, ShopPage};
pub use pages::render;
pub use truth::{listing_urls, products, truth, ShopProduct};

#[cfg(doc)]
use crate::rng::tag;
#[cfg(doc)]
use product::price_anomaly;

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

/// Titles of the promotion pages, `/promo/1` first.
static PROMO_TITLES: [&str; PROMOS as usize] = ["Spring sale", "Bundle deals", "Clearance"];
/// Titles of the help pages, `/help/1` first.
static HELP_TITLES: [&str; HELP_PAGES as usize] = ["Shipping", "Returns"];

#[cfg(test)]
mod tests;
