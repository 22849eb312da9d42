//! The URL encoder of the learned order (docs/src/focused-crawling.md): a
//! small VAE-style model over a URL's characters whose latent mean `z` is
//! one of the scheduler's features.
//!
//! A URL (scheme, `www.` and port left out, lower case) is cut or padded
//! to [`URL_LEN`] characters of a [`VOCAB`]-letter alphabet; each
//! character gets an [`EMB`]-number embedding, the embeddings of the whole
//! URL one hidden layer of [`HIDDEN`], and two heads the mean `mu` and the
//! log-variance `logvar` of a [`Z`]-dimensional code. Training samples
//! `z = mu + eps · exp(logvar / 2)` and decodes it back to the characters
//! (the reconstruction loss: each position's cross-entropy), with the KL
//! term pulling the codes towards a standard normal, and a one-number head
//! on `mu` that predicts the page's reward (what the crawl found there), so
//! that the codes of URLs that paid lie close. The scheduler reads `mu`.
//!
//! Trained online: each optimise task takes [`super::ENCODER_STEPS`]
//! steps on the pages its partition fetched in the layer, batches drawn
//! with the task's seeded generator; Adam's moments start afresh each
//! layer, so a layer's training is a function of the files before it.

use candle_core::{DType, Device, Tensor, Var, D};
use candle_nn::Optimizer;

use super::nn::{Candle, Dense};
use super::rng::Rng;

/// Characters of a URL the encoder reads.
pub const URL_LEN: usize = 48;
/// The alphabet: padding, `a`–`z`, `0`–`9`, `/ . - _ ? = &`, and one for
/// every other character.
pub const VOCAB: usize = 45;
/// Numbers per character.
pub const EMB: usize = 8;
/// The encoder's hidden layer.
pub const HIDDEN: usize = 64;
/// The code's dimension.
pub const Z: usize = 8;
/// The decoder's hidden layer.
const DEC_HIDDEN: usize = 32;
/// Weight of the KL term.
const KL_WEIGHT: f64 = 0.01;
/// Weight of the reward head's squared error.
const REWARD_WEIGHT: f64 = 1.0;
/// Adam's step size.
const LR: f64 = 3e-3;
/// URLs per training batch.
const BATCH: usize = 32;
/// URLs the losses before and after a layer's training are measured on.
const EVAL: usize = 256;
/// URLs encoded at once.
const CHUNK: usize = 2048;

/// The alphabet's index of a character.
fn letter(c: char) -> u32 {
    match c {
        'a'..='z' => c as u32 - 'a' as u32 + 1,
        '0'..='9' => c as u32 - '0' as u32 + 27,
        '/' => 37,
        '.' => 38,
        '-' => 39,
        '_' => 40,
        '?' => 41,
        '=' => 42,
        '&' => 43,
        _ => 44,
    }
}

/// The [`URL_LEN`] letters the encoder reads of `url` (0 pads): host
/// without `www.` and port, path and query, lower case.
#[must_use]
pub fn letters(url: &str) -> [u32; URL_LEN] {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path) = rest.find(['/', '?']).map_or((rest, ""), |at| rest.split_at(at));
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = host.split_once(':').map_or(host, |(h, _)| h);
    let host = host.strip_prefix("www.").unwrap_or(host);
    let mut out = [0u32; URL_LEN];
    for (slot, c) in out.iter_mut().zip(host.chars().chain(path.chars()).flat_map(char::to_lowercase)) {
        *slot = letter(c);
    }
    out
}

/// The letters of `urls` as a `[n, URL_LEN]` tensor.
fn letters_tensor(urls: &[&str]) -> Result<Tensor, Candle> {
    let ids: Vec<u32> = urls.iter().flat_map(|u| letters(u)).collect();
    Tensor::from_vec(ids, (urls.len(), URL_LEN), &Device::Cpu)
}

/// The losses of one batch: the total and its reconstruction part.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Loss {
    pub total: f32,
    pub reconstruction: f32,
}

/// The encoder and its decoder.
#[derive(Clone, Debug)]
pub struct Encoder {
    emb: Var,
    hidden: Dense,
    mu: Dense,
    logvar: Dense,
    dec: Dense,
    out: Dense,
    reward: Dense,
}

