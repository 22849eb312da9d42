//! Unit tests of extraction: a CSS-selector extractor on the lazily
//! built DOM, the DOM built only when asked for, a panicking extractor
//! losing only its own values, and the registry's name checks.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;

use super::*;
use crate::store::schema::{doc_batch_with, DocRow};

/// The text of every `h1`, by CSS selector on the lazily built DOM.
struct H1 {
    selector: scraper::Selector,
}

impl H1 {
    fn new() -> Self {
        Self { selector: scraper::Selector::parse("h1").expect("a valid selector") }
    }
}

impl Extractor for H1 {
    fn name(&self) -> &str {
        "h1"
    }
    fn columns(&self) -> Vec<Column> {
        vec![Column::new("h1", ColumnType::Utf8), Column::new("h1_all", ColumnType::Utf8List)]
    }
    fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>) {
        let Some(parsed) = input.parsed else { return };
        let all: Vec<String> = parsed
            .dom()
            .select(&self.selector)
            .map(|h| h.text().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        out.push(all.first().cloned().map_or(Value::Null, Value::Utf8));
        out.push(Value::Utf8List(all));
    }
}

/// Reads only the streaming pass's result: no DOM.
struct TextLen;

impl Extractor for TextLen {
    fn name(&self) -> &str {
        "text_len"
    }
    fn columns(&self) -> Vec<Column> {
        vec![Column::new("text_len", ColumnType::Int64).not_null().tuned(Tuning::SMALL)]
    }
    fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>) {
        if let Some(p) = input.parsed {
            out.push(Value::Int64(p.page().text.len() as i64));
        }
    }
}

/// A buggy extractor: panics on every page.
struct Panics;

impl Extractor for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn columns(&self) -> Vec<Column> {
        vec![Column::new("boom", ColumnType::Bool)]
    }
    fn extract(&self, _input: &PageInput<'_>, out: &mut Vec<Value>) {
        out.push(Value::Bool(true));
        panic!("a bug met on a hostile page");
    }
}

const PAGE: &[u8] = b"<!doctype html><html><head><title>T</title></head><body>\
    <nav><a href=/a>Home</a></nav><h1>  The <em>real</em>\n title </h1>\
    <p>Some article text.</p><h1>Second</h1></body></html>";

fn input<'a>(url: &'a Url, parsed: Option<&'a ParsedPage<'a>>) -> PageInput<'a> {
    PageInput { url, final_url: url, status: 200, content_type: Some("text/html"), body: PAGE, parsed, anchor: None }
}

#[test]
fn a_css_selector_extractor_reads_the_lazily_built_dom() {
    let url = Url::parse("http://s001.test/p").expect("url");
    let parsed = ParsedPage::parse(PAGE, Some("text/html"), &url, &ParseConfig::default());
    assert_eq!(parsed.page().title.as_deref(), Some("T"), "the streaming pass ran");
    assert!(!parsed.has_dom(), "no DOM before an extractor asks");

    let no_dom = Extractors::new(vec![Arc::new(TextLen)]).expect("registry");
    let values = no_dom.extract(&input(&url, Some(&parsed)));
    assert_eq!(values, vec![Value::Int64(parsed.page().text.len() as i64)]);
    assert!(!parsed.has_dom(), "an extractor that never asks for the DOM never pays for it");

    let run = Extractors::new(vec![Arc::new(H1::new()), Arc::new(Panics), Arc::new(TextLen)]).expect("registry");
    let values = run.extract(&input(&url, Some(&parsed)));
    assert!(parsed.has_dom());
    assert_eq!(
        values,
        vec![
            Value::Utf8("The real title".into()),
            Value::Utf8List(vec!["The real title".into(), "Second".into()]),
            Value::Null, // the panicking extractor's column; the others keep theirs
            Value::Int64(parsed.page().text.len() as i64),
        ]
    );
    // A response that was not parsed (an error page, a PDF): nulls, or zero when not nullable.
    let unparsed = run.extract(&input(&url, None));
    assert_eq!(unparsed, vec![Value::Null; 4]);

    // The rows become a `doc` batch: core columns, then the extractors'.
    let schema = run.doc_schema();
    let core = crate::store::schema::doc_schema();
    assert_eq!(schema.fields().len(), core.fields().len() + 4);
    assert_eq!(&schema.fields()[..core.fields().len()], &core.fields()[..], "the core columns come first, unchanged");
    let rows = [
        DocRow { url: "http://s001.test/p".into(), extra: values, ..DocRow::default() },
        DocRow { url: "http://s001.test/q".into(), extra: unparsed, ..DocRow::default() },
        DocRow { url: "http://s001.test/dns-failure".into(), ..DocRow::default() },
    ];
    let b = doc_batch_with(&schema, &rows).expect("batch");
    let h1 = b.column_by_name("h1").expect("h1").as_string::<i32>();
    assert_eq!(h1.value(0), "The real title");
    assert!(h1.is_null(1) && h1.is_null(2));
    let all = b.column_by_name("h1_all").expect("h1_all").as_list::<i32>();
    assert_eq!(all.value(0).len(), 2);
    let len = b.column_by_name("text_len").expect("text_len").as_primitive::<Int64Type>();
    assert_eq!((len.null_count(), len.value(1), len.value(2)), (0, 0, 0), "not nullable: zero when missing");
    assert_eq!(Tuning::of(schema.field_with_name("text_len").expect("field")), Tuning::SMALL);
}

#[test]
fn no_extractor_is_the_core_schema_and_bad_names_are_refused() {
    assert!(Arc::ptr_eq(&Extractors::default().doc_schema(), &crate::store::schema::doc_schema()));
    assert!(Extractors::new(Vec::new()).expect("empty").is_empty());

    struct Named(&'static str);
    impl Extractor for Named {
        fn name(&self) -> &str {
            "named"
        }
        fn columns(&self) -> Vec<Column> {
            vec![Column::new(self.0, ColumnType::Utf8)]
        }
        fn extract(&self, _: &PageInput<'_>, _: &mut Vec<Value>) {}
    }
    for (bad, why) in [("title", "already"), ("layer", "Hive"), ("", "name")] {
        let err = Extractors::new(vec![Arc::new(Named(bad))]).expect_err(bad).to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
    let twice = Extractors::new(vec![Arc::new(Named("x")), Arc::new(Named("x"))]).expect_err("twice");
    assert!(matches!(twice, ExtractError::DuplicateColumn { .. }), "{twice}");
    let ok = Extractors::new(vec![Arc::new(Named("x")), Arc::new(H1::new())]).expect("distinct names");
    assert_eq!(format!("{ok:?}"), r#"["named", "h1"]"#);
}
