//! The learned order's steps and its experience replay buffer
//! (docs/src/focused-crawling.md).
//!
//! A **step** is one draw of a layer's simulated order: the drawn URL (its
//! fingerprint), the features of that choice (`phi`, the state and action
//! the Q-network scores), and the next state: the features of up to
//! [`NEXT`] candidates the next draw chose among (fewer, or none when the
//! order ended there). Three files hold steps, each as columns of one
//! safetensors file (`fp`, `phi`, `next`, `mask`, and one value column):
//!
//! - the **draws** of a layer's input (value `q`: the Q-value the draw was
//!   made with), written by the optimise task that ordered it;
//! - the **transitions** of a layer (value `reward`: what the page turned
//!   out to be worth), written by the map task that fetched it, for the
//!   draws it fetched;
//! - the **replay buffer** of a partition (value `reward`), the
//!   transitions of every layer so far, the oldest dropped past
//!   [`super::REPLAY_CAPACITY`], written by each optimise task.
//!
//! A step's next state is cut to the [`NEXT`] best candidates by the
//! Q-value of the draw: `max_a' Q_target(s', a')` over those is what the
//! temporal-difference target needs, and the others rarely hold the
//! maximum.

use std::collections::HashMap;

use candle_core::{Device, Tensor};

use super::nn::{Array, Candle};
use super::FEATURES;

/// Candidates of a next state kept.
pub const NEXT: usize = 4;

/// Steps, column by column.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Steps {
    /// Each drawn URL's fingerprint (`urlnorm::fingerprint`, as `i64` bits).
    pub fp: Vec<i64>,
    /// `[n, FEATURES]`: the features of each draw.
    pub phi: Vec<f32>,
    /// `[n, NEXT, FEATURES]`: the next state's candidates, zero-padded.
    pub next: Vec<f32>,
    /// `[n, NEXT]`: 1 for a real candidate, 0 for padding.
    pub mask: Vec<f32>,
    /// `[n]`: the draw's Q-value, or the transition's reward.
    pub value: Vec<f32>,
}

/// A batch of transitions as tensors.
#[derive(Debug)]
pub struct Batch {
    pub phi: Tensor,
    pub reward: Tensor,
    pub next: Tensor,
    pub mask: Tensor,
    /// 1 where the order ended after the draw.
    pub done: Tensor,
}

impl Steps {
    #[must_use]
    pub fn len(&self) -> usize {
        self.fp.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.fp.is_empty()
    }

    /// Adds a step: the URL fingerprint `fp`, the draw's features `phi`,
    /// the next state's candidates `next` (the first [`NEXT`] kept) and
    /// its value.
    pub fn push(&mut self, fp: u64, phi: &[f32], next: &[&[f32]], value: f32) {
        debug_assert_eq!(phi.len(), FEATURES);
        self.fp.push(i64::from_ne_bytes(fp.to_ne_bytes()));
        self.phi.extend_from_slice(phi);
        for k in 0..NEXT {
            match next.get(k) {
                Some(c) => {
                    self.next.extend_from_slice(c);
                    self.mask.push(1.0);
                }
                None => {
                    self.next.extend_from_slice(&[0.0; FEATURES]);
                    self.mask.push(0.0);
                }
            }
        }
        self.value.push(value);
    }

    /// The fingerprint of step `i`.
    #[must_use]
    pub fn fingerprint(&self, i: usize) -> u64 {
        u64::from_ne_bytes(self.fp[i].to_ne_bytes())
    }

    /// The features of step `i`.
    #[must_use]
    pub fn phi_of(&self, i: usize) -> &[f32] {
        &self.phi[i * FEATURES..(i + 1) * FEATURES]
    }

    /// Whether the order ended after step `i` (no candidate left).
    #[must_use]
    pub fn done(&self, i: usize) -> bool {
        self.mask[i * NEXT] == 0.0
    }

    /// Steps `idx` of these, in that order, each with the value `values[k]`.
    #[must_use]
    pub fn select(&self, idx: &[usize], values: &[f32]) -> Steps {
        let mut out = Steps::default();
        for (&i, &v) in idx.iter().zip(values) {
            out.fp.push(self.fp[i]);
            out.phi.extend_from_slice(self.phi_of(i));
            out.next.extend_from_slice(&self.next[i * NEXT * FEATURES..(i + 1) * NEXT * FEATURES]);
            out.mask.extend_from_slice(&self.mask[i * NEXT..(i + 1) * NEXT]);
            out.value.push(v);
        }
        out
    }

    /// These steps followed by `more`, of which only the last `capacity`
    /// are kept: the replay buffer after a layer.
    pub fn append_keeping(&mut self, more: &Steps, capacity: usize) {
        self.fp.extend_from_slice(&more.fp);
        self.phi.extend_from_slice(&more.phi);
        self.next.extend_from_slice(&more.next);
        self.mask.extend_from_slice(&more.mask);
        self.value.extend_from_slice(&more.value);
        let drop = self.len().saturating_sub(capacity);
        if drop > 0 {
            self.fp.drain(..drop);
            self.phi.drain(..drop * FEATURES);
            self.next.drain(..drop * NEXT * FEATURES);
            self.mask.drain(..drop * NEXT);
            self.value.drain(..drop);
        }
    }

