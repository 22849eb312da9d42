//! The learned order's building blocks on candle: a dense layer whose
//! weights are candle `Var`s drawn from the task's seeded generator (candle
//! cannot seed its own generator on the CPU), and the safetensors encoding
//! of named arrays that the model, replay and draw files share.
//!
//! Every state file is a list of named `f32`/`i64` arrays and nothing else
//! (no free-form metadata: safetensors writes it from a hash map, whose
//! order would change the file's bytes from one run to the next).

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor, Var};

use super::rng::Rng;

/// A candle failure, with what was being done.
pub type Candle = candle_core::Error;

/// A fully connected layer, `x · wᵀ + b`.
#[derive(Clone, Debug)]
pub struct Dense {
    pub w: Var,
    pub b: Var,
}

impl Dense {
    /// `inputs → outputs`, weights uniform in ±1/√inputs, biases zero.
    ///
    /// # Errors
    /// Never in practice (a tensor of the shape it is given).
    pub fn new(rng: &mut Rng, inputs: usize, outputs: usize) -> Result<Self, Candle> {
        #[allow(clippy::cast_precision_loss)]
        let a = 1.0 / (inputs as f64).sqrt();
        let w: Vec<f32> = (0..inputs * outputs).map(|_| rng.symmetric(a)).collect();
        Ok(Self {
            w: Var::from_tensor(&Tensor::from_vec(w, (outputs, inputs), &Device::Cpu)?)?,
            b: Var::zeros(outputs, DType::F32, &Device::Cpu)?,
        })
    }

    /// `inputs → outputs` with every weight zero: a layer that adds nothing
    /// until it is trained.
    ///
    /// # Errors
    /// Never in practice.
    pub fn zeros(inputs: usize, outputs: usize) -> Result<Self, Candle> {
        Ok(Self {
            w: Var::zeros((outputs, inputs), DType::F32, &Device::Cpu)?,
            b: Var::zeros(outputs, DType::F32, &Device::Cpu)?,
        })
    }

    /// The layer applied to `x` (`[batch, inputs]`).
    ///
    /// # Errors
    /// A shape that does not fit.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Candle> {
        x.matmul(&self.w.t()?)?.broadcast_add(&self.b)
    }

    /// Its variables, named `prefix.w` and `prefix.b`.
    #[must_use]
    pub fn vars(&self, prefix: &str) -> Vec<(String, Var)> {
        vec![(format!("{prefix}.w"), self.w.clone()), (format!("{prefix}.b"), self.b.clone())]
    }
}

