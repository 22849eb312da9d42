//! A small knowledge base and pages that mention its entities, when the
//! web is started with them (`--kb N`), with the truth of every mention
//! and relation, for testing entity recognition and linking.
//!
//! The knowledge base ([`ENTITIES`], as CSV from [`kb_csv`]) has seven
//! companies, six people and six cities, with aliases that name two of
//! them ("Orion", "Ferreira", "Paris") and accented, `ß` and all-capitals
//! spellings; the facts ([`FACTS`]) say who runs, founded and bought what
//! and where each company is based.
//!
//! - `/kb/` (a navigation page): twelve of the site's articles.
//! - `/kb/a/{id}` (`id` below `N`): an article about one company: a
//!   heading and four paragraphs of sentences that state its facts in
//!   several phrasings (a few that no common pattern covers), name it and
//!   its people by alias next to words that tell which one is meant,
//!   put two entities side by side without a relation, and use words that
//!   contain a name without being one ("Parisian", "Orionids", "mercury
//!   levels"); in an `<aside>`, links to five related articles (three in
//!   four about the same company, their headings as anchors) and three
//!   of any company.
//!
//! Each site favours two companies (35 % of its articles each), so a
//! company's articles cluster by site. Everything is computed from the
//! seed; [`page`] returns the HTML, its links and its truth together, so
//! the truth cannot drift from what is served.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use crate::rng::{push_capitalised, Rng, WORDS};
use crate::site::{HostId, World};

/// Tag of the generator's hashes.
const TAG: u64 = 11;

/// An entity: id, name, aliases, type, prior, context words.
pub type EntityRow = (&'static str, &'static str, &'static [&'static str], &'static str, f64, &'static str);

/// The knowledge base.
pub const ENTITIES: [EntityRow; 19] = [
    (
        "orion-dynamics",
        "Orion Dynamics",
        &["Orion"],
        "company",
        0.5,
        "rocket satellite launch aerospace orbit propulsion",
    ),
    ("orion-foods", "Orion Foods", &["Orion"], "company", 0.5, "bakery snacks flour grocery bread pastries"),
    ("mercury-bank", "Mercury Bank", &["Mercury"], "company", 0.5, "loans deposits lending savings mortgages"),
    (
        "nordlicht",
        "Nordlicht Straßenbau",
        &["Nordlicht"],
        "company",
        0.5,
        "construction asphalt bridges motorway paving",
    ),
    ("ecole-numerique", "École Numérique", &[], "company", 0.5, "courses training coding diplomas classrooms"),
    ("kestrel", "Kestrel Software", &["Kestrel"], "company", 0.5, "developers apps databases programming startups"),
    (
        "blue-heron",
        "Blue Heron Capital",
        &["Blue Heron"],
        "company",
        0.5,
        "investment fund investors venture portfolio",
    ),
    ("tomas-ferreira", "Tomás Ferreira", &["Ferreira"], "person", 0.5, "engineer rockets propulsion launch"),
    ("mira-ferreira", "Mira Ferreira", &["Ferreira"], "person", 0.5, "chef baker bakery pastries"),
    ("ada-whitlock", "Ada Whitlock", &["Whitlock"], "person", 0.5, "banker economist lending"),
    ("jonas-lindqvist", "Jonas Lindqvist", &["Lindqvist"], "person", 0.5, "investor venture fund"),
    ("lea-dubois", "Léa Dubois", &["Dubois"], "person", 0.5, "educator classrooms diplomas"),
    ("hiro-tanaka", "Hiro Tanaka", &["Tanaka"], "person", 0.5, "programmer developers apps"),
    ("paris", "Paris", &[], "city", 0.8, "france seine louvre french"),
    ("paris-texas", "Paris, Texas", &["Paris"], "city", 0.2, "texas ranch cattle prairie"),
    ("munchen", "München", &["Munich"], "city", 0.5, "bavaria bavarian germany"),
    ("krakow", "Kraków", &["Krakow", "Cracow"], "city", 0.5, "poland polish vistula"),
    ("sao-paulo", "São Paulo", &["Sao Paulo"], "city", 0.5, "brazil brazilian"),
    ("oslo", "Oslo", &[], "city", 0.5, "norway norwegian fjord"),
];