    /// The transitions `idx` as tensors (the value column is the reward).
    ///
    /// # Errors
    /// On a candle failure.
    pub fn batch(&self, idx: &[usize]) -> Result<Batch, Candle> {
        let picked = self.select(idx, &idx.iter().map(|&i| self.value[i]).collect::<Vec<_>>());
        let n = idx.len();
        let done: Vec<f32> = (0..n).map(|i| if picked.done(i) { 1.0 } else { 0.0 }).collect();
        Ok(Batch {
            phi: Tensor::from_vec(picked.phi, (n, FEATURES), &Device::Cpu)?,
            reward: Tensor::from_vec(picked.value, n, &Device::Cpu)?,
            next: Tensor::from_vec(picked.next, (n, NEXT, FEATURES), &Device::Cpu)?,
            mask: Tensor::from_vec(picked.mask, (n, NEXT), &Device::Cpu)?,
            done: Tensor::from_vec(done, n, &Device::Cpu)?,
        })
    }

    /// The columns as named arrays, the value column named `value`.
    #[must_use]
    pub fn arrays(&self, value: &str) -> Vec<(String, Array)> {
        let n = self.len();
        vec![
            ("fp".into(), Array::i64(&[n], self.fp.clone())),
            ("phi".into(), Array::f32(&[n, FEATURES], self.phi.clone())),
            ("next".into(), Array::f32(&[n, NEXT, FEATURES], self.next.clone())),
            ("mask".into(), Array::f32(&[n, NEXT], self.mask.clone())),
            (value.into(), Array::f32(&[n], self.value.clone())),
        ]
    }

    /// Steps from named arrays whose value column is `value`.
    ///
    /// # Errors
    /// A column missing, of another type or of another length.
    pub fn from_arrays(arrays: &HashMap<String, Array>, value: &str) -> Result<Self, String> {
        let floats = |name: &str, shape: &[usize]| -> Result<Vec<f32>, String> {
            let a = arrays.get(name).ok_or_else(|| format!("no column {name:?}"))?;
            if a.shape != shape {
                return Err(format!("column {name:?} has shape {:?}, expected {shape:?}", a.shape));
            }
            a.floats().map(<[f32]>::to_vec).ok_or_else(|| format!("column {name:?} is not f32"))
        };
        let fp = arrays.get("fp").ok_or("no column \"fp\"")?;
        let n = fp.shape.first().copied().unwrap_or(0);
        let fp = fp.ints().ok_or("column \"fp\" is not i64")?.to_vec();
        Ok(Self {
            fp,
            phi: floats("phi", &[n, FEATURES])?,
            next: floats("next", &[n, NEXT, FEATURES])?,
            mask: floats("mask", &[n, NEXT])?,
            value: floats(value, &[n])?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phi(x: f32) -> Vec<f32> {
        (0..FEATURES).map(|i| x + i as f32 / 100.0).collect()
    }

    fn steps(from: u64, n: u64) -> Steps {
        let mut s = Steps::default();
        for i in from..from + n {
            let a = phi(i as f32);
            let b = phi(i as f32 + 0.5);
            let next: Vec<&[f32]> = if i % 3 == 0 { vec![] } else { vec![&a, &b] };
            s.push(i, &phi(i as f32), &next, i as f32 / 10.0);
        }
        s
    }

    #[test]
    fn the_replay_buffer_keeps_the_newest_transitions_up_to_its_capacity() {
        let mut buf = steps(0, 5);
        buf.append_keeping(&steps(5, 4), 6);
        assert_eq!(buf.len(), 6);
        assert_eq!((0..6).map(|i| buf.fingerprint(i)).collect::<Vec<_>>(), [3, 4, 5, 6, 7, 8], "the oldest went");
        // Every column moved with its row.
        assert_eq!(buf.phi_of(0), phi(3.0).as_slice());
        assert_eq!(buf.value[5], 0.8);
        assert!(buf.done(0) && !buf.done(1), "step 3 had no next state, step 4 two candidates");
        assert_eq!(&buf.mask[4..8], &[1.0, 1.0, 0.0, 0.0]);
        assert_eq!(&buf.next[NEXT * FEATURES..NEXT * FEATURES + FEATURES], phi(4.0).as_slice());
        // Under its capacity nothing is dropped.
        let mut small = steps(0, 2);
        small.append_keeping(&steps(2, 2), 100);
        assert_eq!(small, steps(0, 4));
    }

    #[test]
    fn steps_round_trip_and_a_short_column_is_refused() {
        let s = steps(10, 7);
        let arrays: HashMap<String, Array> = s.arrays("reward").into_iter().collect();
        assert_eq!(Steps::from_arrays(&arrays, "reward").expect("read back"), s);
        assert!(Steps::from_arrays(&arrays, "q").is_err(), "the other value column");
        let mut bad = arrays.clone();
        bad.insert("mask".into(), Array::f32(&[3], vec![1.0; 3]));
        let e = Steps::from_arrays(&bad, "reward").expect_err("short");
        assert!(e.contains("mask"), "{e}");
        // A big fingerprint survives the trip through i64.
        let mut big = Steps::default();
        big.push(u64::MAX - 1, &phi(0.0), &[], 0.0);
        let a: HashMap<String, Array> = big.arrays("q").into_iter().collect();
        assert_eq!(Steps::from_arrays(&a, "q").expect("read").fingerprint(0), u64::MAX - 1);
    }

    #[test]
    fn a_batch_has_the_picked_rows_and_done_where_no_candidate_was_left() {
        let s = steps(0, 4);
        let b = s.batch(&[3, 0, 1]).expect("batch");
        assert_eq!(b.reward.to_vec1::<f32>().expect("r"), vec![0.3, 0.0, 0.1]);
        assert_eq!(b.done.to_vec1::<f32>().expect("d"), vec![1.0, 1.0, 0.0]);
        assert_eq!(b.next.dims(), &[3, NEXT, FEATURES]);
        assert_eq!(b.phi.to_vec2::<f32>().expect("phi")[2], phi(1.0));
    }
}
