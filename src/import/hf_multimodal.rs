//! Vision-language models of a `config.json`: the language model from `text_config` (its own
//! `model_type`, defaults of its class) and the vision tower from `vision_config` (Transformers 5.25
//! `LlavaConfig` + `CLIPVisionConfig`, `Gemma3Config` + `SiglipVisionConfig`, `Qwen2_5_VLConfig` +
//! `Qwen2_5_VLVisionConfig`). The tower and its projector are counted exactly
//! (`estimator::model::towers`).

use serde_json::{Map, Value};

use super::hf_config::{Built, Reader};
use super::hf_route;
use crate::presets::text::echo;
use crate::scenario::{FfnKind, NormKind, Projector, Tower, VisionTower};

/// Builds the language model of `text` (a nested object, or the top level itself) as
/// `default_type` unless it names its own, noting its ignored keys and carrying its problems.
pub(super) fn text_model(
    r: &mut Reader,
    text: Option<&Map<String, Value>>,
    default_type: &str,
    out: &mut Built,
) {
    let Some(obj) = text else {
        // The text keys are at the top level (older Qwen2.5-VL files).
        if !hf_route::build(r, default_type, out) {
            r.problems.push(format!(
                "text model type \"{default_type}\" is not understood"
            ));
        }
        return;
    };
    let mut t = Reader::new(obj);
    let ty = t.text("model_type").unwrap_or(default_type).to_owned();
    if !hf_route::build(&mut t, &ty, out) {
        t.problems
            .push(format!("model_type \"{}\" is not understood", echo(&ty)));
    }
    r.problems
        .extend(t.problems.drain(..).map(|p| format!("text_config: {p}")));
    out.notes.extend(t.ignored(" in text_config"));
}

pub(super) fn vision_reader<'a>(r: &mut Reader<'a>) -> Reader<'a> {
    let empty: &'static Map<String, Value> = empty_map();
    Reader::new(r.object("vision_config").unwrap_or(empty))
}

fn empty_map() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

pub(super) fn finish_vision(r: &mut Reader, v: &Reader, tower: VisionTower, out: &mut Built) {
    r.problems
        .extend(v.problems.iter().map(|p| format!("vision_config: {p}")));
    out.notes.extend(v.ignored(" in vision_config"));
    out.towers.push(Tower::Vision(tower));
    out.vision = true;
}

/// LLaVA (`LlavaForConditionalGeneration`): a LLaMA-family language model, a CLIP vision model
/// (`CLIPVisionModel`: class token, position table, pre- and post-layernorm; every layer built) and
/// a two-layer GELU projector with biases.
pub(super) fn llava(r: &mut Reader, out: &mut Built) {
    let text = r.object("text_config");
    text_model(r, text, "llama", out);
    if r.has("tie_word_embeddings") {
        out.t.tied_embeddings = r.flag("tie_word_embeddings", false);
    }
    if let Some(v) = r.get("vocab_size").and_then(Value::as_u64) {
        out.t.vocab = u32::try_from(v).unwrap_or(u32::MAX);
    }
    let mut v = vision_reader(r);
    let hidden = v.or("hidden_size", 768);
    let bias = r.flag("multimodal_projector_bias", true);
    let tower = VisionTower {
        layers: v.or("num_hidden_layers", 12),
        hidden,
        heads: v.or("num_attention_heads", 12),
        ffn: v.or("intermediate_size", 3072),
        image_size: v.or("image_size", 224),
        patch_size: v.or("patch_size", 32),
        channels: v.or("num_channels", 3),
        projector: Projector {
            norm: None,
            merge: 1,
            hidden: out.t.hidden,
            mid_layers: 0,
            out: out.t.hidden,
            bias,
        },
        ..VisionTower::default()
    };
    v.skip(&[
        "model_type",
        "projection_dim",
        "vocab_size",
        "hidden_act",
        "layer_norm_eps",
    ]);
    r.skip(&[
        "projector_hidden_act",
        "vision_feature_layer",
        "vision_feature_select_strategy",
        "image_seq_length",
    ]);
    finish_vision(r, &v, tower, out);
}

