use url::Url;

use super::*;
use crate::extract::ParsedPage;
use crate::parse::ParseConfig;

const PRODUCT: &str = r#"<!doctype html><html><head><title>Lamp</title>
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[
 {"@type":"BreadcrumbList","itemListElement":[]},
 {"@type":"Product","name":"Desk lamp","sku":"SKU-00042","brand":{"@type":"Brand","name":"Lumo"},
  "offers":{"@type":"Offer","price":1299.0,"priceCurrency":"EUR"}}]}</script></head>
<body><nav class="pagination"><a href="/products?page=2">2</a></nav>
<div id="p-8f3a2c"><h1 class="product-title"> Desk
 lamp </h1><span class="price" content="1299.00">€1,299.00</span></div>
<span class="availability">In stock</span>
<time class="released" datetime="2026-03-14">14 March 2026</time>
<ul class="authors"><li>Ada Lovelace</li><li>Grace Hopper</li></ul>
<span class="stock">Call us</span>
<p>Ships in 3 days. Order code ZX-81.</p>
<section class="related"><a href="/product/7">Seven</a><a href="/product/8">Eight</a></section>
<a href="/cart">Cart</a><a href="https://elsewhere.test/x">Out</a>
</body></html>"#;

fn rules(text: &str) -> Rules {
    parse_rules("rules.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn problems(text: &str) -> Vec<Problem> {
    parse_rules("rules.toml", text).expect_err("a bad file").problems
}

use super::file::Problem;

fn page(html: &str) -> (Url, ParsedPage<'_>) {
    let url = Url::parse("http://shop.test/product/42").expect("url");
    let p = ParsedPage::parse(html.as_bytes(), Some("text/html"), &url, &ParseConfig::default());
    (url, p)
}

#[test]
fn fields_of_every_source_and_type_come_out_typed() {
    let r = rules(
        r#"
[[rule]]
name = "product"
urls = ["http://shop.test/product/*"]

[[rule.field]]
name = "title"
css = "h1.product-title"
required = true

[[rule.field]]
name = "price"
css = ".price"
type = "float"

[[rule.field]]
name = "price_attr"
css = ".price"
attr = "content"
type = "float"

[[rule.field]]
name = "in_stock"
xpath = "//span[@class='availability']"
type = "bool"

[[rule.field]]
name = "released"
xpath = "//time/@datetime"
type = "date"

[[rule.field]]
name = "authors"
css = "ul.authors li"
multiple = true

[[rule.field]]
name = "sku"
jsonld = "Product.sku"

[[rule.field]]
name = "brand"
jsonld = "Product.brand"

[[rule.field]]
name = "ld_price"
jsonld = "Product.offers.price"
type = "float"

[[rule.field]]
name = "code"
regex = 'Order code ([A-Z]+-[0-9]+)'

[[rule.field]]
name = "days"
css = "p"
regex = 'in (\d+) days'
type = "int"
"#,
    );
    let (url, p) = page(PRODUCT);
    let (index, rule) = r.matching(url.as_str()).expect("matches");
    let got = rule.items(index, &p, &url);
    assert_eq!(got.items.len(), 1);
    let item = &got.items[0];
    assert!(item.errors.is_empty(), "{:?}", item.errors);
    let v: std::collections::HashMap<&str, &Value> =
        rule.fields.iter().map(|f| f.name.as_str()).zip(&item.values).collect();
    assert_eq!(v["title"], &Value::Utf8("Desk lamp".into()));
    assert_eq!(v["price"], &Value::Float64(1299.0));
    assert_eq!(v["price_attr"], &Value::Float64(1299.0));
    assert_eq!(v["in_stock"], &Value::Bool(true));
    assert_eq!(v["released"], &Value::Date32(20_526));
    assert_eq!(v["authors"], &Value::Utf8List(vec!["Ada Lovelace".into(), "Grace Hopper".into()]));
    assert_eq!(v["sku"], &Value::Utf8("SKU-00042".into()));
    assert_eq!(v["brand"], &Value::Utf8("Lumo".into()));
    assert_eq!(v["ld_price"], &Value::Float64(1299.0));
    assert_eq!(v["code"], &Value::Utf8("ZX-81".into()));
    assert_eq!(v["days"], &Value::Int64(3));
}

#[test]
fn missing_and_unconvertible_values_are_null_with_their_reasons() {
    let r = rules(
        r#"
[[rule]]
name = "p"
urls = ["**"]
[[rule.field]]
name = "isbn"
css = ".isbn"
required = true
[[rule.field]]
name = "stock"
css = ".stock"
type = "int"
[[rule.field]]
name = "colour"
css = ".colour"
default = "black"
[[rule.field]]
name = "tags"
css = ".tag"
multiple = true
"#,
    );
    let (url, p) = page(PRODUCT);
    let (i, rule) = r.matching(url.as_str()).expect("matches");
    let item = &rule.items(i, &p, &url).items[0];
    assert_eq!(item.values, vec![Value::Null, Value::Null, Value::Utf8("black".into()), Value::Null]);
    assert_eq!(item.errors.len(), 2, "{:?}", item.errors);
    assert!(item.errors[0].starts_with("isbn: required"), "{:?}", item.errors);
    assert!(item.errors[1].starts_with("stock: ") && item.errors[1].contains("Call us"), "{:?}", item.errors);
}

#[test]
fn each_makes_one_item_per_match_with_relative_selectors() {
    let html = r#"<html><body><ul class="results">
<li class="card" data-sku="A1"><a class="name" href="/product/1">One</a><span class="price">$1.50</span></li>
<li class="card" data-sku="B2"><a class="name" href="/product/2">Two</a></li>
<li class="card" data-sku="C3"><a class="name" href="/product/3">Three</a><span class="price">£3</span></li>
</ul></body></html>"#;
    let r = rules(
        r#"
[[rule]]
name = "listing"
urls = ["http://shop.test/**"]
each = "li.card"
[[rule.field]]
name = "name"
css = "a.name"
[[rule.field]]
name = "link"
css = "a.name"
attr = "href"
type = "url"
[[rule.field]]
name = "price"
xpath = ".//span[@class='price']"
type = "float"
required = true
"#,
    );
    let (url, p) = page(html);
    let (i, rule) = r.matching(url.as_str()).expect("matches");
    let items = rule.items(i, &p, &url).items;
    assert_eq!(items.len(), 3);
    assert_eq!(items.iter().map(|it| it.index).collect::<Vec<_>>(), vec![Some(0), Some(1), Some(2)]);
    assert_eq!(items[0].values[0], Value::Utf8("One".into()));
    assert_eq!(items[2].values[1], Value::Utf8("http://shop.test/product/3".into()));
    assert_eq!(items[0].values[2], Value::Float64(1.5));
    assert_eq!(items[1].values[2], Value::Null);
    assert!(items[1].errors[0].starts_with("price: required"), "{:?}", items[1].errors);
    assert_eq!(items[2].values[2], Value::Float64(3.0));
}

#[test]
fn link_rules_follow_deny_scope_and_depth() {
    let r = rules(
        r#"
[[rule]]
name = "nav"
role = "nav"
urls = ["http://shop.test/product/*"]
[rule.links]
scopes = [".pagination", ".related"]
deny = ["**/product/8"]
max_depth = 2
"#,
    );
    let url = Url::parse("http://shop.test/product/42").expect("url");
    let applied = r.apply(&url, Some("text/html"), PRODUCT.as_bytes(), 1, &ParseConfig::default()).expect("applies");
    assert!(applied.items.items.is_empty(), "a nav rule makes no items");
    let followed: Vec<&str> = applied.links.iter().filter(|(_, f)| *f).map(|(u, _)| u.as_str()).collect();
    assert_eq!(followed, vec!["http://shop.test/products?page=2", "http://shop.test/product/7"]);
    assert_eq!(applied.links.len(), 5, "{:?}", applied.links);
    let deep = r.apply(&url, Some("text/html"), PRODUCT.as_bytes(), 2, &ParseConfig::default()).expect("applies");
    assert!(deep.links.iter().all(|(_, f)| !f), "at max_depth no link is followed");
}

#[test]
fn url_patterns_are_globs_or_regexes_over_the_whole_url() {
    let one = Pattern::new("http://shop.test/product/*").expect("glob");
    assert!(one.matches("http://shop.test/product/42"));
    assert!(!one.matches("http://shop.test/product/42/reviews"), "* stops at /");
    assert!(!one.matches("https://shop.test/product/42"));
    let query = Pattern::new("http*://shop.test/products?page=*").expect("glob");
    assert!(query.matches("https://shop.test/products?page=3"), "? is literal");
    assert!(!query.matches("https://shop.test/productsXpage=3"));
    let deep = Pattern::new("**/help/**").expect("glob");
    assert!(deep.matches("http://a.test/x/help/y/z"));
    let re = Pattern::new(r"re:https?://shop\.test/product/\d+").expect("regex");
    assert!(re.matches("http://shop.test/product/7") && !re.matches("http://shop.test/product/7x"));
    assert!(Pattern::new("re:(").is_err());
}

#[test]
fn every_problem_of_a_bad_file_is_named_with_its_line_and_column() {
    let text = r#"[[rule]]
name = "Bad Name"
urls = ["re:("]
role = "producer"

[[rule.field]]
name = "price"
css = "span[["
type = "money"

[[rule.field]]
name = "price"
xpath = "//span[@"
format = "%Y"

[[rule.field]]
name = "url"
regex = '(a)(b)'
default = "x"
required = true
"#;
    let p = problems(text);
    let at = |line: usize, needle: &str| {
        assert!(
            p.iter().any(|x| x.line == line && x.message.contains(needle)),
            "no problem on line {line} with {needle:?}: {p:#?}"
        );
    };
    at(2, "lower-case");
    at(3, "URL pattern");
    at(4, "role `producer`");
    at(8, "CSS selector");
    at(9, "type `money`");
    at(12, "second field named `price`");
    at(13, "XPath");
    at(14, "`format` is for date");
    at(17, "every item has already");
    at(18, "2 groups");
    at(19, "required and has a default");
    assert!(p.iter().all(|x| !x.message.contains('\n') && !x.message.contains("error: ")), "{p:#?}");
    assert!(p.iter().all(|x| x.column >= 1));
    let shown = parse_rules("rules.toml", text).expect_err("bad").to_string();
    assert!(shown.starts_with("rules.toml:2:8: "), "{shown}");
}

#[test]
fn toml_errors_and_unknown_keys_have_positions_too() {
    let p = problems("[[rule]]\nname = \"a\"\nurls = [\"**\"]\n[[rule.field]]\nname = \"x\"\ncsss = \"h1\"\n");
    assert_eq!((p.len(), p[0].line), (1, 6), "{p:?}");
    assert!(p[0].message.contains("unknown field `csss`"), "{p:?}");
    let p = problems("[[rule]\nname = \"a\"\n");
    assert_eq!(p[0].line, 1, "{p:?}");
    let p = problems("");
    assert!(p[0].message.contains("no rule"), "{p:?}");
    let p = problems("[[rule]]\nname = \"a\"\nurls = [\"**\"]\n");
    assert!(p[0].message.contains("no `[[rule.field]]`"), "{p:?}");
}

#[test]
fn the_first_matching_rule_wins() {
    let r = rules(
        r#"
[[rule]]
name = "one"
urls = ["http://a.test/x/*"]
[[rule.field]]
name = "t"
css = "title"
[[rule]]
name = "two"
urls = ["http://a.test/**"]
[[rule.field]]
name = "t"
css = "title"
"#,
    );
    assert_eq!(r.matching("http://a.test/x/1").map(|(i, _)| i), Some(0));
    assert_eq!(r.matching("http://a.test/y/1").map(|(i, _)| i), Some(1));
    assert!(r.matching("http://b.test/").is_none());
}

#[test]
fn json_ld_paths_walk_types_graphs_and_arrays() {
    let docs: Vec<serde_json::Value> = vec![
        serde_json::json!({"@type": ["Product", "Thing"], "offers": [{"price": 1}, {"price": "2.5"}]}),
        serde_json::json!([{"@type": "Person", "name": "Ada"}]),
        serde_json::json!({"headline": "Top"}),
    ];
    assert_eq!(apply::json_ld_for_tests(&docs, &["Product", "offers", "price"]), vec!["1", "2.5"]);
    assert_eq!(apply::json_ld_for_tests(&docs, &["Person", "name"]), vec!["Ada"]);
    assert_eq!(apply::json_ld_for_tests(&docs, &["headline"]), vec!["Top"]);
    assert!(apply::json_ld_for_tests(&docs, &["Missing", "x"]).is_empty());
}

#[test]
fn names_readers_would_confuse_are_refused_and_nav_rules_take_no_each() {
    let p = problems(
        "[[rule]]\nname = \"p\"\nurls = [\"**\"]\n[[rule.field]]\nname = \"URL\"\ncss = \"a\"\n[[rule.field]]\nname = \"rule\"\ncss = \"a\"\n[[rule.field]]\nname = \"Price\"\ncss = \"a\"\n[[rule.field]]\nname = \"price\"\ncss = \"a\"\n[[rule]]\nname = \"n\"\nrole = \"nav\"\nurls = [\"**\"]\neach = \"li\"\n",
    );
    let lines: Vec<usize> = p.iter().map(|x| x.line).collect();
    assert_eq!(lines, vec![5, 8, 14, 20], "{p:#?}");
    assert!(p[2].message.contains("without regard to case"), "{p:#?}");
    assert!(p[3].message.contains("`each` makes items"), "{p:#?}");
}

#[test]
fn nested_scopes_and_a_script_base_still_scope_links_right() {
    let r = rules("[[rule]]\nname = \"n\"\nrole = \"nav\"\nurls = [\"**\"]\n[rule.links]\nscopes = [\".s\"]\n");
    let mut html = String::from("<html><head><base href=\"javascript:void(0)\"></head><body>");
    for _ in 0..2000 {
        html.push_str("<div class=s>");
    }
    html.push_str("<a href=\"/in\">in</a>");
    for _ in 0..2000 {
        html.push_str("</div>");
    }
    html.push_str("<a href=\"/out\">out</a></body></html>");
    let url = Url::parse("http://a.test/p").expect("url");
    let applied = r.apply(&url, Some("text/html"), html.as_bytes(), 0, &ParseConfig::default()).expect("applies");
    let followed: Vec<&str> = applied.links.iter().filter(|(_, f)| *f).map(|(u, _)| u.as_str()).collect();
    assert_eq!(followed, vec!["http://a.test/in"], "{:?}", applied.links);
}

#[test]
fn json_ld_numbers_are_read_as_written() {
    let html = r#"<html><head><script type="application/ld+json">{"@type":"Offer","price":"2.499","count":3}</script></head><body><p class=p>2.499</p></body></html>"#;
    let r = rules("[[rule]]\nname = \"o\"\nurls = [\"**\"]\n[[rule.field]]\nname = \"ld\"\njsonld = \"Offer.price\"\ntype = \"float\"\n[[rule.field]]\nname = \"text\"\ncss = \".p\"\ntype = \"float\"\n[[rule.field]]\nname = \"d\"\ncss = \".none\"\ntype = \"float\"\ndefault = 1.125\n");
    let (url, p) = page(html);
    let (i, rule) = r.matching(url.as_str()).expect("matches");
    let item = &rule.items(i, &p, &url).items[0];
    assert_eq!(item.values, vec![Value::Float64(2.499), Value::Float64(2499.0), Value::Float64(1.125)]);
}
