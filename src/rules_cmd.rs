//! `layercrawl rules check|test`: a rules file checked, or tried on pages
//! (fetched now, or stored by a crawl) before a crawl runs it.

use std::path::PathBuf;

use anyhow::Context as _;
use arrow_array::Array;
use serde_json::json;
use url::Url;

use layercrawl::config::{Addresses, Politeness};
use layercrawl::fetch::Fetcher;
use layercrawl::parse::ParseConfig;
use layercrawl::rules::show::value_json;
use layercrawl::rules::{parse_rules, Applied, Rules, RulesError};
use layercrawl::store::schema::{binary_col, int32_col, string_col};

#[derive(clap::Args)]
pub struct RulesArgs {
    #[command(subcommand)]
    command: RulesCommand,
}

#[derive(clap::Subcommand)]
enum RulesCommand {
    /// Check a rules file: every problem with its line and column (exit 2).
    Check {
        file: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Apply a rules file to pages: URLs fetched now (one GET each, redirects
    /// followed), or pages a crawl stored (`--data`); prints the items.
    Test(TestArgs),
}

#[derive(clap::Args)]
struct TestArgs {
    file: PathBuf,
    /// Pages to fetch and apply the rules to.
    #[arg(value_name = "URL")]
    urls: Vec<String>,
    /// Instead of fetching: the pages of this crawl's `doc` (bodies stored,
    /// as by default), those a rule matches.
    #[arg(long, value_name = "DIR|URL", conflicts_with = "urls")]
    data: Option<String>,
    /// At most this many pages from `--data`.
    #[arg(long, default_value_t = 20)]
    limit: usize,
    /// Print the items as JSON.
    #[arg(long)]
    json: bool,
    /// How the URLs are fetched: `run`'s options.
    #[command(flatten)]
    politeness: Politeness,
    #[command(flatten)]
    addresses: Addresses,
}

/// Why `rules` failed in a way that is the user's to fix (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadRules(pub String);

pub fn rules(args: RulesArgs) -> anyhow::Result<()> {
    match args.command {
        RulesCommand::Check { file, json } => check(&file, json),
        RulesCommand::Test(t) => test(&t),
    }
}

fn load(file: &PathBuf) -> anyhow::Result<Result<Rules, RulesError>> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| BadRules(format!("cannot read the rules file {}: {e}", file.display())))?;
    Ok(parse_rules(&file.display().to_string(), &text))
}

fn check(file: &PathBuf, json: bool) -> anyhow::Result<()> {
    match load(file)? {
        Ok(rules) => {
            if json {
                let list: Vec<_> = rules
                    .list
                    .iter()
                    .map(|r| {
                        json!({
                            "name": r.name,
                            "role": r.role.as_str(),
                            "urls": r.urls.iter().map(|p| p.text.clone()).collect::<Vec<_>>(),
                            "fields": r.fields.iter().map(|f| json!({"name": f.name, "type": f.kind.name(), "multiple": f.multiple, "required": f.required})).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&json!({"file": rules.file, "ok": true, "rules": list}))?);
            } else {
                println!("{}: {} rules, no problems", rules.file, rules.list.len());
                for r in &rules.list {
                    let fields: Vec<String> =
                        r.fields.iter().map(|f| format!("{} ({})", f.name, f.kind.name())).collect();
                    println!(
                        "  {} [{}] {} URL patterns; fields: {}",
                        r.name,
                        r.role.as_str(),
                        r.urls.len(),
                        if fields.is_empty() { "-".into() } else { fields.join(", ") }
                    );
                }
            }
            Ok(())
        }
        Err(e) => {
            if json {
                let problems = layercrawl::rules::file::problems_json(&e.problems);
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({"file": e.file, "ok": false, "problems": problems}))?
                );
            }
            Err(BadRules(format!("{} problem(s) in the rules file:\n{e}", e.problems.len())).into())
        }
    }
}

