use std::collections::HashMap;

use super::*;
use crate::evidence::Outcome;

const COMMIT: &str = "http://git.test/repo/commit/?id=ab12";

fn via(urls: &[&str]) -> Vec<String> {
    let mut v = Vec::new();
    for u in urls {
        add_via(&mut v, &link_template(u));
    }
    v
}

#[test]
fn link_templates_keep_kinds_of_view_and_fold_ids() {
    assert_eq!(link_template("http://git.test/repo/tree/src/lib.rs?id=ab12"), "git.test/repo/tree/src/lib.rs?id");
    assert_eq!(link_template("http://git.test/repo/tree/src/a_b.rs?id=ab12"), "git.test/repo/tree/src/*?id");
    assert_eq!(link_template("http://w.test/doku.php?id=start&do=diff&rev=17"), "w.test/doku.php?do=diff&id=start&rev");
    assert_eq!(link_template("http://w.test/list/?s=name&ofs=50"), "w.test/list/?ofs&s=name");
    assert_eq!(link_template("http://w.test/a/b#frag"), "w.test/a/b");
    assert_eq!(coarse_of("git.test/repo/tree/src/lib.rs?id"), "git.test/repo/tree/…?id");
    assert_eq!(coarse_of("git.test/repo/commit/?id"), "git.test/repo/commit/?id");
    assert_eq!(coarse_of("git.test/repo/tree"), "git.test/repo/tree");
    assert_eq!(coarse_of("w.test"), "w.test");
    assert_eq!(coarse_of("w.test/doku.php?do=diff&id=start&rev"), "w.test/doku.php?do&id&rev");
}

#[test]
fn the_via_set_keeps_the_smallest_templates_in_any_order() {
    let mut a = Vec::new();
    let mut b = Vec::new();
    let names = ["e", "a", "d", "b", "c", "a"];
    for n in names {
        add_via(&mut a, n);
    }
    for n in names.iter().rev() {
        add_via(&mut b, n);
    }
    assert_eq!(a, ["a", "b", "c", "d"]);
    assert_eq!(a, b);
}

#[test]
fn a_class_of_copies_is_skipped_and_a_class_of_new_texts_is_followed() {
    let mut y = Yields::default();
    let tree = via(&["http://git.test/repo/tree/src/?id=c0"]);
    let commit = via(&[COMMIT]);
    // Files reached from directory listings: copies, bar one.
    for i in 0..20 {
        let outcome = if i == 0 { Outcome::New } else { Outcome::Copy };
        y.record(&format!("http://git.test/repo/tree/src/lib.rs?id=c{i}"), &tree, outcome);
    }
    // The same files reached from the commits that changed them: new.
    for i in 0..10 {
        y.record(&format!("http://git.test/repo/tree/src/lib.rs?id=d{i}"), &commit, Outcome::New);
    }
    // At the crawl's depth only the text counts.
    let skipped: Vec<Verdict> =
        (100..140).map(|i| y.decide(&format!("http://git.test/repo/tree/src/lib.rs?id=e{i}"), &tree, true)).collect();
    let probes = skipped.iter().filter(|v| **v == Verdict::Probe).count();
    assert!(skipped.iter().all(|v| matches!(v, Verdict::Probe | Verdict::Skip(_))), "{skipped:?}");
    assert!((1..=6).contains(&probes), "about one in 20 (its fetches) is a probe: {probes}");
    let Some(Verdict::Skip(evidence)) = skipped.iter().find(|v| matches!(v, Verdict::Skip(_))) else {
        panic!("{skipped:?}")
    };
    assert_eq!((evidence.fetched, evidence.new), (20, 1), "the skip names its evidence");
    assert_eq!(y.decide("http://git.test/repo/tree/src/lib.rs?id=f1", &commit, true), Verdict::Yields);
    // Reached both ways: followed.
    let both = via(&["http://git.test/repo/tree/src/?id=c0", COMMIT]);
    assert_eq!(y.decide("http://git.test/repo/tree/src/lib.rs?id=f1", &both, true), Verdict::Yields);
    // Another file of the same kind, never fetched: the coarse class decides.
    let other = y.decide("http://git.test/repo/tree/src/main.rs?id=f1", &tree, true);
    assert!(matches!(other, Verdict::Skip(_) | Verdict::Probe), "{other:?}");
    // Links from a kind of page never fetched from: a cold class.
    let log = via(&["http://git.test/repo/log/"]);
    assert_eq!(y.decide("http://git.test/repo/tree/src/lib.rs?id=f1", &log, true), Verdict::Cold);
    assert_eq!(y.decide("http://git.test/repo/tree/src/lib.rs?id=f1", &[], true), Verdict::Explore);
}

