//! The sweep chart's visible window: the y range shows the curve up to a cap above the capacity
//! and the current point, and the x range is trimmed to where the curve is on screen (plus the
//! sample where it leaves), so that a curve that leaves the top early is not a sliver at the left.

/// Visible window of the sweep, in plot coordinates (x in log10 of the axis value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub x: (f64, f64),
    pub y_max: f64,
}

/// Smallest x span shown, in decades (a factor of 8: the 1, 2, 5 marks stay visible).
const MIN_SPAN: f64 = 0.903;

/// The window for `points` (`[log10 x, memory]`, x increasing), the capacity `cap`, the current
/// point `here` and the fitting boundary `edge` (log10 x), all in the display unit.
pub fn view(points: &[[f64; 2]], cap: f64, here: [f64; 2], edge: Option<f64>) -> View {
    let limit = (cap * 1.5).max(here[1] * 1.2);
    let curve_top = points
        .iter()
        .map(|p| p[1])
        .filter(|y| y.is_finite())
        .fold(0.0_f64, f64::max);
    let y_max = curve_top
        .min(limit)
        .max(cap * 1.1)
        .max(here[1] * 1.1)
        .max(1e-3);
    let inside = |p: &[f64; 2]| p[1] <= y_max;
    let first = points.iter().position(inside);
    let last = points.iter().rposition(inside);
    let at = |i: usize| points.get(i).map(|p| p[0]);
    let (mut x0, mut x1) = match (first, last) {
        (Some(f), Some(l)) => (
            at(f.saturating_sub(1)).unwrap_or(here[0]),
            at(l + 1).or_else(|| at(l)).unwrap_or(here[0]),
        ),
        _ => (here[0], here[0]),
    };
    for x in std::iter::once(here[0]).chain(edge) {
        if x.is_finite() {
            x0 = x0.min(x);
            x1 = x1.max(x);
        }
    }
    // Widen a narrow window within the sampled range, keeping its low end where possible.
    let (lo, hi) = match (points.first(), points.last()) {
        (Some(a), Some(b)) => (a[0], b[0]),
        _ => (x0, x1),
    };
    if x1 - x0 < MIN_SPAN {
        x1 = (x0 + MIN_SPAN).min(hi.max(x1));
        x0 = (x1 - MIN_SPAN).max(lo.min(x0));
    }
    View { x: (x0, x1), y_max }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(ys: &[f64]) -> Vec<[f64; 2]> {
        ys.iter()
            .enumerate()
            .map(|(i, &y)| [i as f64 * 0.3, y])
            .collect()
    }

    #[test]
    fn a_curve_that_leaves_early_gets_a_narrow_window_that_shows_it_leave() {
        let p = pts(&[96.0, 105.0, 120.0, 150.0, 300.0, 600.0, 1200.0]);
        let v = view(&p, 74.5, [0.0, 96.0], None);
        assert!((v.y_max - 115.2).abs() < 1e-9, "{v:?}");
        assert_eq!(v.x.0, 0.0);
        assert!(v.x.1 >= 0.6 && v.x.1 < 1.2, "{v:?}");
    }

    #[test]
    fn a_flat_curve_keeps_the_capacity_line_in_view() {
        let p = pts(&[10.0, 10.5, 11.0, 11.5]);
        let v = view(&p, 80.0, [0.3, 10.5], None);
        assert!(v.y_max >= 88.0);
        assert_eq!(v.x.0, 0.0);
        assert!((v.x.1 - 0.9).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn a_falling_curve_is_trimmed_on_the_left_and_includes_the_boundary() {
        let p = pts(&[900.0, 450.0, 225.0, 112.0, 56.0, 28.0, 14.0]);
        let v = view(&p, 80.0, [1.8, 14.0], Some(1.2));
        assert_eq!(v.y_max, 120.0);
        assert!((v.x.0 - 0.6).abs() < 1e-9, "{v:?}");
        assert!((v.x.1 - 1.8).abs() < 1e-9, "{v:?}");
    }
}
