//! Model controls: family, parameter count (log slider 1M–2T) or full transformer dimensions.

use egui::Ui;

use crate::estimator::Estimate;
use crate::scenario::{
    ArchKind, CnnNetwork, FfnKind, ModelFamily, NormKind, PositionKind, Scenario, ShapeSource,
};
use crate::ui::widgets::{Choice, choice, count_slider, fmt_count, int_slider, opt, toggle};

const FAMILIES: [Choice<ModelFamily>; 3] = [
    opt(
        ModelFamily::Transformer,
        "Transformer",
        "Decoder (GPT, LLaMA) or encoder (BERT) transformer.",
    ),
    opt(
        ModelFamily::Cnn,
        "CNN",
        "A CNN or vision model: a network layer by layer (ResNet, ViT, DiT) or sourced per-image figures.",
    ),
    opt(
        ModelFamily::Recommender,
        "Recommender",
        "Embedding tables plus a dense MLP (DLRM class).",
    ),
];

const NETWORKS: [Choice<CnnNetwork>; 8] = [
    opt(
        CnnNetwork::Aggregate,
        "Per-image aggregate",
        "Sourced per-image figures (parameters, activation bytes, MACs) you can edit.",
    ),
    opt(
        CnnNetwork::ResNet18,
        "ResNet-18",
        "torchvision resnet18, layer by layer (docs/cnn.md).",
    ),
    opt(
        CnnNetwork::ResNet50,
        "ResNet-50",
        "torchvision resnet50, layer by layer; measured within 0.01 % (docs/cnn.md).",
    ),
    opt(
        CnnNetwork::ResNet101,
        "ResNet-101",
        "torchvision resnet101, layer by layer (docs/cnn.md).",
    ),
    opt(
        CnnNetwork::VitB16,
        "ViT-B/16",
        "torchvision vit_b_16: exact parameters, activations derived (docs/cnn.md).",
    ),
    opt(
        CnnNetwork::VitL16,
        "ViT-L/16",
        "torchvision vit_l_16: exact parameters, activations derived (docs/cnn.md).",
    ),
    opt(
        CnnNetwork::DitXl2,
        "DiT-XL/2",
        "DiT-XL/2 (Peebles & Xie 2023) on the VAE latent (side ÷ 8): exact parameters.",
    ),
    opt(
        CnnNetwork::Sd15Unet,
        "SD 1.5 UNet",
        "Stable Diffusion 1.5's UNet on the VAE latent (side ÷ 8), block by block; measured (docs/cnn.md).",
    ),
];

const SHAPES: [Choice<ShapeSource>; 2] = [
    opt(
        ShapeSource::ParamCount,
        "By parameter count",
        "Give only the parameter count; a plausible shape is derived.",
    ),
    opt(
        ShapeSource::Dimensions,
        "By dimensions",
        "Give layers, hidden size, heads, FFN size and vocabulary.",
    ),
];

const ARCHS: [Choice<ArchKind>; 2] = [
    opt(
        ArchKind::Decoder,
        "Decoder",
        "Causal LM with an LM head (GPT-2, LLaMA).",
    ),
    opt(
        ArchKind::Encoder,
        "Encoder",
        "Bidirectional encoder (BERT).",
    ),
];

const FFNS: [Choice<FfnKind>; 2] = [
    opt(
        FfnKind::SwiGlu,
        "SwiGLU (3 matrices)",
        "Gated FFN with gate, up and down projections (LLaMA).",
    ),
    opt(
        FfnKind::Gelu,
        "GELU (2 matrices)",
        "Plain FFN h -> f -> h (GPT-2, BERT).",
    ),
];

const POSITIONS: [Choice<PositionKind>; 2] = [
    opt(PositionKind::Rotary, "Rotary", "RoPE: no parameters."),
    opt(
        PositionKind::Learned,
        "Learned table",
        "A learned max_positions × hidden table (GPT-2, BERT).",
    ),
];

const NORMS: [Choice<NormKind>; 2] = [
    opt(NormKind::RmsNorm, "RMSNorm", "Weight only."),
    opt(NormKind::LayerNorm, "LayerNorm", "Weight and bias."),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario, est: &Estimate) {
    let m = &mut s.model;
    choice(
        ui,
        &mut m.family,
        &FAMILIES,
        "Family",
        "What kind of network the scenario describes.",
    );
    match m.family {
        ModelFamily::Transformer => {
            choice(
                ui,
                &mut m.shape,
                &SHAPES,
                "Shape",
                "How the transformer is described.",
            );
            match m.shape {
                ShapeSource::ParamCount => {
                    count_slider(
                        ui,
                        &mut m.params,
                        1e6..=2e12,
                        "Parameters",
                        "params",
                        "Total parameter count (log scale, 1 M – 2 T). Type e.g. 70B or 7e9.",
                    );
                }
                ShapeSource::Dimensions => dims_ui(ui, s),
            }
        }
        ModelFamily::Cnn => cnn_ui(ui, s),
        ModelFamily::Recommender => recommender_ui(ui, s),
    }
    let total = est.memory.params.total;
    if total > 0.0 {
        ui.label(format!("≈ {} parameters", fmt_count(total)))
            .on_hover_text(format!("Counted from the shape: {total:.0} parameters."));
    }
}

