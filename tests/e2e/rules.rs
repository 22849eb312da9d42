//! Rules end to end: the real binary crawls the test web's shop with a
//! rules file; the items it wrote are read back by DuckDB and compared with
//! the shop's ground truth; bad rules files are refused with their
//! problems' lines and columns.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{layercrawl, read_links, Web};
use testweb::{FarmConfig, ShopProduct};

const RULES: &str = r#"
# Product pages make one item each; only their related products are followed.
[[rule]]
name = "product"
urls = ["http://shop.test/product/*"]

[[rule.field]]
name = "name"
css = "h1.product-title"
required = true

[[rule.field]]
name = "price"
css = ".buy-box .price"
type = "float"
required = true

[[rule.field]]
name = "currency"
jsonld = "Product.offers.priceCurrency"

[[rule.field]]
name = "in_stock"
css = ".availability"
type = "bool"

[[rule.field]]
name = "released"
xpath = "//time[@class='released']/@datetime"
type = "date"

[[rule.field]]
name = "authors"
css = "ul.authors li"
multiple = true

[[rule.field]]
name = "rating"
css = ".rating"
type = "float"

[[rule.field]]
name = "stock"
css = ".stock-count"
type = "int"

[[rule.field]]
name = "sku"
jsonld = "Product.sku"

[rule.links]
scopes = [".related"]

# Listing pages: one item per card; only results and pagination are followed.
[[rule]]
name = "listing"
urls = ["http://shop.test/products?page=*"]
each = "li.card"

[[rule.field]]
name = "sku"
xpath = "@data-sku"
required = true

[[rule.field]]
name = "link"
css = "a.name"
attr = "href"
type = "url"

[rule.links]
scopes = [".results", ".pagination"]
"#;

fn shop() -> Web {
    let cfg = FarmConfig {
        sites: 1,
        pages: 10,
        faults: false,
        shop: true,
        shop_products: 40,
        log_requests: true,
        ..FarmConfig::default()
    };
    let farm = testweb::Farm::start_background(cfg).expect("farm");
    Web::with_seeds(farm, &["http://shop.test/".to_string()])
}

