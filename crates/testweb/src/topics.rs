//! Topical pages, when the web is started with them (`--topics N`): every
//! regular site serves a magazine under `/topics/` whose articles are each
//! about one of six topics, with the truth of which, for testing focused
//! crawling (relevance, ordering, harvest rate and recall).
//!
//! - `/topics/` (a navigation page): a link to each topic's section, and
//!   ten of the site's latest articles, of any topic.
//! - `/topics/{topic}/`: twenty articles, four in five of that topic.
//! - `/topics/a/{id}`: an article (`id` below `N`): a title and four
//!   paragraphs where about one word in four is from its topic's
//!   vocabulary; four related articles (three in four of the same topic,
//!   their titles as anchors), one article on another site (of the same
//!   topic more often than not) and five popular ones of any topic.
//! - `/topics/search?q=WORDS`: the site's first ten articles of the topic
//!   whose vocabulary has most of the words (for a plan's seed templates).
//!
//! Each site favours two topics (35 % of its articles each), so relevant
//! pages cluster by site. Everything is computed from the seed; the links
//! a page shows are the links [`links`] returns, so the truth cannot drift
//! from what is served.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use crate::rng::{push_capitalised, Rng};
use crate::site::{HostId, World};

/// Topic tag of the generator's hashes.
const TAG: u64 = 10;

/// The topics: a name (in URLs), a label and a vocabulary.
pub const TOPICS: [(&str, &str, &[&str]); 6] = [
    (
        "astronomy",
        "Astronomy",
        &[
            "telescope",
            "galaxy",
            "nebula",
            "orbit",
            "planet",
            "comet",
            "asteroid",
            "supernova",
            "observatory",
            "eclipse",
            "constellation",
            "meteor",
            "quasar",
            "exoplanet",
            "cosmology",
            "star",
        ],
    ),
    (
        "cooking",
        "Cooking",
        &[
            "recipe",
            "oven",
            "simmer",
            "saucepan",
            "flour",
            "garlic",
            "roast",
            "braise",
            "seasoning",
            "dough",
            "whisk",
            "broth",
            "pastry",
            "marinade",
            "skillet",
            "kitchen",
        ],
    ),
    (
        "football",
        "Football",
        &[
            "goalkeeper",
            "striker",
            "penalty",
            "midfielder",
            "league",
            "referee",
            "offside",
            "stadium",
            "tackle",
            "defender",
            "fixture",
            "derby",
            "kickoff",
            "transfer",
            "championship",
            "star",
        ],
    ),
    (
        "finance",
        "Finance",
        &[
            "dividend",
            "portfolio",
            "bond",
            "equity",
            "inflation",
            "interest",
            "investor",
            "broker",
            "liquidity",
            "mortgage",
            "yield",
            "hedge",
            "valuation",
            "bank",
            "shares",
            "market",
        ],
    ),
    (
        "medicine",
        "Medicine",
        &[
            "diagnosis",
            "vaccine",
            "clinic",
            "surgeon",
            "symptom",
            "therapy",
            "patient",
            "antibiotic",
            "cardiology",
            "nurse",
            "prescription",
            "immune",
            "infection",
            "hospital",
            "dosage",
            "bank",
        ],
    ),
    (
        "sailing",
        "Sailing",
        &[
            "yacht",
            "mainsail",
            "harbour",
            "regatta",
            "keel",
            "rudder",
            "anchor",
            "starboard",
            "mooring",
            "spinnaker",
            "helm",
            "tide",
            "dinghy",
            "jib",
            "knots",
            "market",
        ],
    ),
];

/// A page of the topical section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicPage {
    pub html: String,
    /// Every link of the page, absolute, in page order.
    pub links: Vec<String>,
    /// The article's topic; `None` for navigation pages.
    pub topic: Option<usize>,
}

/// The words a user might write in a crawl plan for `topic`: its name and
/// ten of its sixteen words (the words two topics share left out), for
/// tests and benches of focused crawling.
#[must_use]
pub fn plan_words(topic: usize) -> Vec<&'static str> {
    let (name, _, vocab) = TOPICS[topic];
    vocab.iter().copied().filter(|w| !["star", "bank", "market"].contains(w)).take(10).chain([name]).collect()
}

