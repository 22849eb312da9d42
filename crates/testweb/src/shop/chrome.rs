//! What every shop page shares: the shop's name, the head, header,
//! breadcrumb, offers sidebar and footer, and links to products.

use super::product::{long_word, Product};
use super::{stream, ShopPage, HELP_PAGES, HELP_TITLES, PROMOS, PROMO_TITLES};
use crate::render::Html;
use crate::rng::{self, tag, Rng};
use crate::site::World;
use crate::truth::LinkRole;

/// The shop's name: two words and "Store", the same on every page.
pub(super) fn push_shop_name(world: &World, out: &mut String) {
    let mut r = Rng::from_parts(world.seed, &[tag::SHOP, stream::SHOP, 0]);
    rng::push_capitalised(out, long_word(&mut r));
    out.push(' ');
    rng::push_capitalised(out, long_word(&mut r));
    out.push_str(" Store");
}

/// Up to `want` distinct products of `1..=n` other than `exclude`, drawn
/// from `r` (fewer only when the shop has fewer).
pub(super) fn pick_products(r: &mut Rng, n: u32, exclude: u32, want: usize) -> Vec<u32> {
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

/// `<!DOCTYPE html>…<body>`: the title and the canonical link.
pub(super) fn head(h: &mut Html, world: &World, page: ShopPage, title: &str) {
    h.push("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    h.push(title).push(" | ");
    push_shop_name(world, &mut h.out);
    h.push("</title><link rel=\"canonical\" href=\"");
    h.push(&page.url());
    h.push("\"></head>\n<body>");
}

/// The shop header with its navigation bar (role Header).
pub(super) fn header(h: &mut Html, world: &World) {
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
pub(super) fn breadcrumb(h: &mut Html, listing: Option<u32>, current: &str) {
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
pub(super) fn promo_aside(h: &mut Html) {
    h.push("<aside class=\"promo\"><h2>Offers</h2><ul>");
    for (i, title) in (1..=PROMOS).zip(PROMO_TITLES) {
        h.push("<li>");
        h.link(LinkRole::Sidebar, false, |s| ShopPage::Promo(i).push_path(s), title);
        h.push("</li>");
    }
    h.push("</ul></aside>");
}

/// The shop footer (role Footer): about, help, cart.
pub(super) fn footer(h: &mut Html, world: &World) {
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
pub(super) fn product_link(h: &mut Html, role: LinkRole, class: Option<&str>, p: &Product) {
    h.open_class(role, false, class, |s| ShopPage::Product(p.k).push_path(s));
    h.push(&p.name);
    h.close();
}
