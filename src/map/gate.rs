//! The noise filter's cold groups decided in their own layer
//! ([`crate::denoise::gate`]): the map task holds back the rest of each
//! group until its probes' pages have been judged, then has the scheduler
//! fetch them or not ([`Admit`]); those not fetched become rows of the
//! `skipped` dataset with the probes' evidence.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Instant;

use url::Url;

use crate::denoise::evidence::{templates, Sample, SeenTexts};
use crate::denoise::gate::{gates_rows, Gate, GroupTally, Held, Why};
use crate::denoise::yields::{coarse_of, ClassCount};
use crate::error::StageError;
use crate::fetch::Admit;
use crate::store::manifest::GateCounts;
use crate::store::schema::InRow;
use crate::store::scratch::InputRows;
use crate::store::{layout, read_if_exists, Store};
use crate::urlnorm;

/// One partition's gates in one layer, with what its probes' pages were.
pub(super) struct Gates {
    /// Each gated URL of the input, by its fingerprint.
    by_url: HashMap<u64, Gate>,
    groups: Mutex<HashMap<u64, GroupTally>>,
    /// The rest let through, by why; the groups let through without their
    /// probes' verdict (logged once each).
    let_through: Mutex<(GateCounts, HashSet<u64>)>,
    /// The texts of the partition's earlier layers, which the probes are
    /// judged against (and each other: [`GroupTally::probe_back`]).
    seen: SeenTexts,
}

impl Gates {
    /// Partition `part`'s gates of `layer` for its `input`; none when its
    /// input has none (no file, or no gated URL in the input), or when the
    /// input is ranked best first (a crawl plan's priorities): there the
    /// scheduler keeps its order, and a URL held back would start after
    /// worse ones, so cold classes are fetched whole, as before the gates
    /// (the map task leaves out the ranked orders and page budgets too).
    pub(super) async fn open(
        store: &Store,
        layer: u32,
        part: u32,
        input: &InputRows,
    ) -> Result<Option<Self>, StageError> {
        let path = layout::gates(layer, part);
        let mut given = HashMap::new();
        for b in read_if_exists(store, &path).await? {
            let rows = gates_rows(&b).ok_or_else(|| crate::optimise::missing(&path, "fingerprint, group, probe"))?;
            given.extend(rows);
        }
        if given.is_empty() {
            return Ok(None);
        }
        // Only the probes in the input count: a URL the visited store or a
        // page budget left out is never fetched, and its group must not wait
        // for it.
        let (mut fingerprints, mut gated) = (Vec::new(), Vec::new());
        for id in 0..input.len() {
            let row = input.row(id).map_err(|e| StageError::Store(crate::store::StoreError::scratch(&path, e)))?;
            if row.priority.is_some() {
                return Ok(None);
            }
            let fp = urlnorm::fingerprint_str(&row.url);
            if let Some(gate) = given.get(&fp) {
                fingerprints.push(fp);
                gated.push(*gate);
            }
        }
        if gated.is_empty() {
            return Ok(None);
        }
        // A group the visited store left short of probes takes its first
        // rest as probes, so that it can still be judged.
        let made = crate::denoise::gate::top_up_probes(&mut gated);
        tracing::debug!(layer, part, gated = gated.len(), made, "the layer's gates");
        let mut groups: HashMap<u64, GroupTally> = HashMap::new();
        for gate in &gated {
            groups.entry(gate.group).or_default().probes += u32::from(gate.probe);
        }
        let by_url: HashMap<u64, Gate> = fingerprints.into_iter().zip(gated).collect();
        let seen = crate::optimise::read_seen(store, layer, part).await?;
        Ok(Some(Self { by_url, groups: Mutex::new(groups), let_through: Mutex::default(), seen }))
    }

    /// Whether the scheduler requests `url` now, later or not in this layer.
    pub(super) fn admit(&self, url: &Url) -> Admit {
        let Some(gate) = self.by_url.get(&urlnorm::fingerprint(url)).filter(|g| !g.probe) else {
            return Admit::Now;
        };
        let Ok(mut groups) = self.groups.lock() else { return Admit::Now };
        let tally = groups.entry(gate.group).or_default();
        let why = match tally.decide(url.as_str(), Instant::now()) {
            Held::Fetch(why) => why,
            Held::Wait => return Admit::Later,
            Held::Skip { .. } => return Admit::Never,
        };
        let (probes, back, judged) = (tally.probes, tally.probes_done, tally.fetched);
        drop(groups);
        if let Ok(mut guard) = self.let_through.lock() {
            let (n, logged) = &mut *guard;
            if matches!(why, Why::Unjudged | Why::Released) && logged.insert(gate.group) {
                tracing::debug!(%url, probes, back, judged, ?why, "the rest of this URL's group is fetched without its probes' verdict");
            }
            *match why {
                Why::NewTexts => &mut n.new_texts,
                Why::Sampled => &mut n.sampled,
                Why::Unjudged => &mut n.unjudged,
                Why::Released => &mut n.released,
            } += 1;
        }
        Admit::Now
    }

    /// The rest let through so far, by why.
    pub(super) fn let_through(&self) -> GateCounts {
        self.let_through.lock().map(|n| n.0).unwrap_or_default()
    }

    /// Takes a page of the layer, requested as `url` (`sample`: what the
    /// filter keeps of it; none for a row no request made, such as one
    /// robots.txt disallowed), if it is a probe.
    pub(super) fn page(&self, url: &str, sample: Option<&Sample>) {
        if let Some(gate) = self.by_url.get(&urlnorm::fingerprint_str(url)).filter(|g| g.probe) {
            if let Ok(mut groups) = self.groups.lock() {
                groups.entry(gate.group).or_default().probe_back(sample.cloned(), &self.seen);
            }
        }
    }

    /// The evidence a URL not fetched was skipped on: its templates (of the
    /// page that linked it and its own, cut to two path segments) and its
    /// group's probes.
    pub(super) fn evidence(&self, row: &InRow) -> ClassCount {
        let tally = self
            .by_url
            .get(&urlnorm::fingerprint_str(&row.url))
            .and_then(|g| self.groups.lock().ok()?.get(&g.group).cloned())
            .unwrap_or_default();
        let template = |u: &str| coarse_of(&templates(u)[0]);
        ClassCount {
            level: 1,
            source: row.referrer.as_deref().map_or(String::new(), template),
            target: template(&row.url),
            fetched: tally.fetched,
            new: tally.new,
            errors: tally.errors,
            previous: false,
        }
    }
}
