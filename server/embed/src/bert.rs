//! A BERT encoder on candle-nn: the forward pass the local MiniLM embedder runs (absolute
//! positions, GELU, a layer norm after each residual), reading the weight names of the model's
//! safetensors file. Only what all-MiniLM-L6-v2 needs; another kind of BERT is refused at load.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder, embedding, layer_norm, linear};
use serde::Deserialize;

/// The fields of a BERT `config.json` that the forward pass reads (others are ignored).
#[derive(Clone, Debug, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    #[serde(default = "default_activation")]
    pub hidden_act: String,
    #[serde(default = "default_positions")]
    pub position_embedding_type: String,
}

fn default_activation() -> String {
    "gelu".into()
}

fn default_positions() -> String {
    "absolute".into()
}

/// What a padding position adds to an attention score: after the softmax, nothing.
const MASKED_SCORE: f64 = -10_000.0;

struct Embeddings {
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    norm: LayerNorm,
}

impl Embeddings {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Embeddings> {
        Ok(Embeddings {
            words: embedding(
                config.vocab_size,
                config.hidden_size,
                vb.pp("word_embeddings"),
            )?,
            positions: embedding(
                config.max_position_embeddings,
                config.hidden_size,
                vb.pp("position_embeddings"),
            )?,
            token_types: embedding(
                config.type_vocab_size,
                config.hidden_size,
                vb.pp("token_type_embeddings"),
            )?,
            norm: layer_norm(
                config.hidden_size,
                config.layer_norm_eps,
                vb.pp("LayerNorm"),
            )?,
        })
    }

    fn forward(&self, ids: &Tensor, token_types: &Tensor) -> Result<Tensor> {
        let (_, width) = ids.dims2()?;
        let positions = Tensor::arange(0u32, width as u32, ids.device())?.unsqueeze(0)?;
        let summed = (self.words.forward(ids)? + self.token_types.forward(token_types)?)?
            .broadcast_add(&self.positions.forward(&positions)?)?;
        self.norm.forward(&summed)
    }
}

struct SelfAttention {
    query: Linear,
    key: Linear,
    value: Linear,
    output: Linear,
    norm: LayerNorm,
    heads: usize,
    head_size: usize,
}

impl SelfAttention {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<SelfAttention> {
        let size = config.hidden_size;
        let own = vb.pp("self");
        let out = vb.pp("output");
        Ok(SelfAttention {
            query: linear(size, size, own.pp("query"))?,
            key: linear(size, size, own.pp("key"))?,
            value: linear(size, size, own.pp("value"))?,
            output: linear(size, size, out.pp("dense"))?,
            norm: layer_norm(size, config.layer_norm_eps, out.pp("LayerNorm"))?,
            heads: config.num_attention_heads,
            head_size: size / config.num_attention_heads,
        })
    }

    /// `mask`: (batch, 1, 1, width), 0 for a token and [`MASKED_SCORE`] for padding.
    fn forward(&self, hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, width, size) = hidden.dims3()?;
        let by_head = |projected: Tensor| {
            projected
                .reshape((batch, width, self.heads, self.head_size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let query = by_head(self.query.forward(hidden)?)?;
        let key = by_head(self.key.forward(hidden)?)?;
        let value = by_head(self.value.forward(hidden)?)?;
        let scores = (query.matmul(&key.t()?.contiguous()?)? / (self.head_size as f64).sqrt())?
            .broadcast_add(mask)?;
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = weights
            .matmul(&value)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((batch, width, size))?;
        self.norm
            .forward(&(self.output.forward(&context)? + hidden)?)
    }
}

struct Layer {
    attention: SelfAttention,
    intermediate: Linear,
    output: Linear,
    norm: LayerNorm,
}

impl Layer {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Layer> {
        Ok(Layer {
            attention: SelfAttention::load(vb.pp("attention"), config)?,
            intermediate: linear(
                config.hidden_size,
                config.intermediate_size,
                vb.pp("intermediate").pp("dense"),
            )?,
            output: linear(
                config.intermediate_size,
                config.hidden_size,
                vb.pp("output").pp("dense"),
            )?,
            norm: layer_norm(
                config.hidden_size,
                config.layer_norm_eps,
                vb.pp("output").pp("LayerNorm"),
            )?,
        })
    }

    fn forward(&self, hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let attended = self.attention.forward(hidden, mask)?;
        let inner = self.intermediate.forward(&attended)?.gelu_erf()?;
        self.norm
            .forward(&(self.output.forward(&inner)? + attended)?)
    }
}

/// The encoder: embeddings, then the layers; its output is the last hidden state.
pub struct BertEncoder {
    embeddings: Embeddings,
    layers: Vec<Layer>,
}

impl BertEncoder {
    /// Loads the weights under `vb` (names as in the model's safetensors file, with or without
    /// a leading `bert.`). Refuses what this forward pass does not implement.
    pub fn load(vb: VarBuilder, config: &BertConfig) -> Result<BertEncoder> {
        if config.hidden_act != "gelu" {
            candle_core::bail!("hidden_act {:?} is not supported (gelu)", config.hidden_act);
        }
        if config.position_embedding_type != "absolute" {
            candle_core::bail!(
                "position_embedding_type {:?} is not supported (absolute)",
                config.position_embedding_type
            );
        }
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            candle_core::bail!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden_size,
                config.num_attention_heads
            );
        }
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else {
            vb.pp("bert")
        };
        let layers = (0..config.num_hidden_layers)
            .map(|index| Layer::load(vb.pp("encoder").pp("layer").pp(index), config))
            .collect::<Result<Vec<_>>>()?;
        Ok(BertEncoder {
            embeddings: Embeddings::load(vb.pp("embeddings"), config)?,
            layers,
        })
    }

    /// The last hidden state, (batch, width, hidden_size), for token `ids`, their `token_types`
    /// and `mask` (1 for a token, 0 for padding), each (batch, width).
    pub fn forward(&self, ids: &Tensor, token_types: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, width) = mask.dims2()?;
        let mask = mask
            .to_dtype(DType::F32)?
            .affine(-MASKED_SCORE, MASKED_SCORE)?
            .reshape((batch, 1, 1, width))?;
        let mut hidden = self.embeddings.forward(ids, token_types)?;
        for layer in &self.layers {
            hidden = layer.forward(&hidden, &mask)?;
        }
        Ok(hidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn config(activation: &str, positions: &str, heads: usize) -> BertConfig {
        BertConfig {
            vocab_size: 8,
            hidden_size: 4,
            num_hidden_layers: 1,
            num_attention_heads: heads,
            intermediate_size: 8,
            max_position_embeddings: 8,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            hidden_act: activation.into(),
            position_embedding_type: positions.into(),
        }
    }

    #[test]
    // The forward pass itself is checked against sentence-transformers' own vectors with the
    // real weights (tests/it/minilm.rs: vectors_match_the_python_reference, and padding by
    // batches_of_mixed_lengths_give_the_same_vectors_in_order).
    fn other_kinds_of_bert_are_refused_by_name() {
        let zeros = || VarBuilder::zeros(DType::F32, &Device::Cpu);
        let refused = |config: BertConfig| match BertEncoder::load(zeros(), &config) {
            Ok(_) => panic!("{config:?} was accepted"),
            Err(error) => error.to_string(),
        };
        assert!(refused(config("relu", "absolute", 2)).contains("relu"));
        assert!(refused(config("gelu", "relative_key", 2)).contains("relative_key"));
        assert!(refused(config("gelu", "absolute", 3)).contains("num_attention_heads 3"));
    }
}