#[test]
fn a_crawl_with_rules_writes_typed_items_that_duckdb_reads_as_the_truth() {
    let web = shop();
    let rules = web.dir("rules.toml");
    std::fs::write(&rules, RULES).expect("rules");
    let data = web.dir("data");
    let rules_arg = rules.display().to_string();
    let summary = web.crawl(&data, 4, &["--delay", "0", "--per-host", "4", "--partitions", "2", "--rules", &rules_arg]);
    let truth: BTreeMap<String, ShopProduct> =
        web.farm.shop_products().into_iter().map(|p| (p.url.clone(), p)).collect();

    // Every product page was reached (through listings and related links) and made one item.
    let product = &summary["rules"]["product"];
    assert_eq!(product["pages"], truth.len() as u64, "{summary:#}");
    assert_eq!(product["items"], truth.len() as u64);
    let anomalies = truth.values().filter(|p| p.price.is_none()).count() as u64;
    assert!(anomalies >= 3, "the shop has products without a usable price");
    assert_eq!(product["items_with_errors"], anomalies, "exactly the products without a usable price");
    assert_eq!(product["fill_rate"]["name"], 1.0);
    let listing = &summary["rules"]["listing"];
    assert_eq!(listing["items"], truth.len() as u64, "every card of every listing page: {listing}");

    // DuckDB reads the items with their types, and the values are the truth.
    let script = r#"
import duckdb, json, sys
data = sys.argv[1]
con = duckdb.connect()
rel = f"read_parquet('{data}/items/rule=product/*/*.parquet', hive_partitioning=true)"
types = {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()}
rows = con.execute(f"SELECT url, name, price, currency, in_stock, strftime(released, '%Y-%m-%d'), authors, rating, stock, sku, _errors, layer FROM {rel} ORDER BY url").fetchall()
cards = con.execute(f"SELECT count(*), count(DISTINCT sku), min(item) FROM read_parquet('{data}/items/rule=listing/*/*.parquet', hive_partitioning=true)").fetchone()
print(json.dumps({"types": types, "rows": rows, "cards": cards}, default=str))
"#;
    let out = Command::new(common::pyenv_python()).arg("-c").arg(script).arg(&data).output().expect("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let types = &got["types"];
    for (col, ty) in [
        ("url", "VARCHAR"),
        ("fetched_at", "TIMESTAMP WITH TIME ZONE"),
        ("price", "DOUBLE"),
        ("in_stock", "BOOLEAN"),
        ("released", "DATE"),
        ("authors", "VARCHAR[]"),
        ("stock", "BIGINT"),
        ("_errors", "VARCHAR[]"),
    ] {
        assert_eq!(types[col], ty, "{col}: {types}");
    }
    let rows = got["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), truth.len());
    for r in rows {
        let url = r[0].as_str().expect("url");
        let t = &truth[url];
        assert_eq!(r[1], t.name.as_str(), "{url}");
        match t.price {
            Some(p) => {
                assert!((r[2].as_f64().expect("price") - p).abs() < 1e-9, "{url}: {} vs {p}", r[2]);
                assert!(r[10].is_null(), "{url}: {}", r[10]);
            }
            None => {
                assert!(r[2].is_null(), "{url}");
                let errors = r[10].to_string();
                assert!(errors.contains("price:"), "{url}: {errors}");
            }
        }
        assert_eq!(r[3], t.currency.as_str(), "{url}");
        assert_eq!(r[4], t.in_stock, "{url}");
        assert_eq!(r[5], t.released.as_str(), "{url}");
        assert_eq!(r[6], serde_json::json!(t.authors), "{url}");
        assert!((r[7].as_f64().expect("rating") - t.rating).abs() < 1e-9, "{url}");
        assert_eq!(r[8], t.stock, "{url}");
        assert_eq!(r[9], t.sku.as_str(), "{url}");
    }
    let cards = &got["cards"];
    assert_eq!(
        (cards[0].as_u64(), cards[1].as_u64(), cards[2].as_u64()),
        (Some(truth.len() as u64), Some(truth.len() as u64), Some(0))
    );

    // Links outside a rule's scopes are recorded and not followed.
    let links = read_links(&data);
    let from_listing_to_promo: Vec<_> =
        links.iter().filter(|l| l.src_url.contains("/products?page=") && l.dst_url.contains("/promo/")).collect();
    assert!(!from_listing_to_promo.is_empty());
    assert!(from_listing_to_promo.iter().all(|l| !l.followed && l.noise.as_deref() == Some("rule")));
    let related = links.iter().filter(|l| l.src_url.contains("/product/") && l.dst_url.contains("/product/")).count();
    assert!(related > 0 && links.iter().any(|l| l.src_url.contains("/product/") && l.followed));
}

#[test]
fn rules_check_and_run_name_every_problem_with_line_and_column() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = tmp.path().join("good.toml");
    std::fs::write(&good, RULES).expect("write");
    let out = layercrawl(&["rules", "check", good.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 rules, no problems"));

    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "[[rule]]\nname = \"p\"\nurls = [\"**\"]\n\n[[rule.field]]\nname = \"price\"\ncss = \"..x\"\ntype = \"money\"\n")
        .expect("write");
    let out = layercrawl(&["rules", "check", bad.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let b = bad.display();
    assert!(err.contains(&format!("{b}:7:7: CSS selector `..x`")), "{err}");
    assert!(err.contains(&format!("{b}:8:8: type `money`")), "{err}");
    let out = layercrawl(&["rules", "check", "--json", bad.to_str().expect("utf8")]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["problems"].as_array().map(Vec::len), Some(2), "{json}");

    // A crawl refuses the same file before it starts, with the same positions.
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, "http://a.test/\n").expect("seeds");
    let data = tmp.path().join("data");
    let out = layercrawl(&[
        "run",
        "--seeds",
        seeds.to_str().expect("utf8"),
        "--depth",
        "1",
        "--data",
        data.to_str().expect("utf8"),
        "--rules",
        bad.to_str().expect("utf8"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(":8:8: type `money`"));
    assert!(!data.join("doc").exists(), "nothing was crawled");
}

#[test]
fn rules_test_shows_the_items_of_live_and_stored_pages() {
    let web = shop();
    let rules = web.dir("rules.toml");
    std::fs::write(&rules, RULES).expect("rules");
    let rules_arg = rules.display().to_string();
    let truth = web.farm.shop_products();
    let one = &truth[0];
    let out = layercrawl(&["rules", "test", &rules_arg, &one.url, "--resolve", &web.rule, "--allow-private", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(got[0]["rule"], "product");
    assert_eq!(got[0]["items"][0]["name"], one.name.as_str());
    assert_eq!(got[0]["items"][0]["released"], one.released.as_str());
    assert_eq!(got[0]["items"][0]["sku"], one.sku.as_str());

    let data = web.dir("data");
    web.crawl(&data, 2, &["--delay", "0", "--partitions", "1"]);
    let out = layercrawl(&["rules", "test", &rules_arg, "--data", data.to_str().expect("utf8"), "--limit", "3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("rule ").count(), 3, "{text}");
    assert!(text.contains("item 0"), "{text}");
}

/// The book's worked example (`docs/src/rules.md`) is a valid rules file,
/// and on the shop it makes the items the book says.
#[test]
fn the_book_example_checks_and_extracts() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/rules.md")).expect("the Rules page");
    let section = &page[page.find("# Rules: typed fields").expect("the Rules section")..];
    let start = section.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let example = &section[start..start + section[start..].find("```").expect("its end")];
    let web = shop();
    let rules = web.dir("book.toml");
    std::fs::write(&rules, example).expect("write");
    let rules_arg = rules.display().to_string();
    let out = layercrawl(&["rules", "check", &rules_arg]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let truth = web.farm.shop_products();
    let priced = truth.iter().find(|p| p.price.is_some()).expect("a priced product");
    let out =
        layercrawl(&["rules", "test", &rules_arg, &priced.url, "--resolve", &web.rule, "--allow-private", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let item = &got[0]["items"][0];
    assert_eq!((item["name"].as_str(), item["price"].as_f64()), (Some(priced.name.as_str()), priced.price));
    assert_eq!(item["authors"], serde_json::json!(priced.authors));
    assert!(item["_errors"].is_null(), "{item}");
    assert!(
        got[0]["links_not_followed"].as_array().is_some_and(|l| !l.is_empty()),
        "only related products are followed"
    );
}

/// The rule editor's server: the token and the Host are required, live
/// pages are fetched politely (robots.txt obeyed, the delay kept, as the
/// test web's own counters show), and a save writes only a valid file.
#[test]
fn the_editor_server_is_private_polite_and_saves_only_valid_rules() {
    let web = shop();
    let rules = web.dir("rules.toml");
    std::fs::write(&rules, RULES).expect("rules");
    let mut child = Kill(
        std::process::Command::new(env!("CARGO_BIN_EXE_layercrawl"))
            .args(["studio", "--rules", rules.to_str().expect("utf8"), "--resolve", &web.rule, "--allow-private"])
            .args(["--delay", "300", "--json"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("studio"),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.0.stdout.take().expect("stdout")), &mut line)
        .expect("its address");
    let url = serde_json::from_str::<serde_json::Value>(&line).expect("json")["url"].as_str().expect("url").to_string();
    let (base, token) = url.split_once("/?token=").expect("token in the address");
    let (base, token) = (base.to_string(), token.to_string());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        layercrawl::store::tls::install_provider();
        let http = reqwest::Client::new();
        let post = |path: &str, body: serde_json::Value| {
            http.post(format!("{base}{path}"))
                .header("X-Studio-Token", &token)
                .header("Content-Type", "application/json")
                .body(body.to_string())
                .send()
        };
        assert_eq!(http.get(format!("{base}/api/state")).send().await.expect("get").status(), 403);
        let wrong = http.get(format!("{base}/api/state")).header("Host", "evil.test").header("X-Studio-Token", &token);
        assert_eq!(wrong.send().await.expect("get").status(), 421);
        let page = http.get(format!("{base}/?token={token}")).send().await.expect("app");
        assert_eq!(page.status(), 200);
        // The API takes JSON from the editor's own page only: a form or a
        // text/plain request another site could send, even with the token, is refused.
        let plain =
            http.post(format!("{base}/api/save?token={token}")).body(r#"{"text": ""}"#).send().await.expect("post");
        assert_eq!(plain.status(), 403);
        let cross = http
            .post(format!("{base}/api/check"))
            .header("X-Studio-Token", &token)
            .header("Content-Type", "application/json")
            .header("Origin", "http://evil.test")
            .body(r#"{"text": ""}"#)
            .send()
            .await
            .expect("post");
        assert_eq!(cross.status(), 403);

        let cart = post("/api/open", serde_json::json!({"url": "http://shop.test/cart"})).await.expect("open");
        let cart: serde_json::Value = cart.text().await.map(|t| json_of(&t)).expect("body");
        assert!(cart["error"].as_str().is_some_and(|e| e.contains("robots.txt")), "{cart}");
        let products = web.farm.shop_products();
        for p in &products[..3] {
            let got: serde_json::Value = post("/api/open", serde_json::json!({"url": p.url}))
                .await
                .expect("open")
                .text()
                .await
                .map(|t| json_of(&t))
                .expect("body");
            assert_eq!((got["rule"].as_str(), got["source"].as_str()), (Some("product"), Some("live")), "{got}");
            // The frame's address is a name of its own, without the token.
            let frame_path = got["frame"].as_str().expect("frame");
            assert!(!frame_path.contains(&token) && frame_path.len() > "/frame/".len() + 16, "{frame_path}");
            let frame = http.get(format!("{base}{frame_path}"));
            let frame = frame.send().await.expect("frame");
            let csp = frame.headers()["content-security-policy"].to_str().expect("csp").to_string();
            assert!(csp.contains("script-src 'none'"), "{csp}");
            assert_eq!(
                frame.headers()["referrer-policy"],
                "no-referrer",
                "the token in the frame's address stays here"
            );
            assert!(frame.text().await.expect("html").contains(&p.name));
        }

        let text = std::fs::read_to_string(&rules).expect("read");
        let field = serde_json::json!({"name": "stock_left", "css": ".stock-count", "type": "int"});
        let added: serde_json::Value =
            post("/api/add_field", serde_json::json!({"text": text, "rule": "product", "field": field}))
                .await
                .expect("add")
                .text()
                .await
                .map(|t| json_of(&t))
                .expect("body");
        assert_eq!(added["check"]["ok"], true, "{added}");
        let new = added["text"].as_str().expect("text").to_string();
        let urls: Vec<&str> = products[..3].iter().map(|p| p.url.as_str()).collect();
        let eval: serde_json::Value = post("/api/eval", serde_json::json!({"text": new, "urls": urls}))
            .await
            .expect("eval")
            .text()
            .await
            .map(|t| json_of(&t))
            .expect("body");
        for (page, p) in eval["pages"].as_array().expect("pages").iter().zip(&products) {
            assert_eq!(page["items"][0]["stock_left"], p.stock, "{page}");
        }
        let diff: serde_json::Value = post("/api/diff", serde_json::json!({"text": new}))
            .await
            .expect("diff")
            .text()
            .await
            .map(|t| json_of(&t))
            .expect("body");
        assert!(diff["diff"].as_str().is_some_and(|d| d.contains("+name = \"stock_left\"")), "{diff}");
        let bad = post("/api/save", serde_json::json!({"text": "[[rule]]\nname = 1\n"})).await.expect("save");
        assert_eq!(bad.status(), 400);
        assert_eq!(std::fs::read_to_string(&rules).expect("read"), text, "a bad file is not written");
        let saved = post("/api/save", serde_json::json!({"text": new})).await.expect("save");
        assert_eq!(saved.status(), 200);
        assert_eq!(std::fs::read_to_string(&rules).expect("read"), new);
    });
    drop(child);
    drop(rt);
    let stats = web.farm.stats();
    let shop = &stats.hosts["shop.test"];
    assert!(shop.disallowed_requests.is_empty(), "{:?}", shop.disallowed_requests);
    assert_eq!(shop.robots_requests, 1);
    if let Err(e) = shop.spaced(300.0) {
        panic!("shop.test: {e}");
    }
}

fn json_of(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A child process killed when the test ends, however it ends.
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The editor's samples from a crawl: the stored pages are listed, opened
/// from the Parquet without a request, and a rule's samples are drawn from
/// them.
#[test]
fn the_editor_takes_its_samples_from_a_crawl_without_fetching_them_again() {
    let web = shop();
    let data = web.dir("data");
    web.crawl(&data, 3, &["--delay", "0", "--partitions", "2"]);
    let rules = web.dir("rules.toml");
    std::fs::write(&rules, RULES).expect("rules");
    let mut child = Kill(
        std::process::Command::new(env!("CARGO_BIN_EXE_layercrawl"))
            .args(["studio", "--rules", rules.to_str().expect("utf8"), "--data", data.to_str().expect("utf8")])
            .args(["--samples", "3", "--json"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("studio"),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.0.stdout.take().expect("stdout")), &mut line)
        .expect("its address");
    let url = json_of(&line)["url"].as_str().expect("url").to_string();
    let (base, token) = url.split_once("/?token=").expect("token");
    web.farm.reset_stats();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        layercrawl::store::tls::install_provider();
        let http = reqwest::Client::new();
        let state = http.get(format!("{base}/api/state")).header("X-Studio-Token", token).send().await.expect("state");
        let state = json_of(&state.text().await.expect("body"));
        let stored: Vec<&str> =
            state["samples"].as_array().expect("samples").iter().filter_map(|u| u.as_str()).collect();
        let product = stored.iter().find(|u| u.contains("/product/")).expect("a stored product page").to_string();
        let post = |path: &str, body: serde_json::Value| {
            http.post(format!("{base}{path}"))
                .header("X-Studio-Token", token)
                .header("Content-Type", "application/json")
                .body(body.to_string())
                .send()
        };
        let opened = post("/api/open", serde_json::json!({"url": product})).await.expect("open");
        let opened = json_of(&opened.text().await.expect("body"));
        assert_eq!((opened["source"].as_str(), opened["rule"].as_str()), (Some("stored"), Some("product")), "{opened}");
        let samples =
            post("/api/samples", serde_json::json!({"text": RULES, "rule": "product"})).await.expect("samples");
        let samples = json_of(&samples.text().await.expect("body"));
        let urls = samples["urls"].as_array().expect("urls");
        assert_eq!(urls.len(), 3, "{samples}");
        assert_eq!(urls[0], product.as_str(), "the page just opened comes first");
        let eval = post("/api/eval", serde_json::json!({"text": RULES, "urls": urls})).await.expect("eval");
        let eval = json_of(&eval.text().await.expect("body"));
        for page in eval["pages"].as_array().expect("pages") {
            assert!(page["items"][0]["name"].is_string(), "{page}");
        }
    });
    drop(child);
    let stats = web.farm.stats();
    assert_eq!(stats.hosts.get("shop.test").map_or(0, |h| h.requests), 0, "stored pages are not fetched again");
}

/// A rules file changed while a layer is half done is refused, naming the
/// layer and both files; the same text is not a change.
#[test]
fn a_layer_is_finished_with_the_rules_it_started_with() {
    let cfg = FarmConfig { sites: 1, pages: 10, faults: false, shop: true, shop_products: 20, ..FarmConfig::default() };
    let web = Web::start(cfg);
    // Two sites in two partitions: one partition's manifest is removed
    // below, the other's stays committed.
    let parts = (2..16u32)
        .find(|&p| {
            layercrawl::partition::partition_of_host("shop.test", p)
                != layercrawl::partition::partition_of_host("s000.test", p)
        })
        .expect("a partition count that separates the two sites");
    let parts = parts.to_string();
    let rules = web.dir("rules.toml");
    std::fs::write(&rules, RULES).expect("rules");
    let data = web.dir("data");
    let rules_arg = rules.display().to_string();
    web.crawl(&data, 1, &["--delay", "0", "--partitions", &parts, "--rules", &rules_arg]);
    // As if the run had stopped with one partition of layer 1 not committed.
    let manifests = data.join("state/manifest/layer=1");
    let committed: Vec<_> = std::fs::read_dir(&manifests)
        .expect("manifests")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("map-")))
        .collect();
    let shop = layercrawl::partition::partition_of_host("shop.test", parts.parse().expect("n"));
    let victim = committed
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == format!("map-{shop:05}.json")))
        .expect("the shop's partition committed");
    std::fs::remove_file(victim).expect("unfinish a partition");
    let _ = std::fs::remove_file(data.join("state/manifest/merge.json"));
    let changed = web.dir("changed.toml");
    std::fs::write(&changed, RULES.replace("name = \"stock\"", "name = \"units\"")).expect("rules");
    let out = layercrawl(&web.run_args(
        &data,
        1,
        &["--delay", "0", "--partitions", &parts, "--rules", changed.to_str().expect("utf8")],
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("layer 1 was started with another rules file") && err.contains("rules.toml"), "{err}");
    // The same text under another name finishes the layer.
    let copy = web.dir("copy.toml");
    std::fs::write(&copy, RULES).expect("rules");
    web.crawl(&data, 1, &["--delay", "0", "--partitions", &parts, "--rules", copy.to_str().expect("utf8")]);
}