impl Encoder {
    /// A new encoder, its weights drawn from `rng`.
    ///
    /// # Errors
    /// Never in practice.
    pub fn new(rng: &mut Rng) -> Result<Self, Candle> {
        let emb: Vec<f32> = (0..VOCAB * EMB).map(|_| rng.normal() * 0.5).collect();
        Ok(Self {
            emb: Var::from_tensor(&Tensor::from_vec(emb, (VOCAB, EMB), &Device::Cpu)?)?,
            hidden: Dense::new(rng, URL_LEN * EMB, HIDDEN)?,
            mu: Dense::new(rng, HIDDEN, Z)?,
            logvar: Dense::new(rng, HIDDEN, Z)?,
            dec: Dense::new(rng, Z, DEC_HIDDEN)?,
            out: Dense::new(rng, DEC_HIDDEN, URL_LEN * VOCAB)?,
            reward: Dense::new(rng, Z, 1)?,
        })
    }

    /// Every variable, by its name in the model file.
    #[must_use]
    pub fn vars(&self) -> Vec<(String, Var)> {
        let mut v = vec![("enc.emb".to_string(), self.emb.clone())];
        for (name, d) in [
            ("enc.hidden", &self.hidden),
            ("enc.mu", &self.mu),
            ("enc.logvar", &self.logvar),
            ("enc.dec", &self.dec),
            ("enc.out", &self.out),
            ("enc.reward", &self.reward),
        ] {
            v.extend(d.vars(name));
        }
        v
    }

    /// `mu` and `logvar` of the URLs whose letters are `ids` (`[n, URL_LEN]`).
    fn encode(&self, ids: &Tensor) -> Result<(Tensor, Tensor), Candle> {
        let n = ids.dim(0)?;
        let e = self.emb.as_tensor().index_select(&ids.flatten_all()?, 0)?.reshape((n, URL_LEN * EMB))?;
        let h = self.hidden.forward(&e)?.relu()?;
        // Bounded, so that exp(logvar) stays finite whatever a step does.
        Ok((self.mu.forward(&h)?, self.logvar.forward(&h)?.clamp(-8f32, 8f32)?))
    }

    /// The codes (`mu`) of `urls`, [`Z`] numbers each.
    ///
    /// # Errors
    /// On a candle failure.
    pub fn codes(&self, urls: &[&str]) -> Result<Vec<[f32; Z]>, Candle> {
        let mut out = Vec::with_capacity(urls.len());
        for chunk in urls.chunks(CHUNK) {
            let (mu, _) = self.encode(&letters_tensor(chunk)?)?;
            let flat = mu.flatten_all()?.to_vec1::<f32>()?;
            out.extend(flat.chunks_exact(Z).map(|c| <[f32; Z]>::try_from(c).expect("rows of Z")));
        }
        Ok(out)
    }

    /// The loss of a batch: reconstruction of `ids` from `z = mu + eps ·
    /// σ` (`eps` `[n, Z]`; zeros measure the mean), KL and the reward
    /// head's squared error against `rewards` (`[n]`).
    fn loss(&self, ids: &Tensor, eps: &Tensor, rewards: &Tensor) -> Result<(Tensor, Tensor), Candle> {
        let n = ids.dim(0)?;
        let (mu, logvar) = self.encode(ids)?;
        let z = (&mu + eps.mul(&(&logvar * 0.5)?.exp()?)?)?;
        let logits = self.out.forward(&self.dec.forward(&z)?.relu()?)?.reshape((n * URL_LEN, VOCAB))?;
        let logp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
        let recon = candle_nn::loss::nll(&logp, &ids.flatten_all()?)?;
        // KL(q(z|x) ‖ N(0, I)), summed over the code, averaged over the batch.
        let kl = ((&logvar + 1.0)? - mu.sqr()? - logvar.exp()?)?.sum(1)?.mean(0)? * -0.5;
        let predicted = self.reward.forward(&mu)?.squeeze(1)?;
        let reward_err = (predicted - rewards)?.sqr()?.mean(0)?;
        let total = ((&recon + (kl? * KL_WEIGHT)?)? + (reward_err * REWARD_WEIGHT)?)?;
        Ok((total, recon))
    }

    /// The mean loss of `urls` with their `rewards`, at `z = mu`.
    ///
    /// # Errors
    /// On a candle failure.
    pub fn loss_of(&self, urls: &[&str], rewards: &[f32]) -> Result<Loss, Candle> {
        if urls.is_empty() {
            return Ok(Loss::default());
        }
        let ids = letters_tensor(urls)?;
        let eps = Tensor::zeros((urls.len(), Z), DType::F32, &Device::Cpu)?;
        let r = Tensor::from_vec(rewards.to_vec(), urls.len(), &Device::Cpu)?;
        let (total, recon) = self.loss(&ids, &eps, &r)?;
        Ok(Loss { total: total.to_scalar::<f32>()?, reconstruction: recon.to_scalar::<f32>()? })
    }