#[test]
fn a_template_whose_pages_lead_to_new_texts_is_followed_before_the_depth() {
    let mut y = Yields::default();
    let start = via(&["http://git.test/repo/"]);
    // Log pages: no text of their own (each a copy of the listing
    // chrome), but every commit found through them is new.
    for i in 0..10 {
        y.record(&format!("http://git.test/repo/log/?ofs={i}0"), &start, Outcome::Copy);
    }
    let logs = via(&["http://git.test/repo/log/?ofs=10"]);
    for i in 0..30 {
        y.record(&format!("http://git.test/repo/commit/?id={i}a"), &logs, Outcome::New);
    }
    let next = "http://git.test/repo/log/?ofs=200";
    // A view of a log page (its messages shown) leads where the log
    // does, so its own links' credit does not make it a hub.
    for i in 0..10 {
        y.record(&format!("http://git.test/repo/log/?ofs={i}0&showmsg=1"), &logs, Outcome::Copy);
    }
    let shown = via(&["http://git.test/repo/log/?ofs=10&showmsg=1"]);
    for i in 0..30 {
        y.record(&format!("http://git.test/repo/commit/?id={i}b"), &shown, Outcome::New);
    }
    let view =
        y.decide("http://git.test/repo/log/?ofs=20&showmsg=1", &via(&["http://git.test/repo/log/?ofs=20"]), false);
    assert!(matches!(view, Verdict::Skip(_) | Verdict::Probe), "judged as a view of copies: {view:?}");
    assert_eq!(y.decide(next, &start, false), Verdict::Hub, "followed for where it leads");
    assert!(!y.decide(next, &start, true).follows() || y.decide(next, &start, true) == Verdict::Probe);
    // A template never fetched as a page: explored for its links.
    assert_eq!(y.decide("http://git.test/repo/refs/", &start, false), Verdict::Explore);
}

#[test]
fn a_class_needs_evidence_before_it_is_judged() {
    let mut y = Yields::default();
    let tree = via(&["http://git.test/repo/tree/?id=c0"]);
    for i in 0..MIN_EVIDENCE - 1 {
        y.record(&format!("http://git.test/repo/plain/x?id=c{i}"), &tree, Outcome::Copy);
    }
    assert_eq!(y.decide("http://git.test/repo/plain/x?id=z", &tree, true), Verdict::Cold);
    y.record("http://git.test/repo/plain/x?id=last", &tree, Outcome::Copy);
    let v = y.decide("http://git.test/repo/plain/x?id=z", &tree, true);
    assert!(matches!(v, Verdict::Skip(_) | Verdict::Probe), "{v:?}");
    // Neutral outcomes (server errors, timeouts) are no evidence.
    let mut quiet = Yields::default();
    quiet.record("http://git.test/repo/", &[], Outcome::New);
    for i in 0..50 {
        quiet.record(&format!("http://git.test/repo/plain/x?id=c{i}"), &tree, Outcome::Neutral);
    }
    assert_eq!(quiet.decide("http://git.test/repo/plain/x?id=z", &tree, true), Verdict::Cold);
}

#[test]
fn cold_classes_wait_only_on_a_host_whose_pages_were_mostly_copies() {
    let mut y = Yields::default();
    let start = via(&["http://docs.test/"]);
    for i in 0..30 {
        y.record(&format!("http://docs.test/lib/m{i}.html"), &start, Outcome::New);
    }
    assert!(
        !y.defers_cold(&link_template("http://docs.test/api/x.html")),
        "every page new: cold classes are fetched at once"
    );
    for i in 0..30 {
        let outcome = if i % 4 == 0 { Outcome::New } else { Outcome::Copy };
        y.record(&format!("http://git.test/repo/tree/f{i}?id=1"), &start, outcome);
    }
    assert!(
        y.defers_cold(&link_template("http://git.test/repo/blame/x?id=2")),
        "a quarter new: cold classes wait for probes"
    );
    assert!(!y.defers_cold(&link_template("http://new.test/")), "a host never judged does not wait");
}

