//! The Q-network of the learned order (docs/src/focused-crawling.md): a DQN
//! that scores drawing the next URL from one URL cluster.
//!
//! The state and the action come as one feature row `phi` (the cluster's
//! harvest so far, its candidate's link score, depth and URL code, how many
//! were drawn from it already, ...; see [`super::features`]), and the
//! network gives one number: `Q(phi) = score + f(phi)`, `score` the
//! candidate's link score (`phi[0]`) and `f` two hidden layers of
//! [`HIDDEN`] whose output layer starts at zero. So an untrained network
//! orders as best-first does, and training learns what to add to it.
//!
//! Training is DQN's: transitions `(phi, r, s')` from the replay buffer,
//! the target `y = r + γ · max_a' Q_target(s', a')` (no second term when
//! the order ended), the squared error `(Q(phi) − y)²`, Adam; the target
//! network is a copy of the online one, renewed every [`TARGET_EVERY`]
//! steps (the count runs on over the layers).

use candle_core::{Device, Tensor, Var, D};
use candle_nn::Optimizer;

use super::nn::{Candle, Dense};
use super::replay::{Batch, Steps, NEXT};
use super::rng::Rng;
use super::FEATURES;

/// The hidden layers' width.
pub const HIDDEN: usize = 32;
/// The discount: what the draws after this one are worth to it.
pub const GAMMA: f32 = 0.5;
/// Training steps between two copies of the online network into the target.
pub const TARGET_EVERY: u64 = 50;
/// Adam's step size.
const LR: f64 = 1e-3;
/// Transitions per training batch.
pub const BATCH: usize = 32;
/// Rows scored at once.
const CHUNK: usize = 4096;
/// What a missing candidate of a next state counts as before the max.
const NO_CANDIDATE: f64 = 1e9;

/// One Q-network.
#[derive(Clone, Debug)]
pub struct QNet {
    l1: Dense,
    l2: Dense,
    l3: Dense,
}

impl QNet {
    fn new(rng: &mut Rng) -> Result<Self, Candle> {
        Ok(Self {
            l1: Dense::new(rng, FEATURES, HIDDEN)?,
            l2: Dense::new(rng, HIDDEN, HIDDEN)?,
            l3: Dense::zeros(HIDDEN, 1)?,
        })
    }

    /// Its variables, named `prefix.l1.w` and so on.
    #[must_use]
    pub fn vars(&self, prefix: &str) -> Vec<(String, Var)> {
        let mut v = self.l1.vars(&format!("{prefix}.l1"));
        v.extend(self.l2.vars(&format!("{prefix}.l2")));
        v.extend(self.l3.vars(&format!("{prefix}.l3")));
        v
    }

    /// `Q` of each row of `phi` (`[n, FEATURES]` → `[n]`).
    ///
    /// # Errors
    /// A shape that does not fit.
    pub fn forward(&self, phi: &Tensor) -> Result<Tensor, Candle> {
        let h = self.l2.forward(&self.l1.forward(phi)?.relu()?)?.relu()?;
        let f = self.l3.forward(&h)?.squeeze(1)?;
        phi.narrow(1, 0, 1)?.squeeze(1)? + f
    }
}

/// The online and target networks and the training steps taken so far.
#[derive(Clone, Debug)]
pub struct Dqn {
    pub online: QNet,
    pub target: QNet,
    pub steps: u64,
}

impl Dqn {
    /// New networks, the target a copy of the online one.
    ///
    /// # Errors
    /// Never in practice.
    pub fn new(rng: &mut Rng) -> Result<Self, Candle> {
        let online = QNet::new(rng)?;
        let target = QNet::new(rng)?;
        let dqn = Self { online, target, steps: 0 };
        dqn.copy_target()?;
        Ok(dqn)
    }

    /// Every variable, by its name in the model file.
    #[must_use]
    pub fn vars(&self) -> Vec<(String, Var)> {
        let mut v = self.online.vars("q");
        v.extend(self.target.vars("target"));
        v
    }