    /// `steps` Adam steps on batches of `urls` (with their `rewards`)
    /// drawn from `rng`; the loss of (at most [`EVAL`] of) them before and
    /// after.
    ///
    /// # Errors
    /// On a candle failure.
    pub fn train(
        &mut self,
        urls: &[&str],
        rewards: &[f32],
        steps: usize,
        rng: &mut Rng,
    ) -> Result<(Loss, Loss), Candle> {
        let eval = urls.len().min(EVAL);
        let before = self.loss_of(&urls[..eval], &rewards[..eval])?;
        if urls.is_empty() || steps == 0 {
            return Ok((before, before));
        }
        let vars: Vec<Var> = self.vars().into_iter().map(|(_, v)| v).collect();
        let params = candle_nn::ParamsAdamW { lr: LR, weight_decay: 0.0, ..candle_nn::ParamsAdamW::default() };
        let mut opt = candle_nn::AdamW::new(vars, params)?;
        for _ in 0..steps {
            let pick: Vec<usize> = (0..BATCH.min(urls.len())).map(|_| rng.below(urls.len())).collect();
            let batch: Vec<&str> = pick.iter().map(|&i| urls[i]).collect();
            let r: Vec<f32> = pick.iter().map(|&i| rewards[i]).collect();
            let eps: Vec<f32> = (0..batch.len() * Z).map(|_| rng.normal()).collect();
            let eps = Tensor::from_vec(eps, (batch.len(), Z), &Device::Cpu)?;
            let r = Tensor::from_vec(r, batch.len(), &Device::Cpu)?;
            let (total, _) = self.loss(&letters_tensor(&batch)?, &eps, &r)?;
            opt.backward_step(&total)?;
        }
        let after = self.loss_of(&urls[..eval], &rewards[..eval])?;
        Ok((before, after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_becomes_its_host_path_and_query_in_the_alphabet() {
        let l = letters("https://www.Example.org:8080/a-1/b_c?q=2&x=%");
        let text: String = l
            .iter()
            .take_while(|&&i| i != 0)
            .map(|&i| match i {
                1..=26 => char::from(b'a' + u8::try_from(i - 1).expect("letter")),
                27..=36 => char::from(b'0' + u8::try_from(i - 27).expect("digit")),
                37 => '/',
                38 => '.',
                39 => '-',
                40 => '_',
                41 => '?',
                42 => '=',
                43 => '&',
                _ => '#',
            })
            .collect();
        assert_eq!(text, "example.org/a-1/b_c?q=2&x=#");
        assert_eq!(letters("http://s.test/").iter().filter(|&&i| i != 0).count(), 7);
        let long = format!("http://s.test/{}", "a".repeat(200));
        assert!(letters(&long).iter().all(|&i| i != 0), "cut at {URL_LEN}");
    }

    #[test]
    fn the_encoders_loss_falls_on_a_fixed_set_of_urls() {
        let urls: Vec<String> = (0..64)
            .map(|i| {
                if i % 2 == 0 {
                    format!("http://news.test/world/{i}-story")
                } else {
                    format!("http://shop.test/item?id={i}&colour=red")
                }
            })
            .collect();
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        let rewards: Vec<f32> = (0..64).map(|i| if i % 2 == 0 { 0.8 } else { 0.0 }).collect();
        let mut rng = Rng::new(3, "init", 0, 0);
        let mut enc = Encoder::new(&mut rng).expect("encoder");
        let mut train = Rng::new(3, "train", 0, 0);
        let (before, after) = enc.train(&urls, &rewards, 150, &mut train).expect("train");
        eprintln!("before {before:?}, after {after:?}");
        assert!(after.total < 0.5 * before.total, "{before:?} → {after:?}");
        assert!(after.reconstruction < 0.5 * before.reconstruction, "{before:?} → {after:?}");
        // The codes are finite and tell the two kinds of URL apart.
        let z = enc.codes(&urls).expect("codes");
        assert!(z.iter().flatten().all(|x| x.is_finite()));
        assert_ne!(z[0], z[1]);
        // Trained again from the same seeds, the same weights.
        let mut again = Encoder::new(&mut Rng::new(3, "init", 0, 0)).expect("encoder");
        again.train(&urls, &rewards, 150, &mut Rng::new(3, "train", 0, 0)).expect("train");
        assert_eq!(again.codes(&urls).expect("codes"), z);
    }
}
