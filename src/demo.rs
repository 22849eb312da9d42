//! `layercrawl demo`: the offline first run. Starts the test web on
//! loopback, crawls it to depth 3 into `./data`, and says how to read it.

use std::path::PathBuf;

use crate::config::{CrawlConfig, RunArgs};
use crate::driver::{self, RunError};
use crate::testweb::{Farm, FarmConfig};

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
}

/// Runs the demo crawl.
///
/// # Errors
/// When the test web cannot start or the crawl fails.
pub async fn demo(args: DemoArgs) -> Result<(), RunError> {
    let farm = Farm::start(FarmConfig { sites: args.sites, pages: 300, ..FarmConfig::default() })
        .await
        .map_err(|e| RunError::Internal(format!("cannot start the test web: {e}")))?;
    std::fs::create_dir_all(&args.data)
        .map_err(|e| RunError::Internal(format!("cannot create {}: {e}", args.data)))?;
    let seeds_path = PathBuf::from(&args.data).join("demo-seeds.txt");
    std::fs::write(&seeds_path, farm.start_urls().join("\n") + "\n")
        .map_err(|e| RunError::Internal(format!("cannot write {}: {e}", seeds_path.display())))?;
    eprintln!("test web on {}, crawling {} sites to depth {} into {}", farm.addr(), args.sites, args.depth, args.data);
    let run_args = RunArgs {
        seeds: Some(seeds_path),
        depth: Some(args.depth),
        data: Some(args.data.clone()),
        resolve: vec![farm.resolve_rule()],
        allow_private: true,
        delay: Some(10),
        per_host: Some(4),
        scope: Some("domain".into()),
        timeout: Some("5s".into()),
        json: args.json,
        ..RunArgs::default()
    };
    let cfg = CrawlConfig::from_sources(&run_args).map_err(|e| RunError::Internal(e.to_string()))?;
    let summary = driver::run(cfg).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary).unwrap_or_default());
    } else {
        print!("{}", summary.table());
        println!("\nParquet output: {0}/doc/layer=*/ (pages) and {0}/links/layer=*/ (link graph)", summary.data);
        println!("Read it with DuckDB:\n  duckdb -c \"SELECT layer, status, count(*) AS pages FROM read_parquet('{}/doc/*/*.parquet', hive_partitioning=false) GROUP BY ALL ORDER BY ALL\"", args.data);
    }
    farm.shutdown();
    Ok(())
}
