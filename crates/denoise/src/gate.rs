//! Cold groups decided in their own layer.
//!
//! A class of links never fetched (a *cold* class, `yields::Verdict::Cold`)
//! on a host whose pages were mostly new is not worth a layer's wait, so
//! its URLs go into the next layer at once. There its first probes (the
//! first [`COLD_BATCH`] of its group by a hash of the URL, or
//! [`VIEW_BATCH`] of a kind of view) are fetched first and the rest are
//! held back by the scheduler until the probes' pages have been judged:
//! if they brought new texts, the rest are fetched in the same layer; if
//! they were copies, the rest are skipped, but for one in [`PROBE_EVERY`],
//! and listed with the probes' evidence. Nothing waits a layer, and the
//! URLs keep their depth.
//!
//! [`COLD_BATCH`]: crate::yields::COLD_BATCH
//! [`VIEW_BATCH`]: crate::yields::VIEW_BATCH

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BooleanArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::evidence::{judging_order, Outcome, Sample, SeenTexts};
use crate::yields::{MIN_EVIDENCE, MIN_YIELD, PROBE_EVERY};

/// A URL of a cold group decided in its own layer: one of the group's
/// first probes, or one of the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gate {
    /// The group, by a hash of its name.
    pub group: u64,
    pub probe: bool,
}

/// The longest the rest of a group waits without any of its probes coming
/// back (from the first time one of the rest is held back, or from the
/// last probe back): a probe that never ends (a host that stalls, a
/// straggler handed to the next layer) must not hold its group, nor keep
/// its layer from ending, while a slow host whose probes keep coming back
/// (a busy application, a host its politeness slowed down) is waited for.
/// The rest is then fetched, as it was before the decision moved into the
/// layer.
pub const MAX_HOLD: Duration = Duration::from_secs(10);

/// What the rest of a group's URLs get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// Requested, and why.
    Fetch(Why),
    /// Ask again later: probes are still out.
    Wait,
    /// Not fetched: the probes' pages were mostly copies (`errors`: mostly
    /// client errors).
    Skip { errors: bool },
}

/// Why one of a group's rest was fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// The probes' pages brought new texts.
    NewTexts,
    /// The probes' pages were copies, and this is the one in
    /// [`PROBE_EVERY`] fetched still, so that a class that changes is seen.
    Sampled,
    /// Too few probes were judged ([`MIN_EVIDENCE`]): they failed, or
    /// answered with server errors, or no request was made.
    Unjudged,
    /// Probes were still out after the longest hold ([`MAX_HOLD`]).
    Released,
}

/// One group's probes in the layer: how many were given, how many of their
/// pages have come back, and, once all have, what they turned out to be.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupTally {
    pub probes: u32,
    pub probes_done: u32,
    /// The probes' pages that came back (none for a row no request made),
    /// judged together when the last one has.
    back: Vec<Option<Sample>>,
    /// Probes' pages judged (neutral outcomes are no evidence, as in the
    /// class counts).
    pub fetched: u64,
    pub new: u64,
    pub errors: u64,
    /// Since when the group's rest has been held back without a probe
    /// coming back (none: not held since the last probe came back).
    pub held_since: Option<Instant>,
}

impl GroupTally {
    /// Takes one probe's page (`None`: a row no request made, such as one
    /// robots.txt disallowed). When the last has come back, the probes are
    /// judged in the order the optimise step judges a layer's pages
    /// ([`judging_order`]), against the earlier layers' texts (`seen`) and
    /// each other's: what they are does not depend on the order they came
    /// back in, nor on the rest of the layer, so the same pages decide the
    /// same way on every run.
    pub fn probe_back(&mut self, page: Option<Sample>, seen: &SeenTexts) {
        self.probes_done += 1;
        self.back.push(page);
        // The probes are coming back: the longest hold starts again.
        self.held_since = None;
        if self.probes_done < self.probes {
            return;
        }
        let mut back: Vec<Sample> = std::mem::take(&mut self.back).into_iter().flatten().collect();
        judging_order(&mut back);
        let mut texts = HashSet::new();
        for s in &back {
            self.add(seen.judge_beside(s, &mut texts));
        }
    }

