//! Which part of memory an allocation is, from the stack frames the allocator recorded with it and
//! from when it lives. The frame names come from PyTorch v2.5.0 sources:
//! `torch/optim/adam.py` (`_init_group` creates `state['exp_avg']`, `state['exp_avg_sq']`; the
//! other optimizers in `torch/optim/` follow the same pattern), `torch/csrc/autograd/functions/
//! accumulate_grad.h` (`AccumulateGrad`: the `.grad` of a leaf), `torch/nn/modules/module.py`
//! (`_apply`/`to`/`cuda` move parameters; `_call_impl` runs `forward`), `torch/autograd/graph.py`
//! (`_engine_run_backward`), `torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp` and cuBLAS handle
//! workspaces (`at::cuda::getCurrentCUDABlasHandle`).

use crate::estimator::Component;

listed_enum! {
    /// What a measured block is, as far as the frames tell.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Kind {
        Parameters,
        Gradients,
        OptimizerState,
        /// Allocated in forward and freed in backward: saved for backward.
        SavedActivations,
        /// Short-lived: freed in the same pass, optimizer-step temporaries.
        Temporaries,
        /// NCCL buffers and cuBLAS workspaces.
        Workspaces,
        /// Allocated before the recording began (usually the parameters).
        BeforeRecording,
        Unattributed,
    }
}

impl Kind {
    pub const fn label(self) -> &'static str {
        match self {
            Kind::Parameters => "Parameters",
            Kind::Gradients => "Gradients",
            Kind::OptimizerState => "Optimizer state",
            Kind::SavedActivations => "Saved activations",
            Kind::Temporaries => "Temporaries",
            Kind::Workspaces => "NCCL / cuBLAS workspaces",
            Kind::BeforeRecording => "Before recording",
            Kind::Unattributed => "Unattributed",
        }
    }

    pub const fn key(self) -> &'static str {
        match self {
            Kind::Parameters => "parameters",
            Kind::Gradients => "gradients",
            Kind::OptimizerState => "optimizer_state",
            Kind::SavedActivations => "saved_activations",
            Kind::Temporaries => "temporaries",
            Kind::Workspaces => "workspaces",
            Kind::BeforeRecording => "before_recording",
            Kind::Unattributed => "unattributed",
        }
    }

    /// The estimate's component this kind is compared with (`None`: no single one).
    pub const fn component(self) -> Option<Component> {
        match self {
            Kind::Parameters => Some(Component::Weights),
            Kind::Gradients => Some(Component::Gradients),
            Kind::OptimizerState => Some(Component::OptimizerStates),
            Kind::SavedActivations => Some(Component::Activations),
            Kind::Temporaries => Some(Component::Transient),
            Kind::Workspaces => Some(Component::CommBuffers),
            Kind::BeforeRecording | Kind::Unattributed => None,
        }
    }
}

/// What the frames of one event say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent facts read off one stack"
)]
pub struct Hints {
    pub optimizer_init: bool,
    pub optimizer: bool,
    pub accumulate_grad: bool,
    pub workspace: bool,
    pub param_init: bool,
    pub forward: bool,
    pub backward: bool,
}

impl Hints {
    /// What either of two sets of frames says.
    #[must_use]
    pub fn or(self, o: Hints) -> Hints {
        Hints {
            optimizer_init: self.optimizer_init || o.optimizer_init,
            optimizer: self.optimizer || o.optimizer,
            accumulate_grad: self.accumulate_grad || o.accumulate_grad,
            workspace: self.workspace || o.workspace,
            param_init: self.param_init || o.param_init,
            forward: self.forward || o.forward,
            backward: self.backward || o.backward,
        }
    }
}

/// Whether a frame's file path holds `part` (written with `/`): Windows paths, as a snapshot
/// recorded on Windows has them (`tests/data/snapshots/real_*`), use a backslash.
fn path_has(file: &str, part: &str) -> bool {
    file.contains(part) || (file.contains('\\') && file.contains(&part.replace('/', "\\")))
}

/// What one stack frame (its file and function name) says.
pub fn frame_hints(file: &str, name: &str) -> Hints {
    let mut h = Hints::default();
    if path_has(file, "torch/optim/") {
        h.optimizer = true;
        h.optimizer_init = name == "_init_group" || name.contains("init_state");
    }
    h.accumulate_grad = name.contains("AccumulateGrad") || name.contains("accumulate_grad");
    h.workspace = name.contains("nccl")
        || name.contains("NCCL")
        || path_has(file, "ProcessGroupNCCL")
        || name.contains("Blas")
        || name.contains("cublas")
        || name.contains("getChosenWorkspaceSize");
    let module = path_has(file, "torch/nn/modules/module.py");
    h.param_init = (module && matches!(name, "_apply" | "to" | "cuda" | "__init__"))
        || path_has(file, "torch/nn/init.py")
        || name == "reset_parameters";
    h.forward = name == "forward" || (module && name.contains("_call_impl"));
    h.backward = name.contains("backward") || path_has(file, "torch/autograd/");
    h
}

/// What a stack says: the frames' hints together.
pub fn hints<'s>(frames: impl IntoIterator<Item = (&'s str, &'s str)>) -> Hints {
    frames
        .into_iter()
        .fold(Hints::default(), |h, (file, name)| {
            h.or(frame_hints(file, name))
        })
}

/// Where an allocation falls in the recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Life {
    /// Allocated before the first forward of the recording.
    pub before_first_forward: bool,
    /// Never freed in the recording.
    pub never_freed: bool,
    /// Freed after a backward pass began (and the allocation came before it).
    pub freed_in_backward: bool,
}

/// The kind of an allocation from its frames' hints and its lifetime. Frames win over lifetime;
/// the order of the rules is the order of the checks.
pub fn classify(h: Hints, life: Life) -> Kind {
    if h.optimizer_init {
        Kind::OptimizerState
    } else if h.optimizer {
        Kind::Temporaries
    } else if h.accumulate_grad {
        Kind::Gradients
    } else if h.workspace {
        Kind::Workspaces
    } else if h.param_init || (life.before_first_forward && life.never_freed && !h.forward) {
        Kind::Parameters
    } else if h.forward && !h.backward && life.freed_in_backward {
        Kind::SavedActivations
    } else if h.forward || h.backward {
        Kind::Temporaries
    } else {
        Kind::Unattributed
    }
}
