//! The map stage: fetch one partition of one layer and commit its shards.
//!
//! Its unit of work is [`map_partition`], given a [`MapCtx`] that holds
//! only what a map task needs (the data store, the run's settings for
//! processing pages, the fetcher): it can run on its own, in the driver's
//! process or any other.
//!
//! Input `in/layer=L/part-K`; outputs `doc/layer=L/part-K`,
//! `links/layer=L/part-K`, the carried-over URLs, the partition's content
//! hashes and, unless it is the last layer, its links bucketed by target
//! partition for the optimise step (the shuffle, as in MapReduce); then,
//! last, the manifest that commits them all. Each attempt writes into its
//! own folder and the first to commit publishes ([`crate::store::attempt`]),
//! so the task is idempotent: run again, it does nothing but report.

use std::sync::Arc;
use std::time::Instant;

use futures::stream::{FuturesOrdered, StreamExt};
use url::Url;

use crate::config::{load_run, RunSettings};
use crate::dedup::content::{Claim, FirstUrls};
use crate::error::StageError;
use crate::extract::Extractors;
use crate::fetch::{ErrorKind, Fetched, Fetcher, LayerTail};
use crate::partition::partition_of_host;
use crate::scope::ScopeFilter;
use crate::store::attempt::{self, Attempt};
use crate::store::dataset::{IN, LINKS};
use crate::store::manifest::{MapManifest, RunState};
use crate::store::schema::{self, DocRow, InRow};
use crate::store::scratch::InputRows;
use crate::store::{layout, stream_batches, Created, ShardWriter, Store, StoreError};

pub use crate::config::{PageSettings, RulesSource};
use layer_rules::same_rules_as_the_layer;
use output::{Opened, Opening, Outputs};
use previous::Previous;
use process::process_guarded;
pub use process::{process, ProcessCtx, Processed};
use urls::{partition_quota, Urls};

mod gate;
mod held;
mod layer_rules;
mod output;
pub mod previous;
mod process;
mod replay;
pub mod sitemaps;
mod urls;

/// Where a map task reports its progress (the driver's progress bars);
/// [`Silent`] reports nothing.
pub trait MapProgress: Send + Sync {
    /// One URL is done (`failed`: an error or an HTTP error status).
    fn page_done(&self, failed: bool);
    /// URLs carried into the next layer unfetched.
    fn pages_carried(&self, n: u64);
    /// URLs of the input the noise filter did not fetch.
    fn pages_skipped(&self, _n: u64) {}
}

/// A [`MapProgress`] that reports nothing.
pub struct Silent;

impl MapProgress for Silent {
    fn page_done(&self, _failed: bool) {}
    fn pages_carried(&self, _n: u64) {}
}

/// Everything a map task needs besides its layer and partition number.
#[derive(Clone)]
pub struct MapCtx {
    pub store: Store,
    /// The run's partition count (fixed for a data location).
    pub partitions: u32,
    /// The crawl's `--depth`: the last layer's links are not shuffled.
    pub depth: u32,
    pub scope: ScopeFilter,
    pub pages: PageSettings,
    /// The noise filter's mode (`--denoise`): which links the map side
    /// labels, and whether it follows the prefilter's suspects.
    pub denoise: crate::config::Denoise,
    /// The order of the input (`--order`): with `ant`, each map task
    /// tallies its pages' deposits per URL cluster (`focus::ant`).
    pub order: crate::focus::Order,
    pub fetcher: Fetcher,
    /// When the layer's time budget (`--layer-timeout`) runs out.
    pub deadline: Option<Instant>,
    /// The layer's tail, shared by the partitions of one process: when only
    /// stragglers are left in every partition, the layer ends.
    pub tail: Option<Arc<LayerTail>>,
    pub progress: Arc<dyn MapProgress>,
    /// The extractors, whose columns follow the core
    /// columns of `doc`: code, not settings, so a caller that registered
    /// its own for the run sets them here too (`open` sets those the run's
    /// settings make, [`Extractors::of_run`]).
    pub extract: Extractors,
    /// Last night's crawl (`--previous`): requests are conditional, and a
    /// 304 carries last night's page forward.
    pub previous: Option<Arc<Previous>>,
}

