//! A machine's own baseline: where a boot's figure stands against the boots before it on the
//! same machine (the traces kept in its log directory), so that a fleet's monitoring can ask
//! "did this machine get slower?" from one gauge (docs/export.md, "Baselines"), without
//! Prometheus having to tell one boot from the next in a gauge that only changes at boot.
//!
//! The baseline of a boot is the median of the same figure over up to [`BASELINE_BOOTS`]
//! boots before it that have it, when there are at least [`MIN_BOOTS`]. A boot has
//! regressed when its figure is more than [`REGRESSION_RATIO`] times its baseline. The boots
//! over their baselines in a row, ending with the newest, say whether a regression holds: a
//! lasting one becomes the new normal once it is most of the window (after about five boots
//! with the default window), and the count falls back to 0.

use serde::Serialize;

/// At most this many boots before a boot make its baseline (retention keeps 10 traces by
/// default: the boot and the nine before it).
pub const BASELINE_BOOTS: usize = 9;
/// A baseline needs at least this many earlier boots with the figure.
pub const MIN_BOOTS: usize = 3;
/// A boot whose figure is more than this times its baseline has regressed.
pub const REGRESSION_RATIO: f64 = 1.2;

/// One figure of the newest boot against its machine's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    /// The median of the figure over the boots before the newest, s.
    pub baseline_s: f64,
    /// How many boots that median is over.
    pub boots: usize,
    /// How many boots in a row, ending with the newest, were over their own baselines by
    /// more than [`REGRESSION_RATIO`] (0: the newest was not).
    pub over_boots: usize,
}

/// The median of `v` (not empty); the baseline's, and the fleet view's over its boots.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The baseline of the figure at `i` of `history` (oldest first; None: that boot did not
/// have it): the median of up to [`BASELINE_BOOTS`] earlier figures, with their count.
fn baseline_at(history: &[Option<f64>], i: usize) -> Option<(f64, usize)> {
    let before: Vec<f64> = history[..i]
        .iter()
        .rev()
        .flatten()
        .copied()
        .take(BASELINE_BOOTS)
        .collect();
    (before.len() >= MIN_BOOTS).then(|| {
        let n = before.len();
        (median(before), n)
    })
}

/// The newest boot's figure (the last of `history`, oldest first) against the boots before
/// it; None when it has no figure or fewer than [`MIN_BOOTS`] boots before it do.
pub fn of(history: &[Option<f64>]) -> Option<Baseline> {
    let last = history.len().checked_sub(1)?;
    history[last]?;
    let (baseline_s, boots) = baseline_at(history, last)?;
    let regressed = |i: usize| match (history[i], baseline_at(history, i)) {
        (Some(v), Some((b, _))) => v > REGRESSION_RATIO * b,
        _ => false,
    };
    let over_boots = (0..=last)
        .rev()
        .filter(|i| history[*i].is_some())
        .take_while(|i| regressed(*i))
        .count();
    Some(Baseline {
        baseline_s,
        boots,
        over_boots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(v: &[f64]) -> Vec<Option<f64>> {
        v.iter().map(|x| Some(*x)).collect()
    }

    #[test]
    fn a_regression_counts_in_a_row_until_it_is_the_new_normal() {
        // Too few boots before: no baseline.
        assert_eq!(of(&hist(&[10.0, 10.0, 30.0])), None);
        // Three before: the median of them.
        let b = of(&hist(&[10.0, 12.0, 11.0, 11.5])).unwrap();
        assert_eq!((b.baseline_s, b.boots, b.over_boots), (11.0, 3, 0));
        // One boot 20 % over is not a regression; just over it is.
        assert_eq!(of(&hist(&[10.0, 10.0, 10.0, 12.0])).unwrap().over_boots, 0);
        assert_eq!(of(&hist(&[10.0, 10.0, 10.0, 12.01])).unwrap().over_boots, 1);
        // Two in a row.
        let h = hist(&[10.0, 10.0, 10.0, 10.0, 10.0, 15.0, 15.0]);
        let b = of(&h).unwrap();
        assert_eq!((b.baseline_s, b.boots, b.over_boots), (10.0, 6, 2));
        // A fast boot ends the run.
        let h = hist(&[10.0, 10.0, 10.0, 10.0, 15.0, 9.0, 15.0]);
        assert_eq!(of(&h).unwrap().over_boots, 1);
        // A lasting regression: once it is most of the window the median is the new figure.
        let mut h = hist(&[10.0; 9]);
        let mut counts = Vec::new();
        for _ in 0..7 {
            h.push(Some(15.0));
            counts.push(of(&h).unwrap().over_boots);
        }
        assert_eq!(counts, [1, 2, 3, 4, 5, 0, 0]);
        // The window: only the nine boots before count.
        let mut h = hist(&[100.0; 5]);
        h.extend(hist(&[10.0; 9]));
        h.push(Some(11.0));
        let b = of(&h).unwrap();
        assert_eq!((b.baseline_s, b.boots), (10.0, 9));
    }

    #[test]
    fn boots_without_the_figure_are_left_out() {
        let h = vec![Some(10.0), None, Some(10.0), None, Some(10.0), Some(13.0)];
        let b = of(&h).unwrap();
        assert_eq!((b.baseline_s, b.boots, b.over_boots), (10.0, 3, 1));
        // The newest without it: nothing to say.
        assert_eq!(of(&[Some(1.0), Some(1.0), Some(1.0), None]), None);
        assert_eq!(of(&[]), None);
        // An even count: the mean of the middle two.
        let b = of(&hist(&[10.0, 20.0, 12.0, 14.0, 13.0])).unwrap();
        assert_eq!(b.baseline_s, 13.0);
    }
}