/// The facts: subject, predicate, object (indexes of [`ENTITIES`]).
pub const FACTS: [(usize, &str, usize); 20] = [
    (7, "ceo_of", 0),
    (8, "ceo_of", 1),
    (9, "ceo_of", 2),
    (12, "ceo_of", 5),
    (11, "ceo_of", 4),
    (10, "ceo_of", 6),
    (8, "founded", 1),
    (12, "founded", 5),
    (10, "founded", 6),
    (11, "founded", 4),
    (6, "acquired", 5),
    (2, "acquired", 3),
    (0, "acquired", 4),
    (0, "based_in", 15),
    (1, "based_in", 13),
    (2, "based_in", 18),
    (3, "based_in", 15),
    (4, "based_in", 13),
    (5, "based_in", 16),
    (6, "based_in", 17),
];

/// The companies (the articles' subjects).
const COMPANIES: usize = 7;

/// The knowledge base as CSV (`id,name,aliases,type,prior,context`).
#[must_use]
pub fn kb_csv() -> String {
    let mut out = String::from("id,name,aliases,type,prior,context\n");
    for (id, name, aliases, kind, prior, context) in ENTITIES {
        let quote = |s: &str| if s.contains(',') { format!("\"{s}\"") } else { s.to_string() };
        let _ = writeln!(out, "{id},{},{},{kind},{prior},{context}", quote(name), aliases.join("|"));
    }
    out
}

/// The index of entity `id`.
#[must_use]
pub fn entity_index(id: &str) -> Option<usize> {
    ENTITIES.iter().position(|e| e.0 == id)
}

