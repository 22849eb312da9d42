use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::denoise::evidence::Outcome;
use crate::denoise::yields::add_via;
use crate::store::schema::InRow;

fn candidate(url: &str, depth: i32, via: &[&str], followed: bool) -> Candidate {
    let mut v = Vec::new();
    for s in via {
        add_via(&mut v, s);
    }
    Candidate {
        row: InRow { url: url.to_string(), depth, ..InRow::default() },
        domain: "git.test".into(),
        followed,
        dom: false,
        content: true,
        via: v,
        sources: 0,
    }
}

/// The candidates of a layer are decided per class (its link template,
/// kind of file, sources and depth): each must get the verdict it gets
/// decided on its own.
#[test]
fn candidates_decided_per_class_get_their_own_verdicts() {
    let (tree, commit, log) = ("git.test/repo/tree/src/?id", "git.test/repo/commit/?id", "git.test/repo/log/");
    let mut y = Yields::default();
    for i in 0..40 {
        // From listings, copies; from commits, new texts; headers, errors.
        let copy = if i == 0 { Outcome::New } else { Outcome::Copy };
        y.record(&format!("http://git.test/repo/tree/src/lib.rs?id=c{i}"), &[tree.to_string()], copy);
        y.record(&format!("http://git.test/repo/tree/src/lib.rs?id=d{i}"), &[commit.to_string()], Outcome::New);
        y.record(&format!("http://git.test/inc/h{i}.hpp"), &[log.to_string()], Outcome::Error);
    }
    let mut cands = Vec::new();
    for i in 0..300 {
        let url = match i % 5 {
            0 | 1 => format!("http://git.test/repo/tree/src/lib.rs?id=e{i}"),
            2 => format!("http://git.test/inc/x{i}.hpp"),
            3 => format!("http://git.test/repo/blame/src/lib.rs?id=e{i}"),
            _ => format!("http://git.test/repo/tree/src/lib.rs?id=e{i}&print=1"),
        };
        let via: &[&str] = match i % 3 {
            0 => &[tree],
            1 => &[commit, tree],
            _ => &[log],
        };
        cands.push(candidate(&url, 2 + (i % 2), via, i % 7 != 0));
    }
    cands.sort_unstable_by(|a, b| a.row.url.cmp(&b.row.url));
    let depth = 3;
    let decided = decide(&y, &cands, depth, &HashSet::new());
    let mut kinds = HashSet::new();
    for (c, v) in cands.iter().zip(&decided.verdicts) {
        let own = c.followed.then(|| y.decide(&c.row.url, &c.via, c.row.depth >= depth));
        assert_eq!(v, &own, "{} via {:?}", c.row.url, c.via);
        kinds.extend(v.as_ref().map(std::mem::discriminant));
    }
    assert!(kinds.len() >= 5, "the candidates get most kinds of verdict: {:?}", decided.verdicts);
    assert!(decided.deferred.iter().all(|&i| decided.verdicts[i] == Some(Verdict::Cold)));
}

