//! A product's generated fields: its name, brand, price in one of four
//! formats or a deliberate anomaly, stock, release date, authors, rating,
//! and the layout of its page.

use std::fmt::Write as _;

use super::{stream, ShopPage, ShopProduct};
use crate::rng::{self, tag, Rng, FIRST_NAMES, LAST_NAMES};
use crate::site::World;

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

/// How a product's price is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PriceStyle {
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

    pub(super) fn currency(self) -> &'static str {
        match self {
            Self::EuroDot | Self::EuroComma => "EUR",
            Self::Dollar => "USD",
            Self::Pound => "GBP",
        }
    }

    /// Writes `cents` in this style.
    pub(super) fn push(self, cents: u64, out: &mut String) {
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
pub(super) struct Product {
    pub(super) k: u32,
    pub(super) name: String,
    pub(super) brand: String,
    pub(super) cents: u64,
    pub(super) style: PriceStyle,
    pub(super) anomaly: Option<PriceAnomaly>,
    pub(super) in_stock: bool,
    pub(super) stock: u32,
    /// Year, month, day.
    pub(super) released: (u32, u32, u32),
    pub(super) authors: Vec<String>,
    /// Tenths of a star, 10..=50.
    pub(super) rating: u32,
    /// Every field's element is wrapped in a `<div>` with a generated id.
    pub(super) ids: bool,
    pub(super) badge: Option<&'static str>,
    /// The rating comes before the buy box instead of after it.
    pub(super) rating_first: bool,
}

/// A word of four letters or more (names read better without the glue words).
pub(super) fn long_word(r: &mut Rng) -> &'static str {
    loop {
        let w = r.word();
        if w.len() > 3 {
            return w;
        }
    }
}

impl Product {
    pub(super) fn new(world: &World, k: u32) -> Self {
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
    pub(super) fn push_sku(&self, out: &mut String) {
        let _ = write!(out, "SKU-{:05}", self.k);
    }

    /// The price as a plain decimal, `1299.00`, when the page shows one.
    pub(super) fn price_decimal(&self) -> Option<String> {
        self.anomaly.is_none().then(|| format!("{}.{:02}", self.cents / 100, self.cents % 100))
    }

    /// The visible text of the price element, when there is one.
    pub(super) fn price_text(&self) -> Option<String> {
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
    pub(super) fn released_iso(&self) -> String {
        let (y, m, d) = self.released;
        format!("{y}-{m:02}-{d:02}")
    }

    pub(super) fn availability(&self) -> &'static str {
        if self.in_stock {
            "In stock"
        } else {
            "Out of stock"
        }
    }

    pub(super) fn truth(&self) -> ShopProduct {
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