    /// The target network becomes a copy of the online one.
    ///
    /// # Errors
    /// Never in practice (the two have the same shapes).
    pub fn copy_target(&self) -> Result<(), Candle> {
        for ((_, t), (_, o)) in self.target.vars("").iter().zip(self.online.vars("")) {
            t.set(&o.as_tensor().copy()?)?;
        }
        Ok(())
    }

    /// The online network's `Q` of each of the `n` feature rows in `phi`.
    ///
    /// # Errors
    /// On a candle failure.
    pub fn q(&self, phi: &[f32]) -> Result<Vec<f32>, Candle> {
        let mut out = Vec::with_capacity(phi.len() / FEATURES);
        for chunk in phi.chunks(CHUNK * FEATURES) {
            let t = Tensor::from_vec(chunk.to_vec(), (chunk.len() / FEATURES, FEATURES), &Device::Cpu)?;
            out.extend(self.online.forward(&t)?.to_vec1::<f32>()?);
        }
        Ok(out)
    }

    /// The temporal-difference targets of a batch: `r + γ · max over the
    /// next state's candidates of Q_target`, just `r` where the order
    /// ended.
    ///
    /// # Errors
    /// On a candle failure.
    pub fn td_targets(&self, b: &Batch) -> Result<Tensor, Candle> {
        let n = b.phi.dim(0)?;
        let q_next = self.target.forward(&b.next.reshape((n * NEXT, FEATURES))?)?.reshape((n, NEXT))?;
        // Padding candidates sink far below any real one before the max.
        let masked = ((q_next * &b.mask)? + ((&b.mask - 1.0)? * NO_CANDIDATE)?)?;
        let best = masked.max(D::Minus1)?;
        let alive = (1.0 - &b.done)?;
        (&b.reward + (best.mul(&alive)? * f64::from(GAMMA))?)?.detach().contiguous()
    }

    /// The mean squared error of the online network against the TD targets.
    fn loss(&self, b: &Batch) -> Result<Tensor, Candle> {
        let y = self.td_targets(b)?;
        (self.online.forward(&b.phi)? - y)?.sqr()?.mean(0)
    }

