//! The files of `examples/`, the ones users copy, each run: the book's
//! examples (`docs/src/`) are these files (word for word), the checks accept them, and a
//! crawl of the test web's shop with the example job (its rules, plan and
//! knowledge base) writes what each of them is for.

use crate::common;

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::Array;
use common::{layercrawl, parquet_files, Web};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use testweb::FarmConfig;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced block of `lang` that follows `marker` in the book's `page`
/// (`docs/src/PAGE`).
fn book_block(page: &str, marker: &str, lang: &str) -> String {
    let text = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src").join(page));
    let at = text.find(marker).unwrap_or_else(|| panic!("docs/src/{page} has no {marker:?}"));
    let open = format!("```{lang}\n");
    let start = at + text[at..].find(&open).expect("a block") + open.len();
    let end = start + text[start..].find("```\n").expect("its end");
    text[start..end].to_string()
}

#[test]
fn the_book_shows_the_example_files_word_for_word() {
    for (page, marker, lang, file) in [
        ("rules.md", "A worked example, on the test web's shop", "toml", "rules.toml"),
        ("focused-crawling.md", "A crawl about a topic gives `--plan FILE`", "toml", "plan.toml"),
        ("entities.md", "**The knowledge base.** CSV has a header", "csv", "entities.csv"),
    ] {
        assert_eq!(book_block(page, marker, lang), read(&example(file)), "docs/src/{page}'s block vs examples/{file}");
    }
}

#[test]
fn the_checks_accept_the_example_rules_and_plan() {
    for args in [["rules", "check", "rules.toml"], ["plan", "check", "plan.toml"]] {
        let file = example(args[2]).display().to_string();
        let out = layercrawl(&[args[0], args[1], &file]);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Rows of every Parquet file under `dir`, and the column names of the first.
fn rows_and_columns(dir: &Path) -> (usize, Vec<String>) {
    let mut rows = 0;
    let mut columns = Vec::new();
    for f in parquet_files(dir) {
        let file = std::fs::File::open(&f).expect("open");
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).expect("parquet").build().expect("reader");
        for b in reader {
            let b = b.expect("batch");
            if columns.is_empty() {
                columns = b.schema().fields().iter().map(|f| f.name().clone()).collect();
            }
            rows += b.num_rows();
        }
    }
    (rows, columns)
}

#[test]
fn the_example_job_crawls_with_its_rules_plan_and_knowledge_base() {
    let cfg = FarmConfig { sites: 1, pages: 10, faults: false, shop: true, shop_products: 20, ..FarmConfig::default() };
    let farm = testweb::Farm::start_background(cfg).expect("test web");
    let web = Web::with_seeds(farm, &["http://shop.test/".to_string()]);
    let data = web.dir("data");
    let job = example("job.toml").display().to_string();
    // The command line wins over the job file: this web's seeds, a scratch
    // data folder, no delay; rules, plan and knowledge base are the job's.
    let summary = web.crawl(&data, 2, &["--job", &job, "--delay", "0"]);
    assert_eq!(summary["not_requested"], 0, "{summary}");
    let (products, columns) = rows_and_columns(&data.join("items/rule=product"));
    assert!(products >= 5, "the rules made product items: {products}");
    for c in ["name", "price", "released", "authors", "sku", "_errors"] {
        assert!(columns.iter().any(|n| n == c), "items column {c} in {columns:?}");
    }
    let (pages, doc_columns) = rows_and_columns(&data.join("doc"));
    assert!(pages > products, "{pages} pages");
    for c in ["relevance", "role"] {
        assert!(doc_columns.iter().any(|n| n == c), "the plan's {c} column in {doc_columns:?}");
    }
    // The knowledge base is compiled into the run: its datasets' schema is
    // the run's, whether or not the shop names an entity.
    let settings = read(&data.join("state/settings.json"));
    assert!(settings.contains("orion-dynamics"), "the knowledge base travels in the run's settings");
    let roles: Vec<String> = parquet_files(&data.join("doc"))
        .iter()
        .flat_map(|f| {
            let file = std::fs::File::open(f).expect("open");
            let reader = ParquetRecordBatchReaderBuilder::try_new(file).expect("parquet").build().expect("reader");
            reader.flat_map(|b| {
                let b = b.expect("batch");
                let col = b.column_by_name("role").expect("role").as_string::<i32>().clone();
                (0..col.len()).filter(|&i| col.is_valid(i)).map(|i| col.value(i).to_string()).collect::<Vec<_>>()
            })
        })
        .collect();
    assert!(roles.iter().any(|r| r == "content"), "the plan's roles fill the role column: {roles:?}");
}
