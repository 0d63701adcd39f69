//! A BERT sentence encoder evaluated straight from memory-mapped safetensors weights.
//!
//! Loading is opening the file: nothing is copied or converted, so a one-shot `search` pays
//! only for the pages a query touches (the encoder's ~40 MB and a few rows of the 47 MB word
//! table), not for a 90 MB copy (a tensor library owns its tensors: loading the same model into
//! candle took 49 ms, more than the whole `search` budget). The arithmetic is a plain
//! transformer encoder — embeddings, then per layer self-attention and a GELU feed-forward,
//! each followed by a residual LayerNorm — with the matrix products done by `matrixmultiply`.
//! One sequence at a time, no padding: the callers embed short texts one by one and spread
//! documents over threads.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};

use super::SemanticError;

/// What the model's `config.json` says about its shape (the fields a BERT encoder needs).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct BertConfig {
    /// Width of a token's state (and of the embedding).
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer (`hidden_size` must divide by it).
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Rows of the position table: the longest input.
    pub max_position_embeddings: usize,
    /// LayerNorm's epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
}

fn default_eps() -> f32 {
    1e-12
}

/// The weights of one encoder layer, as offsets into the mapped file.
struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

/// `y = x·Wᵀ + b` with `W` stored `[out, in]` row-major.
#[derive(Clone, Copy)]
struct Linear {
    weight: Span,
    bias: Span,
    inputs: usize,
    outputs: usize,
}

#[derive(Clone, Copy)]
struct Norm {
    weight: Span,
    bias: Span,
}

/// A run of `f32`s in the mapped file: start and length, in elements.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    len: usize,
}

/// A loaded model: the mapped file and where each weight lies in it.
pub struct Encoder {
    map: Mmap,
    config: BertConfig,
    word: Span,
    position: Span,
    token_type: Span,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

impl Encoder {
    /// Maps `weights` (a safetensors file of `f32` BERT weights, with or without a `bert.`
    /// prefix) and checks every tensor the encoder needs is there with the right shape.
    pub fn open(weights: &Path, config: BertConfig) -> Result<Self, SemanticError> {
        let bad = |reason: String| SemanticError::BadModel {
            path: weights.to_path_buf(),
            reason,
        };
        let file = File::open(weights).map_err(|e| bad(e.to_string()))?;
        // SAFETY: the file lives in our own data directory and is never written in place
        // (installs write a new file and rename it over); a mapping of a replaced file keeps
        // the old contents.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| bad(e.to_string()))?;
        if map.as_ptr().align_offset(std::mem::align_of::<f32>()) != 0 {
            return Err(bad("the mapping is not aligned for f32".into()));
        }
        let layout = Layout::read(&map, &config).map_err(bad)?;
        Ok(Self {
            config,
            word: layout.word,
            position: layout.position,
            token_type: layout.token_type,
            embedding_norm: layout.embedding_norm,
            layers: layout.layers,
            map,
        })
    }

    /// Gives the weights' pages back to the page cache: a long-lived process keeps its
    /// resident set small between queries (the next query maps them again from the cache, a
    /// fraction of a millisecond).
    pub fn release_pages(&self) {
        // SAFETY: the mapping is read-only and of a file never written in place, so pages
        // faulted in again hold the same bytes: a reader during or after the advice sees
        // exactly what it saw before.
        #[cfg(unix)]
        let _ = unsafe {
            self.map
                .unchecked_advise(memmap2::UncheckedAdvice::DontNeed)
        };
    }

    /// The size of the vectors [`Encoder::embed`] returns.
    pub fn dimensions(&self) -> usize {
        self.config.hidden_size
    }

    /// Rows of the word table: token ids must be below it.
    pub fn vocabulary_size(&self) -> usize {
        self.word.len / self.config.hidden_size
    }

    /// The longest input, in tokens, the position table allows.
    pub fn max_tokens(&self) -> usize {
        self.config.max_position_embeddings
    }

