//! Undo/redo of scenario edits. The history watches the scenario after each frame and records a step
//! when it changed and no drag is in progress, so a slider drag becomes one step.

use crate::scenario::Scenario;

/// Steps kept; older ones are dropped.
const LIMIT: usize = 200;

pub struct History {
    undo: Vec<Scenario>,
    redo: Vec<Scenario>,
    /// The scenario as of the last recorded step.
    committed: Scenario,
}

impl History {
    pub fn new(current: &Scenario) -> Self {
        History {
            undo: Vec::new(),
            redo: Vec::new(),
            committed: current.clone(),
        }
    }

    /// Records a step if `current` differs from the last one and the user is not mid-drag.
    pub fn observe(&mut self, current: &Scenario, dragging: bool) {
        if dragging || *current == self.committed {
            return;
        }
        let previous = std::mem::replace(&mut self.committed, current.clone());
        self.undo.push(previous);
        if self.undo.len() > LIMIT {
            self.undo.remove(0);
        }
        self.redo.clear();
    }

    pub fn can_undo(&self, current: &Scenario) -> bool {
        !self.undo.is_empty() || *current != self.committed
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Steps back; returns false when there is nothing to undo.
    pub fn undo(&mut self, current: &mut Scenario) -> bool {
        self.observe(current, false);
        let Some(previous) = self.undo.pop() else {
            return false;
        };
        let now = std::mem::replace(&mut self.committed, previous);
        self.redo.push(now);
        current.clone_from(&self.committed);
        true
    }

    pub fn redo(&mut self, current: &mut Scenario) -> bool {
        self.observe(current, false);
        let Some(next) = self.redo.pop() else {
            return false;
        };
        let now = std::mem::replace(&mut self.committed, next);
        self.undo.push(now);
        current.clone_from(&self.committed);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drag_coalesces_into_one_step() {
        let mut s = Scenario::default();
        let mut h = History::new(&s);
        for b in 2..10 {
            s.workload.micro_batch = b;
            h.observe(&s, true);
        }
        h.observe(&s, false);
        assert!(h.undo(&mut s));
        assert_eq!(s.workload.micro_batch, 1);
        assert!(!h.undo(&mut s));
        assert!(h.redo(&mut s));
        assert_eq!(s.workload.micro_batch, 9);
    }

    #[test]
    fn a_new_edit_clears_redo() {
        let mut s = Scenario::default();
        let mut h = History::new(&s);
        s.parallel.tp = 2;
        h.observe(&s, false);
        h.undo(&mut s);
        s.parallel.dp = 4;
        h.observe(&s, false);
        assert!(!h.can_redo());
    }
}
