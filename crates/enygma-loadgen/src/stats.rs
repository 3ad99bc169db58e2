//! Exact statistics over sorted samples (runs are small: a proof takes hundreds of ms, so a
//! whole run holds at most a few hundred thousand values; no histogram approximation needed).

use serde::{Deserialize, Serialize};

/// Nearest-rank percentile of an ascending slice: the smallest value with at least `p`% of
/// the samples at or below it. `p` in [0, 100]; `None` for an empty slice.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let p = p.clamp(0.0, 100.0);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Largest absolute deviation of any value from `center`.
pub fn max_abs_dev(xs: &[f64], center: f64) -> Option<f64> {
    xs.iter()
        .map(|x| (x - center).abs())
        .fold(None, |m, d| Some(m.map_or(d, |m: f64| m.max(d))))
}

/// Least-squares slope of `y` over `x` (`None` with fewer than two distinct `x`). A soak's RSS
/// growth trend: a slowly leaking service shows a positive slope even when every window stays
/// within a few MB of the mean.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mx = mean(&points.iter().map(|p| p.0).collect::<Vec<_>>())?;
    let my = mean(&points.iter().map(|p| p.1).collect::<Vec<_>>())?;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (n >= 2.0 && sxx > 0.0).then(|| sxy / sxx)
}

/// Coefficient of determination of the least-squares line through `points`: how much of `y`'s
/// variation a straight line explains (1 = a perfect line). `None` with fewer than three
/// points (two always fit) or no variation in either coordinate.
pub fn r_squared(points: &[(f64, f64)]) -> Option<f64> {
    let b = slope(points)?;
    let mx = mean(&points.iter().map(|p| p.0).collect::<Vec<_>>())?;
    let my = mean(&points.iter().map(|p| p.1).collect::<Vec<_>>())?;
    let total: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    let residual: f64 = points
        .iter()
        .map(|p| (p.1 - (my + b * (p.0 - mx))).powi(2))
        .sum();
    (points.len() >= 3 && total > 0.0).then(|| 1.0 - residual / total)
}

/// Rounds to 3 decimals for reports (sub-microsecond noise in ms values is not information).
pub fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// p50/p90/p99/max (and mean/min/count) of a set of values, in the unit they came in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// `None` when there are no values.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Summary {
            count: v.len(),
            min: r3(v[0]),
            mean: r3(mean(&v).unwrap()),
            p50: r3(percentile(&v, 50.0).unwrap()),
            p90: r3(percentile(&v, 90.0).unwrap()),
            p99: r3(percentile(&v, 99.0).unwrap()),
            max: r3(*v.last().unwrap()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_squared_of_lines_and_clouds() {
        let line = [(1.0, 10.0), (2.0, 12.0), (4.0, 16.0), (16.0, 40.0)];
        assert!((r_squared(&line).unwrap() - 1.0).abs() < 1e-12);
        // Flat memory with noise: a line explains little.
        let flat = [
            (1.0, 100.0),
            (2.0, 103.0),
            (4.0, 99.0),
            (8.0, 102.0),
            (16.0, 100.0),
        ];
        assert!(r_squared(&flat).unwrap() < 0.2);
        assert_eq!(r_squared(&line[..2]), None);
        assert_eq!(r_squared(&[(1.0, 5.0), (2.0, 5.0), (3.0, 5.0)]), None);
    }

    #[test]
    fn slope_is_the_least_squares_fit() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), Some(2.0));
        assert_eq!(slope(&[(0.0, 4.0), (1.0, 0.0), (2.0, 4.0)]), Some(0.0));
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 2.0)]), None);
        assert_eq!(slope(&[]), None);
    }

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 90.0), Some(90.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 99.5), Some(100.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        // Small samples: p99 of 10 values is the max; p50 of 4 is the 2nd.
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&ten, 99.0), Some(10.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.0));
    }

    #[test]
    fn summary_sorts_and_skips_nan() {
        let s = Summary::of(&[5.0, 1.0, f64::NAN, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.count, 5);
        assert_eq!((s.min, s.p50, s.max), (1.0, 3.0, 5.0));
        assert_eq!(s.mean, 3.0);
        assert_eq!(s.p99, 5.0);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn deviation_and_mean() {
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(max_abs_dev(&[1.0, 2.0, 6.0], 3.0), Some(3.0));
        assert_eq!(max_abs_dev(&[], 3.0), None);
        assert_eq!(r3(1.23456), 1.235);
    }
}
