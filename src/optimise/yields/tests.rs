use super::*;
use crate::denoise::evidence::Outcome;

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
async fn followed_urls_keep_their_referrers_and_an_older_via_file_reads_without() {
    let store = Store::open("memory://").expect("store");
    let rows = vec![
        Via { fingerprint: 1, via: "f.test/info/*".into(), referrer: Some("http://f.test/info/1a".into()) },
        Via { fingerprint: 2, via: "f.test/\nf.test/info/*".into(), referrer: None },
    ];
    write_via(&store, 3, 0, &rows).await.expect("write");
    let read = read_via(&store, 3, 0).await.expect("read");
    assert_eq!(read[&1], (vec!["f.test/info/*".to_string()], Some("http://f.test/info/1a".to_string())));
    assert_eq!(read[&2], (vec!["f.test/".to_string(), "f.test/info/*".to_string()], None));
    // A via file written before referrers were kept.
    let old = Arc::new(Schema::new(vec![
        Field::new("fingerprint", DataType::Int64, false),
        Field::new("via", DataType::Utf8, false),
    ]));
    let b = RecordBatch::try_new(
        Arc::clone(&old),
        vec![Arc::new(Int64Array::from(vec![7])), Arc::new(StringArray::from(vec!["f.test/info/*"]))],
    )
    .expect("batch");
    let path = layout::via(4, 0);
    let mut w = ShardWriter::create(&store, &path, old, 1 << 20).expect("writer");
    w.write(&b).await.expect("write");
    w.finish().await.expect("finish");
    assert_eq!(read_via(&store, 4, 0).await.expect("read")[&7], (vec!["f.test/info/*".to_string()], None));
}
