//! Rendering the shop's pages: the home page, the product listings with
//! their pagination, and the plain pages (offers, about, help, cart).

use std::fmt::Write as _;

use super::chrome::{breadcrumb, footer, head, header, pick_products, product_link, promo_aside, push_shop_name};
use super::product::Product;
use super::product_page::product;
use super::{listing_pages, stream, ShopPage, HELP_TITLES, PER_PAGE, PROMOS, PROMO_TITLES};
use crate::render::{sentence, Html};
use crate::rng::{tag, Rng};
use crate::site::World;
use crate::truth::LinkRole;

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
