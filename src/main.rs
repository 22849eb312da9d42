//! The `layercrawl` command line: parses flags, runs a stage, maps errors to
//! exit codes (0 success, 1 run failure, 2 bad input or settings).

mod demo;
mod docs_cmd;
mod plan_cmd;
mod rules_cmd;

use std::process::ExitCode;

// Off with `--no-default-features`, e.g. to profile the heap with heaptrack
// (which sees the system allocator only).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read before `main`: one arena per CPU instead of
/// four per CPU (pages are allocated on the fetch threads and freed on the
/// writer threads, so more arenas only hold more free memory), and freed
/// pages returned to the system after 1 s instead of 10 s. With a shorter
/// fetch queue, the cpu crawl's peak RSS went 353 -> 271 MiB for the same
/// CPU time (5 paired runs); on a 340 k-page crawl the 1 s decay costs 5 %
/// CPU for 11 % less RSS (3 paired runs).
/// The environment variable `_RJEM_MALLOC_CONF` overrides any of them.
#[cfg(feature = "jemalloc")]
#[export_name = "_rjem_malloc_conf"]
static JEMALLOC_CONF: &[u8; 57] = b"percpu_arena:percpu,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

use anyhow::Context as _;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use layercrawl::config::{CrawlConfig, ExecutorChoice, Given, RunOptions};
use layercrawl::driver::{self, RunError};
use layercrawl::exec::task::{self as tasks, TaskError};
use layercrawl::exec::Phase;

#[derive(Parser)]
#[command(name = "layercrawl", version, about = "A MapReduce-style layered batch web crawler writing Parquet")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once at start-up; the size difference is irrelevant.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Crawl from a seeds file, layer by layer, into Parquet under --data.
    Run(RunOptions),
    /// Start the built-in test web on loopback and crawl it into ./data.
    Demo(demo::DemoArgs),
    /// Serve the generated test web until Ctrl-C (for tests, benchmarks, demos).
    Webfarm(testweb::WebfarmArgs),
    /// Make URLs eligible for crawling again: remove them from the visited store.
    Forget(ForgetArgs),
    /// Run one unit of work of a layer on its own (what executors start):
    /// idempotent, needing nothing but the data store.
    Task(TaskArgs),
    /// Check a rules file, or try it on pages (docs/src/rules.md).
    Rules(rules_cmd::RulesArgs),
    /// Check a crawl plan (docs/src/focused-crawling.md).
    Plan(plan_cmd::PlanArgs),
    /// The rule editor: a local web page to write a rules file by clicking
    /// a page's elements (127.0.0.1 only, with a token in its address).
    Studio(layercrawl::studio::StudioArgs),
    /// Write a crawl's report: one self-contained HTML file (funnel,
    /// statuses, hosts, link graph, trends over nights).
    Report(layercrawl::report::ReportArgs),
    /// Load a crawl's Parquet into SQLite or PostgreSQL tables, adding only
    /// the rows the database lacks (docs/src/export.md).
    Export(layercrawl::export::ExportArgs),
    /// Print a generated page of the book (docs/src/options.md).
    #[command(hide = true)]
    Docs(docs_cmd::DocsArgs),
}

