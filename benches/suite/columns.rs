//! The `columns` scenario: the cpu scenario's crawl (depth 3) by this build
//! against the same crawl by a comparison build, in turn, pair by pair, on
//! the same test web: what the `doc` columns this build adds cost a crawl
//! (docs/src/main-text.md, "What it costs a crawl"). This build
//! crawls three times a pair: with its defaults (both text columns), with
//! `--store-text main` and with `--store-text visible`.
//!
//! The comparison build is a binary named by `SUITE_BASELINE` (for example
//! this code with no extractor registered, or the code before the main text,
//! each built apart); several, comma-separated, are each paired with this
//! build in the same round. Without it the scenario says so and measures
//! nothing. Each pair's order alternates, so that neither build always runs
//! on a cache warmed by the other.
//!
//! Then, on the last crawl's own `doc` rows (6,000 of layer 2, all
//! columns), the shard writer's settings ([`shard_properties`]) against
//! variants of them, one core, in turn, five rounds: where storing the
//! columns goes (`main_text` left out, written uncompressed) and what the
//! settings one might turn would save (no statistics on the long texts, a
//! faster zstd level for `main_text`, larger pages and row groups, the
//! format 1.0 data pages written before).

use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow_array::RecordBatch;
use layercrawl::extract::{main_text::TextFormat, Extractors};
use layercrawl::map::SHARD_ROW_GROUP_BYTES;
use layercrawl::store::column::without_tuning;
use layercrawl::store::shard_properties;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterPropertiesBuilder, WriterVersion};

use super::{collect_parquet, crawl_with, env_u32, median, DirBatches, FarmProcess, Table, BIN, CPU_CRAWL, CPU_WEB};

pub(super) fn columns(tmp: &Path, table: &mut Table) {
    let Ok(list) = std::env::var("SUITE_BASELINE") else {
        println!("  columns: set SUITE_BASELINE to a comparison build of layercrawl to measure this scenario");
        return;
    };
    let baselines: Vec<PathBuf> = list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(PathBuf::from).collect();
    for b in &baselines {
        assert!(b.is_file(), "SUITE_BASELINE names {}, which is not a file", b.display());
    }
    let pairs = env_u32("SUITE_RUNS", 3).max(1);
    let farm = FarmProcess::start(&CPU_WEB, 50);
    let seeds = farm.write_seeds(tmp, "columns-seeds.txt");
    // The last crawl by this build with its defaults is kept for the
    // writer's measurements.
    let kept = tmp.join("columns-kept");
    let run = |bin: &Path, extra: &[&str], data: &Path| {
        let mut a = farm.crawl_args(&seeds, data, 3);
        a.extend(CPU_CRAWL.map(String::from));
        a.extend(extra.iter().map(|s| (*s).to_string()));
        let c = crawl_with(bin, &a);
        let pages = c.summary["fetched"].as_f64().unwrap_or(0.0);
        let doc_bytes = dir_bytes(&data.join("doc"));
        if bin == Path::new(BIN) && extra.is_empty() {
            let _ = std::fs::remove_dir_all(&kept);
            let _ = std::fs::rename(data, &kept);
        }
        let _ = std::fs::remove_dir_all(data);
        (pages / c.wall, c.cpu / pages * 1000.0, doc_bytes, c)
    };
    let this = Path::new(BIN);
    // This build with its defaults (both text columns), then with one of
    // them (`--store-text`), each against the comparison build of its pair.
    let variants: [(&str, &[&str]); 3] = [
        ("this build", &[]),
        ("--store-text main", &["--store-text", "main"]),
        ("--store-text visible", &["--store-text", "visible"]),
    ];
    for (i, base) in baselines.iter().enumerate() {
        let mut m: Vec<Ratios> = variants.iter().map(|_| Ratios::default()).collect();
        let mut base_rate = vec![];
        for pair in 0..pairs {
            let go = |bin: &Path, extra: &[&str], name: &str| {
                run(bin, extra, &tmp.join(format!("columns-{i}-{name}-{pair}")))
            };
            // The comparison runs first in even pairs and last in odd ones.
            let b_first = (pair % 2 == 0).then(|| go(base, &[], "base"));
            let ts: Vec<_> =
                variants.iter().enumerate().map(|(v, (_, extra))| go(this, extra, &format!("this{v}"))).collect();
            let b = b_first.unwrap_or_else(|| go(base, &[], "base"));
            base_rate.push(b.0);
            for ((name, _), (t, r)) in variants.iter().zip(ts.iter().zip(m.iter_mut())) {
                println!(
                    "  columns pair {pair} against {}: comparison {:.0} pages/s, {:.2} CPU s/1000 pages, doc {:.0} MB; {name} {:.0} pages/s, {:.2} CPU s/1000 pages, doc {:.0} MB",
                    base.display(),
                    b.0,
                    b.1,
                    b.2 as f64 / 1e6,
                    t.0,
                    t.1,
                    t.2 as f64 / 1e6
                );
                r.rate.push(t.0);
                r.ratio.push(t.0 / b.0);
                r.cpu.push(t.1 / b.1);
                r.rss.push(t.3.rss_mb / b.3.rss_mb);
                r.bytes.push(t.2 as f64 / b.2 as f64);
            }
        }
        let s =
            format!("columns vs {}", base.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()));
        table.add(&s, "comparison build: crawl rate (median)", median(base_rate), "pages/s");
        for ((name, _), r) in variants.iter().zip(m) {
            table.add(&s, &format!("{name}: crawl rate (median)"), median(r.rate), "pages/s");
            table.add(&s, &format!("{name}: crawl rate / comparison (median of pairs)"), median(r.ratio), "ratio");
            table.add(&s, &format!("{name}: crawler CPU per page / comparison"), median(r.cpu), "ratio");
            table.add(&s, &format!("{name}: crawler peak RSS / comparison"), median(r.rss), "ratio");
            table.add(&s, &format!("{name}: doc bytes on disk / comparison"), median(r.bytes), "ratio");
        }
    }
    farm.stop();
    writer_settings(&kept.join("doc/layer=2"), table);
    let _ = std::fs::remove_dir_all(&kept);
}