/// Rows buffered before a batch is handed to the Parquet writer...
pub const BATCH_ROWS: usize = 512;
/// ...or bytes of body and text, whichever comes first: with many
/// partitions at work at once, a partition's batch, its encoder's row
/// group and its fetch queue are what the crawl's memory is made of. On
/// the cpu crawl (24 KB pages), 2 MiB -> 1 MiB took peak RSS 240 -> 224
/// MiB and 1 MiB -> 512 KiB 230 -> 217 MiB, with the same CPU and files
/// (3 paired runs each, medians, on a loaded machine).
pub const BATCH_BYTES: usize = 512 << 10;
/// Row-group size of per-partition shards, as encoded (the merge keeps
/// the row groups, so this is also what readers see).
pub const SHARD_ROW_GROUP_BYTES: usize = 4 << 20;
/// Fetched pages waiting for a parse worker, per partition: enough to keep
/// the parse pool busy between two wake-ups (every partition feeds the same
/// pool); each waiting page is a body in memory.
const FETCHED_QUEUE: usize = 16;

impl MapCtx {
    /// The one constructor of a map context: the run at `store` whose
    /// fixed state is `state` (`state/run.json`: partitions, scope, seeds)
    /// and whose settings are `settings`, fetching with `fetcher`, its
    /// pages given to `extract` (the run's extractors, code not settings),
    /// last night's crawl `previous` (`--previous`); no progress bars
    /// ([`Self::with_progress`]), no layer tail and no deadline.
    #[must_use]
    pub fn new(
        store: Store,
        state: &RunState,
        settings: &RunSettings,
        fetcher: Fetcher,
        extract: Extractors,
        previous: Option<Arc<Previous>>,
    ) -> Self {
        let seeds: Vec<Url> = state.seeds.iter().filter_map(|s| Url::parse(s).ok()).collect();
        Self {
            store: store.with_compression(settings.compression),
            partitions: state.partitions,
            depth: settings.depth,
            scope: ScopeFilter::from_seeds(state.scope, &seeds),
            pages: settings.pages.clone(),
            denoise: settings.optimise.denoise,
            order: settings.optimise.order,
            fetcher,
            deadline: None,
            tail: None,
            progress: Arc::new(Silent),
            extract,
            previous,
        }
    }

    /// The same context reporting its progress to `progress`.
    #[must_use]
    pub fn with_progress(self, progress: Arc<dyn MapProgress>) -> Self {
        Self { progress, ..self }
    }

    /// A map context from the data store alone: the run's fixed state
    /// (`state/run.json`: partitions, scope, seeds) and the latest run's
    /// settings (`state/settings.json`), the extractors those settings make
    /// ([`Extractors::of_run`]), a fetcher of its own, no progress bars, no
    /// layer tail (a task alone cannot know its layer's other partitions,
    /// so it runs until its own work is done), and the layer's time budget
    /// counted from now.
    ///
    /// # Errors
    /// When either file is missing (no crawl started there) or unreadable,
    /// the run's plan or entity settings no longer compile, the HTTP
    /// client cannot be built, or last night's crawl cannot be opened.
    pub async fn open(store: Store) -> Result<Self, StageError> {
        let (state, settings) = load_run(&store).await?;
        let pages = &settings.pages;
        let extract =
            Extractors::of_run(pages.text_format, pages.store_text, pages.plan.as_ref(), pages.entities.as_ref())
                .map_err(|e| StageError::Internal(e.to_string()))?;
        let fetcher = Fetcher::new(&settings.fetch)
            .map_err(|e| StageError::Internal(format!("cannot build the HTTP client: {e}")))?;
        let previous = match &pages.previous {
            Some(location) => Some(Arc::new(Previous::open(location, store.location()).await?)),
            None => None,
        };
        let mut ctx = Self::new(store, &state, &settings, fetcher, extract, previous);
        ctx.deadline = settings.layer_timeout.map(|t| Instant::now() + t);
        Ok(ctx)
    }
}

/// Reads one partition's input rows (none when the file does not exist)
/// into a temporary file; see [`InputRows`].
///
/// # Errors
/// When the file exists but cannot be read, or the temporary file fails.
pub async fn read_input(store: &Store, layer: u32, part: u32) -> Result<InputRows, StoreError> {
    let path = layout::shard(IN.name, layer, part);
    let mut rows = InputRows::new().map_err(|e| StoreError::scratch(&path, e))?;
    if store.exists(&path).await? {
        let mut stream = stream_batches(store, &path, None).await?;
        while let Some(b) = stream.next().await {
            rows.push(&b?, &path)?;
        }
    }
    rows.finish(&path)?;
    Ok(rows)
}