    /// The mean of the last layer's token states for `ids` (already wrapped in `[CLS] … [SEP]`
    /// and no longer than [`Encoder::max_tokens`]), L2-normalised.
    pub fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let hidden = self.config.hidden_size;
        let mut x = self.embeddings(ids);
        let mut scratch = Scratch::new(ids.len(), &self.config);
        for layer in &self.layers {
            self.layer(layer, &mut x, &mut scratch);
        }
        let mut pooled = vec![0f32; hidden];
        for row in x.chunks_exact(hidden) {
            for (p, v) in pooled.iter_mut().zip(row) {
                *p += v;
            }
        }
        normalise(&mut pooled);
        pooled
    }

    fn floats(&self, span: Span) -> &[f32] {
        // SAFETY: `Layout::read` checked every span lies inside the file, is f32-typed and
        // f32-aligned (the map's start is aligned and every offset is a multiple of 4).
        let all = unsafe {
            std::slice::from_raw_parts(self.map.as_ptr().cast::<f32>(), self.map.len() / 4)
        };
        &all[span.start..span.start + span.len]
    }

    fn embeddings(&self, ids: &[u32]) -> Vec<f32> {
        let hidden = self.config.hidden_size;
        let (word, position) = (self.floats(self.word), self.floats(self.position));
        let token_type = &self.floats(self.token_type)[..hidden];
        let mut x = vec![0f32; ids.len() * hidden];
        for (t, (row, &id)) in x.chunks_exact_mut(hidden).zip(ids).enumerate() {
            let w = &word[id as usize * hidden..][..hidden];
            let p = &position[t * hidden..][..hidden];
            for i in 0..hidden {
                row[i] = w[i] + p[i] + token_type[i];
            }
        }
        self.layer_norm(&mut x, self.embedding_norm);
        x
    }

    fn layer(&self, layer: &Layer, x: &mut [f32], s: &mut Scratch) {
        let n = x.len() / self.config.hidden_size;
        self.linear(layer.query, x, &mut s.q);
        self.linear(layer.key, x, &mut s.k);
        self.linear(layer.value, x, &mut s.v);
        self.attend(n, s);
        self.linear(layer.attention_out, &s.context, &mut s.projected);
        add_into(x, &s.projected);
        self.layer_norm(x, layer.attention_norm);
        self.linear(layer.intermediate, x, &mut s.inner);
        s.inner.iter_mut().for_each(|v| *v = gelu(*v));
        self.linear(layer.output, &s.inner, &mut s.projected);
        add_into(x, &s.projected);
        self.layer_norm(x, layer.output_norm);
    }

