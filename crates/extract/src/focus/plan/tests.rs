use super::*;

#[test]
fn a_full_plan_compiles() {
    let plan = parse_plan(
        "p.toml",
        r#"
name = "wind"
threshold = 0.4
match = "any"
[weights]
title = 1
main_text = 2
anchor = 0
[[group]]
name = "energy"
weight = 2
all = ["wind"]
any = ["turbine", "off shore^2", "rotor*"]
not = ["windows"]
query = true
[[group]]
name = "region"
any = ["baltic", "north sea"]
query = true
[[seeds]]
template = "http://{site}/search?q={keywords}&page={page}"
site = ["a.test", "b.test"]
page = "1..2"
max = 5
[[role]]
role = "nav"
urls = ["**/search?**"]
"#,
    )
    .expect("a good plan");
    assert_eq!(plan.threshold, 0.4);
    assert_eq!(plan.combine, Combine::Any);
    assert_eq!(plan.weights, FieldWeights { title: 1.0, main_text: 2.0, anchor: 0.0 });
    let energy = &plan.groups[0];
    assert_eq!(energy.weight, 2.0);
    assert_eq!(energy.any[1].words, ["off", "shore"]);
    assert_eq!(energy.any[1].weight, 2.0);
    assert!(energy.any[2].prefix);
    assert_eq!(plan.groups[1].name, "region");
    // 2 sites × 6 queries × 2 pages, cut at 5, in order: site, query, page.
    assert_eq!(plan.seeds.len(), 5);
    assert_eq!(plan.seeds[0], "http://a.test/search?q=wind+turbine+baltic&page=1");
    assert_eq!(plan.seeds[1], "http://a.test/search?q=wind+turbine+baltic&page=2");
    assert_eq!(plan.seeds[2], "http://a.test/search?q=wind+turbine+north+sea&page=1");
    assert_eq!(plan.role("http://a.test/search?q=x"), Role::Nav);
    assert_eq!(plan.role("http://a.test/news/1"), Role::Content);
}

#[test]
fn every_problem_is_named_with_its_line_and_column() {
    let e = parse_plan(
        "p.toml",
        r#"threshold = 1.5
match = "most"
[[group]]
name = "a"
any = ["x^0", "", "mid*dle"]
[[group]]
name = "a"
weight = -1
[[seeds]]
template = "http://{host}/"
[[seeds]]
template = "http://a.test/?p={page}"
page = "3..1"
[[role]]
role = "hub"
urls = ["x"]
"#,
    )
    .expect_err("a bad plan");
    let text = e.to_string();
    let want = [
        "p.toml:1:13: threshold 1.5: a relevance is from 0 to 1",
        "p.toml:2:9: match = \"most\"",
        "p.toml:5:8: \"x^0\": the weight after ^ must be a number above 0",
        "p.toml:5:15: \"\": a term needs a word",
        "p.toml:5:19: \"mid*dle\": `*` may only end a term",
        "p.toml:7:8: group \"a\" is named twice",
        "p.toml:6:1: a: a group needs `all` or `any` terms",
        "p.toml:8:10: weight -1: a weight is a number of 0 or more",
        "p.toml:15:8: role \"hub\"",
        "p.toml:10:12: \"http://{host}/\": unknown placeholder {host}",
        "p.toml:13:8: page = \"3..1\": the first page is after the last",
    ];
    for w in want {
        assert!(text.contains(w), "missing {w:?} in:\n{text}");
    }
    assert_eq!(e.problems.len(), want.len(), "{text}");
}

#[test]
fn syntax_and_unknown_keys_are_named_too() {
    let e = parse_plan("p.toml", "[[group]]\nany = ['x']\nsome = 1\n").expect_err("unknown key");
    assert!(e.to_string().starts_with("p.toml:3:1: unknown field `some`"), "{e}");
    let e = parse_plan("p.toml", "[[group]\n").expect_err("syntax");
    assert!(e.to_string().starts_with("p.toml:1:"), "{e}");
    let e = parse_plan("p.toml", "threshold = 0.5\n").expect_err("no group");
    assert!(e.to_string().contains("at least one [[group]]"), "{e}");
}