fn test(args: &TestArgs) -> anyhow::Result<()> {
    let rules =
        load(&args.file)?.map_err(|e| BadRules(format!("{} problem(s) in the rules file:\n{e}", e.problems.len())))?;
    if args.urls.is_empty() && args.data.is_none() {
        return Err(BadRules("give URLs to fetch, or --data DIR for the pages of a crawl".into()).into());
    }
    let parse = ParseConfig::default();
    let mut pages: Vec<(Url, Option<String>, Vec<u8>)> = Vec::new();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    if let Some(data) = &args.data {
        pages = rt.block_on(stored_pages(data, &rules, args.limit))?;
    } else {
        let cfg = layercrawl::config::single_pages(&args.politeness, &args.addresses);
        let fetcher = Fetcher::new(&cfg).context("building the HTTP client")?;
        for u in &args.urls {
            let url = Url::parse(u).map_err(|e| BadRules(format!("`{u}` is not a URL: {e}")))?;
            pages.push(rt.block_on(fetch(&fetcher, url))?);
        }
    }
    let mut out = Vec::new();
    for (url, content_type, body) in &pages {
        let applied = rules.apply(url, content_type.as_deref(), body, 0, &parse);
        out.push((url, applied));
    }
    if args.json {
        let list: Vec<_> = out.iter().map(|(url, a)| page_json(url, a.as_ref())).collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        for (url, a) in &out {
            print!("{}", page_table(url, a.as_ref()));
        }
    }
    Ok(())
}

/// One GET, redirects followed (up to 10), of a page to test.
async fn fetch(fetcher: &Fetcher, mut url: Url) -> anyhow::Result<(Url, Option<String>, Vec<u8>)> {
    for _ in 0..10 {
        let resp =
            fetcher.get_once(&url).await.map_err(|(kind, why)| anyhow::anyhow!("{url}: {} ({why})", kind.as_str()))?;
        if (300..400).contains(&resp.status) {
            if let Some(next) = resp.location.as_deref().and_then(|l| url.join(l).ok()) {
                url = next;
                continue;
            }
        }
        if !(200..300).contains(&resp.status) {
            anyhow::bail!("{url}: HTTP status {}", resp.status);
        }
        return Ok((url, resp.content_type, resp.body.to_vec()));
    }
    anyhow::bail!("{url}: more than 10 redirects")
}

/// Up to `limit` stored pages of the crawl at `data` that a rule matches.
async fn stored_pages(data: &str, rules: &Rules, limit: usize) -> anyhow::Result<Vec<(Url, Option<String>, Vec<u8>)>> {
    let store = layercrawl::store::Store::open(data).with_context(|| format!("opening {data}"))?;
    let mut out = Vec::new();
    for path in store.parquet_files(layercrawl::store::dataset::DOC.name).await? {
        let path: String = path;
        // Streamed a row group at a time, four columns: a merged layer
        // file holds every body of the layer.
        let columns: &[&str] = &["final_url", "status", "content_type", "body"];
        let mut batches = layercrawl::store::stream_batches(&store, &path, Some(columns)).await?;
        while let Some(b) = futures::StreamExt::next(&mut batches).await {
            let b = b?;
            // Checked, not cast: --data may hold files another tool wrote
            // (LargeUtf8, Utf8View, Int64 columns...); the error names the
            // file and the column.
            let shown = store.display_path(&path);
            let url = string_col(&b, "final_url", &shown)?;
            let body = binary_col(&b, "body", &shown)?;
            let optional = |name: &str| b.column_by_name(name).is_some();
            let ct = if optional("content_type") { Some(string_col(&b, "content_type", &shown)?) } else { None };
            // As the crawl: only 2xx pages are parsed (and make items).
            let status = if optional("status") { Some(int32_col(&b, "status", &shown)?) } else { None };
            for i in 0..b.num_rows() {
                if out.len() >= limit {
                    return Ok(out);
                }
                let ok = status.is_some_and(|st| (200..300).contains(&st.value(i)));
                if !ok || body.is_null(i) || rules.matching(url.value(i)).is_none() {
                    continue;
                }
                let Ok(u) = Url::parse(url.value(i)) else { continue };
                let content_type = ct.filter(|c| !c.is_null(i)).map(|c| c.value(i).to_string());
                out.push((u, content_type, body.value(i).to_vec()));
            }
        }
    }
    if out.is_empty() {
        anyhow::bail!(
            "{data}: no stored page matches a rule (bodies are stored unless the crawl ran with --store-body none)"
        );
    }
    Ok(out)
}

