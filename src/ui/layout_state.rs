//! The roofline chart's second view (the step time by part) and the best-layout search behind it,
//! kept in egui's context data for the session (a view like the measured run, not part of the
//! scenario file). The view asks; the app runs the search on a worker thread and applies a picked
//! layout after the frame (`app/layout_search.rs`): the UI never blocks on the search.

use std::sync::Arc;

use crate::estimator::performance::parts::search::{
    Layout, SearchOptions, SearchResult, searches_expert_tp,
};
use crate::scenario::{Checkpointing, OffloadTarget, Scenario, ZeroStage};

/// What a search ran for: the scenario with its layout fields set to one fixed layout (so that
/// applying a result does not start another search), and the budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub scenario: Scenario,
    pub gpus: u32,
    pub global_batch: u32,
}

impl Key {
    /// The key of `s`'s own budget (its GPU count and global batch).
    pub fn of(s: &Scenario, top: usize) -> Key {
        let o = SearchOptions::for_scenario(s, 0, 0, top);
        let mut scenario = s.clone();
        NEUTRAL.apply_to(&mut scenario);
        if !searches_expert_tp(s) {
            // Kept as the scenario sets it: the search does not choose it.
            scenario.model.moe.etp = s.model.moe.etp;
        }
        Key {
            scenario,
            gpus: o.gpus,
            global_batch: o.global_batch,
        }
    }

    pub fn options(&self, top: usize) -> SearchOptions {
        SearchOptions {
            gpus: self.gpus,
            global_batch: self.global_batch,
            top,
        }
    }
}

/// The layout every key is normalised to.
const NEUTRAL: Layout = Layout {
    tp: 1,
    pp: 1,
    dp: 1,
    cp: 1,
    virtual_stages: 1,
    micro_batch: 1,
    accumulation: 1,
    sequence_parallel: false,
    checkpointing: Checkpointing::None,
    zero: ZeroStage::None,
    offload_optimizer: OffloadTarget::None,
    ep: 1,
    etp: 0,
    gpus: 1,
    step_s: 0.0,
    mfu: 0.0,
    cost_per_mtoken: 0.0,
};

/// What the view asks of the app.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Search the layouts for this key (on a worker thread).
    Search(Box<Key>),
    /// Write this layout into the scenario (one undoable edit).
    Apply(Layout),
}

/// The view's state.
#[derive(Clone, Debug, Default)]
pub struct State {
    /// The roofline chart shows the step time by part instead.
    pub step_view: bool,
    /// The key of the search running or last finished.
    pub key: Option<Key>,
    /// A search is running for `key`.
    pub running: bool,
    /// The answer for `key`.
    pub result: Option<Arc<SearchResult>>,
    /// The scenario the view last drew and the key it asks for: the key (a copy of the scenario)
    /// is rebuilt only when an edit changed the scenario, not every frame.
    pub seen: Option<(Scenario, Key)>,
    pub requests: Vec<Request>,
    /// The app has looked at `VRAM_EXPLORER_STEP_TIME` (once per window).
    pub env_checked: bool,
}

fn id() -> egui::Id {
    egui::Id::unique("vram_explorer_layout_state")
}

/// Runs `f` on the state (never draw inside `f`: the context is locked).
pub fn with<R>(ctx: &egui::Context, f: impl FnOnce(&mut State) -> R) -> R {
    ctx.data_mut(|d| f(d.get_temp_mut_or_default::<State>(id())))
}