#[test]
fn a_hosts_errors_do_not_make_its_cold_classes_wait() {
    let mut y = Yields::default();
    let start = via(&["http://docs.test/"]);
    // Every page the host served was new; most of its links were broken.
    for i in 0..30 {
        y.record(&format!("http://docs.test/lib/m{i}.html"), &start, Outcome::New);
    }
    for i in 0..60 {
        y.record(&format!("http://docs.test/include/h{i}.hpp"), &start, Outcome::Error);
    }
    assert!(!y.defers_cold(&link_template("http://docs.test/api/x.html")), "its pages were all new");
}

#[test]
fn the_kind_of_a_file_is_its_sites_section_and_its_extension() {
    assert_eq!(resource_kind("http://b.test:8080/boost/units/si.hpp").as_deref(), Some("b.test:8080/boost .hpp"));
    assert_eq!(resource_kind("http://b.test/a/Guide.PDF?x=1#top").as_deref(), Some("b.test/a .pdf"));
    assert_eq!(resource_kind("http://b.test/2024-05/x/report.pdf").as_deref(), Some("b.test/* .pdf"));
    assert_eq!(resource_kind("http://b.test/README.md").as_deref(), Some("b.test .md"), "a file at the root");
    assert_eq!(resource_kind("http://b.test/a/tree/"), None, "a folder");
    assert_eq!(resource_kind("http://b.test/a/v1.2-beta"), None, "not an extension");
    assert_eq!(resource_kind("http://b.test/.profile"), None, "no name before the dot");
    assert_eq!(resource_kind("http://b.test"), None);
}

#[test]
fn a_kind_of_file_its_host_mostly_answers_with_errors_is_skipped_until_its_class_yields() {
    let mut y = Yields::default();
    let reference = via(&["http://boost.test/interprocess/reference.html"]);
    // A site's links to its header files, broken in one section...
    for i in 0..12 {
        y.record(&format!("http://boost.test/boost/interprocess/h{i}_x.hpp"), &reference, Outcome::Error);
    }
    // ...are reached from another section's pages: a class never fetched,
    // but a kind of file the host answers with errors. Skipped as errors,
    // bar its probes; at the depth and before it.
    let units = via(&["http://boost.test/units/reference.html"]);
    for last in [true, false] {
        let verdicts: Vec<Verdict> =
            (0..64).map(|i| y.decide(&format!("http://boost.test/boost/units/u{i}_y.hpp"), &units, last)).collect();
        let probes = verdicts.iter().filter(|v| **v == Verdict::Probe).count();
        assert!((1..=8).contains(&probes), "{verdicts:?}");
        let Some(Verdict::Skip(class)) = verdicts.iter().find(|v| matches!(v, Verdict::Skip(_))) else {
            panic!("none skipped: {verdicts:?}")
        };
        assert_eq!((class.fetched, class.errors, class.target.as_str()), (12, 12, "boost.test/boost .hpp"));
    }
    // Pages of the host's other kinds, and files of that kind in another
    // section, are not judged by it.
    assert_eq!(y.decide("http://boost.test/boost/units/index.html", &units, true), Verdict::Cold);
    assert_eq!(y.decide("http://boost.test/libs/units/u_y.hpp", &units, true), Verdict::Cold);
    // A class of that kind whose own fetches brought texts is followed.
    let listing = via(&["http://boost.test/headers.html"]);
    for i in 0..6 {
        y.record(&format!("http://boost.test/boost/asio/a{i}_z.hpp"), &listing, Outcome::New);
    }
    assert_eq!(y.decide("http://boost.test/boost/asio/b_z.hpp", &listing, true), Verdict::Yields);
}