/// 304 answers waiting for last night's bodies, read a batch at a time.
const REPLAY_BATCH: usize = 256;

/// Runs the map task of `part` in `layer` and returns its manifest.
///
/// # Errors
/// Storage failures only; a URL's failure is a row.
pub async fn map_partition(ctx: &MapCtx, layer: u32, part: u32) -> Result<MapManifest, StageError> {
    map_task(ctx, layer, part).await.map(|(m, _)| m)
}

/// Runs the map task of `part` in `layer` unless it is committed already;
/// returns the committed manifest and whether this call committed it
/// ([`Created::New`]) or found it committed, by an earlier run or by an
/// attempt that ran at the same time ([`Created::Existed`]).
///
/// # Errors
/// Storage failures only; a URL's failure is a row.
pub async fn map_task(ctx: &MapCtx, layer: u32, part: u32) -> Result<(MapManifest, Created), StageError> {
    // Taken first, so that a task that fails or has nothing to do leaves
    // its layer's tail as soon as it ends.
    let seat = ctx.tail.as_ref().map(LayerTail::seat);
    let given = ctx.extract.column_names();
    if given != ctx.pages.extract_columns {
        return Err(StageError::ExtractorsDiffer { run: ctx.pages.extract_columns.clone(), given });
    }
    let task_dir = layout::task_attempts(layer, "map", part);
    if let Some(done) = ctx.store.get_json::<MapManifest>(&layout::map_manifest(layer, part)).await? {
        attempt::roll_forward(&ctx.store, &task_dir, &done).await?;
        return Ok((done, Created::Existed));
    }
    let started = Instant::now();
    let attempt =
        Attempt::start(&task_dir).fenced_by(layout::task_fence(layer, "map", part), ctx.fetcher.fence().cloned());
    let store = &attempt.store(&ctx.store);
    let rules = match &ctx.pages.rules {
        Some(src) => Some(Arc::new(src.compile().map_err(|e| StageError::Internal(format!("the run's rules: {e}")))?)),
        None => None,
    };
    // Opened before anything is read: with a sink, a partition that an
    // earlier attempt published is committed from that attempt's outputs,
    // not fetched again.
    let opening = Opening { ctx, staged: store, layer, part, rules: rules.as_ref() };
    let mut outputs = match Outputs::open(&opening).await? {
        Opened::Ready(outputs) => outputs,
        Opened::Committed(done) => return Ok((*done, Created::Existed)),
    };
    let input = Arc::new(read_input(store, layer, part).await?);
    let input_path = layout::shard(IN.name, layer, part);
    let input_err = |e| StageError::Store(StoreError::scratch(&input_path, e));
    let mut manifest = MapManifest {
        layer,
        partition: part,
        attempt: attempt.id.clone(),
        input: input.len() as u64,
        // Every layer before the depth shuffles its links, and a later one
        // whose input has URLs carried over from before the depth (their
        // links are within it: a catch-up layer follows).
        shuffled: layer < ctx.depth || i64::from(input.min_depth()) < i64::from(ctx.depth),
        ..MapManifest::default()
    };
    if input.is_empty() {
        // No page to publish: committed without the outputs (a sink
        // publishes nothing).
        let path = layout::map_manifest(layer, part);
        return Ok(attempt::commit(&ctx.store, &path, &attempt, manifest).await?);
    }
    let mut first_urls = load_content_hashes(store, part, layer).await?;
    manifest.rules_used = ctx.pages.rules.as_ref().map(RulesSource::identity);
    same_rules_as_the_layer(&ctx.store, layer, manifest.rules_used.as_deref()).await?;
    let partitions = ctx.partitions;
    let scope = ctx.scope.clone();
    let follows =
        move |u: &Url| scope.allows(u) && partition_of_host(u.host_str().unwrap_or_default(), partitions) == part;
    let deadline = ctx.deadline;
    // Under a memory cap, the pages this task holds count against the
    // process's allowance in bytes (docs/src/governor.md).
    let mut held = held::HeldPages::new(ctx.fetcher.governor().map(crate::fetch::governor::Governor::pages));
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Fetched>(held.queue(FETCHED_QUEUE));
    let fetcher = ctx.fetcher.clone();
    let index = match &ctx.previous {
        Some(p) => Some(Arc::new(p.index(part, ctx.partitions).await?)),
        None => None,
    };
    let quota = match ctx.pages.budget.max_pages {
        Some(max) => partition_quota(&ctx.store, layer, part, max, input.len()).await?,
        None => None,
    };
    manifest.budget_cut = quota.map_or(0, |q| input.len().saturating_sub(q) as u64);
    // The noise filter's groups decided in this layer by their probes, in
    // an input in the URLs' order (a learned or ant-colony order ranks it),
    // without a page budget (which keeps the input's first URLs: the gates
    // would change which).
    let ranked = matches!(ctx.order, crate::focus::Order::Ant | crate::focus::Order::Learned)
        || ctx.pages.budget.max_pages.is_some();
    let gates = match ctx.denoise {
        crate::config::Denoise::Off => None,
        _ if ranked => None,
        _ => gate::Gates::open(store, layer, part, &input).await?.map(Arc::new),
    };
    let urls = Urls(Arc::clone(&input), index.clone(), quota, gates.clone());
    let fetch = tokio::spawn(async move { fetcher.fetch_partition(&urls, follows, deadline, seat, tx).await });

    let pctx = std::sync::Arc::new(ProcessCtx {
        partition: i32::try_from(part).unwrap_or(i32::MAX),
        parse: ctx.pages.parse.clone(),
        store_text: ctx.pages.store_text,
        store_body: ctx.pages.store_body,
        scope: ctx.scope.clone(),
        nofollow: ctx.pages.nofollow,
        denoise: ctx.denoise,
        extract: ctx.extract.clone(),
        rules: rules.clone(),
        plan: match &ctx.pages.plan {
            Some(p) => Some(Arc::new(
                crate::focus::LinkScoring::new(p, &given)
                    .map_err(|e| StageError::Internal(format!("the run's plan: {e}")))?,
            )),
            None => None,
        },
        warc: outputs.archive(),
        site: output::site_for(ctx, layer, part).await?,
        main_text: ctx.extract.column_names().iter().position(|c| c == "main_text"),
    });
    // With a plan: the pages scored and relevant (the summary's harvest
    // rate) and, for `--order ant`, what they deposit per URL cluster (for
    // `learned`, every page's reward).
    let mut harvest = pctx.plan.clone().map(|p| crate::focus::Harvest::new(p, ctx.order));
    let mut pending = FuturesOrdered::new();
    // Pages shallower than this have links within the depth.
    let depth_limit = i32::try_from(ctx.depth).unwrap_or(i32::MAX);
    let max_pending = rayon::current_num_threads() * 4;
    let mut fetch_open = true;
    // 304 answers waiting for last night's bodies (`--previous`).
    let mut replay: Vec<(Fetched, previous::Entry)> = Vec::new();
    // A page on its way to a parse worker, and the bytes it holds.
    let spawn = |f: Fetched, unchanged: bool| -> Result<_, StageError> {
        let InRow { depth, referrer, anchor, .. } = input.row(f.id).map_err(input_err)?;
        let bytes = f.response.as_ref().map_or(0, |r| r.body.len());
        let pctx = std::sync::Arc::clone(&pctx);
        let (otx, orx) = tokio::sync::oneshot::channel();
        rayon::spawn(move || {
            let mut done = process_guarded(&pctx, f, depth, referrer, anchor.as_deref());
            done.doc.unchanged = unchanged;
            let _ = otx.send(done);
        });
        Ok((futures::FutureExt::map(orx, move |done| (done, bytes)), bytes))
    };
    loop {
        if replay.len() >= REPLAY_BATCH || (!fetch_open && !replay.is_empty()) {
            let previous = ctx.previous.as_deref().expect("304s are replayed only with --previous");
            let mut fresh = Vec::new();
            for f in replay::carry_forward(ctx, part, previous, std::mem::take(&mut replay), &mut manifest, &mut fresh)
                .await?
            {
                let (page, bytes) = spawn(f, true)?;
                held.took(bytes);
                pending.push_back(page);
            }
            for f in fresh {
                let (page, bytes) = spawn(f, false)?;
                held.took(bytes);
                pending.push_back(page);
            }
        }
        let room = held.room();
        if !room && pending.is_empty() && outputs.buffered_bytes() > 0 {
            // Waiting for room: this task's rows go to the encoder first,
            // so that the process's held pages can fall to none.
            outputs.flush_pages().await?;
            held.written(outputs.buffered_bytes());
            continue;
        }
        let takes = if ctx.fetcher.memory_tight() { 1 } else { max_pending };
        tokio::select! {
            got = rx.recv(), if fetch_open && room && pending.len() < takes => match got {
                Some(f) => {
                    let entry = index.as_deref().zip(f.response.as_ref()).and_then(|(index, r)| {
                        (r.status == 304).then(|| index.get(f.final_url.as_str())).flatten()
                    });
                    match entry {
                        Some(e) => replay.push((f, e.clone())),
                        None => {
                            let (page, bytes) = spawn(f, false)?;
                            held.took(bytes);
                            pending.push_back(page);
                        }
                    }
                }
                None => fetch_open = false,
            },
            () = held.changed(), if fetch_open && !room => {}
            Some((done, bytes)) = pending.next(), if !pending.is_empty() => {
                let Ok(mut page) = done else {
                    return Err(StageError::Internal("a parse worker died".into()));
                };
                let doc = &mut page.doc;
                if let (Some(h), true) = (doc.content_hash, (200..300).contains(&doc.status)) {
                    if let Claim::DuplicateOf(first) = first_urls.claim(h, &doc.url).map_err(scratch_err)? {
                        doc.duplicate_of = Some(first);
                    }
                }
                tally(&mut manifest, doc);
                if let Some(tail) = ctx.tail.as_ref().filter(|_| doc.depth < depth_limit && !page.links.is_empty()) {
                    tail.next_has_work();
                }
                if let Some(h) = &mut harvest {
                    h.add(&doc.url, &doc.extra);
                }
                let skipped = doc.error == Some(ErrorKind::Robots);
                ctx.progress.page_done(!skipped && (doc.error.is_some() || doc.status >= 400));
                if let Some(g) = &gates {
                    g.page(&page.doc.url, page.sample.as_ref());
                }
                outputs.add(page, &mut manifest, ctx.fetcher.memory_tight() || held.over()).await?;
                held.processed(bytes, outputs.buffered_bytes());
            },
            else => break,
        }
    }
    let report = fetch.await.map_err(|e| StageError::Internal(format!("fetch task failed: {e}")))?;
    if ctx.fetcher.fenced() {
        // Another run may hold the location now: commit nothing.
        return Err(StageError::LeaseLost);
    }
    if let (0, Some(max_urls), true) = (layer, ctx.pages.sitemaps, layer < ctx.depth) {
        let found = sitemaps::read_partition(ctx, store, &input, part, max_urls).await?;
        manifest.sitemap_files = found.files;
        manifest.sitemap_urls = found.rows.len() as u64;
        manifest.sitemap_problems = found.problems.len() as u64;
        outputs.add_links(found.links);
    }
    let outputs = outputs.finish(&mut manifest).await?;
    if let Some(g) = &gates {
        manifest.gates = g.let_through();
    }
    if let (Some(g), false) = (&gates, report.declined.is_empty()) {
        let rows =
            report.declined.iter().map(|&id| input.row(id)).collect::<Result<Vec<InRow>, _>>().map_err(input_err)?;
        let evidence: Vec<_> = rows.iter().map(|r| g.evidence(r)).collect();
        for e in &evidence {
            if crate::optimise::skip_reason(e) == "errors" {
                manifest.skipped.errors += 1;
            } else {
                manifest.skipped.copies += 1;
            }
        }
        let skipped: Vec<_> = rows.iter().zip(&evidence).collect();
        crate::optimise::write_skipped(store, &layout::held_back(layer, part), &skipped).await?;
        ctx.progress.pages_skipped(skipped.len() as u64);
    }
    if !report.carried.is_empty() {
        let mut carried =
            report.carried.iter().map(|&id| input.row(id)).collect::<Result<Vec<InRow>, _>>().map_err(input_err)?;
        // A URL that failed in this layer takes its retries along.
        let retried: std::collections::HashMap<usize, u32> = report.retried.iter().copied().collect();
        for (row, id) in carried.iter_mut().zip(&report.carried) {
            if let Some(&r) = retried.get(id) {
                row.retries = row.retries.max(r);
            }
        }
        let mut w =
            ShardWriter::create(store, &layout::carry(layer, part), schema::input_schema(), SHARD_ROW_GROUP_BYTES)?;
        w.write(&schema::input_batch(&carried)?).await?;
        w.finish().await?;
        ctx.progress.pages_carried(carried.len() as u64);
    }
    let fresh = first_urls.fresh_len();
    if fresh > 0 {
        let mut w =
            ShardWriter::create(store, &layout::content(part, layer), schema::content_schema(), SHARD_ROW_GROUP_BYTES)?;
        for start in (0..fresh).step_by(BATCH_ROWS * 64) {
            let rows = first_urls.fresh_rows(start..fresh.min(start + BATCH_ROWS * 64)).map_err(scratch_err)?;
            w.write(&schema::content_batch(&rows)?).await?;
        }
        w.finish().await?;
    }
    if manifest.shuffled && manifest.links > 0 {
        // The shuffle's map side: this partition's links, merged per
        // target, bucketed by target partition for the optimise step.
        let suspects =
            crate::shuffle::Suspects { ratio: ctx.pages.parse.noise_ratio, followed: ctx.denoise.follows_suspects() };
        let links_path = store.write_path(&layout::shard(LINKS.name, layer, part));
        let max_depth = i32::try_from(ctx.depth).unwrap_or(i32::MAX);
        let counts =
            crate::shuffle::spill_links(store, &links_path, layer, part, ctx.partitions, max_depth, suspects).await?;
        manifest.candidates = counts.candidates;
        manifest.dom_noise = counts.dom_noise;
    }
    if let Some(h) = harvest {
        (manifest.scored, manifest.relevant) = h.finish(store, layer, part).await?;
    }
    manifest.carried = report.carried.len() as u64;
    manifest.robots_requests = report.robots_requests;
    manifest.retries = report.retries;
    (manifest.hosts_down, manifest.breaker_opens, manifest.host_pauses) =
        (report.hosts_down, report.breaker_opens, report.host_pauses);
    manifest.not_requested = report.not_requested;
    (manifest.backoffs, manifest.hosts_slowed, manifest.max_delay_ms) =
        (report.backoffs, report.hosts_slowed, report.max_delay_ms);
    (manifest.dns_queries, manifest.dns_cached, manifest.dns_failures) =
        (report.dns.queries, report.dns.cached, report.dns.failures);
    manifest.proxies = report.proxies;
    (manifest.host_paces, manifest.late_host) = (report.host_paces, report.late_host);
    manifest.stragglers = report.stragglers_in_flight + report.stragglers_waiting;
    manifest.stragglers_in_flight = report.stragglers_in_flight;
    manifest.adopted = report.adopted;
    manifest.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    outputs.commit(&ctx.store, &attempt, manifest).await
}