    /// `steps` training steps on batches of `replay` drawn with `rng`
    /// (nothing when it is empty); the loss of the first and the last batch.
    ///
    /// # Errors
    /// On a candle failure.
    pub fn train(&mut self, replay: &Steps, steps: usize, rng: &mut Rng) -> Result<(f32, f32), Candle> {
        if replay.is_empty() || steps == 0 {
            return Ok((0.0, 0.0));
        }
        let vars: Vec<Var> = self.online.vars("").into_iter().map(|(_, v)| v).collect();
        let params = candle_nn::ParamsAdamW { lr: LR, weight_decay: 0.0, ..candle_nn::ParamsAdamW::default() };
        let mut opt = candle_nn::AdamW::new(vars, params)?;
        let (mut first, mut last) = (None, 0.0);
        for _ in 0..steps {
            let idx: Vec<usize> = (0..BATCH).map(|_| rng.below(replay.len())).collect();
            let loss = self.loss(&replay.batch(&idx)?)?;
            last = loss.to_scalar::<f32>()?;
            first.get_or_insert(last);
            opt.backward_step(&loss)?;
            self.steps += 1;
            if self.steps.is_multiple_of(TARGET_EVERY) {
                self.copy_target()?;
            }
        }
        Ok((first.unwrap_or(last), last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phi(score: f32, x: f32) -> Vec<f32> {
        let mut v = vec![x; FEATURES];
        v[0] = score;
        v
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn an_untrained_network_scores_the_link_score() {
        let d = Dqn::new(&mut Rng::new(1, "init", 0, 0)).expect("dqn");
        let rows: Vec<f32> = [phi(0.7, 0.3), phi(0.2, -1.0), phi(0.0, 5.0)].concat();
        let q = d.q(&rows).expect("q");
        assert!(close(q[0], 0.7) && close(q[1], 0.2) && close(q[2], 0.0), "{q:?}");
    }

    #[test]
    fn the_td_target_is_the_reward_plus_the_discounted_best_next_q_and_just_the_reward_at_the_end() {
        let d = Dqn::new(&mut Rng::new(1, "init", 0, 0)).expect("dqn");
        // Untrained, Q_target is the link score: 0.4, 0.9 and a padded slot.
        let mut s = Steps::default();
        let (a, b, c) = (phi(0.4, 0.1), phi(0.9, 0.2), phi(0.6, 0.3));
        s.push(1, &c, &[&a, &b], 0.5);
        s.push(2, &c, &[], 0.25);
        // One candidate with a negative Q: padding must not win the max.
        let neg = phi(-0.3, 0.0);
        s.push(3, &c, &[&neg], 0.0);
        let y = d.td_targets(&s.batch(&[0, 1, 2]).expect("batch")).expect("targets").to_vec1::<f32>().expect("y");
        assert!(close(y[0], 0.5 + GAMMA * 0.9), "{y:?}");
        assert!(close(y[1], 0.25), "done: no bootstrap, {y:?}");
        assert!(close(y[2], GAMMA * -0.3), "{y:?}");
    }

    #[test]
    fn the_target_network_is_copied_every_target_every_steps_and_not_between() {
        let mut d = Dqn::new(&mut Rng::new(2, "init", 0, 0)).expect("dqn");
        let mut replay = Steps::default();
        for i in 0..64u64 {
            #[allow(clippy::cast_precision_loss)]
            let x = (i % 8) as f32 / 8.0;
            let here = phi(0.2, x);
            let next = phi(0.3, x);
            replay.push(i, &here, &[&next], if i % 2 == 0 { 1.0 } else { 0.0 });
        }
        let probe = Tensor::from_vec([phi(0.2, 0.5), phi(0.1, 0.9)].concat(), (2, FEATURES), &Device::Cpu).expect("p");
        let same = |d: &Dqn| {
            let o = d.online.forward(&probe).expect("o").to_vec1::<f32>().expect("o");
            let t = d.target.forward(&probe).expect("t").to_vec1::<f32>().expect("t");
            o == t
        };
        assert!(same(&d), "the target starts as a copy");
        let mut rng = Rng::new(2, "train", 0, 0);
        let steps = usize::try_from(TARGET_EVERY).expect("small") - 1;
        d.train(&replay, steps, &mut rng).expect("train");
        assert!(!same(&d), "the online network moved, the target waits");
        let target_before = d.target.forward(&probe).expect("t").to_vec1::<f32>().expect("t");
        d.train(&replay, 1, &mut rng).expect("train");
        assert_eq!(d.steps, TARGET_EVERY);
        assert!(same(&d), "copied at step {TARGET_EVERY}");
        assert_ne!(d.target.forward(&probe).expect("t").to_vec1::<f32>().expect("t"), target_before);
    }

    #[test]
    fn training_learns_which_features_pay() {
        // Two kinds of draw with the same link score: x = 1 pays 1, x = 0
        // pays nothing; every order ends after one draw.
        let mut replay = Steps::default();
        for i in 0..128u64 {
            let pays = i % 2 == 0;
            replay.push(i, &phi(0.3, if pays { 1.0 } else { 0.0 }), &[], if pays { 1.0 } else { 0.0 });
        }
        let mut d = Dqn::new(&mut Rng::new(4, "init", 0, 0)).expect("dqn");
        let (first, last) = d.train(&replay, 300, &mut Rng::new(4, "train", 0, 0)).expect("train");
        let q = d.q(&[phi(0.3, 1.0), phi(0.3, 0.0)].concat()).expect("q");
        assert!(last < first / 4.0, "loss {first} → {last}");
        assert!((q[0] - 1.0).abs() < 0.2 && q[1].abs() < 0.2, "{q:?}");
    }
}
