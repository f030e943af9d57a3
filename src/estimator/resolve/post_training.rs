//! The post-training section resolved: counts clamped, the prompt shorter than the sequence.

use crate::estimator::{Diagnostic, Diagnostics};
use crate::scenario::{Mode, PostTraining, Reference, RlAlgorithm, RlFramework, Workload};

macro_rules! r {
    ($name:literal) => {
        const { crate::scenario::validate::field($name) }
    };
}

/// `p` with every number in range; the prompt leaves at least one completion token of
/// `workload.seq_len` (already resolved). Settings that do not apply are reported
/// ([`Diagnostic::PostTrainingSettingsIgnored`]).
pub(super) fn resolve(
    p: &PostTraining,
    workload: &Workload,
    mode: Mode,
    d: &mut Diagnostics,
) -> PostTraining {
    let on = p.algorithm != RlAlgorithm::Off;
    let ignored = (on && mode == Mode::Inference)
        || (on && p.algorithm != RlAlgorithm::Dpo && p.reference == Reference::Precomputed)
        || (p.algorithm == RlAlgorithm::Dpo && p.reference == Reference::Off)
        || offload_ignored(p);
    if ignored {
        d.insert(Diagnostic::PostTrainingSettingsIgnored);
    }
    let PostTraining {
        algorithm,
        prompt_tokens,
        num_generations,
        reference,
        rollout,
        rollout_gpu_memory_utilization,
        rollout_sleep,
        framework,
        param_offload,
        optimizer_offload,
        ref_offload,
    } = p;
    let prompt = r!("post_training.prompt_tokens").clamp_u32(*prompt_tokens, d);
    PostTraining {
        algorithm: *algorithm,
        prompt_tokens: prompt.min(workload.seq_len.saturating_sub(1)),
        num_generations: r!("post_training.num_generations").clamp_u32(*num_generations, d),
        reference: *reference,
        rollout: *rollout,
        rollout_gpu_memory_utilization: r!("post_training.rollout_gpu_memory_utilization").clamp(
            *rollout_gpu_memory_utilization,
            PostTraining::default().rollout_gpu_memory_utilization,
            d,
        ),
        rollout_sleep: *rollout_sleep,
        framework: *framework,
        // A setting the framework does not have is off (and reported above).
        param_offload: *param_offload && *framework == RlFramework::Verl,
        optimizer_offload: *optimizer_offload && *framework != RlFramework::Trl,
        ref_offload: *ref_offload && *framework == RlFramework::OpenRlhf,
    }
}

/// An offload setting the framework does not have: TRL has none, verl no reference setting (its
/// reference is always host-resident), OpenRLHF no parameter offload of the trained models.
fn offload_ignored(p: &PostTraining) -> bool {
    match p.framework {
        RlFramework::Trl => p.param_offload || p.optimizer_offload || p.ref_offload,
        RlFramework::Verl => p.ref_offload,
        RlFramework::OpenRlhf => p.param_offload,
    }
}
