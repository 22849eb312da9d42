//! What a running farm tells about its own pages: the ground truth of a
//! crawl and of the topical and knowledge-base sections, each page's links
//! and kind, the fault cases and the shop's products.

use crate::{faults, kb, shop, site, topics, truth, Farm, FaultCase, ShopProduct, Truth, TruthLink};

impl Farm {
    /// Ground truth for a crawl from `seeds` to `depth` hops.
    #[must_use]
    pub fn truth(&self, seeds: &[String], depth: u32) -> Truth {
        truth::compute(&self.core.world, seeds, depth)
    }

    /// What a crawl of the topical section (`FarmConfig::topics`) from every
    /// site's `/topics/` reaches within `depth` hops, and each article's topic.
    #[must_use]
    pub fn topic_truth(&self, depth: u32) -> topics::TopicTruth {
        topics::truth(&self.core.world, self.core.topics, depth)
    }

    /// The topic of the topical article at `url` (an index of
    /// [`topics::TOPICS`]); `None` for any other page.
    #[must_use]
    pub fn topic_of(&self, url: &str) -> Option<usize> {
        topics::topic_of_url(&self.core.world, self.core.topics, url)
    }

    /// Every site's `/topics/`: the seeds of a crawl of the topical section.
    #[must_use]
    pub fn topic_start_urls(&self) -> Vec<String> {
        let w = &self.core.world;
        (0..w.sites).map(|n| w.origin(site::HostId::Site(n)) + "/topics/").collect()
    }

    /// The knowledge base of the `/kb/` section (`FarmConfig::kb`) as CSV
    /// (also served at `/__farm/kb.csv`).
    #[must_use]
    pub fn kb_csv(&self) -> String {
        kb::kb_csv()
    }

    /// What a crawl of the `/kb/` section from every site's `/kb/`
    /// reaches within `depth` hops, and each article's mentions and
    /// relations.
    #[must_use]
    pub fn kb_truth(&self, depth: u32) -> kb::KbTruth {
        kb::truth(&self.core.world, self.core.kb, depth)
    }

    /// The `/kb/` page at `url` with its truth; `None` for any other page.
    #[must_use]
    pub fn kb_page(&self, url: &str) -> Option<kb::KbPage> {
        kb::page_of_url(&self.core.world, self.core.kb, url)
    }

    /// Every site's `/kb/`: the seeds of a crawl of the section.
    #[must_use]
    pub fn kb_start_urls(&self) -> Vec<String> {
        let w = &self.core.world;
        (0..w.sites).map(|n| w.origin(site::HostId::Site(n)) + "/kb/").collect()
    }

    /// Every `<a href>` of the page at `url`, in document order, with its role.
    #[must_use]
    pub fn page_links(&self, url: &str) -> Option<Vec<TruthLink>> {
        truth::page_links(&self.core.world, url)
    }

    /// What the page at `url` is, by the test web's own routing: `home`,
    /// `list`, `tag`, `article`, `print` (an article's print view), `reply`
    /// (an article's comment-reply URL), `share` (a redirect to a share
    /// form), `mirror`, `amp`, `utility`, `trap`, `private`, `mini`, on
    /// the shop `home`, `listing`, `product`, `promo` and `utility` (about
    /// and help), or `None` for anything else (files, faults, 404s, and
    /// pages robots.txt disallows, such as the shop's cart).
    /// Tests use it to tell content pages from navigation targets.
    #[must_use]
    pub fn page_kind(&self, url: &str) -> Option<&'static str> {
        let mut u = url::Url::parse(url).ok()?;
        u.set_fragment(None);
        match truth::classify(&self.core.world, &u) {
            truth::Target::Page { variant: site::Variant::Print, .. } => Some("print"),
            truth::Target::Page { variant: site::Variant::Reply, .. } => Some("reply"),
            truth::Target::Page { page, .. } => Some(page.kind()),
            truth::Target::Trap(..) => Some("trap"),
            _ if u.query().is_some_and(|q| q.split('&').any(|kv| kv.starts_with("share="))) => Some("share"),
            _ => None,
        }
    }

    /// Every fault URL with its expected outcome (empty when faults are off).
    #[must_use]
    pub fn fault_cases(&self) -> Vec<FaultCase> {
        faults::cases(&self.core.world)
    }

    /// The shop's ground truth: every product, `http://shop.test/product/1`
    /// first, with the fields its page shows (empty when the shop is off).
    /// The JSON of `/__farm/shop` holds the same under `products`.
    #[must_use]
    pub fn shop_products(&self) -> Vec<ShopProduct> {
        shop::products(&self.core.world)
    }

    /// The URL of every shop listing page, `http://shop.test/products?page=1`
    /// first; together they list every product exactly once (empty when
    /// the shop is off). `/__farm/shop` serves them under `listing_pages`.
    #[must_use]
    pub fn shop_listing_pages(&self) -> Vec<String> {
        shop::listing_urls(&self.core.world)
    }
}