    /// Counts one judged probe.
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::New => {
                self.fetched += 1;
                self.new += 1;
            }
            Outcome::Copy => self.fetched += 1,
            Outcome::Error => {
                self.fetched += 1;
                self.errors += 1;
            }
            Outcome::Neutral => {}
        }
    }

    /// What `url`, one of the group's rest, gets at `now`.
    pub fn decide(&mut self, url: &str, now: Instant) -> Held {
        if self.probes_done < self.probes {
            let since = *self.held_since.get_or_insert(now);
            return if now.duration_since(since) < MAX_HOLD { Held::Wait } else { Held::Fetch(Why::Released) };
        }
        if self.fetched < MIN_EVIDENCE {
            return Held::Fetch(Why::Unjudged);
        }
        #[allow(clippy::cast_precision_loss)]
        let share = self.new as f32 / self.fetched as f32;
        if share >= MIN_YIELD {
            Held::Fetch(Why::NewTexts)
        } else if xxhash_rust::xxh3::xxh3_64(url.as_bytes()).is_multiple_of(PROBE_EVERY) {
            Held::Fetch(Why::Sampled)
        } else {
            Held::Skip { errors: 2 * self.errors > self.fetched }
        }
    }
}

/// Gives every group at least [`MIN_EVIDENCE`] probes, from the first of
/// its rest in input order (`gates`, one per gated URL of the input, in its
/// order); returns how many were made probes. A group whose probes the
/// visited store mostly left out (fetched in an earlier layer, found again
/// from other links) would otherwise never have evidence enough, and its
/// rest would be fetched whole: on a small Fossil crawled to depth 3, 382
/// URLs of groups with 0 to 3 probes in the input.
pub fn top_up_probes(gates: &mut [Gate]) -> usize {
    let mut probes: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for g in gates.iter().filter(|g| g.probe) {
        *probes.entry(g.group).or_default() += 1;
    }
    let mut made = 0;
    for g in gates.iter_mut().filter(|g| !g.probe) {
        let n = probes.entry(g.group).or_default();
        if *n < MIN_EVIDENCE {
            *n += 1;
            g.probe = true;
            made += 1;
        }
    }
    made
}

/// Schema of the gates of one partition's input
/// (`state/denoise/gates/layer=L/`): a URL by its fingerprint, its group,
/// whether it is a probe.
pub fn gates_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("fingerprint", DataType::Int64, false),
            Field::new("group", DataType::Int64, false),
            Field::new("probe", DataType::Boolean, false),
        ]))
    }))
}

/// Encodes gates, each with its URL's fingerprint.
///
/// # Errors
/// Never in practice.
pub fn gates_batch(rows: &[(u64, Gate)]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    #[allow(clippy::cast_possible_wrap)]
    let cols: Vec<arrow_array::ArrayRef> = vec![
        Arc::new(rows.iter().map(|(fp, _)| Some(*fp as i64)).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|(_, g)| Some(g.group as i64)).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|(_, g)| Some(g.probe)).collect::<BooleanArray>()),
    ];
    RecordBatch::try_new(gates_schema(), cols)
}