#[test]
fn a_view_is_the_path_of_the_page_it_sits_on_with_new_query_keys() {
    let t = |u: &str| link_template(u);
    let article = t("http://s.test/news/12-council");
    assert_eq!(view_kind(&article, &t("http://s.test/news/12-council?print=1")).as_deref(), Some("s.test?print"));
    let reply = t("http://s.test/news/12-council/?replytocom=121#respond");
    assert_eq!(view_kind(&article, &reply).as_deref(), Some("s.test?replytocom"));
    let wiki = t("http://w.test/doku.php?id=start");
    let revisions = t("http://w.test/doku.php?id=start&do=revisions");
    assert_eq!(view_kind(&wiki, &revisions).as_deref(), Some("w.test?do=revisions"));
    assert_eq!(view_kind(&article, &article), None, "the page itself");
    assert_eq!(
        view_kind(&t("http://s.test/list?page=2"), &t("http://s.test/list?page=3")),
        None,
        "a listing's next page"
    );
    assert_eq!(view_kind(&t("http://s.test/about"), &t("http://s.test/contact?print=1")), None, "another path");
    let (tree, blame) = (t("http://git.test/repo/tree/a.rs?id=1"), t("http://git.test/repo/blame/a.rs?id=1"));
    assert_eq!(view_kind(&tree, &blame), None);
}

#[test]
fn views_of_one_kind_are_judged_together_on_their_host() {
    let mut y = Yields::default();
    // Print views of articles in two sections: copies.
    for (section, n) in [("news", 0), ("arts", 1), ("news", 2), ("arts", 3)] {
        let page = format!("http://s.test/{section}/{n}-a");
        y.record(&page, &[], Outcome::New);
        y.record(&format!("{page}?print=1"), &via(&[&page]), Outcome::Copy);
    }
    // A third section's print view: no class of its own yet, judged by
    // the host's print views.
    let page = "http://s.test/travel/9-b";
    let verdicts: Vec<Verdict> = (0..40).map(|i| y.decide(&format!("{page}?print={i}"), &via(&[page]), true)).collect();
    assert!(verdicts.iter().all(|v| matches!(v, Verdict::Skip(_) | Verdict::Probe)), "{verdicts:?}");
    // Another host's views are its own.
    let other = "http://t.test/travel/9-b";
    assert_eq!(y.decide(&format!("{other}?print=1"), &via(&[other]), true), Verdict::Cold);
}

#[test]
fn pages_recorded_apart_and_merged_count_as_recorded_together() {
    let pages: Vec<(String, Vec<String>, Outcome)> = (0..60)
        .map(|i| {
            let via = if i % 3 == 0 { vec![] } else { vec![format!("git.test/repo/{}", ["tree", "log"][i % 2])] };
            let outcome = [Outcome::New, Outcome::Copy, Outcome::Error, Outcome::Neutral][i % 4];
            (format!("http://git.test/repo/{}/f{}?id={i}", ["plain", "blob", "tree"][i % 3], i % 7), via, outcome)
        })
        .collect();
    let mut together = Yields::default();
    for (url, via, outcome) in &pages {
        together.record(url, via, *outcome);
    }
    let mut apart = Yields::default();
    for chunk in pages.chunks(13) {
        let mut part = Yields::default();
        for (url, via, outcome) in chunk {
            part.record(url, via, *outcome);
        }
        apart.merge(part);
    }
    assert!(together.counts().len() >= 10, "{:?}", together.counts());
    assert_eq!(apart.counts(), together.counts());
}

#[test]
fn pages_counted_per_class_count_as_pages_counted_one_by_one() {
    // Pages sharing templates, kinds of file and sources, with every outcome.
    let pages: Vec<(String, Vec<String>, Outcome)> = (0..90)
        .map(|i| {
            let via = match i % 4 {
                0 => vec![],
                1 => vec!["git.test/repo/tree".to_string()],
                _ => vec!["git.test/repo/commit/?id".to_string(), "git.test/repo/log/".to_string()],
            };
            let outcome = [Outcome::New, Outcome::Copy, Outcome::Error, Outcome::New, Outcome::Neutral][i % 5];
            let file = ["f.rs", "g.rs", "README.md"][i % 3];
            (format!("http://git.test/repo/{}/{file}?id={}", ["plain", "tree"][i % 2], i % 11), via, outcome)
        })
        .collect();
    let mut one_by_one = Yields::default();
    for (url, via, outcome) in &pages {
        one_by_one.record(url, via, *outcome);
    }
    let mut classes: HashMap<u64, (PageClass, Tally)> = HashMap::new();
    for (url, via, outcome) in &pages {
        let class = PageClass::of(url, None, via);
        classes.entry(class.key()).or_insert((class, Tally::default())).1.add(Tally::of(*outcome));
    }
    assert!(classes.len() < pages.len() / 4, "pages share classes: {} classes", classes.len());
    let mut per_class = Yields::default();
    for (class, tally) in classes.values() {
        per_class.record_class(class, *tally);
    }
    assert!(one_by_one.counts().len() >= 20, "{:?}", one_by_one.counts());
    assert_eq!(per_class.counts(), one_by_one.counts());
}

