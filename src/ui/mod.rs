//! Everything that touches egui. No formulas here: panels edit a `Scenario` and draw an `Estimate`.