/// One variant's figures, pair by pair.
#[derive(Default)]
struct Ratios {
    rate: Vec<f64>,
    ratio: Vec<f64>,
    cpu: Vec<f64>,
    rss: Vec<f64>,
    bytes: Vec<f64>,
}

type Variant = (&'static str, bool, fn(WriterPropertiesBuilder) -> WriterPropertiesBuilder);

/// The shard writer's settings against variants, on 6,000 of the crawl's
/// `doc` rows in its own batches of 16 rows (about what a map task's 512 KiB
/// batches hold), written to a file in one go each; medians of five rounds.
fn writer_settings(layer: &Path, table: &mut Table) {
    let mut files = Vec::new();
    collect_parquet(layer, &mut files);
    if files.is_empty() {
        println!("  columns: no doc rows of layer 2 kept; the writer's settings are not measured");
        return;
    }
    let schema = Extractors::builtin(TextFormat::Plain).doc_schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut rows: Vec<RecordBatch> = Vec::new();
    let mut n = 0;
    for b in DirBatches::new(layer, &names) {
        for start in (0..b.num_rows()).step_by(16) {
            rows.push(b.slice(start, 16.min(b.num_rows() - start)));
        }
        n += b.num_rows();
        if n >= 6000 {
            break;
        }
    }
    let zstd = |level| Compression::ZSTD(ZstdLevel::try_new(level).expect("a zstd level"));
    let variants: [Variant; 9] = [
        ("as the crawl writes them", true, |p| p),
        ("main_text left out", false, |p| p),
        ("main_text uncompressed", true, |p| p.set_column_compression("main_text".into(), Compression::UNCOMPRESSED)),
        ("no statistics on body, text, main_text", true, |p| {
            ["body", "text", "main_text"]
                .into_iter()
                .fold(p, |p, c| p.set_column_statistics_enabled(c.into(), EnabledStatistics::None))
        }),
        ("main_text at zstd level -1", true, |p| {
            p.set_column_compression("main_text".into(), Compression::ZSTD(ZstdLevel::try_new(-1).expect("level")))
        }),
        ("main_text at zstd level -5", true, |p| {
            p.set_column_compression("main_text".into(), Compression::ZSTD(ZstdLevel::try_new(-5).expect("level")))
        }),
        ("data pages of 1 MiB", true, |p| p.set_data_page_size_limit(1 << 20)),
        ("row groups of 16 MiB", true, |p| p.set_max_row_group_bytes(Some(16 << 20))),
        ("data pages v1 (format 1.0)", true, |p| p.set_writer_version(WriterVersion::PARQUET_1_0)),
    ];
    let without_main: Vec<RecordBatch> = rows
        .iter()
        .map(|b| {
            let mut b = b.clone();
            b.remove_column(b.schema().index_of("main_text").expect("the main_text column"));
            b
        })
        .collect();
    let out = layer.parent().expect("doc folder").join("writer-settings.parquet");
    let (mut secs, mut bytes) = (vec![Vec::new(); variants.len()], vec![0u64; variants.len()]);
    for _round in 0..5 {
        for (k, (_, with_main, vary)) in variants.iter().enumerate() {
            let batches = if *with_main { &rows } else { &without_main };
            let props = vary(shard_properties(zstd(1), &schema, SHARD_ROW_GROUP_BYTES).into_builder()).build();
            let file_schema = without_tuning(&batches[0].schema());
            let t = Instant::now();
            let file = std::fs::File::create(&out).expect("create the writer's test file");
            let mut w = ArrowWriter::try_new(file, file_schema, Some(props)).expect("writer");
            for b in batches {
                w.write(b).expect("write");
            }
            w.close().expect("close");
            secs[k].push(t.elapsed().as_secs_f64());
            bytes[k] = std::fs::metadata(&out).map_or(0, |m| m.len());
        }
    }
    let _ = std::fs::remove_file(&out);
    let base = median(secs[0].clone());
    let s = "columns: doc writer, one core";
    table.add(s, &format!("rows written ({n} of layer 2, all columns)"), n as f64, "rows");
    for (k, (name, _, _)) in variants.iter().enumerate() {
        let t = median(secs[k].clone());
        println!("  writer, {name}: {t:.3} s, {:.1} MB", bytes[k] as f64 / 1e6);
        table.add(s, &format!("{name}: time"), t / base, "ratio");
        table.add(s, &format!("{name}: file"), bytes[k] as f64 / bytes[0] as f64, "ratio");
    }
}

/// Bytes of every file under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}