#[test]
fn a_link_to_another_view_of_the_linking_pages_own_thing_has_a_template_of_its_own() {
    let from = |url, referrer| link_template_from(url, Some(referrer));
    // A check-in's manifest, from the check-in; a file it changed.
    assert_eq!(
        from("http://f.test/artifact/1aaebeae82", "http://f.test/info/1aaebeae82"),
        ("f.test/artifact/@".to_string(), Some("f.test/artifact/*".to_string()))
    );
    assert_eq!(
        from("http://f.test/artifact/4c2ca5cfd4", "http://f.test/info/1aaebeae82"),
        ("f.test/artifact/*".to_string(), None)
    );
    // Query values too, each key on its own; short words stay as they are.
    assert_eq!(
        from("http://g.test/repo/diff/x.rs?id=c0ffee1&id2=beef2", "http://g.test/repo/commit/?id=c0ffee1"),
        ("g.test/repo/diff/x.rs?id2&id=@".to_string(), Some("g.test/repo/diff/x.rs?id&id2".to_string()))
    );
    assert_eq!(
        from("http://w.test/doku.php?do=diff&id=start", "http://w.test/doku.php?do=show&id=start"),
        ("w.test/doku.php?do=diff&id=start".to_string(), None)
    );
    assert_eq!(link_template_from("http://f.test/artifact/1aaebeae82", None).0, "f.test/artifact/*");
}

#[test]
fn links_to_a_pages_own_thing_are_judged_apart_from_links_to_the_things_it_lists() {
    // From check-ins, the links to their manifests bring new text; the
    // links to the files they changed, whose pages were fetched under
    // another template already, bring copies.
    let info = via(&["http://f.test/info/c0"]);
    let mut y = Yields::default();
    y.record("http://f.test/", &[], Outcome::New);
    for i in 0..40 {
        let check_in = format!("http://f.test/info/{i:02}c");
        let manifest = PageClass::of(&format!("http://f.test/artifact/{i:02}c"), Some(&check_in), &info);
        y.record_class(&manifest, Tally::of(Outcome::New));
        for f in 0..3 {
            let file = PageClass::of(&format!("http://f.test/artifact/{i:02}f{f}"), Some(&check_in), &info);
            y.record_class(&file, Tally::of(Outcome::Copy));
        }
    }
    let judge = |url: &str| y.judge(&PageClass::of(url, Some("http://f.test/info/99c"), &info), true).verdict(url);
    assert_eq!(judge("http://f.test/artifact/99c"), Verdict::Yields, "the check-in's own manifest");
    let skipped =
        (0..64).filter(|f| matches!(judge(&format!("http://f.test/artifact/99f{f}")), Verdict::Skip(_))).count();
    assert!(skipped > 56, "the files it lists are skipped but for probes: {skipped} of 64");
}

#[test]
fn a_classs_last_layer_decides_when_it_has_enough_pages() {
    let commit = via(&["http://f.test/info/c0"]);
    let record = |y: &mut Yields, from: u32, n: u32, outcome| {
        for i in from..from + n {
            y.record(&format!("http://f.test/artifact/{i}f"), &commit, outcome);
        }
    };
    // The first layer's links brought the files' first versions; the
    // second's brought copies: counted together the class still yields.
    let mut first = Yields::default();
    record(&mut first, 0, 40, Outcome::New);
    let mut y = Yields::from_counts(first.counts());
    let mut second = Yields::default();
    record(&mut second, 40, RECENT_EVIDENCE as u32 + 4, Outcome::Copy);
    y.add_layer(second);
    let url = "http://f.test/artifact/999f";
    assert!(
        matches!(y.decide(url, &commit, true), Verdict::Skip(_) | Verdict::Probe),
        "{:?}",
        y.decide(url, &commit, true)
    );
    // Too few pages in the last layer: all the layers decide.
    let mut y = Yields::from_counts(first.counts());
    let mut few = Yields::default();
    record(&mut few, 40, RECENT_EVIDENCE as u32 - 1, Outcome::Copy);
    y.add_layer(few);
    assert_eq!(y.decide(url, &commit, true), Verdict::Yields);
}