fn tally(m: &mut MapManifest, doc: &DocRow) {
    m.fetched += 1;
    m.rendered += u64::from(doc.rendered);
    if !doc.unchanged {
        m.bytes += u64::try_from(doc.content_length).unwrap_or(0);
    }
    if doc.error == Some(ErrorKind::Robots) {
        m.robots += 1;
    } else if let Some(kind) = doc.error {
        *m.errors.entry(kind.as_str().to_string()).or_default() += 1;
    } else if doc.status >= 400 {
        *m.errors.entry(format!("http_{}xx", doc.status / 100)).or_default() += 1;
    } else if (200..300).contains(&doc.status) {
        m.ok += 1;
    }
}

/// Content hashes of this partition's pages in earlier layers, with the
/// URL of the first page of each (what `duplicate_of` names), streamed in.
async fn load_content_hashes(store: &Store, part: u32, layer: u32) -> Result<FirstUrls, StageError> {
    let mut first = FirstUrls::new().map_err(scratch_err)?;
    for earlier in 0..layer {
        let path = layout::content(part, earlier);
        if !store.exists(&path).await? {
            continue;
        }
        let mut stream = stream_batches(store, &path, None).await?;
        while let Some(b) = stream.next().await {
            let b = b?;
            for (h, url) in schema::content_rows(&b, &path)? {
                first.claim(h, url).map_err(scratch_err)?;
            }
        }
    }
    first.mark();
    Ok(first)
}

/// The first-URL log lives in the temporary folder: say so when it fails.
fn scratch_err(e: std::io::Error) -> StageError {
    StageError::scratch(e)
}
