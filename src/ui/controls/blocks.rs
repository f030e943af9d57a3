//! The layer pattern editor (issue 14 §5): switch a transformer from uniform layers to a pattern of
//! runs, generate the common patterns (local : global attention, every k-th layer a mixture of
//! experts), and edit each run's count, mixer and MLP.

use egui::Ui;

use crate::scenario::{
    Attention, GatedDeltaNet, LayerRun, Mamba, MambaVersion, Mixer, Mla, MlaCache, Mlp,
    PatternPart, Scenario, pattern_layers,
};
use crate::ui::widgets::{Choice, choice, int_slider, opt};

#[derive(Clone, Copy, PartialEq, Eq)]
enum MixerKind {
    Attention,
    Mla,
    Mamba2,
    Mamba1,
    DeltaNet,
    None,
}

const MIXERS: [Choice<MixerKind>; 6] = [
    opt(
        MixerKind::Attention,
        "Attention",
        "Softmax attention (MHA/GQA/MQA); a window makes it local (sliding window).",
    ),
    opt(
        MixerKind::Mla,
        "Latent attention (MLA)",
        "DeepSeek-V2/V3 multi-head latent attention: keys and values from a compressed latent.",
    ),
    opt(
        MixerKind::Mamba2,
        "Mamba-2",
        "State-space mixer: a fixed state per sequence instead of a KV cache.",
    ),
    opt(MixerKind::Mamba1, "Mamba", "Mamba-1 selective state space."),
    opt(
        MixerKind::DeltaNet,
        "Gated DeltaNet",
        "Linear attention with a key × value state per head (Qwen3-Next).",
    ),
    opt(
        MixerKind::None,
        "No mixer",
        "An MLP-only layer (Nemotron-H's `-` blocks).",
    ),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum MlpKind {
    Dense,
    Moe,
    None,
}

const MLPS: [Choice<MlpKind>; 3] = [
    opt(
        MlpKind::Dense,
        "Dense MLP",
        "The model's FFN (width and kind above).",
    ),
    opt(
        MlpKind::Moe,
        "Mixture of experts",
        "The MoE section's experts (Mixture of experts controls).",
    ),
    opt(
        MlpKind::None,
        "No MLP",
        "A mixer-only layer (Mamba blocks).",
    ),
];

fn mixer_kind(m: &Mixer) -> MixerKind {
    match m {
        Mixer::Attention(_) => MixerKind::Attention,
        Mixer::Mla(_) => MixerKind::Mla,
        Mixer::Mamba(m) if m.version == MambaVersion::Mamba1 => MixerKind::Mamba1,
        Mixer::Mamba(_) => MixerKind::Mamba2,
        Mixer::GatedDeltaNet(_) => MixerKind::DeltaNet,
        Mixer::None => MixerKind::None,
    }
}

fn mixer_of(kind: MixerKind) -> Mixer {
    match kind {
        MixerKind::Attention => Mixer::Attention(Attention::default()),
        MixerKind::Mla => Mixer::Mla(Mla::default()),
        MixerKind::Mamba2 => Mixer::Mamba(Mamba::default()),
        MixerKind::Mamba1 => Mixer::Mamba(Mamba {
            version: MambaVersion::Mamba1,
            d_state: 16,
            ..Mamba::default()
        }),
        MixerKind::DeltaNet => Mixer::GatedDeltaNet(GatedDeltaNet::default()),
        MixerKind::None => Mixer::None,
    }
}

fn mlp_kind(m: &Mlp) -> MlpKind {
    match m {
        Mlp::Dense(_) => MlpKind::Dense,
        Mlp::Moe => MlpKind::Moe,
        Mlp::None => MlpKind::None,
    }
}

fn mlp_of(kind: MlpKind) -> Mlp {
    match kind {
        MlpKind::Dense => Mlp::default(),
        MlpKind::Moe => Mlp::Moe,
        MlpKind::None => Mlp::None,
    }
}

/// The pattern section under the transformer's dimensions.
pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let m = &mut s.model;
    ui.separator();
    if m.pattern.is_empty() {
        ui.label("Layers: uniform (every layer as above)");
        if ui
            .button("Use a layer pattern")
            .on_hover_text("Describe the layers as runs of blocks: local/global attention, MLA, Mamba, MoE every k-th layer.")
            .clicked()
        {
            m.pattern = vec![PatternPart {
                repeat: 1,
                layers: vec![LayerRun {
                    count: m.transformer.layers,
                    ..LayerRun::default()
                }],
            }];
        }
        return;
    }
    let total = pattern_layers(&m.pattern);
    ui.label(format!("Layer pattern: {total} layers"));
    generators(ui, s);
    let m = &mut s.model;
    let mut remove_part = None;
    for (pi, part) in m.pattern.iter_mut().enumerate() {
        ui.push_id(("pattern part", pi), |ui| {
            ui.group(|ui| {
                int_slider(
                    ui,
                    &mut part.repeat,
                    1..=256,
                    true,
                    "Repeat",
                    "×",
                    "Times this list of runs repeats.",
                );
                runs_ui(ui, part);
                if ui.small_button("Remove this part").clicked() {
                    remove_part = Some(pi);
                }
            });
        });
    }
    if let Some(pi) = remove_part {
        m.pattern.remove(pi);
    }
    ui.horizontal(|ui| {
        if ui.button("Add a part").clicked() {
            m.pattern.push(PatternPart {
                repeat: 1,
                layers: vec![LayerRun::default()],
            });
        }
        if ui
            .button("Back to uniform")
            .on_hover_text("Drop the pattern; the layer count becomes the pattern's.")
            .clicked()
        {
            m.transformer.layers = u32::try_from(total.clamp(1, 10_000)).unwrap_or(1);
            m.pattern.clear();
        }
    });
}

