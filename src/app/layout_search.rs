//! The step-time view's requests (`ui::layout_state`), run after the frame: the best-layout search
//! on a worker thread (a large model tries hundreds of layouts, each a full estimate: tens of
//! milliseconds in a debug build, which would stall a frame), and applying a picked layout to the
//! scenario as one edit the undo history records. `VRAM_EXPLORER_STEP_TIME=1` starts with the
//! step-time view shown (README screenshots).

use std::sync::Arc;

use crate::estimator::performance::parts::search::search;
use crate::scenario::Scenario;
use crate::ui::charts::step_time::LAYOUTS_SHOWN;
use crate::ui::layout_state::{self, Request};

/// Runs the view's requests; `scenario` is the document.
pub fn run(ctx: &egui::Context, scenario: &mut Scenario) {
    let first = !layout_state::with(ctx, |s| std::mem::replace(&mut s.env_checked, true));
    if first && std::env::var("VRAM_EXPLORER_STEP_TIME").as_deref() == Ok("1") {
        layout_state::with(ctx, |s| s.step_view = true);
    }
    let requests = layout_state::with(ctx, |s| std::mem::take(&mut s.requests));
    for r in requests {
        match r {
            Request::Search(key) => {
                let worker_ctx = ctx.clone();
                let spawned = std::thread::Builder::new()
                    .name("layout-search".to_owned())
                    .spawn(move || {
                        let result = search(&key.scenario, &key.options(LAYOUTS_SHOWN));
                        layout_state::with(&worker_ctx, |s| {
                            // Only the newest request's answer is kept.
                            if s.key.as_ref() == Some(&*key) {
                                s.result = Some(Arc::new(result));
                            }
                            s.running = false;
                        });
                        worker_ctx.request_repaint();
                    });
                if spawned.is_err() {
                    // No thread: leave the view without an answer rather than block the frame.
                    layout_state::with(ctx, |s| s.running = false);
                }
            }
            Request::Apply(layout) => {
                layout.apply_to(scenario);
                ctx.request_repaint();
            }
        }
    }
}