#[tokio::test]
async fn followed_urls_keep_their_referrers_and_class_keys_and_an_older_via_file_reads_without() {
    let store = Store::open("memory://").expect("store");
    let (a, b) = ("http://f.test/artifact/1a", "http://f.test/doc/x.md");
    let a_via = vec!["f.test/info/*".to_string()];
    let a_key = PageClass::of(a, Some("http://f.test/info/1a"), &a_via).key();
    let rows = vec![
        Via {
            fingerprint: urlnorm::fingerprint_str(a),
            via: "f.test/info/*".into(),
            referrer: Some("http://f.test/info/1a".into()),
            class: a_key,
        },
        // A key not made from its row: the stored one is the one read.
        Via {
            fingerprint: urlnorm::fingerprint_str(b),
            via: "f.test/\nf.test/info/*".into(),
            referrer: None,
            class: 7,
        },
    ];
    write_via(&store, 3, 0, &rows).await.expect("write");
    let read = read_via(&store, 3, 0).await.expect("read");
    assert_eq!(read.get(a), (a_via.clone(), Some("http://f.test/info/1a")));
    assert_eq!(read.get(b), (vec!["f.test/".to_string(), "f.test/info/*".to_string()], None));
    assert_eq!((read.class_key(a), read.class_key(b)), (a_key, 7));
    // A URL no link brought (a seed) is counted by its own class.
    assert_eq!(read.get("http://f.test/"), (Vec::new(), None));
    assert_eq!(read.class_key("http://f.test/"), PageClass::of("http://f.test/", None, &[]).key());
    // A via file written before referrers and class keys were kept: its
    // classes are made again, as linked by no referrer.
    let old = Arc::new(Schema::new(vec![
        Field::new("fingerprint", DataType::Int64, false),
        Field::new("via", DataType::Utf8, false),
    ]));
    let fp = i64::from_ne_bytes(urlnorm::fingerprint_str(a).to_ne_bytes());
    let batch = RecordBatch::try_new(
        Arc::clone(&old),
        vec![Arc::new(Int64Array::from(vec![fp])), Arc::new(StringArray::from(vec!["f.test/info/*"]))],
    )
    .expect("batch");
    let path = layout::via(4, 0);
    let mut w = ShardWriter::create(&store, &path, old, 1 << 20).expect("writer");
    w.write(&batch).await.expect("write");
    w.finish().await.expect("finish");
    let read = read_via(&store, 4, 0).await.expect("read");
    assert_eq!(read.get(a), (a_via.clone(), None));
    assert_eq!(read.class_key(a), PageClass::of(a, None, &a_via).key());
}