    /// Scaled dot-product attention, head by head, from `s.q`, `s.k`, `s.v` into `s.context`.
    fn attend(&self, n: usize, s: &mut Scratch) {
        let hidden = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let width = hidden / heads;
        let scale = 1.0 / (width as f32).sqrt();
        for h in 0..heads {
            let offset = h * width;
            // scores = Q_h · K_hᵀ (n × n), rows of Q and K strided by `hidden`.
            // SAFETY: q and k hold n rows of `hidden`, the head's `width` columns start at
            // `offset` < hidden; scores holds n × n.
            unsafe {
                matrixmultiply::sgemm(
                    n,
                    width,
                    n,
                    scale,
                    s.q[offset..].as_ptr(),
                    hidden as isize,
                    1,
                    s.k[offset..].as_ptr(),
                    1,
                    hidden as isize,
                    0.0,
                    s.scores.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
            s.scores.chunks_exact_mut(n).for_each(softmax);
            // context_h = scores · V_h (n × width), written into the head's columns.
            // SAFETY: scores is n × n; v and context hold n rows of `hidden`, the head's
            // columns start at `offset`.
            unsafe {
                matrixmultiply::sgemm(
                    n,
                    n,
                    width,
                    1.0,
                    s.scores.as_ptr(),
                    n as isize,
                    1,
                    s.v[offset..].as_ptr(),
                    hidden as isize,
                    1,
                    0.0,
                    s.context[offset..].as_mut_ptr(),
                    hidden as isize,
                    1,
                );
            }
        }
    }

    /// `out = x·Wᵀ + b` for `x` of `n` rows.
    fn linear(&self, l: Linear, x: &[f32], out: &mut [f32]) {
        let n = x.len() / l.inputs;
        let (weight, bias) = (self.floats(l.weight), self.floats(l.bias));
        for row in out.chunks_exact_mut(l.outputs) {
            row.copy_from_slice(bias);
        }
        if n <= FEW_TOKENS && !cfg!(debug_assertions) {
            // A short text (a query): stream each weight row once past every token. A general
            // matrix product would copy the whole weight matrix into its packed layout first,
            // which costs more than the arithmetic at this size. (Unoptimised builds — the
            // test suite — take the optimised dependency's product throughout.)
            for (j, w) in weight.chunks_exact(l.inputs).enumerate() {
                for (t, token) in x.chunks_exact(l.inputs).enumerate() {
                    out[t * l.outputs + j] += dot(w, token);
                }
            }
            return;
        }
        // SAFETY: x is n × inputs, weight is outputs × inputs (read transposed through its
        // strides), out is n × outputs; all three are contiguous and sized by the callers.
        unsafe {
            matrixmultiply::sgemm(
                n,
                l.inputs,
                l.outputs,
                1.0,
                x.as_ptr(),
                l.inputs as isize,
                1,
                weight.as_ptr(),
                1,
                l.inputs as isize,
                1.0,
                out.as_mut_ptr(),
                l.outputs as isize,
                1,
            );
        }
    }

    fn layer_norm(&self, x: &mut [f32], norm: Norm) {
        let (gamma, beta) = (self.floats(norm.weight), self.floats(norm.bias));
        let eps = self.config.layer_norm_eps;
        for row in x.chunks_exact_mut(gamma.len()) {
            let n = row.len() as f32;
            let mean = row.iter().sum::<f32>() / n;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let inv = 1.0 / (variance + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

/// Buffers one forward pass reuses from layer to layer.
struct Scratch {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    scores: Vec<f32>,
    context: Vec<f32>,
    projected: Vec<f32>,
    inner: Vec<f32>,
}

impl Scratch {
    fn new(n: usize, config: &BertConfig) -> Self {
        let rows = |width: usize| vec![0f32; n * width];
        Self {
            q: rows(config.hidden_size),
            k: rows(config.hidden_size),
            v: rows(config.hidden_size),
            scores: rows(n),
            context: rows(config.hidden_size),
            projected: rows(config.hidden_size),
            inner: rows(config.intermediate_size),
        }
    }
}

/// Where each tensor lies in the file, checked against the config.
struct Layout {
    word: Span,
    position: Span,
    token_type: Span,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

impl Layout {
    fn read(map: &[u8], config: &BertConfig) -> Result<Self, String> {
        let tensors = SafeTensors::deserialize(map).map_err(|e| e.to_string())?;
        let prefix = if tensors.names().iter().any(|n| n.starts_with("bert.")) {
            "bert."
        } else {
            ""
        };
        let base = map.as_ptr() as usize;
        let span = |name: &str, shape: &[usize]| -> Result<Span, String> {
            let full = format!("{prefix}{name}");
            let view = tensors
                .tensor(&full)
                .map_err(|_| format!("no tensor {full}"))?;
            if view.dtype() != Dtype::F32 {
                return Err(format!("{full} is {:?}, not F32", view.dtype()));
            }
            if view.shape() != shape {
                return Err(format!(
                    "{full} has shape {:?}, not {shape:?}",
                    view.shape()
                ));
            }
            let offset = view.data().as_ptr() as usize - base;
            if !offset.is_multiple_of(4) {
                return Err(format!("{full} is not aligned for f32"));
            }
            Ok(Span {
                start: offset / 4,
                len: view.data().len() / 4,
            })
        };
        let (h, i) = (config.hidden_size, config.intermediate_size);
        if config.num_attention_heads == 0 || h % config.num_attention_heads != 0 {
            return Err("hidden_size is not a multiple of num_attention_heads".into());
        }
        let linear = |name: &str, inputs: usize, outputs: usize| -> Result<Linear, String> {
            Ok(Linear {
                weight: span(&format!("{name}.weight"), &[outputs, inputs])?,
                bias: span(&format!("{name}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };
        let norm = |name: &str| -> Result<Norm, String> {
            Ok(Norm {
                weight: span(&format!("{name}.weight"), &[h])?,
                bias: span(&format!("{name}.bias"), &[h])?,
            })
        };
        let layer = |l: usize| -> Result<Layer, String> {
            let at = |part: &str| format!("encoder.layer.{l}.{part}");
            Ok(Layer {
                query: linear(&at("attention.self.query"), h, h)?,
                key: linear(&at("attention.self.key"), h, h)?,
                value: linear(&at("attention.self.value"), h, h)?,
                attention_out: linear(&at("attention.output.dense"), h, h)?,
                attention_norm: norm(&at("attention.output.LayerNorm"))?,
                intermediate: linear(&at("intermediate.dense"), h, i)?,
                output: linear(&at("output.dense"), i, h)?,
                output_norm: norm(&at("output.LayerNorm"))?,
            })
        };
        let word = tensors
            .tensor(&format!("{prefix}embeddings.word_embeddings.weight"))
            .map_err(|_| "no word embeddings".to_string())?
            .shape()
            .to_vec();
        if word.len() != 2 || word[1] != h {
            return Err(format!("word embeddings have shape {word:?}"));
        }
        Ok(Self {
            word: span("embeddings.word_embeddings.weight", &[word[0], h])?,
            position: span(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            token_type: span("embeddings.token_type_embeddings.weight", &[2, h])?,
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers: (0..config.num_hidden_layers)
                .map(layer)
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Texts up to this many tokens take the row-by-row product in [`Encoder::linear`].
const FEW_TOKENS: usize = 24;

/// A dot product: AVX2 + FMA where the CPU has them (checked once per process), else eight
/// independent lanes. Written out rather than left to the compiler: release builds optimise
/// this crate for size, which leaves the plain loop scalar (54 ms per query instead of ~8).
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static FAST: OnceLock<bool> = OnceLock::new();
        let fast = *FAST.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        });
        if fast {
            // SAFETY: the CPU supports AVX2 and FMA (checked above).
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_lanes(a, b)
}

fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::{
        _mm256_add_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let (mut even, mut odd) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let mut i = 0;
    // SAFETY (loads): every load reads 8 floats at i < n - 7 of both slices.
    while i + 16 <= n {
        even = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), even);
        odd = _mm256_fmadd_ps(
            _mm256_loadu_ps(pa.add(i + 8)),
            _mm256_loadu_ps(pb.add(i + 8)),
            odd,
        );
        i += 16;
    }
    if i + 8 <= n {
        even = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), even);
        i += 8;
    }
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(even, odd));
    let mut sum: f32 = lanes.iter().sum();
    while i < n {
        sum += a[i] * b[i];
        i += 1;
    }
    sum
}

fn add_into(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    row.iter_mut().for_each(|v| *v /= sum);
}

/// BERT's exact GELU, `x · Φ(x)`, with erf from Abramowitz & Stegun 7.1.26 (absolute error
/// under 1.5e-7, below f32's resolution of the result; one `exp` instead of a series).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * (-x * x).exp();
    y.copysign(x)
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dot_product_agrees() {
        for n in [0, 1, 7, 8, 15, 16, 17, 384, 1536] {
            let a: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 23) as f32 / 7.0 - 1.5)
                .collect();
            let b: Vec<f32> = (0..n)
                .map(|i| ((i * 104_729) % 31) as f32 / 11.0 - 1.2)
                .collect();
            let exact: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            for got in [dot(&a, &b), dot_lanes(&a, &b)] {
                assert!(
                    (f64::from(got) - exact).abs() < 1e-3,
                    "n={n}: {got} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn erf_is_accurate_to_f32() {
        // Reference values of erf.
        for (x, expected) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-1.0, -0.842_700_8),
            (2.0, 0.995_322_3),
            (-3.5, -0.999_999_3),
        ] {
            assert!((erf(x) - expected).abs() < 3e-7, "erf({x}) = {}", erf(x));
        }
        assert!(gelu(-10.0).abs() < 1e-6 && (gelu(10.0) - 10.0).abs() < 1e-5);
    }
}