/// A page of the knowledge-base section and its truth.
#[derive(Clone, Debug, PartialEq)]
pub struct KbPage {
    pub html: String,
    /// Every link of the page, absolute, in page order.
    pub links: Vec<String>,
    /// The company the article is about; `None` for navigation pages.
    pub subject: Option<usize>,
    /// Every mention in the article: entity index and the text as written.
    pub mentions: Vec<(usize, String)>,
    /// Every relation its sentences state: subject, predicate, object.
    pub relations: Vec<(usize, &'static str, usize)>,
}

/// The article's text as it is written, with its truth.
#[derive(Default)]
struct Text {
    html: String,
    mentions: Vec<(usize, String)>,
    relations: Vec<(usize, &'static str, usize)>,
}

impl Text {
    /// Writes entity `e` by its name.
    fn name(&mut self, e: usize) {
        self.form(e, ENTITIES[e].1.to_string());
    }
    /// Writes entity `e` as `form`.
    fn form(&mut self, e: usize, form: String) {
        self.html.push_str(&form);
        self.mentions.push((e, form));
    }
    /// Writes entity `e` by its first alias (its name when it has none).
    fn alias(&mut self, e: usize) {
        let form = ENTITIES[e].2.first().copied().unwrap_or(ENTITIES[e].1);
        self.form(e, form.to_string());
    }
    fn s(&mut self, text: &str) {
        self.html.push_str(text);
    }
}

/// A filler word that is no entity's context word, nor a type's cue.
fn generic(r: &mut Rng) -> &'static str {
    const CUES: [&str; 12] = [
        "city",
        "town",
        "region",
        "country",
        "village",
        "group",
        "capital",
        "residents",
        "said",
        "company",
        "firm",
        "streets",
    ];
    loop {
        let w = r.pick(WORDS);
        let context = ENTITIES.iter().any(|e| e.5.split(' ').any(|c| c == w));
        if !context && !CUES.contains(&w) && w.len() > 3 {
            return w;
        }
    }
}

/// A few filler words.
fn filler(r: &mut Rng, n: usize) -> String {
    (0..n).map(|_| generic(r)).collect::<Vec<_>>().join(" ")
}

/// Two context words of entity `e`.
fn context(r: &mut Rng, e: usize) -> (&'static str, &'static str) {
    let words: Vec<&str> = ENTITIES[e].5.split(' ').collect();
    let a = r.index(words.len());
    (words[a], words[(a + 1 + r.index(words.len() - 1)) % words.len()])
}

/// The company of article `id` of `site`.
#[must_use]
pub fn subject_of(seed: u64, site: u32, id: u32) -> usize {
    let mut r = Rng::from_parts(seed, &[TAG, 1, u64::from(site), u64::from(id)]);
    let mut f = Rng::from_parts(seed, &[TAG, 0, u64::from(site)]);
    let first = f.index(COMPANIES);
    let second = (first + 1 + f.index(COMPANIES - 1)) % COMPANIES;
    match r.below(100) {
        0..35 => first,
        35..70 => second,
        _ => r.index(COMPANIES),
    }
}

fn heading(seed: u64, site: u32, id: u32) -> String {
    let c = subject_of(seed, site, id);
    let mut r = Rng::from_parts(seed, &[TAG, 2, u64::from(site), u64::from(id)]);
    let mut t = format!("{}: ", ENTITIES[c].1);
    push_capitalised(&mut t, generic(&mut r));
    let _ = write!(t, " and {}", generic(&mut r));
    t
}

fn article_url(world: &World, site: u32, id: u32) -> String {
    format!("{}/kb/a/{id}", world.origin(HostId::Site(site)))
}

/// The sentences of one fact, in one of its phrasings (`pick`); the last
/// phrasing of `ceo_of` and `based_in` is one no common pattern has.
fn fact(t: &mut Text, r: &mut Rng, s: usize, p: &'static str, o: usize) {
    let year = 1990 + r.below(30);
    let (ca, _) = context(r, if s < COMPANIES { s } else { o });
    match (p, r.below(4)) {
        ("ceo_of", 0) => {
            t.name(s);
            t.s(", the CEO of ");
            t.name(o);
            let _ = write!(t.html, ", spoke about {ca} plans.");
        }
        ("ceo_of", 1) => {
            t.name(o);
            t.s("'s chief executive ");
            t.name(s);
            let _ = write!(t.html, " presented the {ca} results.");
        }
        ("ceo_of", 2) => {
            t.name(s);
            t.s(" is the president of ");
            t.name(o);
            t.s(".");
        }
        ("ceo_of", _) => {
            t.name(s);
            let _ = write!(t.html, " has steered ");
            t.name(o);
            let _ = write!(t.html, " since {year}.");
            t.relations.push((s, p, o));
            return;
        }
        ("founded", 0 | 1) => {
            t.name(o);
            let _ = write!(t.html, " was founded in {year} by ");
            t.name(s);
            t.s(".");
        }
        ("founded", _) => {
            t.name(s);
            t.s(" founded ");
            t.name(o);
            let _ = write!(t.html, " in {year}.");
        }
        ("acquired", 0 | 1) => {
            t.name(s);
            t.s(" acquired ");
            t.name(o);
            let _ = write!(t.html, " in {year}.");
        }
        ("acquired", _) => {
            t.name(o);
            t.s(" was bought by ");
            t.name(s);
            let _ = write!(t.html, " for its {ca} business.");
        }
        ("based_in", 0) => {
            t.name(s);
            t.s(" is based in ");
            t.name(o);
            t.s(".");
        }
        ("based_in", 1) => {
            t.s("The ");
            t.alias(o);
            t.s("-based ");
            t.name(s);
            let _ = write!(t.html, " expanded its {ca} work.");
        }
        ("based_in", 2) => {
            t.name(s);
            t.s(" has its head office in ");
            t.name(o);
            t.s(".");
        }
        (_, _) => {
            t.name(o);
            t.s(" is home to ");
            t.name(s);
            let _ = write!(t.html, ", whose {ca} teams grew.");
        }
    }
    t.relations.push((s, p, o));
}

/// The article `id` of `site` (`id` below the section's size).
fn article(world: &World, site: u32, id: u32) -> Text {
    let c = subject_of(world.seed, site, id);
    let mut r = Rng::from_parts(world.seed, &[TAG, 4, u64::from(site), u64::from(id)]);
    let mut t = Text::default();
    let title = heading(world.seed, site, id);
    t.s("<h1>");
    t.name(c);
    t.s(&title[ENTITIES[c].1.len()..]);
    t.s("</h1>");
    // 1: the company, by name and by alias near its context words.
    let (a, b) = context(&mut r, c);
    t.s("<p>");
    t.name(c);
    let _ = write!(t.html, " is known for its {a} and {b} work, {}. ", filler(&mut r, 4));
    if ENTITIES[c].2.is_empty() {
        t.name(c);
    } else {
        t.alias(c);
    }
    let (a, b) = context(&mut r, c);
    let _ = write!(t.html, " reported more {a} this {}, and its {b} teams {}.</p>", generic(&mut r), generic(&mut r));
    // 2: its facts.
    t.s("<p>");
    let mut facts: Vec<usize> = (0..FACTS.len()).filter(|&f| FACTS[f].0 == c || FACTS[f].2 == c).collect();
    for i in (1..facts.len()).rev() {
        facts.swap(i, r.index(i + 1));
    }
    for f in facts.iter().take(3) {
        let (s, p, o) = FACTS[*f];
        fact(&mut t, &mut r, s, p, o);
        t.s(" ");
    }
    // A person named in full above, then by surname.
    if let Some(&(person, _, _)) = FACTS.iter().find(|x| x.2 == c && x.1 == "ceo_of") {
        if t.mentions.iter().any(|m| m.0 == person) {
            t.alias(person);
            let _ = write!(t.html, " {} the {} plans.", r.pick(&["praised", "explained", "defended"]), generic(&mut r));
        }
    }
    t.s("</p><p>");
    // 3: two entities side by side, no relation; a city told by its context.
    let other = (c + 1 + r.index(COMPANIES - 1)) % COMPANIES;
    t.s("Analysts compared ");
    t.name(c);
    t.s(" with ");
    t.name(other);
    let _ = write!(t.html, " at the {} {}. ", generic(&mut r), generic(&mut r));
    if r.chance(50) {
        t.s("A French delegation visited ");
        t.form(13, "Paris".into());
        t.s(" near the Seine, ");
    } else {
        t.s("A cattle ranch near ");
        t.form(14, "Paris".into());
        t.s(" on the Texas prairie, ");
    }
    let _ = write!(t.html, "{}.</p><p>", filler(&mut r, 5));
    // 4: words that hold a name without being one; spellings.
    let _ = write!(
        t.html,
        "Parisian {} and the Orionids meteor shower, {} with mercury levels in the {} {}. ",
        generic(&mut r),
        generic(&mut r),
        generic(&mut r),
        generic(&mut r)
    );
    match r.below(3) {
        0 => {
            t.s("Students of ");
            t.form(4, "ÉCOLE NUMÉRIQUE".into());
            let _ = write!(t.html, " earned diplomas in coding courses, {}.", filler(&mut r, 3));
        }
        1 => {
            t.s("Road crews of ");
            t.form(3, "NORDLICHT STRASSENBAU".into());
            let _ = write!(t.html, " resurfaced the motorway with asphalt, {}.", filler(&mut r, 3));
        }
        _ => {
            t.s("Visitors from ");
            t.form(16, "Krakow".into());
            let _ = write!(t.html, " in Poland crossed the Vistula, {}.", filler(&mut r, 3));
        }
    }
    t.s("</p>");
    t
}

/// The page at `path` of `site`, when it is one of the section's.
#[must_use]
pub fn page(world: &World, articles: u32, site: u32, path: &str) -> Option<KbPage> {
    let origin = world.origin(HostId::Site(site));
    let rest = path.strip_prefix("/kb/")?;
    let mut links: Vec<(String, String)> = Vec::new();
    let (title, body, subject) = if rest.is_empty() {
        let mut r = Rng::from_parts(world.seed, &[TAG, 3, u64::from(site)]);
        for _ in 0..12 {
            let id = r.below_u32(articles);
            links.push((article_url(world, site, id), heading(world.seed, site, id)));
        }
        ("Companies".to_string(), Text::default(), None)
    } else {
        let id = rest.strip_prefix("a/")?.parse::<u32>().ok().filter(|&id| id < articles)?;
        let c = subject_of(world.seed, site, id);
        let mut r = Rng::from_parts(world.seed, &[TAG, 5, u64::from(site), u64::from(id)]);
        links.push((format!("{origin}/kb/"), "Companies".into()));
        for k in 0..5 {
            let s =
                if k == 4 && world.sites > 1 { (site + 1 + r.below_u32(world.sites - 1)) % world.sites } else { site };
            let want = if r.chance(75) { c } else { r.index(COMPANIES) };
            let start = r.below_u32(articles);
            let other = (0..articles)
                .map(|k| (start + k) % articles)
                .find(|&o| subject_of(world.seed, s, o) == want && (s, o) != (site, id))
                .unwrap_or(start);
            links.push((article_url(world, s, other), heading(world.seed, s, other)));
        }
        for _ in 0..3 {
            let (s, other) = (r.below_u32(world.sites), r.below_u32(articles));
            links.push((article_url(world, s, other), heading(world.seed, s, other)));
        }
        (heading(world.seed, site, id), article(world, site, id), Some(c))
    };
    let mut html = format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>");
    if subject.is_some() {
        let _ = write!(html, "<article>{}</article><aside><h2>Related</h2><ul>", body.html);
    } else {
        let _ = write!(html, "<h1>{title}</h1><ul>");
    }
    for (href, anchor) in &links {
        let _ = write!(html, "<li><a href=\"{href}\">{anchor}</a></li>");
    }
    html.push_str(if subject.is_some() { "</ul></aside></body></html>" } else { "</ul></body></html>" });
    Some(KbPage {
        html,
        links: links.into_iter().map(|(h, _)| h).collect(),
        subject,
        mentions: body.mentions,
        relations: body.relations,
    })
}

/// What a crawl of the section from every site's `/kb/` reaches within
/// `depth` hops, and each article's truth.
#[derive(Clone, Debug, Default)]
pub struct KbTruth {
    /// Every reachable page and its depth (the seeds are depth 0).
    pub reachable: BTreeMap<String, u32>,
    /// Every reachable article.
    pub articles: BTreeMap<String, KbPage>,
}

/// The truth of the section (breadth first over [`page`]'s links).
#[must_use]
pub fn truth(world: &World, articles: u32, depth: u32) -> KbTruth {
    let mut out = KbTruth::default();
    let mut queue = VecDeque::new();
    for s in 0..world.sites {
        let url = format!("{}/kb/", world.origin(HostId::Site(s)));
        out.reachable.insert(url.clone(), 0);
        queue.push_back((url, 0));
    }
    while let Some((url, d)) = queue.pop_front() {
        let Some(p) = page_of_url(world, articles, &url) else { continue };
        let links = p.links.clone();
        if p.subject.is_some() {
            out.articles.insert(url.clone(), p);
        }
        if d == depth {
            continue;
        }
        for link in links {
            if !out.reachable.contains_key(&link) {
                out.reachable.insert(link.clone(), d + 1);
                queue.push_back((link, d + 1));
            }
        }
    }
    out
}

/// The section's page at `url`, when it is one.
#[must_use]
pub fn page_of_url(world: &World, articles: u32, url: &str) -> Option<KbPage> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_at(rest.find('/')?);
    let HostId::Site(site) = world.parse_host(host)? else { return None };
    page(world, articles, site, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> World {
        World::new(7, 3, 10, false, 8)
    }

    #[test]
    fn articles_are_the_same_for_a_seed_and_their_truth_is_in_the_text() {
        let w = world();
        let a = page(&w, 30, 1, "/kb/a/3").expect("an article");
        assert_eq!(Some(a.clone()), page(&w, 30, 1, "/kb/a/3"));
        let mut rest = a.html.as_str();
        for (e, form) in &a.mentions {
            let at = rest
                .find(form.as_str())
                .unwrap_or_else(|| panic!("{form} ({}) in order in {}", ENTITIES[*e].0, a.html));
            rest = &rest[at + form.len()..];
        }
        assert!(a.mentions.iter().any(|(e, _)| Some(*e) == a.subject));
        assert!(!a.relations.is_empty());
        for link in &a.links {
            assert!(page_of_url(&w, 30, link).is_some(), "{link} is served");
        }
        assert!(page(&w, 30, 1, "/kb/a/30").is_none());
    }

    #[test]
    fn the_csv_has_every_entity_and_the_truth_reaches_most_articles() {
        let csv = kb_csv();
        assert_eq!(csv.lines().count(), ENTITIES.len() + 1);
        assert!(csv.contains("paris-texas,\"Paris, Texas\",Paris,city,0.2,"));
        let t = truth(&world(), 30, 3);
        assert!(t.articles.len() > 50, "{} articles", t.articles.len());
    }
}