/// The topic index of a topic's name.
#[must_use]
pub fn topic_index(name: &str) -> Option<usize> {
    TOPICS.iter().position(|(n, _, _)| *n == name)
}

/// The topic of article `id` of `site`.
#[must_use]
pub fn topic_of(seed: u64, site: u32, id: u32) -> usize {
    let mut r = Rng::from_parts(seed, &[TAG, 1, u64::from(site), u64::from(id)]);
    let (first, second) = favourites(seed, site);
    match r.below(100) {
        0..35 => first,
        35..70 => second,
        _ => r.index(TOPICS.len()),
    }
}

/// A word of the generic vocabulary that is no topic's word (the generic
/// list has `planet`, `comet` and such: they would blur the truth).
fn generic(r: &mut Rng) -> &'static str {
    loop {
        let w = r.word();
        if !TOPICS.iter().any(|(_, _, vocab)| vocab.contains(&w)) {
            return w;
        }
    }
}

fn favourites(seed: u64, site: u32) -> (usize, usize) {
    let mut r = Rng::from_parts(seed, &[TAG, 0, u64::from(site)]);
    let first = r.index(TOPICS.len());
    (first, (first + 1 + r.index(TOPICS.len() - 1)) % TOPICS.len())
}

/// An article of `site` about `topic`: the first at or after an id drawn
/// from `r` (any article when the site has none of that topic).
fn article_about(world: &World, r: &mut Rng, site: u32, topic: usize, articles: u32) -> u32 {
    let start = r.below_u32(articles);
    (0..articles).map(|k| (start + k) % articles).find(|&id| topic_of(world.seed, site, id) == topic).unwrap_or(start)
}

fn title(seed: u64, site: u32, id: u32) -> String {
    let topic = topic_of(seed, site, id);
    let mut r = Rng::from_parts(seed, &[TAG, 2, u64::from(site), u64::from(id)]);
    let vocab = TOPICS[topic].2;
    let mut t = String::new();
    push_capitalised(&mut t, r.pick(vocab));
    let (a, b) = (generic(&mut r), generic(&mut r));
    let _ = write!(t, " and {} in the {a} {b}", r.pick(vocab));
    t
}

fn article_url(world: &World, site: u32, id: u32) -> String {
    format!("{}/topics/a/{id}", world.origin(HostId::Site(site)))
}