fn dims_ui(ui: &mut Ui, s: &mut Scenario) {
    let patterned = !s.model.pattern.is_empty();
    let t = &mut s.model.transformer;
    choice(
        ui,
        &mut t.arch,
        &ARCHS,
        "Architecture",
        "Decoder or encoder.",
    );
    if !patterned {
        int_slider(
            ui,
            &mut t.layers,
            1..=256,
            false,
            "Layers",
            "layers",
            "Transformer blocks.",
        );
    }
    int_slider(
        ui,
        &mut t.hidden,
        64..=32768,
        true,
        "Hidden size",
        "values",
        "Model width h.",
    );
    int_slider(
        ui,
        &mut t.heads,
        1..=256,
        true,
        "Attention heads",
        "heads",
        "Query heads per layer.",
    );
    let kv_max = t.heads.max(t.kv_heads).max(1);
    int_slider(
        ui,
        &mut t.kv_heads,
        1..=kv_max,
        true,
        "KV heads",
        "heads",
        "Key/value heads: = heads for MHA, 1 for MQA, between for GQA. Fewer heads shrink the KV cache.",
    );
    int_slider(
        ui,
        &mut t.ffn,
        64..=131072,
        true,
        "FFN size",
        "values",
        "Inner size of the MLP.",
    );
    dims_more_ui(ui, s);
    super::blocks::ui(ui, s);
    super::towers::ui(ui, s);
}

fn dims_more_ui(ui: &mut Ui, s: &mut Scenario) {
    let t = &mut s.model.transformer;
    choice(
        ui,
        &mut t.ffn_kind,
        &FFNS,
        "FFN kind",
        "Gated (3 matrices) or plain (2 matrices).",
    );
    int_slider(
        ui,
        &mut t.vocab,
        1000..=512_000,
        true,
        "Vocabulary",
        "tokens",
        "Tokens in the vocabulary: embedding and LM-head size, and the logits' width.",
    );
    toggle(
        ui,
        &mut t.tied_embeddings,
        "Tied embeddings",
        "The LM head shares the token embedding matrix (one copy of vocab × hidden).",
    );
    choice(
        ui,
        &mut t.positions,
        &POSITIONS,
        "Positions",
        "How positions are encoded.",
    );
    choice(
        ui,
        &mut t.norm,
        &NORMS,
        "Norm",
        "Normalisation layers' parameters.",
    );
    toggle(
        ui,
        &mut t.bias,
        "Biases",
        "Biases on attention and MLP projections (GPT-2, BERT).",
    );
}

fn cnn_ui(ui: &mut Ui, s: &mut Scenario) {
    let c = &mut s.model.cnn;
    choice(
        ui,
        &mut c.network,
        &NETWORKS,
        "Network",
        "Which vision network: a layer table or the editable per-image aggregate.",
    );
    let table = c.network != CnnNetwork::Aggregate;
    if !table {
        count_slider(
            ui,
            &mut c.params,
            1e5..=1e10,
            "CNN parameters",
            "params",
            "Parameter count of the CNN (ResNet-50: 25.6 M).",
        );
    }
    int_slider(
        ui,
        &mut c.resolution,
        32..=1024,
        false,
        "Image side",
        "px",
        if table {
            "Input resolution; every feature map follows it layer by layer."
        } else {
            "Input resolution; activations scale with its square."
        },
    );
}

fn recommender_ui(ui: &mut Ui, s: &mut Scenario) {
    let r = &mut s.model.recommender;
    int_slider(
        ui,
        &mut r.tables,
        1..=1000,
        true,
        "Embedding tables",
        "tables",
        "Number of embedding tables.",
    );
    count_slider(
        ui,
        &mut r.rows_per_table,
        1e3..=1e10,
        "Rows per table",
        "rows",
        "Rows (ids) per embedding table.",
    );
    int_slider(
        ui,
        &mut r.dim,
        4..=1024,
        true,
        "Embedding dim",
        "values",
        "Values per embedding row.",
    );
    count_slider(
        ui,
        &mut r.dense_params,
        1e3..=1e10,
        "Dense parameters",
        "params",
        "Parameters of the dense MLP part.",
    );
}