#[test]
fn counts_round_trip() {
    let mut y = Yields::default();
    y.record("http://s.test/a/b?x=1", &["s.test/a".to_string()], Outcome::New);
    y.record("http://s.test/a/c", &[], Outcome::Error);
    let rows = y.counts();
    // Per page two classes (fine, coarse) and its template's two hub
    // counts; the new page's credit to its source's two hub counts; one
    // host.
    assert_eq!(rows.len(), 4 + 4 + 2 + 1);
    assert_eq!(counts_rows(&counts_batch(&y.sorted()).expect("batch")).expect("decode"), rows);
    assert_eq!(Yields::from_counts(rows.clone()).counts(), rows);
}

#[test]
fn the_more_a_class_of_copies_was_judged_the_fewer_probes_it_gets() {
    let class = |fetched| ClassCount { fetched, ..ClassCount::default() };
    assert_eq!(probe_every(&class(4)), PROBE_EVERY, "little evidence: the base rate");
    assert_eq!(probe_every(&class(16)), PROBE_EVERY, "below {PROBE_EVERY} fetches: the base rate");
    assert_eq!(probe_every(&class(32)), 32);
    assert_eq!(probe_every(&class(40)), 40, "one in as many as its fetches");
    assert_eq!(probe_every(&class(5_000)), PROBE_EVERY_MOST, "never fewer than one in {PROBE_EVERY_MOST}");
    // Measured on decisions: a class of 400 judged copies gets half the
    // probes a class of 16 does, over the same 4,000 URLs.
    let probes = |fetched: u64| {
        let mut y = Yields::default();
        let tree = via(&["http://git.test/repo/tree/src/?id=c0"]);
        for i in 0..fetched {
            y.record(&format!("http://git.test/repo/tree/src/lib.rs?id=c{i}"), &tree, Outcome::Copy);
        }
        (0..4_000)
            .filter(|i| {
                y.decide(&format!("http://git.test/repo/tree/src/lib.rs?id=p{i}"), &tree, true) == Verdict::Probe
            })
            .count()
    };
    let (few, many) = (probes(16), probes(400));
    assert!((90..=170).contains(&few), "about 4,000 / 32: {few}");
    assert!((40..=90).contains(&many), "about 4,000 / 64: {many}");
}

/// The counts of a crawl's layers, one after the other, as the optimise
/// step stores them after each ([`Yields::counts`]).
fn layers(pages: &[&[(&str, &[String], Outcome)]]) -> Vec<Vec<ClassCount>> {
    let mut y = Yields::default();
    pages
        .iter()
        .map(|layer| {
            let mut now = Yields::default();
            for (url, via, outcome) in *layer {
                now.record(url, via, *outcome);
            }
            y.add_layer(now);
            y.counts()
        })
        .collect()
}