/// Counting a layer's pages by the class keys stored when they were
/// followed gives the counts of making each page's class again: the same
/// file of counts, whichever way.
#[tokio::test]
async fn pages_counted_by_their_stored_class_keys_count_as_by_their_own_classes() {
    let (with_keys, without) = (Store::open("memory://").expect("store"), Store::open("memory://").expect("store"));
    let (commit, tree) = ("f.test/info/*".to_string(), "f.test/dir?ci&name".to_string());
    let mut samples = Vec::new();
    let mut via = Vec::new();
    for i in 0..300u64 {
        let (url, referrer, templates) = match i % 4 {
            0 => (
                format!("http://f.test/artifact/a{i}"),
                Some(format!("http://f.test/info/c{}", i / 8)),
                vec![commit.clone()],
            ),
            1 => (
                format!("http://f.test/artifact/a{i}"),
                Some(format!("http://f.test/dir?ci=c{i}&name=src")),
                vec![tree.clone()],
            ),
            2 => (
                format!("http://f.test/raw/c{}?at=x", i / 8),
                Some(format!("http://f.test/info/c{}", i / 8)),
                vec![commit.clone(), tree.clone()],
            ),
            _ => (format!("http://f.test/doc/c{i}/x.md"), None, Vec::new()),
        };
        // Texts that repeat, so that pages are new, copies and errors.
        let status = if i % 13 == 0 { 404 } else { 200 };
        samples.push(Sample { url: url.clone(), status, html: true, text_hash: Some(i % 17), ..Sample::default() });
        if !templates.is_empty() {
            let class = PageClass::of(&url, referrer.as_deref(), &templates).key();
            via.push(Via { fingerprint: urlnorm::fingerprint_str(&url), via: templates.join("\n"), referrer, class });
        }
    }
    for store in [&with_keys, &without] {
        let path = layout::samples(1, 0);
        let mut w = ShardWriter::create(store, &path, evidence::samples_schema(), 1 << 20).expect("writer");
        w.write(&evidence::samples_batch(&samples).expect("batch")).await.expect("write");
        w.finish().await.expect("finish");
    }
    write_via(&with_keys, 1, 0, &via).await.expect("write");
    // The same rows without their keys, as an older version wrote them.
    let old = Arc::new(Schema::new(vec![
        Field::new("fingerprint", DataType::Int64, false),
        Field::new("via", DataType::Utf8, false),
        Field::new("referrer", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&old),
        vec![
            Arc::new(via.iter().map(|v| Some(i64::from_ne_bytes(v.fingerprint.to_ne_bytes()))).collect::<Int64Array>()),
            Arc::new(via.iter().map(|v| Some(v.via.as_str())).collect::<StringArray>()),
            Arc::new(via.iter().map(|v| v.referrer.as_deref()).collect::<StringArray>()),
        ],
    )
    .expect("batch");
    let mut w = ShardWriter::create(&without, &layout::via(1, 0), old, 1 << 20).expect("writer");
    w.write(&batch).await.expect("write");
    w.finish().await.expect("finish");
    let a = count(with_keys, None, 1, 0).await.expect("count");
    let b = count(without, None, 1, 0).await.expect("count");
    a.written.await.expect("join").expect("written");
    let (a, b) = (a.yields.counts(), b.yields.counts());
    assert_eq!(a, b);
    // Every kind of outcome and several classes were counted.
    let fine: Vec<&ClassCount> = a.iter().filter(|c| c.level == 0).collect();
    assert!(fine.len() >= 3, "{fine:?}");
    assert!(fine.iter().any(|c| c.new > 0) && fine.iter().any(|c| c.errors > 0));
    assert!(fine.iter().any(|c| c.fetched > c.new + c.errors), "copies: {fine:?}");
}

/// A cold class's first probes and the rest: on a host of mostly new
/// pages they all go into the next layer, gated there by the probes'
/// pages; on a host of copies the rest wait a layer.
#[test]
fn a_cold_group_is_gated_in_its_layer_on_a_host_of_new_pages_and_deferred_on_a_host_of_copies() {
    let mut y = Yields::default();
    // What each host served so far: new pages on one, copies on the other.
    for i in 0..40 {
        y.record(&format!("http://git.test/repo/log/?p={i}"), &[String::new()], Outcome::New);
        y.record(&format!("http://copies.test/repo/log/?p={i}"), &[String::new()], Outcome::Copy);
    }
    let mut cands: Vec<Candidate> = Vec::new();
    for host in ["git.test", "copies.test"] {
        let listing = format!("{host}/repo/tree/");
        for i in 0..40 {
            cands.push(candidate(&format!("http://{host}/repo/plain/f{i}.txt"), 3, &[listing.as_str()], true));
        }
    }
    cands.sort_unstable_by(|a, b| a.row.url.cmp(&b.row.url));
    // At the crawl's depth: a class never fetched is cold.
    let decided = decide(&y, &cands, 3, &HashSet::new());
    let host = |i: usize| urlnorm::host_of(&cands[i].row.url).to_string();
    assert!(decided.verdicts.iter().all(|v| v == &Some(Verdict::Cold)), "{:?}", decided.verdicts);
    let gated: Vec<usize> = decided.gates.iter().map(|(i, _)| *i).collect();
    assert_eq!(gated.len(), 40, "every URL of the group on the host of new pages: {gated:?}");
    assert!(gated.iter().all(|&i| host(i) == "git.test"));
    assert!(gated.windows(2).all(|w| w[0] < w[1]), "in candidate order");
    assert_eq!(decided.gates.iter().filter(|(_, g)| g.probe).count(), COLD_BATCH);
    assert_eq!(decided.gates.iter().map(|(_, g)| g.group).collect::<HashSet<_>>().len(), 1, "one group");
    assert_eq!(decided.deferred.len(), 40 - COLD_BATCH, "the rest on the host of copies waits a layer");
    assert!(decided.deferred.iter().all(|&i| host(i) == "copies.test"));
    let again: HashSet<u64> = cands.iter().map(|c| urlnorm::fingerprint_str(&c.row.url)).collect();
    let decided = decide(&y, &cands, 3, &again);
    assert!(decided.gates.is_empty() && decided.deferred.is_empty(), "URLs that waited once are fetched");
}
