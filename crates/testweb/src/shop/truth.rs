//! The shop's ground truth: every product with the fields its page shows,
//! and the URLs of the listing pages.

use serde::{Deserialize, Serialize};

use super::product::Product;
use super::{listing_pages, ShopPage};
use crate::site::World;

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
