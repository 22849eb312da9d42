//! A product's page: its typed fields, each in a wrapper with a generated
//! id on some products, the rating above or below the buy box, related
//! products, and the schema.org JSON-LD.

use std::fmt::Write as _;

use super::chrome::{breadcrumb, footer, head, header, pick_products, product_link, promo_aside};
use super::page::listing_of;
use super::product::Product;
use super::{stream, ShopPage};
use crate::render::{sentence, Html};
use crate::rng::{self, tag, Rng};
use crate::site::World;
use crate::truth::LinkRole;

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

pub(super) fn product(h: &mut Html, world: &World, p: &Product) {
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
        crate::traps::MONTHS[(m as usize).saturating_sub(1) % 12]
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