fn runs_ui(ui: &mut Ui, part: &mut PatternPart) {
    let mut remove = None;
    for (ri, run) in part.layers.iter_mut().enumerate() {
        ui.push_id(("run", ri), |ui| {
            int_slider(
                ui,
                &mut run.count,
                0..=256,
                true,
                "Layers",
                "layers",
                "Consecutive layers of this kind.",
            );
            let mut kind = mixer_kind(&run.mixer);
            if choice(
                ui,
                &mut kind,
                &MIXERS,
                "Mixer",
                "What mixes tokens in these layers.",
            )
            .changed()
            {
                run.mixer = mixer_of(kind);
            }
            mixer_dims(ui, &mut run.mixer);
            let mut mk = mlp_kind(&run.mlp);
            if choice(ui, &mut mk, &MLPS, "MLP", "The layers' MLP.").changed() {
                run.mlp = mlp_of(mk);
            }
            if let Mlp::Dense(d) = &mut run.mlp {
                int_slider(
                    ui,
                    &mut d.ffn,
                    0..=131_072,
                    false,
                    "MLP width",
                    "values",
                    "Inner size of these layers' MLP; 0 = the model's FFN size.",
                );
            }
            if ui.small_button("Remove run").clicked() {
                remove = Some(ri);
            }
        });
    }
    if let Some(ri) = remove {
        part.layers.remove(ri);
    }
    if ui.small_button("Add run").clicked() {
        part.layers.push(LayerRun::default());
    }
}

/// One-click patterns over the current layer count.
fn generators(ui: &mut Ui, s: &mut Scenario) {
    let total = u32::try_from(pattern_layers(&s.model.pattern).clamp(1, 10_000)).unwrap_or(1);
    ui.horizontal_wrapped(|ui| {
        if ui
            .button("5 local : 1 global")
            .on_hover_text(
                "Gemma 3's pattern: five sliding-window layers (window 1,024) per global layer.",
            )
            .clicked()
        {
            s.model.pattern = local_global(total, 5, 1024);
        }
        if ui
            .button("MoE every 2nd layer")
            .on_hover_text("Llama 4 Maverick's interleave: dense and MoE layers alternate.")
            .clicked()
        {
            s.model.pattern = every_kth_moe(total, 2);
        }
    });
}