/// Sets every variable of `to` to its namesake in `from` (same names, same
/// shapes): the target network's copy, a model read back.
///
/// # Errors
/// A name missing from `from`, or of another shape.
pub fn assign(to: &[(String, Var)], from: &HashMap<String, Array>) -> Result<(), String> {
    for (name, var) in to {
        let a = from.get(name).ok_or_else(|| format!("no array {name:?}"))?;
        let t = a.tensor().map_err(|e| format!("{name}: {e}"))?;
        var.set(&t).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

/// The values of `vars` as named arrays.
///
/// # Errors
/// Never in practice (variables are contiguous `f32` tensors).
pub fn arrays_of(vars: &[(String, Var)]) -> Result<Vec<(String, Array)>, Candle> {
    vars.iter().map(|(n, v)| Ok((n.clone(), Array::of(v.as_tensor())?))).collect()
}

/// One named array of a state file.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Data,
}

/// An array's values.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

impl Array {
    /// A `f32` array of `shape`.
    #[must_use]
    pub fn f32(shape: &[usize], data: Vec<f32>) -> Self {
        Self { shape: shape.to_vec(), data: Data::F32(data) }
    }

    /// An `i64` array of `shape`.
    #[must_use]
    pub fn i64(shape: &[usize], data: Vec<i64>) -> Self {
        Self { shape: shape.to_vec(), data: Data::I64(data) }
    }

    /// The values of an `f32` tensor.
    ///
    /// # Errors
    /// A tensor of another type.
    pub fn of(t: &Tensor) -> Result<Self, Candle> {
        Ok(Self::f32(t.dims(), t.flatten_all()?.to_vec1::<f32>()?))
    }

    /// As a candle tensor.
    ///
    /// # Errors
    /// Values that do not fill the shape.
    pub fn tensor(&self) -> Result<Tensor, Candle> {
        match &self.data {
            Data::F32(v) => Tensor::from_vec(v.clone(), self.shape.as_slice(), &Device::Cpu),
            Data::I64(v) => Tensor::from_vec(v.clone(), self.shape.as_slice(), &Device::Cpu),
        }
    }

    /// The `f32` values, if it holds those.
    #[must_use]
    pub fn floats(&self) -> Option<&[f32]> {
        match &self.data {
            Data::F32(v) => Some(v),
            Data::I64(_) => None,
        }
    }

    /// The `i64` values, if it holds those.
    #[must_use]
    pub fn ints(&self) -> Option<&[i64]> {
        match &self.data {
            Data::I64(v) => Some(v),
            Data::F32(_) => None,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        match &self.data {
            Data::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
}

/// An array as safetensors sees it.
struct View {
    dtype: safetensors::Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl safetensors::View for &View {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// The safetensors bytes of `arrays` (the same arrays, the same bytes).
///
/// # Errors
/// An array whose values do not fill its shape.
pub fn encode(arrays: &[(String, Array)]) -> Result<Vec<u8>, String> {
    let views: Vec<(String, View)> = arrays
        .iter()
        .map(|(name, a)| {
            let dtype = match a.data {
                Data::F32(_) => safetensors::Dtype::F32,
                Data::I64(_) => safetensors::Dtype::I64,
            };
            (name.clone(), View { dtype, shape: a.shape.clone(), bytes: a.bytes() })
        })
        .collect();
    safetensors::serialize(views.iter().map(|(n, v)| (n.as_str(), v)), None).map_err(|e| e.to_string())
}

/// The arrays of safetensors `bytes`, by name.
///
/// # Errors
/// Bytes that are not safetensors, or an array neither `f32` nor `i64`.
pub fn decode(bytes: &[u8]) -> Result<HashMap<String, Array>, String> {
    let st = safetensors::SafeTensors::deserialize(bytes).map_err(|e| e.to_string())?;
    let mut out = HashMap::new();
    for (name, view) in st.tensors() {
        let raw = view.data();
        let data = match view.dtype() {
            safetensors::Dtype::F32 => {
                Data::F32(raw.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("chunks of 4"))).collect())
            }
            safetensors::Dtype::I64 => {
                Data::I64(raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("chunks of 8"))).collect())
            }
            other => return Err(format!("{name}: {other:?} arrays are not learned-order state")),
        };
        out.insert(name, Array { shape: view.shape().to_vec(), data });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_round_trip_through_safetensors_to_the_same_bytes() {
        let arrays = vec![
            ("b".to_string(), Array::f32(&[2, 3], vec![0.5, -1.0, 2.0, 3.25, 0.0, 1e-8])),
            ("a".to_string(), Array::i64(&[2], vec![-7, i64::MAX])),
        ];
        let bytes = encode(&arrays).expect("encode");
        let back = decode(&bytes).expect("decode");
        assert_eq!(back["b"], arrays[0].1);
        assert_eq!(back["a"], arrays[1].1);
        let mut sorted: Vec<(String, Array)> = back.into_iter().collect();
        sorted.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(encode(&sorted).expect("again"), bytes, "the bytes do not depend on the arrays' order");
        assert!(decode(b"not safetensors").is_err());
    }

    #[test]
    fn a_dense_layer_computes_x_w_plus_b_and_its_values_can_be_set() {
        let mut rng = Rng::new(1, "t", 0, 0);
        let d = Dense::new(&mut rng, 3, 2).expect("layer");
        let w = vec![1.0f32, 0.0, -1.0, 0.5, 0.5, 0.5];
        let from: HashMap<String, Array> =
            [("l.w".to_string(), Array::f32(&[2, 3], w)), ("l.b".to_string(), Array::f32(&[2], vec![0.25, -0.25]))]
                .into_iter()
                .collect();
        assign(&d.vars("l"), &from).expect("assign");
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], (1, 3), &Device::Cpu).expect("x");
        let y = d.forward(&x).expect("forward").flatten_all().expect("flat").to_vec1::<f32>().expect("values");
        assert_eq!(y, vec![1.0 - 3.0 + 0.25, 3.0 - 0.25]);
        assert!(assign(&d.vars("other"), &from).is_err(), "a name missing");
    }
}