/// The page at `path` (and `query`) of `site`, when it is a topical path.
#[must_use]
pub fn page(world: &World, articles: u32, site: u32, path: &str, query: Option<&str>) -> Option<TopicPage> {
    let origin = world.origin(HostId::Site(site));
    let rest = path.strip_prefix("/topics/")?;
    let mut links: Vec<(String, String)> = Vec::new();
    let (heading, body, topic) = if rest.is_empty() {
        links.extend(TOPICS.iter().map(|(name, label, _)| (format!("{origin}/topics/{name}/"), (*label).to_string())));
        let mut r = Rng::from_parts(world.seed, &[TAG, 3, u64::from(site)]);
        for _ in 0..10 {
            let id = r.below_u32(articles);
            links.push((article_url(world, site, id), title(world.seed, site, id)));
        }
        ("Topics".to_string(), String::new(), None)
    } else if rest == "search" {
        let words: Vec<String> = query
            .unwrap_or("")
            .split('&')
            .filter_map(|kv| kv.strip_prefix("q="))
            .flat_map(|q| q.split(['+', ' ']).map(|w| w.to_ascii_lowercase()).collect::<Vec<_>>())
            .collect();
        let best = (0..TOPICS.len())
            .map(|t| (words.iter().filter(|w| TOPICS[t].2.contains(&w.as_str())).count(), t))
            .max_by_key(|&(n, t)| (n, std::cmp::Reverse(t)))
            .filter(|&(n, _)| n > 0);
        if let Some((_, t)) = best {
            links.extend(
                (0..articles)
                    .filter(|&id| topic_of(world.seed, site, id) == t)
                    .take(10)
                    .map(|id| (article_url(world, site, id), title(world.seed, site, id))),
            );
        }
        ("Search".to_string(), format!("<p>{} results.</p>", links.len()), None)
    } else if let Some(id) = rest.strip_prefix("a/").and_then(|n| n.parse::<u32>().ok()).filter(|&id| id < articles) {
        let topic = topic_of(world.seed, site, id);
        let (name, label, vocab) = TOPICS[topic];
        let mut r = Rng::from_parts(world.seed, &[TAG, 4, u64::from(site), u64::from(id)]);
        let mut body = String::new();
        for _ in 0..4 {
            body.push_str("<p>");
            for k in 0..60 {
                let w = if r.chance(25) { r.pick(vocab) } else { generic(&mut r) };
                if k == 0 {
                    push_capitalised(&mut body, w);
                } else {
                    body.push(' ');
                    body.push_str(w);
                }
            }
            body.push_str(".</p>");
        }
        links.push((format!("{origin}/topics/"), "Topics".into()));
        links.push((format!("{origin}/topics/{name}/"), label.into()));
        for _ in 0..4 {
            let t = if r.chance(75) { topic } else { r.index(TOPICS.len()) };
            let other = article_about(world, &mut r, site, t, articles);
            links.push((article_url(world, site, other), title(world.seed, site, other)));
        }
        if world.sites > 1 {
            let elsewhere = (site + 1 + r.below_u32(world.sites - 1)) % world.sites;
            let t = if r.chance(60) { topic } else { r.index(TOPICS.len()) };
            let other = article_about(world, &mut r, elsewhere, t, articles);
            links.push((article_url(world, elsewhere, other), title(world.seed, elsewhere, other)));
        }
        for _ in 0..5 {
            let (s, other) = (r.below_u32(world.sites), r.below_u32(articles));
            links.push((article_url(world, s, other), title(world.seed, s, other)));
        }
        (title(world.seed, site, id), body, Some(topic))
    } else if let Some(t) = rest.strip_suffix('/').and_then(topic_index) {
        let mut r = Rng::from_parts(world.seed, &[TAG, 5, u64::from(site), t as u64]);
        links.push((format!("{origin}/topics/"), "Topics".into()));
        for _ in 0..20 {
            let want = if r.chance(80) { t } else { r.index(TOPICS.len()) };
            let id = article_about(world, &mut r, site, want, articles);
            links.push((article_url(world, site, id), title(world.seed, site, id)));
        }
        (TOPICS[t].1.to_string(), String::new(), None)
    } else {
        return None;
    };
    let mut html = format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>{heading}</title></head><body>");
    if topic.is_some() {
        let _ = write!(html, "<article><h1>{heading}</h1>{body}</article><aside><ul>");
    } else {
        let _ = write!(html, "<h1>{heading}</h1>{body}<ul>");
    }
    for (href, anchor) in &links {
        let _ = write!(html, "<li><a href=\"{href}\">{anchor}</a></li>");
    }
    html.push_str(if topic.is_some() { "</ul></aside></body></html>" } else { "</ul></body></html>" });
    Some(TopicPage { html, links: links.into_iter().map(|(h, _)| h).collect(), topic })
}

/// What a crawl of the topical section from every site's `/topics/` can
/// reach within `depth` hops, and each article's topic.
#[derive(Clone, Debug, Default)]
pub struct TopicTruth {
    /// Every reachable page and its depth (the seeds are depth 0).
    pub reachable: BTreeMap<String, u32>,
    /// The topic of every reachable article (navigation pages have none).
    pub topic: BTreeMap<String, usize>,
}

impl TopicTruth {
    /// The reachable articles of `topic`.
    #[must_use]
    pub fn relevant(&self, topic: usize) -> Vec<&str> {
        self.topic.iter().filter(|(_, t)| **t == topic).map(|(u, _)| u.as_str()).collect()
    }
}

