//! `layercrawl demo`: the offline first run. Starts the test web on
//! loopback, crawls it to depth 3 into `./data`, and says how to read it.
//! A module of the binary, not of the library: the library does not depend
//! on the test web.

mod score;

use std::path::PathBuf;

use layercrawl::config::{CrawlConfig, Denoise, RunOptions};
use layercrawl::driver::{self, RunError};
use layercrawl::store::dataset::{DOC, LINKS};
use testweb::{Farm, FarmConfig};

use score::score_against_truth;

/// Options of `layercrawl demo`.
#[derive(Clone, Debug, clap::Args)]
pub struct DemoArgs {
    /// Where the crawl goes.
    #[arg(long, default_value = "data")]
    pub data: String,
    /// Sites in the generated web.
    #[arg(long, default_value_t = 6)]
    pub sites: u32,
    /// Hops from the seeds.
    #[arg(long, default_value_t = 3)]
    pub depth: u32,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Noise filter of the crawl: off, mark or drop (the demo measures it
    /// against the test web's ground truth either way).
    #[arg(long, value_name = "off|mark|drop|strict", value_enum, default_value_t = Denoise::Mark)]
    pub denoise: Denoise,
}

/// Runs the demo crawl.
///
/// # Errors
/// When the test web cannot start or the crawl fails.
pub async fn demo(args: DemoArgs) -> Result<(), RunError> {
    let farm = Farm::start(FarmConfig { sites: args.sites, pages: 300, ..FarmConfig::default() })
        .await
        .map_err(|e| RunError::Internal(format!("cannot start the test web: {e}")))?;
    std::fs::create_dir_all(&args.data).map_err(|e| RunError::Internal(format!("cannot create {}: {e}", args.data)))?;
    let seeds_path = PathBuf::from(&args.data).join("demo-seeds.txt");
    std::fs::write(&seeds_path, farm.start_urls().join("\n") + "\n")
        .map_err(|e| RunError::Internal(format!("cannot write {}: {e}", seeds_path.display())))?;
    eprintln!("test web on {}, crawling {} sites to depth {} into {}", farm.addr(), args.sites, args.depth, args.data);
    let mut options = RunOptions {
        seeds: Some(seeds_path),
        depth: Some(args.depth),
        data: args.data.clone(),
        scope: layercrawl::scope::Scope::Domain,
        json: args.json,
        ..RunOptions::default()
    };
    options.network.addresses.resolve = vec![farm.resolve_rule().parse().map_err(RunError::Internal)?];
    options.network.addresses.allow_private = layercrawl::fetch::resolve::AllowPrivate::All;
    (options.politeness.delay, options.politeness.per_host) =
        (layercrawl::config::values::Millis(std::time::Duration::from_millis(10)), 4);
    options.limits.timeout = layercrawl::config::values::Span(std::time::Duration::from_secs(5));
    options.noise.denoise = args.denoise;
    let cfg = CrawlConfig::from_options(&options).map_err(|e| RunError::Internal(e.to_string()))?;
    let summary = driver::run(cfg).await?;
    let score = score_against_truth(&farm, &args.data, args.depth).await?;
    if args.json {
        let both = serde_json::json!({ "summary": summary, "truth": score });
        println!("{}", serde_json::to_string_pretty(&both).unwrap_or_default());
    } else {
        print!("{}", summary.table());
        println!(
            "against the test web's ground truth: noise links precision {:.3}, recall {:.3} ({} links); content pages reached {:.1}% (--denoise {})",
            score.precision,
            score.recall,
            score.links_scored,
            score.content_share * 100.0,
            format!("{:?}", args.denoise).to_lowercase()
        );
        let (doc, links) = (DOC.name, LINKS.name);
        println!("\nParquet output: {0}/{doc}/layer=*/ (pages) and {0}/{links}/layer=*/ (link graph)", summary.data);
        println!("Read it with DuckDB:\n  duckdb -c \"SELECT layer, status, count(*) AS pages FROM '{}/{doc}/*/*.parquet' GROUP BY ALL ORDER BY ALL\"", args.data);
    }
    farm.shutdown();
    Ok(())
}