#[derive(clap::Args)]
struct TaskArgs {
    /// map: partition I of layer L; optimise: target partition I's share of
    /// layer L+1's input; merge: every layer, once the last is done.
    #[arg(value_enum)]
    phase: Phase,
    /// The crawl's data location (a `layercrawl run` started there).
    #[arg(long, value_name = "DIR|URL")]
    data: String,
    /// The layer; for merge, the crawl's last layer, catch-up layers
    /// included (without it: the crawl's depth).
    #[arg(long, value_name = "L")]
    layer: Option<u32>,
    /// The partition (not for merge).
    #[arg(long, value_name = "I", conflicts_with = "partition_from_env")]
    partition: Option<u32>,
    /// Read the partition from this environment variable, as a batch
    /// scheduler sets it: JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs),
    /// AWS_BATCH_JOB_ARRAY_INDEX, SLURM_ARRAY_TASK_ID.
    #[arg(long, value_name = "VAR")]
    partition_from_env: Option<String>,
    /// The lease generation of the driver that starts the task (the
    /// processes and kubernetes executors pass it): the task watches the
    /// lease, stops its requests when it cannot see it renewed, and commits
    /// nothing once another run holds it (docs/src/cluster.md).
    #[arg(long, value_name = "G")]
    lease_generation: Option<u64>,
    /// What was left of the driver's fence when it started the task, in ms;
    /// without it the task first waits to see the lease renewed.
    #[arg(long, value_name = "MS", requires = "lease_generation", hide = true)]
    fence_ms: Option<u64>,
    /// Print what the task did as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ForgetArgs {
    /// The crawl's data location.
    #[arg(long, value_name = "DIR|URL", default_value = "data")]
    data: String,
    /// URLs to forget.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Near `--max-memory` (docs/src/governor.md), where the cap is about
/// resident memory, the resource governor has jemalloc give freed pages
/// back at once (`now`: no dirty decay in any arena, and what it keeps
/// purged), and away from it, keep them for reuse again. Giving them back
/// at once saves a crawl of 512 KB pages a fifth of its peak memory; it
/// costs time in system calls, so a cap many times the crawl's memory
/// does not turn it on (the thresholds are the governor's).
#[cfg(feature = "jemalloc")]
fn release_freed_memory(now: bool) {
    use std::ffi::{c_void, CString};
    use tikv_jemalloc_sys::mallctl;
    // The decay the run started with (`JEMALLOC_CONF`'s, or the
    // environment's `_RJEM_MALLOC_CONF`), read before it is first changed.
    static CONFIGURED: std::sync::OnceLock<isize> = std::sync::OnceLock::new();
    let configured = *CONFIGURED.get_or_init(|| {
        let (mut ms, mut len): (isize, usize) = (1000, std::mem::size_of::<isize>());
        // SAFETY: reads one ssize_t setting into a value of its size.
        unsafe {
            let old = std::ptr::from_mut(&mut ms).cast::<c_void>();
            mallctl(c"arenas.dirty_decay_ms".as_ptr(), old, &mut len, std::ptr::null_mut(), 0);
        }
        ms
    });
    let ms: isize = if now { 0 } else { configured };
    let set = |name: &std::ffi::CStr| {
        // SAFETY: writes one ssize_t setting, passed with its size; no old
        // value is read. An arena not yet made refuses, and is skipped.
        unsafe {
            let new = std::ptr::from_ref(&ms).cast_mut().cast::<c_void>();
            mallctl(name.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), new, std::mem::size_of::<isize>());
        }
    };
    // The default of arenas made from now on, then every arena there is.
    set(c"arenas.dirty_decay_ms");
    let mut arenas: u32 = 0;
    let mut len = std::mem::size_of::<u32>();
    // SAFETY: reads one unsigned setting into a value of its size.
    unsafe {
        let old = std::ptr::from_mut(&mut arenas).cast::<c_void>();
        mallctl(c"arenas.narenas".as_ptr(), old, &mut len, std::ptr::null_mut(), 0);
    }
    for i in 0..arenas {
        if let Ok(name) = CString::new(format!("arena.{i}.dirty_decay_ms")) {
            set(&name);
        }
    }
    if now {
        // SAFETY: a void mallctl: no old or new value is read or written.
        unsafe {
            mallctl(c"arena.4096.purge".as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), 0);
        }
    }
}

fn main() -> ExitCode {
    init_logging();
    #[cfg(feature = "jemalloc")]
    layercrawl::fetch::governor::set_allocator_release(release_freed_memory);
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Run(options) => {
            let given = matches.subcommand_matches("run").map_or(Given::NotDefault, Given::Matches);
            run(&options, &given)
        }
        Command::Demo(args) => runtime().and_then(|rt| rt.block_on(demo::demo(args)).map_err(Into::into)),
        Command::Webfarm(args) => testweb::run_webfarm(args).map_err(Into::into),
        Command::Forget(args) => forget(&args),
        Command::Task(args) => task(&args),
        Command::Rules(args) => rules_cmd::rules(args),
        Command::Plan(args) => plan_cmd::plan(args),
        Command::Studio(args) => studio(args),
        Command::Report(args) => report(&args),
        Command::Export(args) => export(&args),
        Command::Docs(args) => {
            docs_cmd::docs(&args, &<Cli as clap::CommandFactory>::command());
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", describe(&e));
            if e.downcast_ref::<RunError>().is_some_and(RunError::is_storage) {
                eprintln!("hint: fix the cause (free space, permissions, credentials) and run the same command again: committed work is kept and the rest is redone");
            }
            let code = e
                .downcast_ref::<RunError>()
                .map(RunError::exit_code)
                .or_else(|| e.downcast_ref::<layercrawl::config::ConfigError>().map(|_| 2))
                .or_else(|| {
                    // Out of range, or fenced off (a retry under the same
                    // lease generation cannot commit either): 2.
                    e.downcast_ref::<TaskError>().map(|t| {
                        if matches!(t, TaskError::OutOfRange(_)) || t.fenced() {
                            2
                        } else {
                            1
                        }
                    })
                })
                .or_else(|| e.downcast_ref::<BadTask>().map(|_| 2))
                .or_else(|| e.downcast_ref::<rules_cmd::BadRules>().map(|_| 2))
                .or_else(|| e.downcast_ref::<plan_cmd::BadPlan>().map(|_| 2))
                .or_else(|| {
                    e.downcast_ref::<layercrawl::report::ReportError>().map(layercrawl::report::ReportError::exit_code)
                })
                .or_else(|| e.downcast_ref::<layercrawl::export::ExportError>().map(|x| i32::from(x.exit_code())))
                .unwrap_or(1);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
    }
}