/// Decodes gates; `None` when a column is missing.
#[must_use]
pub fn gates_rows(b: &RecordBatch) -> Option<Vec<(u64, Gate)>> {
    let fp = b.column_by_name("fingerprint")?.as_primitive_opt::<Int64Type>()?;
    let group = b.column_by_name("group")?.as_primitive_opt::<Int64Type>()?;
    let probe = b.column_by_name("probe")?.as_boolean_opt()?;
    #[allow(clippy::cast_sign_loss)]
    Some(
        (0..b.num_rows())
            .map(|i| (fp.value(i) as u64, Gate { group: group.value(i) as u64, probe: probe.value(i) }))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 200 page of `url` whose text is `text` (none: a page that keeps no
    /// text).
    fn page(url: &str, text: Option<u64>) -> Option<Sample> {
        Some(Sample { url: url.into(), status: 200, html: true, text_hash: text, ..Sample::default() })
    }

    /// A group of `n` probes whose pages came back as `pages`, judged
    /// against the earlier texts `earlier`.
    fn tally(n: u32, pages: Vec<Option<Sample>>, earlier: &[u64]) -> GroupTally {
        let mut seen = SeenTexts::default();
        seen.add_hashes(earlier.iter().copied());
        seen.freeze();
        let mut t = GroupTally { probes: n, ..GroupTally::default() };
        for p in pages {
            t.probe_back(p, &seen);
        }
        t
    }

    fn probes(texts: &[Option<u64>]) -> Vec<Option<Sample>> {
        texts.iter().enumerate().map(|(i, t)| page(&format!("http://a.test/p/{i}"), *t)).collect()
    }

    /// The rest of a group's URLs, decided at `now`: how many are fetched.
    fn fetched_of(t: &mut GroupTally, n: usize, now: Instant) -> usize {
        (0..n).filter(|i| matches!(t.decide(&format!("http://a.test/x/{i}"), now), Held::Fetch(_))).count()
    }

    #[test]
    fn the_rest_waits_for_every_probe_then_follows_their_yield() {
        let now = Instant::now();
        let fresh: Vec<Option<u64>> = (0..16).map(Some).collect();
        let mut t = tally(16, probes(&fresh[..15]), &[]);
        assert_eq!(t.decide("http://a.test/x/1", now), Held::Wait, "one probe is still out");
        assert_eq!(t.fetched, 0, "nothing judged before the last probe");
        t.probe_back(page("http://a.test/p/15", Some(15)), &SeenTexts::default());
        assert_eq!((t.fetched, t.new), (16, 16));
        assert_eq!(fetched_of(&mut t, 100, now), 100, "16 new of 16: fetched");
        // One text new: the others were seen in earlier layers, or are one
        // text shown by every probe, or keep nothing.
        let mut texts = vec![Some(1); 6];
        texts.extend([Some(2), Some(3), Some(4), Some(5), None, None, None, None, Some(9), Some(7)]);
        let mut copies = tally(16, probes(&texts), &[2, 3, 4, 5, 9]);
        assert_eq!((copies.fetched, copies.new), (16, 2), "text 1 once and text 7");
        let fetched = fetched_of(&mut copies, 3200, now);
        assert!((60..=140).contains(&fetched), "2 new of 16: one in 32 fetched, {fetched} of 3,200");
        assert_eq!(copies.decide("http://a.test/x/1", now), Held::Skip { errors: false });
        // 3 new of 16 is 0.1875, above one in seven.
        let mut some = tally(16, probes(&[[Some(1); 13].as_slice(), &[Some(2), Some(3), None]].concat()), &[]);
        assert_eq!((some.fetched, some.new), (16, 3));
        assert_eq!(fetched_of(&mut some, 100, now), 100);
        let broken: Vec<Option<Sample>> = (0..16)
            .map(|i| {
                Some(Sample {
                    url: format!("http://a.test/p/{i}"),
                    status: if i < 12 { 404 } else { 200 },
                    ..Sample::default()
                })
            })
            .collect();
        let mut broken = tally(16, broken, &[]);
        assert_eq!(broken.decide("http://a.test/x/1", now), Held::Skip { errors: true });
    }

    #[test]
    fn probes_are_judged_the_same_whatever_order_they_came_back_in() {
        // A print view (longer URL) of a page: the page is the new one.
        let a = page("http://a.test/p/1", Some(1));
        let b = page("http://a.test/p/1?print=1", Some(1));
        let pages =
            [a.clone(), b.clone(), page("http://a.test/p/2", Some(2)), page("http://a.test/p/2?print=1", Some(2))];
        let forth = tally(4, pages.to_vec(), &[]);
        let back = tally(4, pages.iter().rev().cloned().collect(), &[]);
        assert_eq!((forth.fetched, forth.new), (4, 2));
        assert_eq!((back.fetched, back.new, back.errors), (forth.fetched, forth.new, forth.errors));
    }

    #[test]
    fn without_evidence_or_past_the_longest_hold_the_rest_is_fetched() {
        let now = Instant::now();
        // Probes that ended as server errors or without a request judge nothing.
        let failed = (0..16).map(|i| if i % 2 == 0 { None } else { Some(Sample { status: 503, ..Sample::default() }) });
        let mut neutral = tally(16, failed.collect(), &[]);
        assert_eq!(neutral.decide("http://a.test/x/1", now), Held::Fetch(Why::Unjudged));
        let mut out = tally(16, probes(&[Some(1); 15]), &[1]);
        assert_eq!(out.decide("http://a.test/x/1", now), Held::Wait);
        assert_eq!(out.decide("http://a.test/x/1", now + MAX_HOLD / 2), Held::Wait);
        assert_eq!(
            out.decide("http://a.test/x/1", now + MAX_HOLD),
            Held::Fetch(Why::Released),
            "a probe never came back"
        );
        // A slow host: its probes come back, each within the longest hold
        // of the one before, and the rest waits for the last.
        let mut seen = SeenTexts::default();
        seen.add_hashes([1].into_iter());
        seen.freeze();
        let mut slow = tally(16, probes(&[Some(1); 14]), &[1]);
        let mut at = now;
        assert_eq!(slow.decide("http://a.test/x/1", at), Held::Wait);
        at += MAX_HOLD - Duration::from_secs(1);
        slow.probe_back(page("http://a.test/p/14", Some(1)), &seen);
        assert_eq!(slow.decide("http://a.test/x/1", at), Held::Wait);
        at += MAX_HOLD - Duration::from_secs(1);
        assert_eq!(
            slow.decide("http://a.test/x/1", at),
            Held::Wait,
            "past the longest hold since the first ask, not since the last probe"
        );
        slow.probe_back(page("http://a.test/p/15", Some(1)), &seen);
        assert_eq!((slow.fetched, slow.new), (16, 0));
        assert_eq!(slow.decide("http://a.test/x/1", at), Held::Skip { errors: false });
    }

    #[test]
    fn a_group_short_of_probes_takes_its_first_rest_as_probes() {
        let g = |group, probe| Gate { group, probe };
        // Group 1 has 2 probes left in the input, group 2 none, group 3 its 4.
        let mut gates =
            vec![g(1, true), g(2, false), g(1, false), g(3, true), g(3, true), g(3, true), g(3, true), g(1, true)];
        gates.extend((0..5).flat_map(|_| [g(1, false), g(2, false), g(3, false)]));
        let before = gates.clone();
        assert_eq!(top_up_probes(&mut gates), 2 + 4);
        for group in 1..=3 {
            let probes = gates.iter().filter(|x| x.group == group && x.probe).count();
            assert_eq!(probes, 4, "group {group}");
        }
        assert!(gates[2].probe && gates[1].probe, "the first of each group's rest, in input order");
        assert_eq!(&gates[3..8], &before[3..8], "a group with probes enough keeps its own");
        assert!(gates[8..].iter().filter(|x| x.group == 3).all(|x| !x.probe));
    }

    #[test]
    fn gates_read_back_as_written() {
        let rows = vec![(u64::MAX, Gate { group: 7, probe: true }), (3, Gate { group: u64::MAX - 1, probe: false })];
        let b = gates_batch(&rows).expect("batch");
        assert_eq!(gates_rows(&b), Some(rows));
    }
}