#[test]
fn last_nights_evidence_makes_a_class_wait_for_its_probes_but_never_skips_it() {
    let start = via(&["http://f.test/timeline"]);
    let artifact = via(&["http://f.test/artifact/a0"]);
    let raw: Vec<String> = (0..20).map(|i| format!("http://f.test/raw/{i}f?at=x")).collect();
    let layer1: Vec<(&str, &[String], Outcome)> = (0..10)
        .map(|i| ("http://f.test/artifact/a0", &start[..], if i == 0 { Outcome::New } else { Outcome::Copy }))
        .collect();
    // Last night the downloads linked from artifact pages were all copies
    // of the artifact pages, and led nowhere.
    let layer2: Vec<(&str, &[String], Outcome)> =
        raw.iter().map(|u| (u.as_str(), &artifact[..], Outcome::Copy)).collect();
    let last = layers(&[&layer1, &layer2]);
    let url = "http://f.test/raw/99f?at=x";
    // Tonight, after the first layer, nothing is known of them: without
    // last night's counts they are explored (before the depth) or fetched
    // as a cold class (at it).
    let mut tonight = Yields::from_counts(last[0].clone());
    assert_eq!(tonight.decide(url, &artifact, false), Verdict::Explore);
    assert_eq!(tonight.decide(url, &artifact, true), Verdict::Cold);
    // With them: what last night's second layer brought (its counts less
    // those of its first), and where its pages' links led.
    tonight.set_prior(last[0].clone(), last[1].clone(), last[1].clone());
    let class = PageClass::of(url, None, &artifact);
    for at_depth in [false, true] {
        let judged = tonight.judge(&class, at_depth);
        // Its pages led nowhere and were copies: probed tonight, never
        // skipped on last night's evidence alone.
        assert_eq!(judged, Judged::Decided(Verdict::Cold), "at the depth: {at_depth}");
    }
    // Tonight's own evidence decides once it has enough: its probes were
    // new texts (the downloads changed), so the class is followed.
    let mut probes = Yields::default();
    for u in &raw[..MIN_EVIDENCE as usize] {
        probes.record(u, &artifact, Outcome::New);
    }
    tonight.add_layer(probes);
    assert_eq!(tonight.decide(url, &artifact, true), Verdict::Yields);
}

#[test]
fn last_nights_hubs_are_followed_before_tonights_evidence_of_them_is_complete() {
    let start = via(&["http://git.test/repo/"]);
    let logs = via(&["http://git.test/repo/log/?ofs=10"]);
    let log_pages: Vec<String> = (0..10).map(|i| format!("http://git.test/repo/log/?ofs={i}0")).collect();
    let commits: Vec<String> = (0..30).map(|i| format!("http://git.test/repo/commit/?id={i}a")).collect();
    let layer1: Vec<(&str, &[String], Outcome)> =
        log_pages.iter().map(|u| (u.as_str(), &start[..], Outcome::Copy)).collect();
    let layer2: Vec<(&str, &[String], Outcome)> =
        commits.iter().map(|u| (u.as_str(), &logs[..], Outcome::New)).collect();
    let last = layers(&[&layer1, &layer2]);
    // Tonight the log pages were fetched, their commits not yet: as a hub
    // the template has brought nothing so far, and its own pages were
    // copies.
    let mut tonight = Yields::from_counts(last[0].clone());
    let next = "http://git.test/repo/log/?ofs=200";
    assert!(!matches!(tonight.decide(next, &start, false), Verdict::Hub | Verdict::Explore));
    // Last night they led to a new commit each, three times over.
    tonight.set_prior(last[0].clone(), last[1].clone(), last[1].clone());
    assert_eq!(tonight.decide(next, &start, false), Verdict::Hub);
}

#[test]
fn tonights_errors_of_a_kind_of_file_outweigh_last_nights_evidence() {
    let reference = via(&["http://boost.test/interprocess/reference.html"]);
    let units = via(&["http://boost.test/units/reference.html"]);
    let broken: Vec<String> = (0..12).map(|i| format!("http://boost.test/boost/interprocess/h{i}_x.hpp")).collect();
    let headers: Vec<String> = (0..8).map(|i| format!("http://boost.test/boost/units/u{i}_y.hpp")).collect();
    // Last night: the first layer met the broken headers; the second
    // fetched one section's headers, copies of each other.
    let layer1: Vec<(&str, &[String], Outcome)> =
        broken.iter().map(|u| (u.as_str(), &reference[..], Outcome::Error)).collect();
    let layer2: Vec<(&str, &[String], Outcome)> =
        headers.iter().map(|u| (u.as_str(), &units[..], Outcome::Copy)).collect();
    let last = layers(&[&layer1, &layer2]);
    let mut tonight = Yields::from_counts(last[0].clone());
    tonight.set_prior(last[0].clone(), last[1].clone(), last[1].clone());
    // Tonight's errors of the kind judge the section's headers, as without
    // last night's counts: skipped, not made to wait.
    let judged = tonight.judge(&PageClass::of("http://boost.test/boost/units/u99_y.hpp", None, &units), true);
    assert!(matches!(judged, Judged::Low(c) if !c.previous && c.errors == 12), "{judged:?}");
}