fn page_json(url: &Url, a: Option<&Applied<'_>>) -> serde_json::Value {
    let Some(a) = a else { return json!({"url": url.as_str(), "rule": null}) };
    let items = layercrawl::rules::show::items_json(a);
    let followed = a.links.iter().filter(|(_, f)| *f).count();
    json!({
        "url": url.as_str(),
        "rule": a.rule.name,
        "items": items,
        "links": a.links.len(),
        "links_followed": followed,
        "links_not_followed": a.links.iter().filter(|(_, f)| !*f).map(|(u, _)| u.clone()).collect::<Vec<_>>(),
    })
}

fn page_table(url: &Url, a: Option<&Applied<'_>>) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let Some(a) = a else {
        let _ = writeln!(s, "{url}: no rule matches (or not HTML)\n");
        return s;
    };
    let followed = a.links.iter().filter(|(_, f)| *f).count();
    let _ = writeln!(
        s,
        "{url}: rule {} [{}], {} item(s), links followed {}/{}",
        a.rule.name,
        a.rule.role.as_str(),
        a.items.items.len(),
        followed,
        a.links.len()
    );
    let width = a.rule.fields.iter().map(|f| f.name.len()).max().unwrap_or(0).max(7);
    for (n, it) in a.items.items.iter().enumerate() {
        let _ = writeln!(s, "  item {}", it.index.unwrap_or(i32::try_from(n).unwrap_or(0)));
        for (f, v) in a.rule.fields.iter().zip(&it.values) {
            let _ = writeln!(s, "    {:<width$}  {}", f.name, value_json(v));
        }
        for e in &it.errors {
            let _ = writeln!(s, "    {:<width$}  {e}", "_errors");
        }
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, BinaryArray, Int32Array, Int64Array, LargeStringArray, StringArray, StringViewArray};
    use std::sync::Arc;

    /// A crawl folder holding one `doc` file of the usual columns, with
    /// `swap`'s in place of theirs.
    fn crawl_with(dir: &std::path::Path, swap: (&str, ArrayRef)) -> String {
        let mut cols: Vec<(&str, ArrayRef)> = vec![
            ("final_url", Arc::new(StringArray::from(vec!["http://a.test/p"]))),
            ("status", Arc::new(Int32Array::from(vec![200]))),
            ("content_type", Arc::new(StringArray::from(vec!["text/html"]))),
            ("body", Arc::new(BinaryArray::from(vec![b"<h1>x</h1>".as_slice()]))),
        ];
        cols.iter_mut().find(|c| c.0 == swap.0).expect("a known column").1 = swap.1;
        let batch = arrow_array::RecordBatch::try_from_iter(cols).expect("batch");
        let folder = dir.join("doc/layer=0");
        std::fs::create_dir_all(&folder).expect("mkdir");
        let file = std::fs::File::create(folder.join("part-00000.parquet")).expect("create");
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        dir.display().to_string()
    }

    #[test]
    fn a_foreign_column_type_is_an_error_naming_the_file_and_column() {
        let rules =
            parse_rules("r.toml", "[[rule]]\nname = 'p'\nurls = ['**']\n[[rule.field]]\nname = 't'\ncss = 'h1'\n")
                .expect("rules");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let ours = tempfile::tempdir().expect("dir");
        let data = crawl_with(ours.path(), ("status", Arc::new(Int32Array::from(vec![200]))));
        assert_eq!(rt.block_on(stored_pages(&data, &rules, 5)).expect("ours").len(), 1);
        let cases: [(&str, ArrayRef); 3] = [
            ("status", Arc::new(Int64Array::from(vec![200]))),
            ("final_url", Arc::new(LargeStringArray::from(vec!["http://a.test/p"]))),
            ("content_type", Arc::new(StringViewArray::from(vec!["text/html"]))),
        ];
        for (column, array) in cases {
            let dir = tempfile::tempdir().expect("dir");
            let data = crawl_with(dir.path(), (column, array));
            let err = rt.block_on(stored_pages(&data, &rules, 5)).expect_err(column);
            let store_err = err.downcast_ref::<layercrawl::store::StoreError>().expect("a typed storage error");
            let msg = store_err.to_string();
            let file = std::fs::canonicalize(dir.path()).expect("path").join("doc/layer=0/part-00000.parquet");
            assert!(
                msg.contains(&file.display().to_string()) && msg.contains(&format!("`{column}`")),
                "{column}: {msg}"
            );
        }
    }
}
