//! What the window, the CLI and the reports call things for each model family, as data: a new
//! family adds one row here. A transformer's batch holds sequences and its speed is tokens per second; a CNN's batch
//! holds images, a recommender's samples, and neither has a sequence length, prompt, KV cache or
//! attention kernel, so those controls are not shown for them.

use crate::estimator::Estimate;
use crate::scenario::ModelFamily;

/// The family-dependent words and controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FamilyView {
    /// Unit of one element of a batch, plural ("sequences", "images", "samples").
    pub items: &'static str,
    /// The same, short, after a control's value ("seq", "images", "samples").
    pub items_short: &'static str,
    /// What a batch element is, for the micro-batch control's hover.
    pub batch_hover: &'static str,
    /// Sequence length, prompt, generated tokens, KV cache and request batching apply.
    pub sequences: bool,
    /// The attention kernel choice (FlashAttention, …) applies.
    pub attention: bool,
    /// Throughput counts tokens (else batch elements, [`Self::items`]).
    pub tokens: bool,
}

const TRANSFORMER: FamilyView = FamilyView {
    items: "sequences",
    items_short: "seq",
    batch_hover: "Sequences per GPU per forward pass. Activations and KV cache grow linearly with it.",
    sequences: true,
    attention: true,
    tokens: true,
};

const CNN: FamilyView = FamilyView {
    items: "images",
    items_short: "images",
    batch_hover: "Images per GPU per forward pass. Activations grow linearly with it.",
    sequences: false,
    attention: false,
    tokens: false,
};

const RECOMMENDER: FamilyView = FamilyView {
    items: "samples",
    items_short: "samples",
    batch_hover: "Samples (feature rows) per GPU per forward pass. Activations grow linearly with it.",
    sequences: false,
    attention: false,
    tokens: false,
};

/// The view of `family`.
pub const fn view(family: ModelFamily) -> FamilyView {
    match family {
        ModelFamily::Transformer => TRANSFORMER,
        ModelFamily::Cnn => CNN,
        ModelFamily::Recommender => RECOMMENDER,
    }
}

impl FamilyView {
    /// What throughput and a training budget count: "tokens", or [`Self::items`] (a CNN's or a
    /// recommender's step processes one "token" per image or sample).
    pub const fn counted(self) -> &'static str {
        if self.tokens { "tokens" } else { self.items }
    }

    /// Throughput in this family's unit: (per second, [`Self::counted`]).
    pub fn throughput(self, est: &Estimate) -> (f64, &'static str) {
        let t = &est.performance.throughput;
        if self.tokens {
            (t.tokens_per_s, "tokens")
        } else {
            (t.samples_per_s, self.items)
        }
    }
}

/// The throughput figure as the window, the CLI and the Markdown report all write it:
/// "2.52 M tokens/s", "396 images/s", and "≤ 2.52 M tokens/s" when the device has no sourced
/// compute peak (the time then counts memory traffic only, so the rate is an upper bound).
pub fn throughput_text(est: &Estimate, family: FamilyView) -> String {
    let (rate, unit) = family.throughput(est);
    let bound = if est.performance.peak_known {
        ""
    } else {
        "≤ "
    };
    format!("{bound}{} {unit}/s", crate::format::count(rate))
}