fn run(options: &RunOptions, given: &Given<'_>) -> anyhow::Result<()> {
    let cfg = CrawlConfig::from_options(&options.with_job(given)?)?;
    if cfg.dry_run {
        return dry_run(&cfg);
    }
    let json = cfg.json;
    let summary = runtime()?.block_on(driver::run(cfg))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&summary).context("encoding the summary")?);
    } else {
        print!("{}", summary.table());
    }
    Ok(())
}

/// `--dry-run`: the Jobs of the first layer's phases and of the merge, as
/// YAML documents (each one JSON, which YAML reads), for `kubectl apply
/// --dry-run=server -f -` or a schema check.
fn dry_run(cfg: &CrawlConfig) -> anyhow::Result<()> {
    let ExecutorChoice::Kubernetes(k) = &cfg.executor else {
        anyhow::bail!("--dry-run needs --executor kubernetes");
    };
    let mut phases = vec![(Phase::Map, 0)];
    if cfg.depth > 0 {
        phases.push((Phase::Optimise, 0));
    }
    phases.push((Phase::Merge, cfg.depth));
    for (phase, layer) in phases {
        let job = layercrawl::exec::job_object(k, &cfg.data, cfg.partitions, phase, layer);
        println!("---\n{}", serde_json::to_string_pretty(&job).context("encoding a Job")?);
    }
    Ok(())
}

fn studio(args: layercrawl::studio::StudioArgs) -> anyhow::Result<()> {
    let json = args.json;
    runtime()?.block_on(layercrawl::studio::serve(
        args,
        Box::new(move |url| {
            if json {
                println!("{}", serde_json::json!({ "url": url }));
            } else {
                println!("layercrawl studio: open {url}");
                println!("(127.0.0.1 only; the token in the address is required; Ctrl-C to stop)");
            }
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
        }),
    ))?;
    Ok(())
}

fn report(args: &layercrawl::report::ReportArgs) -> anyhow::Result<()> {
    let json = args.json;
    let progress = |what: &str| {
        if !json {
            eprintln!("layercrawl report: {what}");
        }
    };
    let w = runtime()?.block_on(layercrawl::report::report(args, &progress))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&w).context("encoding what was written")?);
    } else {
        #[allow(clippy::cast_precision_loss)]
        let kb = w.bytes as f64 / 1e3;
        println!(
            "wrote {} ({kb:.0} KB) in {:.1} s: {} layers, {} rows, {} link rows, {} hosts ({} in the graph), {} entity mentions, {} nights of history",
            w.out, w.seconds, w.layers, w.pages, w.link_rows, w.hosts, w.graph_nodes, w.entity_mentions, w.nights
        );
    }
    Ok(())
}

fn export(args: &layercrawl::export::ExportArgs) -> anyhow::Result<()> {
    let cfg = layercrawl::export::ExportConfig::from_args(args)?;
    let summary = runtime()?.block_on(layercrawl::export::export(&cfg, true))?;
    if cfg.json {
        println!("{}", serde_json::to_string_pretty(&summary).context("encoding the summary")?);
    } else {
        print!("{}", summary.table());
    }
    Ok(())
}

/// A `task` command line that names no usable partition.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadTask(String);

fn task(args: &TaskArgs) -> anyhow::Result<()> {
    let part = match (args.phase, args.partition, &args.partition_from_env) {
        (Phase::Merge, _, _) => 0,
        (_, Some(p), _) => p,
        (_, None, Some(var)) => tasks::partition_from_env(var).map_err(BadTask)?,
        (_, None, None) => {
            return Err(BadTask(format!(
                "task {} needs --partition I or --partition-from-env VAR",
                args.phase.as_str()
            ))
            .into())
        }
    };
    let layer = match (args.phase, args.layer) {
        (Phase::Merge, l) => l.unwrap_or(0),
        (_, Some(l)) => l,
        (_, None) => return Err(BadTask(format!("task {} needs --layer L", args.phase.as_str())).into()),
    };
    let fencing = args.lease_generation.map(|generation| tasks::Fencing {
        generation,
        valid_for: args.fence_ms.map(std::time::Duration::from_millis),
    });
    let report = runtime()?.block_on(tasks::run_task(&args.data, args.phase, layer, part, fencing))?;
    if args.json {
        println!("{}", serde_json::to_string(&report).context("encoding the report")?);
    } else {
        eprintln!(
            "{} task{}: {} by attempt {} in {:.1} s",
            report.phase.as_str(),
            if args.phase == Phase::Merge {
                String::new()
            } else {
                format!(" of layer {} partition {}", report.layer, report.partition)
            },
            report.outcome,
            if report.attempt.is_empty() { "-" } else { &report.attempt },
            report.seconds
        );
    }
    Ok(())
}

/// The error and each distinct cause once (error types that embed their
/// source in their message would otherwise repeat it).
fn describe(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}

fn forget(args: &ForgetArgs) -> anyhow::Result<()> {
    let report = runtime()?.block_on(driver::forget(&args.data, &args.urls))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).context("encoding the report")?);
    } else {
        println!(
            "forgot {} URLs ({} visited-store entries removed); they are crawled again when next linked",
            report.urls.len(),
            report.removed
        );
    }
    Ok(())
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}