/// `local` window-attention layers per global one, repeated over `layers`; the remainder local.
pub fn local_global(layers: u32, local: u32, window: u32) -> Vec<PatternPart> {
    let period = local + 1;
    let local_run = |count| LayerRun {
        count,
        mixer: Mixer::Attention(Attention {
            window,
            ..Attention::default()
        }),
        ..LayerRun::default()
    };
    let mut parts = vec![PatternPart {
        repeat: layers / period,
        layers: vec![local_run(local), LayerRun::default()],
    }];
    if !layers.is_multiple_of(period) {
        parts.push(PatternPart {
            repeat: 1,
            layers: vec![local_run(layers % period)],
        });
    }
    parts.retain(|p| p.repeat > 0);
    parts
}

/// Every `k`-th layer a mixture of experts (the others dense), over `layers`.
pub fn every_kth_moe(layers: u32, k: u32) -> Vec<PatternPart> {
    let k = k.max(1);
    let dense = LayerRun {
        count: k - 1,
        ..LayerRun::default()
    };
    let moe = LayerRun {
        mlp: Mlp::Moe,
        ..LayerRun::default()
    };
    let mut parts = vec![PatternPart {
        repeat: layers / k,
        layers: vec![dense, moe],
    }];
    if !layers.is_multiple_of(k) {
        parts.push(PatternPart {
            repeat: 1,
            layers: vec![LayerRun {
                count: layers % k,
                ..LayerRun::default()
            }],
        });
    }
    parts.retain(|p| p.repeat > 0);
    parts
}

/// The dimensions of a run's mixer that change memory the most (0 = the model's value).
fn mixer_dims(ui: &mut Ui, mixer: &mut Mixer) {
    match mixer {
        Mixer::Attention(a) => {
            int_slider(
                ui,
                &mut a.window,
                0..=1_048_576,
                true,
                "Window",
                "tokens",
                "Sliding window: the most keys a token sees and the cache holds; 0 = global attention.",
            );
            int_slider(
                ui,
                &mut a.kv_heads,
                0..=256,
                true,
                "Layer KV heads",
                "heads",
                "Key/value heads of these layers; 0 = the model's.",
            );
        }
        Mixer::Mla(m) => mla_dims(ui, m),
        Mixer::Mamba(m) => {
            int_slider(
                ui,
                &mut m.d_state,
                1..=1024,
                true,
                "State size",
                "values",
                "d_state: the SSM state per channel (per head for Mamba-2).",
            );
            int_slider(
                ui,
                &mut m.expand,
                1..=8,
                false,
                "Expansion",
                "×",
                "Inner width = expansion × hidden.",
            );
        }
        Mixer::GatedDeltaNet(g) => {
            int_slider(
                ui,
                &mut g.value_heads,
                1..=256,
                true,
                "Value heads",
                "heads",
                "Heads of the key × value recurrent state.",
            );
            int_slider(
                ui,
                &mut g.key_heads,
                1..=256,
                true,
                "Key heads",
                "heads",
                "Query/key heads.",
            );
        }
        // An MLP-only layer has no mixer dimensions.
        Mixer::None => {}
    }
}

fn mla_dims(ui: &mut Ui, m: &mut Mla) {
    int_slider(
        ui,
        &mut m.kv_lora_rank,
        1..=4096,
        true,
        "KV latent rank",
        "values",
        "kv_lora_rank: the compressed key/value latent a token caches (with the RoPE key).",
    );
    int_slider(
        ui,
        &mut m.q_lora_rank,
        0..=8192,
        false,
        "Query latent rank",
        "values",
        "q_lora_rank; 0 = queries projected directly (DeepSeek-V2-Lite).",
    );
    let mut latent = m.cache == MlaCache::Latent;
    if ui
        .checkbox(&mut latent, "Cache the latent")
        .on_hover_text("On: kv_lora_rank + rope per token (Transformers >= 5.24, vLLM, SGLang). Off: per-head keys and values (Transformers 4.x).")
        .changed()
    {
        m.cache = if latent { MlaCache::Latent } else { MlaCache::Decompressed };
    }
}