/// Gemma 3 (`Gemma3ForConditionalGeneration`): a `gemma3_text` language model, a SigLIP vision model
/// without its pooling head, and `Gemma3MultiModalProjector` (RMSNorm over the vision width, one
/// bias-free matrix).
pub(super) fn gemma3(r: &mut Reader, out: &mut Built) {
    let text = r.object("text_config");
    text_model(r, text, "gemma3_text", out);
    let mut v = vision_reader(r);
    if v.flag("vision_use_head", true) {
        v.problems
            .push("`vision_use_head` = true (a pooling head) is not understood".to_owned());
    }
    let tower = VisionTower {
        layers: v.or("num_hidden_layers", 12),
        hidden: v.or("hidden_size", 768),
        heads: v.or("num_attention_heads", 12),
        ffn: v.or("intermediate_size", 3072),
        image_size: v.or("image_size", 224),
        patch_size: v.or("patch_size", 16),
        channels: v.or("num_channels", 3),
        patch_bias: true,
        class_token: false,
        pre_norm: false,
        projector: Projector {
            norm: Some(NormKind::RmsNorm),
            merge: 1,
            hidden: 0,
            mid_layers: 0,
            out: out.t.hidden,
            bias: false,
        },
        ..VisionTower::default()
    };
    v.skip(&["model_type", "hidden_act", "layer_norm_eps"]);
    r.skip(&["mm_tokens_per_image", "boi_token_index", "eoi_token_index"]);
    finish_vision(r, &v, tower, out);
}

/// Qwen2.5-VL (`Qwen2_5_VLForConditionalGeneration`): a Qwen2 language model (`text_config`, or the
/// top-level keys) and `Qwen2_5_VisionTransformerPretrainedModel` (3-D patches, RMSNorm blocks with
/// biased fused qkv and gated MLP, the patch merger).
pub(super) fn qwen2_5_vl(r: &mut Reader, out: &mut Built) {
    let text = r.object("text_config");
    text_model(r, text, "qwen2_5_vl_text", out);
    let mut v = vision_reader(r);
    let channels = match v.count("in_channels") {
        Some(c) => c,
        None => v.or("in_chans", 3),
    };
    let merge = v.or("spatial_merge_size", 2);
    let hidden = v.or("hidden_size", 3584);
    let patch = v.or("patch_size", 14);
    let tower = VisionTower {
        layers: v.or("depth", 32),
        hidden,
        heads: v.or("num_heads", 16),
        ffn: v.or("intermediate_size", 3420),
        ffn_kind: FfnKind::SwiGlu,
        norm: NormKind::RmsNorm,
        bias: true,
        // Dynamic resolution: no position table, so the image size changes no count.
        image_size: patch,
        patch_size: patch,
        channels,
        temporal_patch: v.or("temporal_patch_size", 2),
        patch_bias: false,
        class_token: false,
        learned_positions: false,
        pre_norm: false,
        post_norm: false,
        projector: Projector {
            norm: Some(NormKind::RmsNorm),
            merge: merge.saturating_mul(merge),
            hidden: hidden.saturating_mul(merge).saturating_mul(merge),
            mid_layers: 0,
            out: v.or("out_hidden_size", 3584),
            bias: true,
        },
        images: 0,
    };
    v.skip(&[
        "model_type",
        "hidden_act",
        "window_size",
        "fullatt_block_indexes",
        "tokens_per_second",
        "spatial_patch_size",
    ]);
    finish_vision(r, &v, tower, out);
    out.notes.push(
        "Qwen2.5-VL's vision tower has no fixed image size (dynamic resolution): its tokens per \
         image depend on the image"
            .to_owned(),
    );
}
