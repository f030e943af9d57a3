//! Encoder-decoder models of a `config.json` (Transformers 5.25 `T5Config`, `WhisperConfig`): the
//! decoder is the layer pattern (self-attention, cross-attention over the encoder's output, MLP,
//! three norms per layer) and the encoder a tower (`scenario::towers::EncoderStack`).

use super::hf_config::{Built, Reader};
use super::hf_families::{check_layers, layer};
use crate::presets::text::echo;
use crate::scenario::{
    ArchKind, Attention, DenseMlp, EncoderInput, EncoderStack, FfnKind, Mixer, Mlp, NormKind,
    PositionKind, Tower, TransformerDims,
};

fn dims(
    hidden: u32,
    heads: u32,
    head_dim: u32,
    ffn: u32,
    vocab: u32,
    layers: u32,
) -> TransformerDims {
    TransformerDims {
        arch: ArchKind::Decoder,
        layers,
        hidden,
        heads,
        kv_heads: heads,
        head_dim,
        ffn,
        vocab,
        ..TransformerDims::default()
    }
}

/// T5 (`T5ForConditionalGeneration`): no biases, RMSNorm, a relative position table
/// (`relative_attention_num_buckets` × heads) in the first layer of each stack, the token embedding
/// shared by encoder and decoder, the LM head tied to it unless `tie_word_embeddings` is false.
pub(super) fn t5(r: &mut Reader, out: &mut Built) {
    let hidden = r.or("d_model", 512);
    let head_dim = r.or("d_kv", 64);
    let ffn = r.or("d_ff", 2048);
    let heads = r.or("num_heads", 8);
    let enc_layers = r.or("num_layers", 6);
    let dec_layers = r.or("num_decoder_layers", enc_layers);
    let buckets = r.or("relative_attention_num_buckets", 32);
    let proj = r.text("feed_forward_proj").unwrap_or("relu");
    let kind = match proj {
        "relu" | "gelu" => FfnKind::Gelu,
        "gated-gelu" | "gated-relu" | "gated-silu" => FfnKind::SwiGlu,
        other => {
            r.problems.push(format!(
                "`feed_forward_proj` = \"{}\" is not understood",
                echo(other)
            ));
            FfnKind::Gelu
        }
    };
    r.skip(&["is_encoder_decoder", "n_positions", "layer_norm_epsilon"]);
    let mut t = dims(
        hidden,
        heads,
        head_dim,
        ffn,
        r.or("vocab_size", 32128),
        dec_layers,
    );
    t.ffn_kind = kind;
    t.tied_embeddings = r.flag("tie_word_embeddings", true);
    out.t = t;
    out.towers.push(Tower::Encoder(EncoderStack {
        layers: enc_layers,
        hidden,
        heads,
        head_dim,
        ffn,
        ffn_kind: kind,
        norm: NormKind::RmsNorm,
        bias: false,
        relative_buckets: buckets,
        input: EncoderInput::SharedEmbedding,
        input_len: 0,
    }));
    if !check_layers(r, dec_layers) {
        return;
    }
    let a = Attention {
        cross_attention: true,
        ..Attention::default()
    };
    let mlp = Mlp::Dense(DenseMlp {
        ffn,
        kind: Some(kind),
        bias: false,
    });
    out.layers = (0..dec_layers)
        .map(|i| {
            let a = Attention {
                relative_buckets: if i == 0 { buckets } else { 0 },
                ..a.clone()
            };
            layer(Mixer::Attention(a), mlp.clone(), 3)
        })
        .collect();
}

/// Whisper (`WhisperForConditionalGeneration`): LayerNorm, GELU MLPs with biases, attention biases on
/// q, v and the output (not k); the encoder reads log-mel features through two convolutions and a
/// position table, the decoder has learned positions and its head tied to the token embedding.
pub(super) fn whisper(r: &mut Reader, out: &mut Built) {
    let hidden = r.or("d_model", 384);
    let dec_layers = r.or("decoder_layers", 4);
    let dec_heads = r.or("decoder_attention_heads", 6);
    let dec_ffn = r.or("decoder_ffn_dim", 1536);
    let act = r.text("activation_function").unwrap_or("gelu");
    if act != "gelu" {
        out.notes.push(format!(
            "`activation_function` {act}: counted as GELU (same shapes)"
        ));
    }
    r.skip(&["is_encoder_decoder"]);
    // The encoder always reads its whole window (30 s of log-mel frames, padded), whatever the audio.
    let source = r.or("max_source_positions", 1500);
    let mut t = dims(
        hidden,
        dec_heads,
        0,
        dec_ffn,
        r.or("vocab_size", 51865),
        dec_layers,
    );
    t.ffn_kind = FfnKind::Gelu;
    t.norm = NormKind::LayerNorm;
    t.positions = PositionKind::Learned;
    t.max_positions = r.or("max_target_positions", 448);
    t.tied_embeddings = r.flag("tie_word_embeddings", true);
    t.bias = true;
    out.t = t;
    out.towers.push(Tower::Encoder(EncoderStack {
        layers: r.or("encoder_layers", 4),
        hidden,
        heads: r.or("encoder_attention_heads", 6),
        head_dim: 0,
        ffn: r.or("encoder_ffn_dim", 1536),
        ffn_kind: FfnKind::Gelu,
        norm: NormKind::LayerNorm,
        bias: true,
        relative_buckets: 0,
        input: EncoderInput::AudioConv {
            mel_bins: r.or("num_mel_bins", 80),
            positions: source,
        },
        input_len: source,
    }));
    if !check_layers(r, dec_layers) {
        return;
    }
    let a = Attention {
        qkv_bias: true,
        no_k_bias: true,
        out_bias: true,
        cross_attention: true,
        ..Attention::default()
    };
    let mlp = Mlp::Dense(DenseMlp {
        ffn: dec_ffn,
        kind: Some(FfnKind::Gelu),
        bias: true,
    });
    out.layers = (0..dec_layers)
        .map(|_| layer(Mixer::Attention(a.clone()), mlp.clone(), 3))
        .collect();
}