/// The truth of the topical section (breadth first over [`page`]'s links).
#[must_use]
pub fn truth(world: &World, articles: u32, depth: u32) -> TopicTruth {
    let mut out = TopicTruth::default();
    let mut queue = VecDeque::new();
    for s in 0..world.sites {
        let url = format!("{}/topics/", world.origin(HostId::Site(s)));
        out.reachable.insert(url.clone(), 0);
        queue.push_back((url, 0));
    }
    while let Some((url, d)) = queue.pop_front() {
        let Some((site, path, query)) = split(world, &url) else { continue };
        let Some(p) = page(world, articles, site, &path, query.as_deref()) else { continue };
        if let Some(t) = p.topic {
            out.topic.insert(url.clone(), t);
        }
        if d == depth {
            continue;
        }
        for link in p.links {
            if !out.reachable.contains_key(&link) {
                out.reachable.insert(link.clone(), d + 1);
                queue.push_back((link, d + 1));
            }
        }
    }
    out
}

/// Site number, path and query of one of the topical section's URLs.
fn split(world: &World, url: &str) -> Option<(u32, String, Option<String>)> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_at(rest.find('/')?);
    let HostId::Site(site) = world.parse_host(host)? else { return None };
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (path.to_string(), None),
    };
    Some((site, path, query))
}

/// The topic of the article at `url`, when it is one.
#[must_use]
pub fn topic_of_url(world: &World, articles: u32, url: &str) -> Option<usize> {
    let (site, path, _) = split(world, url)?;
    let id = path.strip_prefix("/topics/a/")?.parse::<u32>().ok().filter(|&id| id < articles)?;
    Some(topic_of(world.seed, site, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> World {
        World::new(7, 4, 10, false, 8)
    }

    #[test]
    fn pages_are_the_same_for_a_seed_and_their_links_are_served() {
        let w = world();
        let a = page(&w, 40, 1, "/topics/a/3", None).expect("an article");
        assert_eq!(Some(a.clone()), page(&w, 40, 1, "/topics/a/3", None));
        assert_eq!(a.topic, Some(topic_of(w.seed, 1, 3)));
        for link in &a.links {
            let (site, path, q) = split(&w, link).expect("a topical URL");
            assert!(page(&w, 40, site, &path, q.as_deref()).is_some(), "{link} is served");
            assert!(a.html.contains(&format!("href=\"{link}\"")), "{link} is on the page");
        }
        assert!(page(&w, 40, 1, "/topics/a/40", None).is_none(), "past the last article");
        assert!(page(&w, 40, 1, "/other", None).is_none());
    }

    #[test]
    fn an_article_speaks_of_its_topic_and_sections_mostly_list_theirs() {
        let w = world();
        let a = page(&w, 40, 2, "/topics/a/5", None).expect("an article");
        let vocab = TOPICS[a.topic.expect("topic")].2;
        let hits = vocab.iter().filter(|t| a.html.contains(*t)).count();
        assert!(hits >= 5, "{hits} of its topic's words");
        let section = page(&w, 40, 2, "/topics/cooking/", None).expect("a section");
        let cooking = section.links.iter().filter(|l| topic_of_url(&w, 40, l) == Some(1)).count();
        assert!(cooking >= 12, "{cooking} of 20 about cooking");
        let search = page(&w, 40, 2, "/topics/search", Some("q=galaxy+telescope")).expect("search");
        assert!(!search.links.is_empty());
        assert!(search.links.iter().all(|l| topic_of_url(&w, 40, l) == Some(0)));
    }

    #[test]
    fn the_truth_is_a_breadth_first_walk_and_a_topic_is_a_minority() {
        let w = world();
        let t = truth(&w, 40, 3);
        assert_eq!(t.reachable.values().filter(|&&d| d == 0).count(), 4);
        let articles = t.topic.len();
        assert!(articles > 60, "{articles} articles reachable");
        for (topic, (name, _, _)) in TOPICS.iter().enumerate() {
            let share = t.relevant(topic).len() as f64 / articles as f64;
            assert!(share < 0.45, "{name}: {share}");
        }
    }
}
